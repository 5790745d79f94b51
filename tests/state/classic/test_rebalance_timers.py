"""Rebalance timers (Kafka's GroupMetadataManager): the initial rebalance delay and its extension arithmetic,
the rebalance (join) timeout, pending-sync expiry, the 5-minute new-member join timeout, the
MEMBER_ID_REQUIRED pending-member timeout, and static members that keep a group in PreparingRebalance.
Ported from Kafka's `testDelay*`, `testResetRebalanceDelay*`, `testNewMember*`, `testRebalanceTimesOut*`,
`testJoinGroupCompletionWhenPendingMember*`, `testHeartbeatExpirationShouldRemove*`,
`testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase` and
`testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember`."""

from __future__ import annotations

import pytest

from tests.state.conftest import make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def completion_time(ctx, joins) -> int | None:
    """Sleep 1 ms at a time (bounded) and return when every parked join was answered."""
    for _ in range(20_000):
        if all(j.done for j in joins):
            return ctx.time
        ctx.sleep(1)
    return None


# -- the initial rebalance delay (tryCompleteInitialRebalanceElseSchedule) -----------------------------------

def test_initial_rebalance_waits_the_full_delay(ctx):
    # testDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup
    join = ctx.join(version=3, rebalance_ms=500)
    ctx.sleep(1500)
    assert not join.done
    ctx.sleep(1501)
    assert join.error == "NONE"


def test_first_wait_is_the_full_delay_even_if_rebalance_timeout_is_shorter(ctx):
    join = ctx.join(version=3, rebalance_ms=1000)
    assert completion_time(ctx, [join]) == 3000


def test_initial_delay_is_reset_when_a_member_joins(ctx):
    # testResetRebalanceDelayWhenNewMemberJoinsGroupDuringInitialRebalance (R = 3 * D)
    first = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(2999)
    second = ctx.join(version=3, rebalance_ms=9000)
    ctx.sleep(2)
    ctx.sleep(1501)
    assert not first.done and not second.done
    ctx.sleep(1500)
    assert first.error == second.error == "NONE"


def test_initial_delay_is_extended_up_to_the_rebalance_timeout(ctx):
    # testDelayRebalanceUptoRebalanceTimeout (R = 2 * D)
    first = ctx.join(version=3, rebalance_ms=6000)
    second = ctx.join(version=3, rebalance_ms=6000)
    ctx.sleep(3001)
    third = ctx.join(version=3, rebalance_ms=6000)
    ctx.sleep(2998)
    assert not any(j.done for j in (first, second, third))
    ctx.sleep(1)
    assert first.error == second.error == third.error == "NONE"


def test_initial_delay_fires_at_3000_6000_9000_10000_for_rebalance_timeout_10000(ctx):
    # D = 3000, R = 10000, a new member before every firing: delay' = min(D, remaining),
    # remaining' = max(remaining - delay, 0) with the *old* delay subtracted.
    joins = [ctx.join(version=3, rebalance_ms=10_000)]
    assert ctx.timer_deadline("join") == 3000
    for arrival, firing, next_firing in ((1000, 3000, 6000), (4000, 6000, 9000), (7000, 9000, 10_000),
                                         (9500, 10_000, None)):
        ctx.sleep(arrival - ctx.time)
        joins.append(ctx.join(version=3, rebalance_ms=10_000))
        ctx.sleep(firing - 1 - ctx.time)
        assert not any(j.done for j in joins), f"completed before {firing}"
        ctx.sleep(1)
        assert ctx.timer_deadline("join") == next_firing
    assert all(j.error == "NONE" for j in joins) and ctx.time == 10_000
    assert ctx.group.generation_id == 1 and len(ctx.group.members) == 5


def test_initial_delay_fires_at_3000_6000_for_rebalance_timeout_6000(ctx):
    joins = [ctx.join(version=3, rebalance_ms=6000)]
    ctx.sleep(1000)
    joins.append(ctx.join(version=3, rebalance_ms=6000))
    ctx.sleep(2000)
    assert not any(j.done for j in joins) and ctx.timer_deadline("join") == 6000
    ctx.sleep(1000)
    joins.append(ctx.join(version=3, rebalance_ms=6000))
    assert completion_time(ctx, joins) == 6000


def test_initial_delay_completes_at_the_first_firing_without_a_new_member(ctx):
    # The first joiner (added while Empty) does not set newMemberAdded.
    join = ctx.join(version=3, rebalance_ms=60_000)
    assert completion_time(ctx, [join]) == 3000


def test_rebalance_timeout_of_later_members_does_not_extend_the_initial_delay(ctx):
    # remaining = max(R - D, 0) is computed once, from the members present when the rebalance starts.
    first = ctx.join(version=3, rebalance_ms=3000)
    ctx.sleep(1000)
    second = ctx.join(version=3, rebalance_ms=60_000)
    assert completion_time(ctx, [first, second]) == 3000


def test_initial_rebalance_is_not_completed_early_when_everyone_joined(ctx):
    member_id = ctx.join_new_dynamic()
    join = ctx.join(member_id=member_id, rebalance_ms=500)
    assert ctx.group.has_all_members_joined() and not join.done
    assert completion_time(ctx, [join]) == 3000


def test_initial_delay_can_be_zero():
    ctx = make_ctx(group_initial_rebalance_delay_ms=0)
    join = ctx.join(version=3, rebalance_ms=500)
    ctx.sleep(0)
    assert join.error == "NONE" and ctx.time == 0


# -- the rebalance timeout (prepareRebalance, completeClassicGroupJoin) --------------------------------------

def test_rebalance_timeout_is_the_max_over_members_when_the_rebalance_starts(ctx):
    leader = ctx.dynamic_leader_stable(rebalance_ms=4000, session_ms=30_000)
    start = ctx.time
    other = ctx.join(version=3, rebalance_ms=1000, session_ms=30_000)
    assert ctx.timer_deadline("join") == start + 4000
    late = ctx.join(version=3, rebalance_ms=50_000, session_ms=30_000)
    assert ctx.timer_deadline("join") == start + 4000  # later members do not extend it
    assert completion_time(ctx, [other, late]) == start + 4000
    assert not ctx.group.has_member(leader.member_id)


def test_rebalance_completes_at_once_when_everyone_already_joined(ctx):
    leader = ctx.dynamic_leader_stable()
    rejoin = ctx.join(member_id=leader.member_id, version=3)
    assert rejoin.error == "NONE" and ctx.timer_deadline("join") is None


# -- pending-sync expiry (schedulePendingSync, expirePendingSync) --------------------------------------------

def three_members(ctx):
    joins = ctx.join_with_n_members(3, rebalance_ms=5000, session_ms=5000)
    ctx.sleep(2500)
    for j in joins:
        assert ctx.heartbeat(j.member_id, 1).error == "NONE"
    return joins


def test_rebalance_times_out_when_no_sync_is_received(ctx):
    # testRebalanceTimesOutWhenSyncRequestIsNotReceived: everybody is removed, generation 2 is Empty.
    joins = three_members(ctx)
    records = len(ctx.rows("group_metadata"))
    ctx.sleep(2500)
    assert ctx.state == "Empty" and ctx.group.generation_id == 2
    [record] = ctx.rows("group_metadata")[records:]
    assert record["members"] == [] and record["generation_id"] == 2
    assert all(ctx.heartbeat(j.member_id, 1).error == "UNKNOWN_MEMBER_ID" for j in joins)


def test_rebalance_times_out_when_followers_do_not_sync(ctx):
    # testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers: the pending-sync timer also fires
    # in Stable.
    leader, *followers = three_members(ctx)
    assert ctx.sync(leader.member_id, 1).error == "NONE" and ctx.state == "Stable"
    assert ctx.heartbeat(leader.member_id, 1).error == "NONE"
    ctx.sleep(2500)
    assert ctx.state == "PreparingRebalance" and ctx.member_ids == [leader.member_id]
    assert ctx.heartbeat(leader.member_id, 1).error == "REBALANCE_IN_PROGRESS"
    assert all(ctx.heartbeat(f.member_id, 1).error == "UNKNOWN_MEMBER_ID" for f in followers)


def test_rebalance_times_out_when_the_leader_does_not_sync(ctx):
    # testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders
    leader, *followers = three_members(ctx)
    syncs = [ctx.sync(f.member_id, 1) for f in followers]
    assert not any(s.done for s in syncs)
    ctx.sleep(2500)
    assert [s.error for s in syncs] == ["REBALANCE_IN_PROGRESS"] * 2
    assert ctx.heartbeat(leader.member_id, 1).error == "UNKNOWN_MEMBER_ID"
    assert all(ctx.heartbeat(f.member_id, 1).error == "REBALANCE_IN_PROGRESS" for f in followers)
    assert ctx.state == "PreparingRebalance"


def test_rebalance_does_not_time_out_when_every_sync_arrived(ctx):
    # testRebalanceDoesNotTimeOutWhenAllSyncAreReceived
    joins = three_members(ctx)
    assert [ctx.sync(j.member_id, 1).error for j in joins] == ["NONE"] * 3
    assert ctx.timer_deadline("sync") is None
    for _ in range(2):
        ctx.sleep(2500)
        assert all(ctx.heartbeat(j.member_id, 1).error == "NONE" for j in joins)
    assert ctx.state == "Stable"


def test_pending_sync_timer_is_cancelled_by_a_new_rebalance(ctx):
    leader, *followers = three_members(ctx)
    ctx.join(version=3, rebalance_ms=5000, session_ms=5000)
    assert ctx.state == "PreparingRebalance" and ctx.timer_deadline("sync") is None


# -- new members: the 5-minute join timeout (addMemberThenRebalanceOrCompleteJoin) ---

def test_new_member_join_expiration(ctx):
    # testNewMemberJoinExpiration: a new member's parked join times out after 5 minutes even though its
    # session timeout is longer, while the old member (awaited by a 10-minute rebalance) stays.
    first = ctx.join_and_complete(session_ms=5000 + NEW_MEMBER_JOIN_TIMEOUT_MS,
                                  rebalance_ms=2 * NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert first.leader_id == first.member_id
    second_id = ctx.join_new_dynamic()
    second = ctx.join(member_id=second_id, session_ms=5000, rebalance_ms=5000)
    assert not second.done and ctx.group.member(second_id).is_new
    assert ctx.heartbeat_deadline(second_id) == ctx.time + NEW_MEMBER_JOIN_TIMEOUT_MS
    ctx.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert second.error == "UNKNOWN_MEMBER_ID"
    assert ctx.member_ids == [first.member_id]
    assert not any(m.is_new for m in ctx.group.all_members())


def test_member_is_no_longer_new_after_its_first_join_completes(ctx):
    # testNewMemberTimeoutCompletion: afterwards only its session timeout applies.
    join = ctx.join(version=3, session_ms=NEW_MEMBER_JOIN_TIMEOUT_MS + 5000)
    ctx.sleep(3000)
    assert join.error == "NONE" and not ctx.group.member(join.member_id).is_new
    assert ctx.sync(join.member_id, 1).error == "NONE"
    ctx.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert ctx.member_ids == [join.member_id]
    ctx.sleep(5000)
    assert ctx.member_ids == [] and ctx.state == "Empty" and ctx.group.generation_id == 2
    record = ctx.rows("group_metadata")[-1]
    assert (record["generation_id"], record["protocol_type"], record["protocol_name"], record["members"]) == \
        (2, "consumer", None, [])


def test_new_member_expiry_completes_a_long_initial_rebalance():
    # testHeartbeatExpirationShouldRemoveMember: the Java coordinator completes the join phase on removal
    # even during the initial delay; the group becomes Empty at generation 1 and writes a record.
    ctx = make_ctx(group_initial_rebalance_delay_ms=600_000)
    join = ctx.join(version=3)
    ctx.sleep(NEW_MEMBER_JOIN_TIMEOUT_MS)
    assert join.error == "UNKNOWN_MEMBER_ID"
    assert ctx.state == "Empty" and ctx.group.generation_id == 1 and ctx.member_ids == []
    assert ctx.rows("group_metadata")[-1]["generation_id"] == 1


def test_new_member_failure_after_join_group_completion(ctx):
    # testNewMemberFailureAfterJoinGroupCompletion: once a join completed, members expire on their
    # session timeout.
    join = ctx.join_and_complete(version=3, session_ms=5000, rebalance_ms=10_000)
    assert ctx.sync(join.member_id, 1).error == "NONE"
    other = ctx.join(version=3, session_ms=5000, rebalance_ms=10_000)
    rejoin = ctx.join(member_id=join.member_id, version=3, session_ms=5000, rebalance_ms=10_000)
    assert other.error == rejoin.error == "NONE"
    ctx.sleep(5000)
    assert ctx.member_ids == [] and ctx.state == "Empty"


# -- MEMBER_ID_REQUIRED members (classicGroupJoinNewDynamicMember) -------------------------------------------

def test_pending_member_expires_after_its_requested_session_timeout(ctx):
    # testHeartbeatExpirationShouldRemovePendingMember
    ctx.join(version=4, session_ms=1000)
    assert len(ctx.group.pending_join_members) == 1 and ctx.member_ids == []
    ctx.sleep(999)
    assert len(ctx.group.pending_join_members) == 1
    ctx.sleep(1)
    assert ctx.group.pending_join_members == {}


def test_join_completes_when_the_pending_member_times_out(ctx):
    # testJoinGroupCompletionWhenPendingMemberTimesOut (the pending member's session is 2500 ms)
    setup = ctx.setup_group_with_pending_member()
    ctx.sleep(2499)
    assert ctx.state == "PreparingRebalance"
    ctx.sleep(1)
    assert ctx.state == "CompletingRebalance" and len(ctx.group.members) == 2
    assert ctx.group.pending_join_members == {}
    assert setup.leader_join.error == setup.follower_join.error == "NONE"


def test_join_completes_when_the_pending_member_joins(ctx):
    # testJoinGroupCompletionWhenPendingMemberJoins
    setup = ctx.setup_group_with_pending_member()
    join = ctx.join(member_id=setup.pending_member_id, version=3)
    assert join.error == "NONE" and ctx.state == "CompletingRebalance"
    assert len(ctx.group.members) == 3 and ctx.group.pending_join_members == {}


def test_pending_member_expiry_completes_the_initial_rebalance_early(ctx):
    # removePendingMemberAndUpdateClassicGroup has no initial-rebalance guard (Java; Scala waits).
    join = ctx.join(version=3, rebalance_ms=500)
    ctx.join(version=4, session_ms=1000)
    ctx.sleep(1000)
    assert join.error == "NONE" and ctx.time == 1000 and ctx.state == "CompletingRebalance"


# -- static members that do not rejoin (completeClassicGroupJoin, maybeElectNewJoinedLeader) -----------------

def test_no_member_rejoined_extends_the_join_phase(ctx):
    # testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase: with only non-rejoined static members left,
    # completion re-arms the join timer and the group stays PreparingRebalance.
    result = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=30_000)
    dynamic_id = ctx.join_new_dynamic(rebalance_ms=500, session_ms=30_000)
    ctx.join(member_id=dynamic_id, rebalance_ms=500, session_ms=30_000)
    ctx.leave(dynamic_id)  # a rebalance in which nobody is awaiting join
    assert ctx.state == "PreparingRebalance" and ctx.group.num_members_awaiting_join == 0
    for _ in range(2):
        deadline = ctx.timer_deadline("join")
        ctx.sleep(deadline - ctx.time)
        assert ctx.timer_deadline("join") == ctx.time + 10_000
        assert ctx.state == "PreparingRebalance" and ctx.group.generation_id == 1
    leader = ctx.join(member_id=result.leader_id, instance_id="leader-instance-id",
                      names=("range", "roundrobin"), rebalance_ms=10_000, session_ms=30_000)
    assert not leader.done
    follower = ctx.join(member_id=result.follower_id, instance_id="follower-instance-id",
                        names=("range", "roundrobin"), rebalance_ms=10_000, session_ms=30_000)
    assert leader.error == follower.error == "NONE"
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 2


def test_group_stuck_in_rebalance_due_to_non_joined_static_member(ctx):
    # testGroupStuckInRebalanceTimeoutDueToNonjoinedStaticMember
    result = ctx.static_members_join_and_rebalance(rebalance_ms=5000, session_ms=10_000)
    new = ctx.join(version=3, names=("range", "roundrobin"), rebalance_ms=500, session_ms=10_000)
    ctx.sleep(5000)
    assert (new.error, new.leader_id, new.generation_id, len(new.members)) == ("NONE", new.member_id, 2, 3)
    assert set(ctx.member_ids) == {result.leader_id, result.follower_id, new.member_id}
    leave = ctx.leave((result.follower_id, "follower-instance-id"))
    assert leave.results[0]["error"] == "NONE" and ctx.state == "PreparingRebalance"
    ctx.sleep(5000)
    assert ctx.member_ids == [result.leader_id]  # the dynamic member was dropped, the static leader kept
    assert ctx.group.generation_id == 2 and ctx.state == "PreparingRebalance"


def test_stuck_group_empties_once_static_sessions_expire(ctx):
    result = ctx.static_members_join_and_rebalance(rebalance_ms=5000, session_ms=12_000)
    ctx.join(version=3, names=("range", "roundrobin"), rebalance_ms=500, session_ms=12_000)
    ctx.sleep(5000)
    ctx.leave((result.follower_id, "follower-instance-id"))
    ctx.sleep(5000)
    assert ctx.state == "PreparingRebalance" and ctx.member_ids == [result.leader_id]
    ctx.sleep(ctx.heartbeat_deadline(result.leader_id) - ctx.time)
    assert ctx.state == "Empty" and ctx.group.generation_id == 3


def test_static_leader_rejoin_completes_a_stuck_rebalance(ctx):
    # GroupCoordinatorTest.testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout (Scala and
    # Java agree): the restarted static leader replaces its old id, everyone is joined, the phase completes.
    result = ctx.static_members_join_and_rebalance(rebalance_ms=5000, session_ms=10_000)
    ctx.join(version=3, names=("range", "roundrobin"), rebalance_ms=500, session_ms=10_000)
    ctx.sleep(5000)
    ctx.leave((result.follower_id, "follower-instance-id"))
    ctx.sleep(5000)
    assert ctx.state == "PreparingRebalance" and ctx.member_ids == [result.leader_id]
    rejoin = ctx.join(instance_id="leader-instance-id", names=("range", "roundrobin"))
    assert (rejoin.error, rejoin.generation_id, rejoin.leader_id) == ("NONE", 3, rejoin.member_id)
    assert {m["group_instance_id"] for m in rejoin.members} == {"leader-instance-id"}
    assert ctx.member_ids == [rejoin.member_id] and ctx.state == "CompletingRebalance"
