"""Burrow's lag evaluation: every rule on hand-built windows (the cases of Burrow's evaluator tests), the
window storage (intervals, min-distance, deletion, expiry) and the log-end offset samples."""

from __future__ import annotations

import pytest

from tableio.lag_status import (Commit, LagHistory, LagSettingsError, Settings, group_status,
                                lag_always_not_zero, lag_not_decreasing, lag_status, log_end_at, offsets_stalled,
                                offsets_stopped, partition_status, recent_lag_zero, rewind_index)


def window(offsets, lags, ts=None):
    ts = ts or [100_000 * (i + 1) for i in range(len(offsets))]
    return [Commit(i + 1, o, t, lag) for i, (o, lag, t) in enumerate(zip(offsets, lags, ts))]


STEADY = [1000, 2000, 3000, 4000, 5000]
STUCK = [1000] * 5
REWOUND = [1000, 2000, 3000, 2000, 4000]
CAUGHT_UP_TS = [1512224618356, 1512224619362, 1512224620366, 1512224621367, 1512224622370, 1512224623373,
                1512224624378, 1512224625379, 1512224626383, 1512224627383, 1512224628383, 1512224629388,
                1512224630391, 1512224631394, 1512224632397]
CAUGHT_UP = window([792748079 + i for i in range(15)], [0] * 15, CAUGHT_UP_TS)

# (window, broker offsets, current lag, now in ms, allowed lag,
#  lag always not zero, rewind index, stopped, stalled, lag not decreasing, recent lag zero, status)
CASES = [
    # 0: zero lag somewhere in the window: OK although the lag grows
    (window(STEADY, [0, 50, 100, 150, 200]), [5200], 200, 600_000, 0, False, -1, False, False, True, False, "OK"),
    # 1: 400 s since the last commit is not more than the window's 400 s span
    (window(STEADY, [0, 50, 100, 150, 200]), [5200], 200, 900_000, 0, False, -1, False, False, True, False, "OK"),
    # 2: 500 s since the last commit: stopped, even with zero lag at the window's start
    (window(STEADY, [0, 50, 100, 150, 200]), [5200], 200, 1_000_000, 0, False, -1, True, False, True, False, "STOP"),
    # 3: stopped with lag all along
    (window(STEADY, [50, 100, 150, 200, 250]), [5250], 250, 1_000_000, 0, True, -1, True, False, True, False, "STOP"),
    # 4: the same offset every time, but zero lag once: OK
    (window(STUCK, [0, 50, 100, 150, 200]), [1200], 200, 600_000, 0, False, -1, False, True, True, False, "OK"),
    # 5: the same offset and lag all along: stalled
    (window(STUCK, [100, 150, 200, 250, 300]), [1300], 300, 600_000, 0, True, -1, False, True, True, False, "STALL"),
    # 6: stalled with a constant lag too
    (window(STUCK, [100] * 5), [1100], 100, 600_000, 0, True, -1, False, True, True, False, "STALL"),
    # 7: a rewind caught up within the window, and the lag went down: OK
    (window(REWOUND, [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 0, True, 3, False, False, False, False, "OK"),
    # 8: no current lag: OK whatever the window says
    (window(STEADY, [50, 100, 150, 200, 250]), [5250], 0, 1_000_000, 0, True, -1, True, False, True, False, "OK"),
    # 9: caught up at every commit, then new data and no commit for a while: stopped
    (CAUGHT_UP, [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650_000, 0,
     False, -1, True, False, True, False, "STOP"),
    # 10: the same, but a recent broker offset had the consumer caught up: not stopped yet
    (CAUGHT_UP, [792748094, 792748093, 792748093, 792748093], 1, 1512224650_000, 0,
     False, -1, True, False, True, True, "OK"),
    # 11: commits without a lag do not count
    (window([1000 + 500 * i for i in range(10)], [0, None, 50, None, 100, None, 150, None, 200, None],
            [100_000 + 50_000 * i for i in range(10)]), [5700], 200, 600_000, 0,
     False, -1, False, False, True, False, "OK"),
    # 12: stopped by the timestamps, but the lag is within allowed-lag
    (window([1000, 2000, 2000], [2, 1, 1]), [2001], 1, 550_000, 1, False, -1, True, False, False, False, "OK"),
    # 13: case 5 with an allowed lag below every lag
    (window(STUCK, [100, 150, 200, 250, 300]), [1300], 300, 600_000, 99, True, -1, False, True, True, False, "STALL"),
    # 14: case 7 with an allowed lag
    (window(REWOUND, [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 99, True, 3, False, False, False, False, "OK"),
    # 15: a rewind not caught up by the end of the window
    (window([1000, 2000, 3000, 2000, 2500], [100, 150, 200, 1250, 300]), [4300], 300, 600_000, 0,
     True, 3, False, False, False, False, "REWIND"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_every_rule_on_burrows_windows(case):
    (offsets, broker, current, now, allowed, not_zero, rewind, stopped, stalled, not_decreasing, recent_zero,
     status) = CASES[case]
    assert lag_always_not_zero(offsets, allowed) is not_zero
    assert rewind_index(offsets) == rewind
    assert offsets_stopped(offsets, now) is stopped
    assert offsets_stalled(offsets) is stalled
    assert lag_not_decreasing(offsets) is not_decreasing
    assert recent_lag_zero(offsets, broker) is recent_zero
    assert partition_status(offsets, broker, current, now, allowed) == status


def test_a_lagging_consumer_that_advances_without_catching_up_is_warn():
    slow = window(STEADY, [100, 150, 200, 250, 300])
    assert partition_status(slow, [5300], 300, 600_000) == "WARN"
    assert partition_status(window(STEADY, [100, 150, 120, 250, 300]), [5300], 300, 600_000) == "OK"


def test_group_status_is_the_worst_partition_with_stop_stall_rewind_as_err():
    assert group_status([]) == "OK"
    assert group_status(["OK", "OK"]) == "OK"
    assert group_status(["OK", "WARN"]) == "WARN"
    for bad in ("STOP", "STALL", "REWIND"):
        assert group_status(["WARN", bad, "OK"]) == "ERR"


def test_settings_out_of_range_are_refused():
    for wrong in ({"intervals": 0}, {"min_distance_ms": -1}, {"allowed_lag": -1}, {"minimum_complete": 1.5},
                  {"offset_refresh_ms": 0}):
        with pytest.raises(LagSettingsError):
            Settings(**wrong)


def test_log_end_offset_is_interpolated_between_samples_and_extrapolated_after_them():
    samples = [(1000, 100), (3000, 300), (5000, 500)]
    assert log_end_at(samples, 999) is None
    assert [log_end_at(samples, t) for t in (1000, 2000, 3000, 4500)] == [100, 200, 300, 450]
    assert log_end_at(samples, 9000) == 900  # the average rate since the first sample
    assert log_end_at([(1000, 100)], 9000) == 100  # a single sample is held


# -- windows from commits ---------------------------------------------------------------------------------

def commit(seq, ts, offset, log_end, group="g", partition=0, commit_ts=None):
    return {"group_id": group, "topic": "t", "partition": partition, "out_seq": seq, "write_ts": ts,
            "commit_ts": ts if commit_ts is None else commit_ts, "offset": offset, "log_end_offset": log_end}


def steady_commits(count, every_ms=5000, rate_per_ms=1, lag=0, partition=0, start_seq=0):
    """A consumer `lag` records behind a log growing by `rate_per_ms`, committing every `every_ms`."""
    return [commit(start_seq + i, every_ms * (i + 1), rate_per_ms * every_ms * (i + 1) - lag,
                   rate_per_ms * every_ms * (i + 1), partition=partition) for i in range(count)]


def test_the_window_keeps_the_last_intervals_commits_with_their_lag_at_the_latest_sample():
    history = LagHistory(steady_commits(15, every_ms=10_000))
    group = history.evaluate("g", 150_000)
    [p] = group.partitions
    assert [c.offset for c in p.window] == [60_000 + 10_000 * i for i in range(10)]
    assert {c.lag for c in p.window} == {0} and p.current_lag == 0 and p.status == "OK"
    assert p.complete and group.complete == 1.0 and group.status == "OK"
    partial = LagHistory(steady_commits(4)).evaluate("g", 20_000)
    assert len(partial.partitions[0].window) == 4 and partial.complete == 0.0


def test_lag_at_commit_uses_the_log_end_offset_burrow_last_sampled():
    # Commits every 3 s, 1 record behind. Burrow samples every 10 s: the first commit meets the first sample
    # (its own), the next two the same one, the last two the sample at 10 s; the consumer is past them all.
    history = LagHistory(steady_commits(5, every_ms=3000, lag=1))
    assert [c.lag for c in history.evaluate("g", 15_000).partitions[0].window] == [1, 0, 0, 0, 0]
    exact = LagHistory(steady_commits(5, every_ms=3000, lag=1), settings=Settings(offset_refresh_ms=1))
    assert [c.lag for c in exact.evaluate("g", 15_000).partitions[0].window] == [1] * 5


def test_min_distance_merges_a_close_commit_into_the_previous_one_keeping_its_time():
    rows = [commit(0, 10_000, 100, 100), commit(1, 10_500, 150, 150), commit(2, 20_000, 300, 300)]
    history = LagHistory(rows, settings=Settings(min_distance_ms=1000))
    assert [(c.offset, c.ts) for c in history.evaluate("g", 20_000).partitions[0].window] == [(150, 10_000),
                                                                                               (300, 20_000)]
    assert len(LagHistory(rows).evaluate("g", 20_000).partitions[0].window) == 3


def test_a_crashed_consumer_stops_once_its_silence_outlasts_the_window_and_the_recent_broker_samples():
    rows = steady_commits(10) + steady_commits(30, partition=1, start_seq=100)
    history = LagHistory(rows, settings=Settings(offset_refresh_ms=1000))
    # Partition 0 committed every 5 s until 50 s, then nothing: its window spans 45 s.
    assert history.evaluate("g", 95_000).partitions[0].status == "OK"
    stopped = history.evaluate("g", 96_000)
    assert [p.status for p in stopped.partitions] == ["STOP", "OK"] and stopped.status == "ERR"
    assert stopped.maxlag.partition == 0 and stopped.partitions[0].current_lag == 46_000
    # With Burrow's default 100 s of broker samples, the caught-up sample at 50 s holds it back longer.
    default = LagHistory(rows)
    assert default.evaluate("g", 140_000).partitions[0].status == "OK"
    assert default.evaluate("g", 150_000).partitions[0].status == "STOP"


def test_commits_without_a_log_end_offset_give_no_status():
    rows = [commit(0, 1000, 5, None), commit(1, 2000, 6, None, partition=1), commit(2, 2000, 10, 10, partition=2)]
    group = LagHistory(rows).evaluate("g", 3000)
    assert [(p.partition, p.status) for p in group.partitions] == [(0, None), (1, None), (2, "OK")]
    assert group.status == "OK" and group.partitions[0].current_lag is None
    only_unknown = LagHistory(rows[:2]).evaluate("g", 3000)
    assert only_unknown.status is None and only_unknown.maxlag is None
    assert [r["status"] for r in lag_status(LagHistory(rows[:2]), 3000)] == [None, None]


def test_a_deleted_or_expired_group_is_not_found_until_it_commits_again():
    rows = steady_commits(3) + [commit(10, 40_000, 40_000, 40_000)]
    history = LagHistory(rows, deletions=[("g", 20_000, 5)])
    assert history.evaluate("g", 4000) is None  # nothing committed yet
    assert history.evaluate("g", 16_000) is not None
    assert history.evaluate("g", 30_000) is None  # the group tombstone dropped everything
    assert [c.offset for c in history.evaluate("g", 40_000).partitions[0].window] == [40_000]
    expiring = LagHistory(steady_commits(3), settings=Settings(expire_group_ms=60_000))
    assert expiring.evaluate("g", 75_000) is not None and expiring.evaluate("g", 75_001) is None
    assert history.evaluate("other", 40_000) is None
