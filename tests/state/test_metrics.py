"""The `metrics` figures of state/metrics.py: the formation apart from later rebalances, unconsumed partition
time as a distribution of gaps, and the nearest-rank percentile every summary of them uses."""

from __future__ import annotations

from collections import Counter

from state.metrics import distribution, merged, nearest_rank
from tests.state.harness import GroupContext
from tests.state.test_consumer import SESSION, end_metrics, restarted_fleet, start


def test_nearest_rank_is_a_value_that_occurred():
    assert nearest_rank(Counter(), 50) is None
    values = Counter([4, 1, 3, 2])
    assert [nearest_rank(values, p) for p in (25, 50, 51, 99, 100)] == [1, 2, 3, 4, 4]
    # Occurrences count as many values: 3 × 10 ms then 1 × 20 ms.
    assert [nearest_rank({20: 1, 10: 3}, p) for p in (50, 75, 76, 99)] == [10, 10, 20, 20]


def test_distributions_round_trip_and_merge_over_rows():
    rows = [distribution(Counter({30: 2, 10: 1})), distribution(Counter({10: 4})), None]
    assert rows[0] == [{"ms": 10, "count": 1}, {"ms": 30, "count": 2}]
    assert merged(rows) == Counter({10: 5, 30: 2})


def test_the_formation_is_not_a_rebalance_duration():
    ctx = GroupContext()
    start(ctx, 3)
    ctx.sleep(20_000)
    formed = end_metrics(ctx)
    # Three members within the initial rebalance delay: 3 s, extended once, to Stable.
    assert formed["time_to_stable_ms"] >= 6_000 and formed["rebalances"] == 1
    assert formed["rebalance_ms_max"] is None and formed["rebalance_durations"] == []

    ctx = restarted_fleet()
    m = end_metrics(ctx)
    later = sorted(r["stable_ts"] - r["rebalance_start_ts"] for r in ctx.rows("generations")
                   if r["generation_id"] > 1 and r["stable_ts"] is not None)
    assert len(later) == 2 and m["rebalances"] == 3
    assert m["rebalance_durations"] == [{"ms": ms, "count": 1} for ms in later]
    assert (m["rebalance_ms_p50"], m["rebalance_ms_p99"], m["rebalance_ms_max"]) == (later[0], later[1], later[1])
    assert m["rebalance_ms_max"] < m["time_to_stable_ms"]


def test_unconsumed_gaps_of_two_static_restarts():
    ctx = GroupContext()
    start(ctx, 2, static=True)  # 6 partitions, 3 each
    ctx.sleep(20_000)
    for client, downtime in (("c0", 4_000), ("c1", 8_000)):
        ctx.send("CLIENT_STOP", client_id=client)
        ctx.sleep(downtime)
        ctx.send("CLIENT_START", client_id=client, group_instance_id=f"{client}-instance", topics=["orders"],
                 config=SESSION)
        ctx.sleep(15_000)
    m = end_metrics(ctx)
    # Each member's three partitions wait its downtime plus one round trip and its rejoin, the same time each.
    [(short, n_short), (long, n_long)] = [(d["ms"], d["count"]) for d in m["unconsumed_gap_durations"]]
    assert (n_short, n_long) == (3, 3) and 4_000 <= short <= 4_100 and 8_000 <= long <= 8_100
    assert m["unconsumed_gaps"] == 6 and m["unconsumed_partition_ms"] == 3 * short + 3 * long
    # Nearest rank over 6 gaps: p50 is the 3rd, p99 the 6th.
    assert (m["unconsumed_gap_ms_p50"], m["unconsumed_gap_ms_p99"], m["unconsumed_gap_ms_max"]) == (short, long, long)
    assert m["rebalances"] == 1 and m["rebalance_durations"] == []


def test_a_gap_still_open_at_the_end_counts_up_to_the_end():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(20_000)
    ctx.send("CLIENT_CRASH", client_id="c0")
    ctx.sleep(60_000)
    m = end_metrics(ctx)
    assert m["unconsumed_gap_durations"] == [{"ms": 60_000, "count": 6}] and m["unconsumed_gaps"] == 6
    assert m["unconsumed_gap_ms_p50"] == m["unconsumed_gap_ms_max"] == 60_000


def test_partitions_of_a_group_closed_on_purpose_leave_no_gap():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(20_000)
    # The last consumer closed: its partitions stop counting the millisecond they stop being consumed.
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(60_000)
    m = end_metrics(ctx)
    assert m["unconsumed_partition_ms"] == 0 and m["unconsumed_gaps"] == 0
    assert m["unconsumed_gap_ms_p50"] is None and m["unconsumed_gap_durations"] == []


def test_groups_without_synthetic_clients_have_no_gaps():
    ctx = GroupContext()
    ctx.stable_group(2)
    m = end_metrics(ctx)
    assert m["unconsumed_gaps"] is None and m["unconsumed_gap_ms_max"] is None
    assert m["unconsumed_gap_durations"] is None and m["rebalance_durations"] == []
