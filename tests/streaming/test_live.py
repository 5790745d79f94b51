"""A sliced Spark run as its readers see it while it goes: after every committed micro-batch, /metrics stamps
its point with the time the batch reached and gives there what `coordsim metrics RUN --step` gives after the
run, and the run's tables read as those of the same run ended at that time (quiet runs open across slice
ends, pending generations and the groups' metrics included)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from prometheus_client.openmetrics.exposition import generate_latest

from simulations.engines.local import run_local
from simulations.reports.page import summary
from simulations.reports.panels import NEEDS_CLIENTS, build_panels
from simulations.reports.prometheus import RunMetrics, _Families, families
from simulations.scenarios import generate, parse_scenario, to_jsonl
from simulations.views.kafka_metrics import COLUMNS, figures_at
from simulations.views.quiet_runs import repeats_until
from simulations.views.run_tables import BATCHES, load_run
from state.config import CoordinatorConfig
from state.tables import GROUP_TABLES
from streaming import sink
from streaming.slices import HORIZONS_FILE, SLICES_DIR
from tableio.inputs import read_events
from tableio.parquet import arrow_schema, sort_table, to_arrow
from tests.streaming.inputs import DELAY_MS

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
SLICE_MS = 30_000
# Both protocols; a crash (partitions unconsumed until the session expires) and a rolling restart early,
# then steady groups whose quiet runs stay open across the last slices, which write no row at all.
SCENARIO = """
name: live
start: 2026-06-01T00:00:00Z
duration: 4m
seed: 5
group_sets:
  - name: classic
    groups: 2
    members: 3
    topics:
      - {name: orders, partitions: 6, records_per_second: 10}
  - name: kip848
    groups: 2
    members: 3
    topics:
      - {name: events, partitions: 6, records_per_second: 10}
    config: {group.protocol: consumer}
timeline:
  - {at: 40s, action: crash, target: classic, members: 1, restart_after: 30s}
  - {at: 50s, action: rolling_restart, target: kip848, downtime: 5s, gap: 10s}
"""


def as_seen_after(out: Path, batch_ids: list[int], view: Path) -> Path:
    """The run's folder as a reader saw it once `batch_ids` were committed (their folders linked)."""
    (view / BATCHES).mkdir(parents=True)
    for batch_id in batch_ids:
        sink.batch_folder(view / BATCHES, batch_id).symlink_to(sink.batch_folder(out / BATCHES, batch_id))
    (view / BATCHES / sink.COMMITTED).write_text("".join(f"{b}\n" for b in batch_ids))
    return view


def rows(table: str, frame) -> list[dict]:
    return pa.Table.from_pandas(frame, schema=arrow_schema(table), preserve_index=False).to_pylist()


@pytest.mark.spark
def test_every_live_point_of_a_sliced_run_is_the_run_s_history_at_its_time(spark, tmp_path):
    from streaming.engine import run_spark

    generated = generate(parse_scenario(SCENARIO))
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(generated.rows), encoding="utf-8")
    out = tmp_path / "out"
    run_spark([str(events)], str(out), CoordinatorConfig(), generated.until_ms,
              {"streaming.watermark.delay.ms": DELAY_MS}, progress=False, slice_ms=SLICE_MS)
    history = load_run(out, COLUMNS)
    inputs = read_events([events]).events
    committed = sink.committed_batches(out / BATCHES)
    points, rowless, open_mattered = [], [], 0
    for k, batch_id in enumerate(committed):
        view = as_seen_after(out, committed[:k + 1], tmp_path / f"after-{batch_id}")
        live = load_run(view)
        at = live.end_ts
        assert at == sink.batch_horizon(out / BATCHES, batch_id) or at == points[-1]
        if at is None:
            continue  # the first slice's batch runs no group yet: no point
        points.append(at)
        # /metrics: the point of the run's history at the time the batch reached.
        scraped, _ = RunMetrics(view).exposition(OPENMETRICS)
        assert scraped == generate_latest(_Families(families(figures_at(history, at)))), at
        # Every table of the live run: the same run ended there (the local engine's, with --until).
        ended = run_local(inputs, CoordinatorConfig(), until=at).tables
        for table in GROUP_TABLES:
            assert rows(table, live[table]) == sort_table(table, to_arrow(table, ended[table])).to_pylist(), (at, table)
        # The header counts requests, a quiet run's each; the consumers' panels read the groups' figures.
        answered = int(repeats_until(history["responses"], "response_ts", at).sum())
        assert f"<dt>responses</dt><dd>{answered} (" in summary(live)
        if live["metrics"]["unconsumed_gaps"].notna().any():
            panels = {p.id: p.body for p in build_panels(live)}
            assert NEEDS_CLIENTS not in panels["unconsumed"] + panels["consumption"]
        written = sink.committed_table(view / BATCHES, "responses").to_pandas()
        open_mattered += int(repeats_until(written, "response_ts", at).sum()) < answered
        if all(sink.read_batch(out / BATCHES, batch_id, table) is None for table in GROUP_TABLES):
            rowless.append(at)
    assert points == sorted(points)
    assert sorted(set(points)) == json.loads((out / SLICES_DIR / HORIZONS_FILE).read_text())  # a point per slice
    assert open_mattered >= 3  # requests of runs still open at the slice's end, from the snapshots alone
    assert rowless and set(rowless) <= set(points)  # a slice that wrote no row still added its point
