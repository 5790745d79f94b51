"""state.quiet_run: the rules of reading a quiet run back, in their two forms. Every column form (numpy
arrays, what tableio and the views use) gives what the one-value form (what the core's expansion uses)
gives, element by element, over runs of every shape: lone requests, runs without an interval, instants
before, on and between a run's requests, windows whose edges fall on them; and `expand_row` expands a row
as `Run` reads it."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest

from state import quiet_run as qr

# (first, count, interval) of runs of every shape.
RUNS = [(first, count, interval) for first, count, interval
        in itertools.product((-7, 0, 5, 100), (1, 2, 5), (0, 1, 3, 10))]


def _columns(runs):
    return tuple(np.array(column, dtype="int64") for column in zip(*runs))


def test_counts_and_intervals_read_missing_and_small_values_alike():
    counts = [None, float("nan"), 0, -3, 1, 2.0, 7]
    intervals = [5, 5, 5, 5, 5, float("nan"), 10]
    read = qr.run_counts(np.array(counts, dtype="float64"))
    assert read.tolist() == [qr.run_count(c) for c in counts] == [1, 1, 1, 1, 1, 2, 7]
    assert (qr.run_intervals(read, np.array(intervals, dtype="float64")).tolist()
            == [qr.run_interval(c, i) for c, i in zip(read.tolist(), intervals)] == [0, 0, 0, 0, 0, 0, 10])


def test_requests_until_and_last_request_time_column_by_column():
    first, count, interval = _columns(RUNS)
    for at in range(-20, 160):
        assert qr.requests_until_array(first, count, interval, at).tolist() == [
            qr.requests_until(*run, at) for run in RUNS], at
        assert qr.last_request_times(first, count, interval, at).tolist() == [
            qr.last_request_time(*run, at) for run in RUNS], at
    assert qr.last_request_times(first, count, interval).tolist() == [qr.last_request_time(*run) for run in RUNS]


def test_request_times_are_each_runs_requests_in_order():
    assert qr.request_times(*_columns(RUNS)).tolist() == [
        qr.request_time(first, interval, k) for first, count, interval in RUNS for k in range(count)]


def test_a_request_on_a_window_edge_belongs_to_the_later_window():
    times = [qr.request_time(first, interval, k) for first, count, interval in RUNS for k in range(count)]
    bounds = [-10**9, -7, -6, 0, 5, 6, 15, 25, 100, 101, 130, 140, 10**9]
    for edges in (bounds[1:-1], [5], [0, 100], [-100, 1_000]):
        windows = [-10**9, *edges, 10**9]
        expected = [sum(lo <= t < hi for t in times) for lo, hi in zip(windows, windows[1:])]
        assert qr.counts_per_window(*_columns(RUNS), edges) == expected, edges


def test_no_runs_no_requests_in_any_window():
    empty = np.array([], dtype="int64")
    assert qr.counts_per_window(empty, empty, empty, [1, 2]) == [0, 0, 0]


def test_grown_offsets_column_by_column():
    draw = random.Random(30)
    rows = [(draw.randrange(0, 10**9), draw.choice([None, 0.0, 1 / 3, 33.3, 2_500.5]),
             draw.choice([None, draw.randrange(0, 10**12)]), draw.randrange(0, 10**12)) for _ in range(200)]
    value, rate, origin, first = zip(*rows)
    t = [f + draw.randrange(0, 10**7) for f in first]
    as_floats = lambda values: np.array([np.nan if v is None else v for v in values], dtype="float64")  # noqa: E731
    assert qr.grown_array(np.array(value), as_floats(rate), as_floats(origin), np.array(first), np.array(t)).tolist() \
        == [qr.grown(*row, at) for row, at in zip(rows, t)]


@pytest.mark.parametrize("rate", [None, 0.0, 33.3])
def test_expand_row_gives_the_requests_run_reads(rate):
    row = {"group_id": "g", "topic": "t", "partition": 0, "offset": 1_000, "log_end_offset": 1_400,
           "commit_ts": 10_000, "write_ts": 10_002, "repeat_count": 4, "repeat_interval_ms": 5_000,
           "records_per_second": rate, "rate_origin_ts": 7_001 if rate else None,
           "log_end_origin_ts": 4_000 if rate else None, "out_seq": 3}
    run = qr.Run.of(row)
    assert [(r["commit_ts"], r["write_ts"], r["offset"], r["log_end_offset"], r["repeat_count"])
            for r in qr.expand_row("offsets", row)] == [
        (run.time(10_000, k), run.time(10_002, k), run.offset(1_000, 10_000, k),
         run.log_end_offset(1_400, 10_000, k), 1) for k in range(4)]
    raw = {"type": "OFFSET_COMMIT", "ts": 10_000, "request_id": "c0/commit@10000", "repeat_count": 4,
           "repeat_interval_ms": 5_000, "offsets": [{"partition": 0, "offset": 1_000, "records_per_second": rate,
                                                     "rate_origin_ts": 7_001 if rate else None}]}
    requests = qr.expand_row("requests", {"ts": 10_000, "request_id": raw["request_id"], "repeat_count": 4,
                                          "repeat_interval_ms": 5_000, "raw": json.dumps(raw)})
    assert [(r["ts"], r["request_id"], json.loads(r["raw"])["offsets"][0]["offset"]) for r in requests] == [
        (run.time(10_000, k), f"c0/commit@{run.time(10_000, k)}", run.offset(1_000, 10_000, k)) for k in range(4)]
