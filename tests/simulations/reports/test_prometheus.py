"""The `/metrics` exposition, parsed back with prometheus_client's own parser: Kafka's names and labels, values
computed by hand for a small run, and quiet runs counted exactly (checked against their expansion)."""

from __future__ import annotations

import threading
from collections import Counter
import urllib.request

import pytest
from click.testing import CliRunner
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as text_families

from simulations.cli import main
from simulations.reports.dashboard import make_server
from simulations.reports.prometheus import RunMetrics
from simulations.views.history import committed_offsets
from simulations.reports.prometheus import history
from simulations.views.kafka_metrics import COLUMNS, counts_at, figures_at
from simulations.views.quiet_runs import count_requests, expand_runs
from simulations.views.run_tables import TIME_COLUMNS, load_run
from tableio.parquet import write_tables

from ..scenarios.helpers import run as run_scenario
from ..scenarios.helpers import shipped_small
from ..views.runs import T0, UPGRADE_MS

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def samples(run_dir, accept: str = OPENMETRICS) -> dict[tuple[str, tuple], tuple[float, float]]:
    """{(sample name, sorted labels): (value, timestamp in seconds)} of a scrape of `run_dir`."""
    body, content_type = RunMetrics(run_dir).exposition(accept)
    parse = text_string_to_metric_families if "openmetrics" in content_type else text_families
    return {(s.name, tuple(sorted(s.labels.items()))): (s.value, float(s.timestamp) if s.timestamp else None)
            for family in parse(body.decode("utf-8")) for s in family.samples}


def test_the_figures_read_every_time_column_the_run_s_own_span_needs():
    assert all(set(names) <= set(COLUMNS[table]) for table, names in TIME_COLUMNS.items())


def test_a_small_run_by_hand(lagging_run):
    # Group etl commits two partitions every 10 s for 2 minutes (12 commits, v8, outside any group protocol);
    # its topic gets 100 records/s: at 120 s the log end is 12,000; partition 0 is at 6,000, partition 1 at 12,000.
    got = samples(lagging_run)
    tp = lambda p: (("consumergroup", "etl"), ("partition", str(p)), ("topic", "t"))  # noqa: E731
    assert got["kafka_consumergroup_current_offset", tp(0)] == (6000, 120.0)
    assert got["kafka_consumergroup_current_offset", tp(1)] == (12000, 120.0)
    assert got["kafka_consumergroup_lag", tp(0)] == (6000, 120.0)
    assert got["kafka_consumergroup_lag", tp(1)] == (0, 120.0)
    assert got["kafka_consumergroup_lag_sum", (("consumergroup", "etl"), ("topic", "t"))][0] == 6000
    assert got["kafka_consumergroup_members", (("consumergroup", "etl"),)][0] == 0
    assert got["kafka_network_requestmetrics_requests_total", (("request", "OffsetCommit"), ("version", "8"))][0] == 12
    # ErrorsPerSec counts each partition of an OffsetCommit, as Kafka's errorCounts does.
    assert got["kafka_network_requestmetrics_errors_total", (("error", "NONE"), ("request", "OffsetCommit"))][0] == 24
    assert got["kafka_server_group_coordinator_metrics_offset_commit_count_total", ()][0] == 24
    # Commits at 100, 110 and 120 s fall in the 30 s window before 120 s: 3 x 2 offsets / 30 s.
    assert got["kafka_server_group_coordinator_metrics_offset_commit_rate", ()][0] == pytest.approx(0.2)
    assert got["kafka_coordinator_group_groupmetadatamanager_numoffsets", ()][0] == 2
    assert got["kafka_coordinator_group_groupmetadatamanager_numgroupsempty", ()][0] == 1
    assert got["kafka_server_group_coordinator_metrics_classic_group_count", (("state", "Empty"),)][0] == 1
    assert got["kafka_server_group_coordinator_metrics_group_count", (("protocol", "classic"),)][0] == 1
    assert got["coordsim_simulated_time_seconds", ()] == (120.0, 120.0)
    # The Prometheus text format (what a scraper gets without asking for OpenMetrics) says the same.
    assert samples(lagging_run, "text/plain")["kafka_consumergroup_lag", tp(0)] == (6000, 120.0)


@pytest.fixture(scope="module")
def quiet_run(tmp_path_factory):
    """A synthetic run whose heartbeats and commits are written as quiet runs."""
    result = run_scenario(shipped_small("lagging-consumer", sets={"*": {"groups": 2}}, duration="3m")).result
    out = tmp_path_factory.mktemp("quiet") / "run"
    write_tables(out, result.tables)
    return out


def test_quiet_runs_count_as_the_requests_they_stand_for(quiet_run):
    whole, quiet_run = load_run(quiet_run), load_run(quiet_run, COLUMNS)
    responses, offsets = whole["responses"], whole["offsets"]
    assert (responses["repeat_count"] > 1).any() and (offsets["repeat_count"] > 1).any()
    expanded = expand_runs("responses", responses)
    commits = expand_runs("offsets", offsets[offsets["offset"].notna()])
    for at in (quiet_run.start_ts + 50_000, quiet_run.start_ts + 101_234, quiet_run.end_ts):
        counts = counts_at(quiet_run, at)
        answered = expanded[expanded["response_ts"] <= at]
        assert sum(counts.requests.values()) == len(answered)
        assert counts.requests == {(api, int(v)): n for (api, v), n in
                                   answered.groupby(["api", "api_version"]).size().items()}
        assert counts.offset_commits == (commits["write_ts"] <= at).sum()
        assert counts.errors == Counter((api, e["error"]) for api, error, results in
                                        zip(answered["api"], answered["error"], answered["results"])
                                        for e in (results if api == "OffsetCommit" else [{"error": error}]))
        figures = figures_at(quiet_run, at)
        by_hand = {(g, t, p): o for g in quiet_run.groups for (t, p), o in committed_offsets(whole, g, at).items()}
        assert {(p.group_id, p.topic, p.partition): p.current_offset for p in figures.partitions} == by_hand
    assert sum(counts_at(quiet_run, quiet_run.end_ts).requests.values()) == count_requests(responses)
    lags = [p.lag for p in figures_at(quiet_run, quiet_run.end_ts).partitions]
    assert lags and all(lag is not None and lag >= 0 for lag in lags) and max(lags) > 0


def test_the_dashboard_serves_metrics_while_a_run_is_missing(tmp_path):
    server = make_server(tmp_path / "not-yet", "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/metrics",
                                         headers={"Accept": OPENMETRICS})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.headers["Content-Type"].startswith("application/openmetrics-text")
            assert reply.read().decode() == "# EOF\n"
    finally:
        server.shutdown()
        server.server_close()


def test_history_has_a_point_per_step_and_ends_where_a_scrape_is(lagging_run, tmp_path):
    out = tmp_path / "history.om"
    result = CliRunner().invoke(main, ["metrics", str(lagging_run), "--step", "40", "--out", str(out)])
    assert result.exit_code == 0, result.output
    points: dict[tuple, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(out.read_text()):
        for s in family.samples:
            points.setdefault((s.name, tuple(sorted(s.labels.items()))), []).append((float(s.timestamp), s.value))
    # The run's tables span 10 s (the first commit) to 120 s: points at 10, 50, 90 and 120 s, where partition 0
    # has committed half of the log (its lag is the other half).
    lag = points["kafka_consumergroup_lag", (("consumergroup", "etl"), ("partition", "0"), ("topic", "t"))]
    assert lag == [(10.0, 500), (50.0, 2500), (90.0, 4500), (120.0, 6000)]
    assert {key: series[-1] for key, series in points.items()} == {
        key: (stamp, value) for key, (value, stamp) in samples(lagging_run).items()}
    missing = CliRunner().invoke(main, ["metrics", str(tmp_path / "nope"), "--out", str(out)])
    assert missing.exit_code == 2 and "no such run folder" in missing.output


GROUPS = "kafka_server_group_coordinator_metrics_"
NUM_GROUPS = "kafka_coordinator_group_groupmetadatamanager_numgroups"


def group_counts(got: dict) -> dict[tuple, float]:
    """The group-count families and the NumGroups gauges of a scrape, by (name, labels), without the zeros."""
    return {key: value[0] for key, value in got.items()
            if key[0].startswith((GROUPS + "group_count", GROUPS + "classic_group_count",
                                  GROUPS + "consumer_group_count", NUM_GROUPS)) and value[0]}


def test_groups_are_counted_by_protocol_and_state_across_an_online_upgrade(upgraded_run):
    # At the end: the classic group `upgraded` was converted at UPGRADE_MS (Reconciling since), `native` has
    # been a Stable consumer group throughout; no classic group is left, and the Dead gauges say 0.
    got = samples(upgraded_run)
    assert group_counts(got) == {
        (GROUPS + "group_count", (("protocol", "consumer"),)): 2,
        (GROUPS + "consumer_group_count", (("state", "Reconciling"),)): 1,
        (GROUPS + "consumer_group_count", (("state", "Stable"),)): 1}
    # Every gauge Kafka registers is there, zeros included, under Kafka's tag values.
    assert {labels for name, labels in got if name == GROUPS + "consumer_group_count"} == {
        (("state", state),) for state in ("Empty", "Assigning", "Reconciling", "Stable", "Dead")}
    assert {labels for name, labels in got if name == GROUPS + "group_count"} == {
        (("protocol", "classic"),), (("protocol", "consumer"),)}
    assert {name for name, _ in got if name.startswith(NUM_GROUPS)} == {
        NUM_GROUPS + suffix for suffix in ("", "preparingrebalance", "completingrebalance", "stable", "dead", "empty")}


def test_the_history_counts_a_converted_group_as_classic_then_as_consumer(upgraded_run):
    points: dict[tuple, list[tuple[float, float]]] = {}
    for family in text_string_to_metric_families(history(load_run(upgraded_run, COLUMNS), 30_000).decode()):
        for s in family.samples:
            points.setdefault((s.name, tuple(sorted(s.labels.items()))), []).append((float(s.timestamp), s.value))
    # Points at 0, 30 and 60 s (the conversion) and 65 s (the end).
    times = [(T0 + ms) / 1000 for ms in (0, 30_000, UPGRADE_MS, UPGRADE_MS + 5_000)]

    def values(name: str, *labels: tuple[str, str]) -> list[float]:
        stamps, values = zip(*points[name, labels])
        assert list(stamps) == times
        return list(values)

    assert values(GROUPS + "group_count", ("protocol", "classic")) == [1, 1, 0, 0]
    assert values(GROUPS + "group_count", ("protocol", "consumer")) == [1, 1, 2, 2]
    assert values(NUM_GROUPS) == [1, 1, 0, 0]
    assert values(GROUPS + "classic_group_count", ("state", "PreparingRebalance")) == [1, 0, 0, 0]
    assert values(GROUPS + "classic_group_count", ("state", "Stable")) == [0, 1, 0, 0]
    assert values(NUM_GROUPS + "stable") == [0, 1, 0, 0]
    assert values(GROUPS + "consumer_group_count", ("state", "Stable")) == [1, 1, 1, 1]
    assert values(GROUPS + "consumer_group_count", ("state", "Reconciling")) == [0, 0, 1, 1]
    assert values(GROUPS + "classic_group_count", ("state", "Dead")) == [0, 0, 0, 0]
    assert values(GROUPS + "consumer_group_count", ("state", "Dead")) == [0, 0, 0, 0]
    assert values(NUM_GROUPS + "dead") == [0, 0, 0, 0]
