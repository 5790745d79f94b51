"""The `metrics` figures of state/metrics.py: the formation apart from later rebalances, alike for the classic
and the consumer protocol, unconsumed partition time as a distribution of gaps, and the nearest-rank
percentile every summary of them uses."""

from __future__ import annotations

from collections import Counter

import pytest

from state.config import CoordinatorConfig
from state.metrics import GroupMetrics, distribution, merged, nearest_rank
from state.runtime.group_runtime import GroupRuntime
from tests.state.harness import GroupContext
from tests.state.clients.test_fleet import SESSION, end_metrics, restarted_fleet, start

# Each protocol's clients, with their defaults otherwise (the consumer protocol refuses session.timeout.ms).
PROTOCOLS = {"classic": SESSION, "consumer": {"group.protocol": "consumer"}}


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
    assert formed["rebalances_after_formation"] == 0
    assert formed["rebalance_ms_max"] is None and formed["rebalance_durations"] == []

    ctx = restarted_fleet()
    m = end_metrics(ctx)
    later = sorted(r["stable_ts"] - r["rebalance_start_ts"] for r in ctx.rows("generations")
                   if r["generation_id"] > 1 and r["stable_ts"] is not None)
    assert len(later) == 2 and m["rebalances"] == 3 and m["rebalances_after_formation"] == 2
    assert m["rebalance_durations"] == [{"ms": ms, "count": 1} for ms in later]
    assert (m["rebalance_ms_p50"], m["rebalance_ms_p99"], m["rebalance_ms_max"]) == (later[0], later[1], later[1])
    assert m["rebalance_ms_max"] < m["time_to_stable_ms"]


def fleet(protocol: str, starts: list[int]) -> GroupContext:
    """Clients c0, c1, ... of `protocol` starting at `starts` (ms) on one 6-partition topic."""
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 6, "records_per_second": 10}])
    for number, at in enumerate(starts):
        ctx.sleep(at - ctx.time)
        ctx.send("CLIENT_START", client_id=f"c{number}", topics=["orders"], config=PROTOCOLS[protocol])
    return ctx


def rebalance_starts(ctx: GroupContext) -> list[int]:
    """When each rebalance started, read from the tables: a classic group's transitions to PreparingRebalance,
    a consumer group's group epochs (simulations/views/rebalances.py reads them so)."""
    if any(row["group_type"] == "consumer" for row in ctx.rows("group_states")):
        return sorted(row["rebalance_start_ts"] for row in ctx.rows("generations"))
    return [row["ts"] for row in ctx.rows("group_states") if row["to_state"] == "PreparingRebalance"]


def next_stable(ctx: GroupContext, ts: int) -> int:
    return min(row["ts"] for row in ctx.rows("group_states") if row["to_state"] == "Stable" and row["ts"] >= ts)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_members_joining_within_the_initial_delay_of_one_another_form_the_group(protocol):
    # Three members 1 s apart, then a fourth 40 s later. A classic coordinator waits for the first three (the
    # initial rebalance delay, extended at each join); a consumer group bumps its epoch at each join and is
    # Stable with its first member alone: its formation still ends only once the third has reconciled.
    ctx = fleet(protocol, [0, 1_000, 2_000, 40_000])
    ctx.sleep(40_000)
    m = end_metrics(ctx)
    starts = rebalance_starts(ctx)
    formed = next_stable(ctx, max(s for s in starts if s < 40_000))
    assert m["time_to_stable_ms"] == formed > 2_000  # from the run's first event, at 0
    [later] = [s for s in starts if s > formed]
    assert m["rebalances"] == len(starts) and m["rebalances_after_formation"] == 1
    assert m["rebalance_durations"] == [{"ms": next_stable(ctx, later) - later, "count": 1}]


def test_a_classic_rebalance_superseded_before_its_sync_lasts_until_the_group_is_stable_again():
    ctx = GroupContext()
    kw = dict(version=3, rebalance_ms=60_000, session_ms=60_000)
    leader = ctx.dynamic_leader_stable(rebalance_ms=60_000, session_ms=60_000)
    ctx.sleep(5_000)
    first = ctx.time
    second = ctx.join(**kw)  # PreparingRebalance; the leader's rejoin completes the join phase
    ctx.join(member_id=leader.member_id, **kw)
    assert ctx.state == "CompletingRebalance"
    ctx.sleep(100)
    superseding = ctx.time
    ctx.join(**kw)  # a new member before the SyncGroup: PreparingRebalance again
    assert ctx.state == "PreparingRebalance"
    rejoins = [ctx.join(member_id=member, **kw) for member in (leader.member_id, second.member_id)]
    ctx.sleep(100)
    ctx.sync(leader.member_id, rejoins[0].generation_id)
    assert ctx.state == "Stable"
    m = end_metrics(ctx)
    # Both rebalances end at the Stable that ended the second; neither is the formation's.
    stable = next_stable(ctx, superseding)
    assert m["rebalance_durations"] == [{"ms": stable - superseding, "count": 1}, {"ms": stable - first, "count": 1}]
    assert m["rebalances"] == 3 and m["rebalances_after_formation"] == 2


def test_a_consumer_group_epoch_superseded_before_its_members_reconciled_lasts_until_the_group_is_stable():
    ctx = fleet("consumer", [0, 0, 30_000, 30_500])
    ctx.sleep(30_000)
    m = end_metrics(ctx)
    first, superseding = [s for s in rebalance_starts(ctx) if s >= 30_000]
    stable = next_stable(ctx, first)
    assert stable > superseding  # the epoch of c2's join was superseded by c3's before the group was Stable
    assert m["rebalance_durations"] == [{"ms": stable - superseding, "count": 1}, {"ms": stable - first, "count": 1}]
    assert m["rebalances_after_formation"] == 2


def test_a_consumer_group_stable_again_in_the_write_that_bumped_its_epoch_rebalanced_for_no_time():
    # A partition increase reaches the lone member's next heartbeat: the epoch is bumped and the member gets
    # the new partitions at once (nothing to revoke), so the group never leaves Stable.
    ctx = fleet("consumer", [0])
    ctx.sleep(20_000)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 8, "records_per_second": 10}])
    ctx.sleep(20_000)
    m = end_metrics(ctx)
    assert [row["to_state"] for row in ctx.rows("group_states")] == ["Empty", "Stable"]
    assert m["rebalance_durations"] == [{"ms": 0, "count": 1}] and m["rebalances_after_formation"] == 1


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


def test_the_figures_are_told_what_happened_in_plain_values():
    # A classic group's formation (the initial delay, then Stable), and a later rebalance; no consumers.
    m = GroupMetrics()
    m.activity(0)
    m.rebalance(0, "initial_join", window_ms=3_000)
    m.group_state(6_000, "CompletingRebalance")
    m.group_state(6_100, "Stable")
    m.activity(20_000)
    m.rebalance(20_000, "member_leave", window_ms=3_000)
    m.group_state(21_000, "Stable")
    row = m.row(30_000, "Stable", 2)
    assert (row["end_ts"], row["end_state"], row["end_members"]) == (30_000, "Stable", 2)
    assert (row["time_to_stable_ms"], row["rebalances"], row["rebalances_after_formation"]) == (6_100, 2, 1)
    assert row["rebalance_durations"] == [{"ms": 1_000, "count": 1}]
    assert row["unconsumed_partition_ms"] is None and row["partitions_moved"] is None


def test_a_new_owner_starts_against_what_the_previous_one_processed():
    # a consumes t-0 and t-1; it stops t-1 at 50 but goes on with t-0 unaware (paused, then evicted): b's start
    # compares with a's position on t-0 (70, committed 40: 30 processed twice), and on t-1 with where a stopped
    # (nothing committed, latest: the log end 80 skips 30).
    m = GroupMetrics()
    t0, t1 = ("t", 0), ("t", 1)
    m.start_consuming(0, "a", [t0, t1], {}, {t0: None, t1: None}, {t0: 0, t1: 0}, reset_earliest=False)
    m.stop_consuming(1_000, "a", {t1: 50})
    assert m.consumers("b", [t0, t1]) == {t0: "a"} and m.consumers("a", [t0, t1]) == {}
    m.start_consuming(2_000, "b", [t0, t1], {t0: 70}, {t0: 40, t1: None}, {t1: 80}, reset_earliest=False)
    row = m.row(3_000, "Stable", 2)
    assert (row["partitions_moved"], row["duplicate_records"], row["skipped_records"]) == (2, 30, 30)
    assert (row["unconsumed_gaps"], row["unconsumed_partition_ms"]) == (1, 1_000)


def test_the_runtime_holds_its_figures_and_none_of_their_methods():
    # The figures were a mixin of the runtime sharing its `self`: they are an object it holds, told in values.
    assert isinstance(GroupRuntime("g", CoordinatorConfig()).metrics, GroupMetrics)
    assert not {"metrics_row", "note_activity", "observe_classic_state", "record_rebalance", "record_group_state",
                "record_generation", "start_consuming", "stop_consuming", "consumption_ended"} & set(dir(GroupRuntime))
