"""Simulated time in slices: where each row goes, and a sliced Spark run's tables, byte for byte those of
the local engine whatever the slice."""

from __future__ import annotations

import pytest

from simulations.scenarios import generate, parse_scenario, to_jsonl
from state.config import CoordinatorConfig
from streaming import slices
from tests.streaming.conftest import assert_same_counts, assert_same_tables, local_run
from tests.streaming.inputs import BAD_ROWS, DELAY_MS, SCENARIO


def rows_at(*times):
    return [("event", "g", ts, b"") for ts in times]


def test_a_slice_holds_the_rows_up_to_its_watermark():
    # Slice k holds (h[k-1] + 1, h[k] + 1]: a row at h + 1 would be late once the watermark is h + 1.
    rows = [("reject", None, None, b"r")] + rows_at(1_000, 60_001, 60_002, 119_999, 120_001, 200_000)
    parts = slices.split(rows, 60_000, None)
    assert [(h, [r[2] for r in part]) for h, part in parts] == [
        (60_000, [None, 1_000, 60_001]), (120_000, [60_002, 119_999, 120_001]), (180_000, []), (200_000, [200_000])]


def test_the_last_horizon_is_until_and_later_rows_go_with_it():
    parts = slices.split(rows_at(0, 90_000, 500_000), 60_000, 100_000)
    assert [(h, [r[2] for r in part]) for h, part in parts] == [(0, [0]), (60_000, []), (100_000, [90_000, 500_000])]
    assert [h for h, _ in slices.split(rows_at(500_000), 60_000, 100_000)] == [100_000]


def test_a_slice_too_small_for_the_span_is_refused():
    with pytest.raises(slices.SliceError, match="take a longer slice"):
        slices.split(rows_at(0, 3_600_000), 1, None)


def test_speed_without_a_slice_is_refused():
    with pytest.raises(slices.SliceError, match="give --slice"):
        slices.check(None, 60.0)


def test_pace_holds_a_slice_to_the_wall_clock(monkeypatch):
    now = [100.0]
    slept = []
    monkeypatch.setattr(slices.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(slices.time, "sleep", lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    pace = slices.Pace(60_000, 60.0)  # a minute a second
    now[0] += 0.25
    pace.slice_done()
    now[0] += 3.0  # a slow slice is not made up for by the next
    pace.slice_done()
    assert slept == [0.75]
    assert slices.Pace(60_000, None).min_s == 0


@pytest.mark.spark
@pytest.mark.parametrize("slice_ms, with_until", [(15_000, True), (45_000, False)])
def test_sliced_tables_equal_local_tables(spark, tmp_path, slice_ms, with_until):
    from streaming.engine import run_spark

    generated = generate(parse_scenario(SCENARIO))
    events = tmp_path / "events.jsonl"
    # Rejects travel with the first slice.
    events.write_text("".join(line + "\n" for line in BAD_ROWS) + to_jsonl(generated.rows), encoding="utf-8")
    until = generated.until_ms if with_until else None
    settings = {"streaming.watermark.delay.ms": DELAY_MS}
    result = run_spark([str(events)], tmp_path / "out", CoordinatorConfig(), until, settings, progress=False,
                       slice_ms=slice_ms)
    expected_dir, expected = local_run([str(events)], tmp_path / "local", CoordinatorConfig(), until)
    assert_same_tables(expected_dir, tmp_path / "out")
    assert_same_counts(result, expected)
    assert result.late_rows == 0
    span = (until if with_until else max(r["ts"] for r in generated.rows)) - generated.start_ms
    assert result.batches >= span // slice_ms  # a micro-batch per slice
