"""A real Prometheus (Debian's `prometheus` package; skipped where it is missing) scrapes the dashboard's
/metrics while a run commits micro-batches, with the configuration docs/prometheus.md asks for; PromQL
over its HTTP API then reads the run's history at the simulated times, equal to the run's tables."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from simulations.reports.dashboard import make_server
from simulations.views.quiet_runs import count_requests
from simulations.views.run_tables import load_run

from ..conftest import REPO
from ..views.runs import T0, live_run, manual_commits

PROMETHEUS = shutil.which("prometheus")
DASHBOARD = REPO / "conf" / "grafana" / "coordsim-kafka.json"
EVERY_MS = 10_000
CUTS = [T0 + 40_000, T0 + 80_000, T0 + 10**9]  # three micro-batches: the run's first 40 s, 80 s, the rest
CONFIG = """\
global:
  scrape_interval: 250ms
  scrape_timeout: 250ms
storage:
  tsdb:
    out_of_order_time_window: 3650d
scrape_configs:
  - job_name: coordsim
    static_configs:
      - targets: ["127.0.0.1:{port}"]
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as reply:
        return json.loads(reply.read())


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus for a target port; yields a PromQL query function; stops Prometheus after."""
    started: list[subprocess.Popen] = []

    def start(target_port: int):
        port = _free_port()
        (tmp_path / "prometheus.yml").write_text(CONFIG.format(port=target_port))
        log = (tmp_path / "prometheus.log").open("w")
        started.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT))
        api = f"http://127.0.0.1:{port}/api/v1/"
        _wait(lambda: _ready(port), "Prometheus to start", tmp_path)

        def query(promql: str, at: int) -> dict[tuple, float]:
            """{labels except job and instance: value} of an instant query at simulated time `at` (ms)."""
            reply = _get(api + "query?" + urllib.parse.urlencode({"query": promql, "time": at / 1000}))
            return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("job", "instance"))):
                    float(r["value"][1]) for r in reply["data"]["result"]}

        return query

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=1) as reply:
            return reply.status == 200
    except OSError:
        return False


def _wait(condition, what: str, tmp_path: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            log = tmp_path / "prometheus.log"
            raise AssertionError(f"timed out waiting for {what}; Prometheus said:\n"
                                 + (log.read_text()[-3000:] if log.exists() else ""))
        time.sleep(0.1)


@pytest.mark.skipif(not PROMETHEUS, reason="needs Debian's prometheus package (bash scripts/setup --test)")
def test_prometheus_records_a_run_in_progress_at_its_simulated_times(tmp_path, prometheus):
    # Group etl commits partitions 0 and 1 every 10 s for 2 minutes, from T0 (months before the wall clock):
    # partition 0 at half the production rate (its lag grows), partition 1 keeping up.
    events = manual_commits(tmp_path / "events.jsonl", [[500 * (i + 1) for i in range(12)],
                                                         [1000 * (i + 1) for i in range(12)]], EVERY_MS, start=T0)
    run_dir = tmp_path / "live"
    server = make_server(run_dir, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        query = prometheus(server.server_address[1])
        reached = []
        for _ in live_run(events, run_dir, CUTS):
            run = load_run(run_dir)
            at = run.end_ts
            reached_at = {(("__name__", "coordsim_simulated_time_seconds"),): at / 1000}
            _wait(lambda: query("coordsim_simulated_time_seconds", at) == reached_at, f"a scrape at {at}", tmp_path)
            reached.append((at, run))
        assert [at - T0 for at, _ in reached] == [40_000, 80_000, 120_000]
        for at, run in reached:
            # The run's own record of each partition's last commit: offset and log-end offset when written.
            offsets = run["offsets"]
            last = offsets[offsets["write_ts"] == at].set_index("partition")
            expected = {p: int(last.at[p, "log_end_offset"] - last.at[p, "offset"]) for p in (0, 1)}
            lag = query("kafka_consumergroup_lag", at)
            assert lag == {(("__name__", "kafka_consumergroup_lag"), ("consumergroup", "etl"), ("partition", str(p)),
                            ("topic", "t")): expected[p] for p in (0, 1)}
            assert query('sum(kafka_network_requestmetrics_requests_total{request="OffsetCommit"})', at) == \
                {(): count_requests(run["responses"])}
            assert query("kafka_server_group_coordinator_metrics_offset_count", at)[
                (("__name__", "kafka_server_group_coordinator_metrics_offset_count"),)] == 2
        assert [query("kafka_consumergroup_lag_sum", at)[(("__name__", "kafka_consumergroup_lag_sum"),
                ("consumergroup", "etl"), ("topic", "t"))] for at, _ in reached] == [2000, 4000, 6000]
        # Each point stays where the run was when it was scraped: the history on the simulated time axis.
        assert [query("kafka_server_group_coordinator_metrics_offset_commit_count_total", at)[
                (("__name__", "kafka_server_group_coordinator_metrics_offset_commit_count_total"),)]
                for at, _ in reached] == [count_requests(run["offsets"]) for _, run in reached]
        # Every query of the shipped Grafana dashboard is valid PromQL with data (no error responses in this run).
        for panel in json.loads(DASHBOARD.read_text())["panels"]:
            for target in panel["targets"]:
                expr = target["expr"].replace("$job", ".*").replace("$window", "5m")
                assert query(expr, T0 + 120_000) or 'error!="NONE"' in expr, (panel["title"], expr)
    finally:
        server.shutdown()
        server.server_close()
