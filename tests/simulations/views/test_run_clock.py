"""A Spark run's clock while it goes: the simulated time reached, the slices done and the wall-clock pace."""

from __future__ import annotations

import json

from simulations.reports.page import summary
from simulations.reports.svg import iso
from simulations.views.run_clock import run_clock
from simulations.views.run_tables import BATCHES, load_run
from streaming.sink import record_progress
from streaming.slices import HORIZONS_FILE, SLICES_DIR

from .runs import T0, TINY, live_run


def report(run_dir, batch_id: int, watermark: int, duration_ms: int) -> None:
    record_progress(run_dir / BATCHES, batch_id, {"late_rows": 0, "input_rows": 1, "watermark": iso(watermark),
                                                  "duration_ms": duration_ms})


def test_the_clock_is_the_latest_committed_horizon_and_the_pace_of_the_last_batches(tmp_path):
    run = tmp_path / "run"
    (run / BATCHES).mkdir(parents=True)
    assert run_clock(run) is None
    (run / BATCHES / "_committed").write_text("0\n1\n2\n3\n")
    report(run, 0, 0, 9_000)  # the first batch runs no group: no watermark yet
    assert run_clock(run) is None
    for batch_id, (horizon, duration) in enumerate([(60_000, 1_000), (120_000, 2_000), (180_000, 1_000),
                                                    (240_000, 1_000)], start=1):
        report(run, batch_id, T0 + horizon + 1, duration)  # batch 4 is not committed yet
    clock = run_clock(run)
    assert (clock.reached, clock.pace, clock.slices) == (T0 + 180_000, 40.0, None)
    (run / SLICES_DIR).mkdir()
    (run / SLICES_DIR / HORIZONS_FILE).write_text(json.dumps([T0 + 60_000 * k for k in range(1, 6)]))
    assert (run_clock(run).slices_done, run_clock(run).slices) == (3, 5)


def test_the_dashboard_summary_shows_the_clock_of_a_run_in_progress(tmp_path):
    run = tmp_path / "live"
    next(live_run(TINY, run, [T0 + 7_000, T0 + 800_000]))
    report(run, 0, T0 + 7_001, 350)
    text = summary(load_run(run))
    assert f"<dt>reached</dt><dd>{iso(T0 + 7_000)}</dd>" in text
    assert "<dt>pace</dt><dd>-</dd>" in text  # one batch: no pace yet
