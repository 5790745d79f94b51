"""A Spark run's clock while it goes: the simulated time reached, the slices done and the wall-clock pace."""

from __future__ import annotations

import json

from simulations.reports.page import summary
from simulations.reports.svg import iso
from simulations.views.run_clock import run_clock
from simulations.views.run_tables import BATCHES, load_run
from streaming.sink import BatchSink, record_progress
from streaming.slices import HORIZONS_FILE, SLICES_DIR

from .runs import T0, TINY, SinkBatch, live_run


def report(run_dir, batch_id: int, watermark: int, duration_ms: int) -> None:
    record_progress(run_dir / BATCHES, batch_id, {"late_rows": 0, "input_rows": 1, "watermark": iso(watermark),
                                                  "duration_ms": duration_ms})


def test_the_clock_is_the_latest_committed_horizon_and_the_pace_of_the_last_batches(tmp_path):
    run = tmp_path / "run"
    (run / BATCHES).mkdir(parents=True)
    assert run_clock(run) is None
    horizons = [None] + [T0 + 60_000 * k for k in range(1, 6)]  # the first batch runs no group yet
    sink = BatchSink(run / BATCHES, horizons.__getitem__)
    sink(SinkBatch([]), 0)
    report(run, 0, 0, 9_000)
    assert run_clock(run) is None
    for batch_id in (1, 2, 3):
        sink(SinkBatch([]), batch_id)
    for batch_id, duration in ((1, 1_000), (2, 2_000), (3, 1_000), (4, 1_000)):  # batch 4 is not committed
        report(run, batch_id, T0 + 60_000 * batch_id + 1, duration)
    clock = run_clock(run)
    assert (clock.reached, clock.pace, clock.slices) == (T0 + 180_000, 40.0, None)
    (run / SLICES_DIR).mkdir()
    (run / SLICES_DIR / HORIZONS_FILE).write_text(json.dumps([T0 + 60_000 * k for k in range(1, 6)]))
    assert (run_clock(run).slices_done, run_clock(run).slices) == (3, 5)
    # A batch's time comes with its commit; its progress report (batch 5's) only after.
    sink(SinkBatch([]), 4)
    sink(SinkBatch([]), 5)
    clock = run_clock(run)
    assert (clock.reached, clock.pace, clock.slices_done) == (T0 + 300_000, 45.0, 5)


def test_the_dashboard_summary_shows_the_clock_of_a_run_in_progress(tmp_path):
    run = tmp_path / "live"
    next(live_run(TINY, run, [T0 + 7_000, T0 + 800_000]))
    report(run, 0, T0 + 7_001, 350)
    text = summary(load_run(run))
    assert f"<dt>reached</dt><dd>{iso(T0 + 7_000)}</dd>" in text
    assert "<dt>pace</dt><dd>-</dd>" in text  # one batch: no pace yet
