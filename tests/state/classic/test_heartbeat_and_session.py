"""Heartbeat and session expiry, ported from Kafka's `testHeartbeat*`, `testClassicGroupMember*`,
`testRebalanceCompletesBeforeMemberJoins` and `testSecondMemberPartiallyJoinAndTimeout` cases and checked
against GroupMetadataManager.classicGroupHeartbeatToClassicGroup / expireClassicGroupMemberHeartbeat.

Timers here fire at their own deadlines (a real broker's clock), so where a Kafka case jumps the mock clock
past several deadlines at once the port sleeps to the deadline that matters."""

from __future__ import annotations

import pytest

from tests.state.conftest import make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def test_empty_group_id_is_invalid():
    assert make_ctx(group_id="").heartbeat("member-id", 1).error == "INVALID_GROUP_ID"


def test_unknown_group_is_unknown_member(ctx):
    # testHeartbeatUnknownGroup
    assert ctx.heartbeat("member-id", -1).error == "UNKNOWN_MEMBER_ID"


def test_empty_group_is_unknown_member(ctx):
    # testHeartbeatEmptyGroup: an Empty group has no members, so validation fails first.
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    assert ctx.state == "Empty"
    assert ctx.heartbeat(member_id, ctx.group.generation_id).error == "UNKNOWN_MEMBER_ID"


def test_unknown_member_in_existing_group(ctx):
    # testHeartbeatUnknownMemberExistingGroup
    leader = ctx.dynamic_leader_stable()
    assert ctx.heartbeat("unknown-member-id", leader.generation_id).error == "UNKNOWN_MEMBER_ID"


def test_pending_member_cannot_heartbeat(ctx):
    member_id = ctx.join_new_dynamic()
    assert ctx.heartbeat(member_id, 0).error == "UNKNOWN_MEMBER_ID"


def test_static_member_with_another_member_id_is_fenced(ctx):
    # testStaticMemberHeartbeatLeaderWithInvalidMemberId
    result = ctx.static_members_join_and_rebalance()
    assert ctx.heartbeat(result.leader_id, 1).error == "NONE"
    assert ctx.heartbeat("invalid-member-id", 1, instance_id="leader-instance-id").error == "FENCED_INSTANCE_ID"


def test_wrong_generation_is_illegal_generation(ctx):
    # testHeartbeatIllegalGeneration
    leader = ctx.dynamic_leader_stable()
    assert ctx.heartbeat(leader.member_id, leader.generation_id + 1).error == "ILLEGAL_GENERATION"


def test_valid_heartbeat(ctx):
    # testValidHeartbeat / testSyncGroupEmptyAssignment
    leader = ctx.dynamic_leader_stable()
    assert ctx.heartbeat(leader.member_id, leader.generation_id).error == "NONE"


def test_heartbeat_during_preparing_rebalance_is_rebalance_in_progress(ctx):
    # testHeartbeatDuringPreparingRebalance: generation 0 is still current while preparing.
    member_id = ctx.join_new_dynamic()
    ctx.join(member_id=member_id)
    assert ctx.state == "PreparingRebalance"
    assert ctx.heartbeat(member_id, 0).error == "REBALANCE_IN_PROGRESS"


def test_heartbeat_during_completing_rebalance_is_accepted(ctx):
    # testHeartbeatDuringCompletingRebalance
    join = ctx.join_and_complete(rebalance_ms=500, session_ms=500)
    assert ctx.state == "CompletingRebalance"
    assert ctx.heartbeat(join.member_id, join.generation_id).error == "NONE"


def test_heartbeat_during_rebalance_causes_rebalance_in_progress(ctx):
    # testHeartbeatDuringRebalanceCausesRebalanceInProgress
    leader = ctx.join_and_complete(rebalance_ms=10_000, session_ms=5_000)
    assert ctx.state == "CompletingRebalance"
    ctx.join(version=3, rebalance_ms=10_000, session_ms=5_000)
    assert ctx.heartbeat(leader.member_id, leader.generation_id).error == "REBALANCE_IN_PROGRESS"


def test_heartbeat_in_preparing_rebalance_restarts_the_session(ctx):
    leader = ctx.dynamic_leader_stable()
    ctx.join(version=3)
    ctx.sleep(1000)
    ctx.heartbeat(leader.member_id, 1)
    assert ctx.heartbeat_deadline(leader.member_id) == ctx.time + 5000


def test_session_expiry_removes_the_member_and_empties_the_group(ctx):
    # testClassicGroupMemberSessionTimeout / verifySessionExpiration
    leader = ctx.dynamic_leader_stable(session_ms=5000)
    ctx.sleep(5000)
    assert ctx.state == "Empty" and ctx.group.generation_id == 2 and ctx.member_ids == []
    record = ctx.rows("group_metadata")[-1]
    assert (record["generation_id"], record["protocol_type"], record["protocol_name"], record["leader_id"],
            record["members"], record["current_state_ts"]) == (2, "consumer", None, None, [], ctx.time)
    assert ctx.heartbeat(leader.member_id, leader.generation_id).error == "UNKNOWN_MEMBER_ID"


def test_heartbeats_maintain_the_session(ctx):
    # testClassicGroupMemberHeartbeatMaintainsSession
    leader = ctx.dynamic_leader_stable(session_ms=5000)
    ctx.sleep(2500)
    assert ctx.heartbeat(leader.member_id, 1).error == "NONE"
    ctx.sleep(2500)
    assert ctx.heartbeat(leader.member_id, 1).error == "NONE"
    ctx.sleep(4999)
    assert ctx.heartbeat(leader.member_id, 1).error == "NONE"


def test_session_expiry_during_rebalance(ctx):
    # testClassicGroupMemberSessionTimeoutDuringRebalance
    leader = ctx.dynamic_leader_stable(rebalance_ms=10_000, session_ms=5_000)
    other = ctx.join(version=3, rebalance_ms=10_000, session_ms=5_000)
    assert not other.done and ctx.state == "PreparingRebalance"
    ctx.sleep(2500)
    assert ctx.heartbeat(leader.member_id, 1).error == "REBALANCE_IN_PROGRESS"
    ctx.sleep(5000)
    assert ctx.heartbeat(leader.member_id, 1).error == "UNKNOWN_MEMBER_ID"
    assert other.error == "NONE" and other.generation_id == 2
    assert ctx.member_ids == [other.member_id] and ctx.state == "CompletingRebalance"


def test_member_awaiting_join_is_not_expired(ctx):
    # hasSatisfiedHeartbeat: a member that is not new and is parked in a rebalance counts as alive.
    leader = ctx.dynamic_leader_stable(rebalance_ms=60_000, session_ms=5_000)
    ctx.join(version=3, rebalance_ms=60_000, session_ms=5_000)
    rejoin = ctx.join(member_id=leader.member_id, version=3, rebalance_ms=60_000, session_ms=5_000)
    follower = next(m for m in ctx.member_ids if m != leader.member_id)
    ctx.sync(leader.member_id, 2)
    ctx.sync(follower, 2)
    parked = ctx.join(member_id=leader.member_id, version=3, rebalance_ms=60_000, session_ms=5_000)
    assert not parked.done and rejoin.done
    deadline = ctx.heartbeat_deadline(leader.member_id)
    ctx.sleep(4000)
    assert ctx.heartbeat(follower, 2).error == "REBALANCE_IN_PROGRESS"  # keeps the follower alive
    ctx.sleep(4000)
    assert ctx.time > deadline and ctx.group.has_member(leader.member_id)
    assert ctx.state == "PreparingRebalance" and not parked.done


def test_rebalance_completes_before_member_joins(ctx):
    # testRebalanceCompletesBeforeMemberJoins (ported to real-time timers)
    first = ctx.join_and_complete(instance_id="leader-instance-id", rebalance_ms=10_000, session_ms=5_000)
    assert ctx.sync(first.member_id, 1).error == "NONE" and ctx.state == "Stable"
    second = ctx.join(version=3, rebalance_ms=10_000, session_ms=2_500)
    assert not second.done and ctx.state == "PreparingRebalance"
    for _ in range(2):
        ctx.sleep(2500)
        assert ctx.heartbeat(first.member_id, 1).error == "REBALANCE_IN_PROGRESS"
    ctx.sleep(5000)  # the rebalance timeout; the static first member did not rejoin and is kept
    assert second.error == "NONE" and second.generation_id == 2
    assert len(ctx.group.members) == 2 and ctx.state == "CompletingRebalance"
    assert second.leader_id == second.member_id
    assert ctx.sync(second.member_id, 2).error == "NONE" and ctx.state == "Stable"
    assert ctx.heartbeat(first.member_id, 1).error == "ILLEGAL_GENERATION"
    # The first member never syncs generation 2; its session expires and the group rebalances.
    for expected in ("NONE", "NONE", "REBALANCE_IN_PROGRESS"):
        ctx.sleep(2000)
        assert ctx.heartbeat(second.member_id, 2).error == expected
    assert ctx.member_ids == [second.member_id] and ctx.state == "PreparingRebalance"
    rejoin = ctx.join(member_id=second.member_id, version=3, rebalance_ms=10_000, session_ms=2_500)
    assert rejoin.error == "NONE" and rejoin.generation_id == 3
    assert ctx.sync(second.member_id, 3).error == "NONE" and ctx.state == "Stable"
    for _ in range(20):
        ctx.sleep(2000)
        assert ctx.heartbeat(second.member_id, 3).error == "NONE"


def test_pending_member_expiry_in_stable_does_not_rebalance(ctx):
    # testSecondMemberPartiallyJoinAndTimeout
    first = ctx.join_and_complete(instance_id="leader-instance-id", rebalance_ms=10_000, session_ms=5_000)
    ctx.sync(first.member_id, 1)
    pending = ctx.join(version=9, rebalance_ms=10_000, session_ms=5_000)
    assert pending.error == "MEMBER_ID_REQUIRED" and len(ctx.group.pending_join_members) == 1
    for _ in range(2):
        ctx.sleep(2500)
        assert ctx.heartbeat(first.member_id, 1).error == "NONE"
    assert ctx.member_ids == [first.member_id] and ctx.group.pending_join_members == {}
    assert ctx.group.generation_id == 1 and ctx.state == "Stable"


def test_expired_member_parked_join_is_answered_unknown_member():
    # removeMemberAndUpdateClassicGroup answers a parked JoinGroup before removing the member.
    ctx = make_ctx(group_initial_rebalance_delay_ms=600_000)
    join = ctx.join(version=3)
    ctx.sleep(300_000)
    assert (join.error, join.member_id, join.generation_id) == ("UNKNOWN_MEMBER_ID", "", -1)


def test_heartbeat_of_a_new_member_awaiting_join_shortens_its_life():
    # The heartbeat re-arms the session timeout, and a member that is still new is not protected by
    # awaiting join (hasSatisfiedHeartbeat checks isNew first): it goes after one session timeout.
    ctx = make_ctx(group_initial_rebalance_delay_ms=600_000)
    member_id = ctx.join_new_dynamic(session_ms=5000)
    join = ctx.join(member_id=member_id, session_ms=5000)
    assert ctx.heartbeat_deadline(member_id) == 300_000
    assert ctx.heartbeat(member_id, 0).error == "REBALANCE_IN_PROGRESS"
    assert ctx.heartbeat_deadline(member_id) == 5000
    ctx.sleep(5000)
    assert join.error == "UNKNOWN_MEMBER_ID" and ctx.state == "Empty" and ctx.group.generation_id == 1
