"""LeaveGroup, ported from Kafka's `testLeaveGroup*`, `testStaticMembers*BatchLeaveGroup`,
`testPendingMember*` cases and checked against GroupMetadataManager.classicGroupLeaveToClassicGroup."""

from __future__ import annotations

import pytest

from tests.state.conftest import java_hashmap_order, make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def results(handle) -> list[tuple]:
    return [(r["member_id"], r["group_instance_id"], r["error"]) for r in handle.results]


def test_empty_group_id_is_invalid():
    assert make_ctx(group_id="").leave("member-id").error == "INVALID_GROUP_ID"


def test_unknown_group_answers_every_member_unknown(ctx):
    # testLeaveGroupUnknownGroup / testStaticMembersLeaveUnknownGroup (v3+: per-member errors)
    leave = ctx.leave("member-id", ("", "leader-instance-id"))
    assert leave.error == "NONE"
    assert results(leave) == [("member-id", None, "UNKNOWN_MEMBER_ID"), ("", "leader-instance-id", "UNKNOWN_MEMBER_ID")]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_single_member_leave_surfaces_the_member_error_at_top_level(ctx, version):
    assert ctx.leave("member-id", version=version).error == "UNKNOWN_MEMBER_ID"
    ctx.stable_group(1)
    assert ctx.leave(ctx.member_ids[0], version=version).error == "NONE"


def test_unknown_member_in_existing_group(ctx):
    # testLeaveGroupUnknownMemberIdExistingGroup
    ctx.join_and_complete()
    leave = ctx.leave("unknown-member-id")
    assert results(leave) == [("unknown-member-id", None, "UNKNOWN_MEMBER_ID")]
    assert ctx.state == "CompletingRebalance"


def test_valid_leave_empties_the_group(ctx):
    # testValidLeaveGroup: CompletingRebalance -> rebalance with nobody left -> Empty, generation 2.
    join = ctx.join_and_complete()
    records = len(ctx.rows("group_metadata"))
    leave = ctx.leave(join.member_id)
    assert results(leave) == [(join.member_id, None, "NONE")]
    assert ctx.state == "Empty" and ctx.group.generation_id == 2
    [record] = ctx.rows("group_metadata")[records:]
    assert record["generation_id"] == 2 and record["members"] == []


def test_leave_with_fenced_instance_id(ctx):
    # testLeaveGroupWithFencedInstanceId
    ctx.join_and_complete(instance_id="group-instance-id")
    leave = ctx.leave(("other-member-id", "group-instance-id"))
    assert results(leave) == [("other-member-id", "group-instance-id", "FENCED_INSTANCE_ID")]


def test_leave_by_instance_id_without_member_id(ctx):
    # testLeaveGroupStaticMemberWithUnknownMemberId: the admin path; the response echoes "".
    ctx.join_and_complete(instance_id="group-instance-id")
    leave = ctx.leave(("", "group-instance-id"))
    assert results(leave) == [("", "group-instance-id", "NONE")]
    assert ctx.member_ids == []


def test_static_members_valid_batch_leave(ctx):
    # testStaticMembersValidBatchLeaveGroup
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", "leader-instance-id"), ("", "follower-instance-id"))
    assert results(leave) == [("", "leader-instance-id", "NONE"), ("", "follower-instance-id", "NONE")]
    assert ctx.state == "Empty" and ctx.group.generation_id == 2


def test_static_members_fenced_instance_in_batch(ctx):
    # testStaticMembersFencedInstanceBatchLeaveGroup
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", "leader-instance-id"), ("invalid-member-id", "follower-instance-id"))
    assert results(leave) == [("", "leader-instance-id", "NONE"),
                              ("invalid-member-id", "follower-instance-id", "FENCED_INSTANCE_ID")]


def test_static_members_unknown_instance_in_batch(ctx):
    # testStaticMembersUnknownInstanceBatchLeaveGroup
    ctx.static_members_join_and_rebalance()
    leave = ctx.leave(("", "unknown-instance-id"), ("", "follower-instance-id"))
    assert results(leave) == [("", "unknown-instance-id", "UNKNOWN_MEMBER_ID"),
                              ("", "follower-instance-id", "NONE")]


def test_pending_member_leave_completes_the_join_phase(ctx):
    # testPendingMembersLeaveGroup
    setup = ctx.setup_group_with_pending_member()
    leave = ctx.leave(setup.pending_member_id)
    assert results(leave) == [(setup.pending_member_id, None, "NONE")]
    assert ctx.state == "CompletingRebalance" and len(ctx.group.members) == 2
    assert ctx.group.pending_join_members == {}
    assert ctx.timer_deadline("heartbeat", setup.pending_member_id) is None


def test_pending_member_in_batch_with_unknown_instance(ctx):
    # testPendingMemberBatchLeaveGroup
    setup = ctx.setup_group_with_pending_member()
    leave = ctx.leave(("", "unknown-instance-id"), setup.pending_member_id)
    assert results(leave) == [("", "unknown-instance-id", "UNKNOWN_MEMBER_ID"),
                              (setup.pending_member_id, None, "NONE")]


def test_joined_and_pending_members_batch_leave(ctx):
    # testJoinedMemberPendingMemberBatchLeaveGroup(WithUnknownMember)
    setup = ctx.setup_group_with_pending_member()
    leave = ctx.leave(setup.leader_id, setup.follower_id, setup.pending_member_id, "unknown-member-id")
    assert results(leave) == [(setup.leader_id, None, "NONE"), (setup.follower_id, None, "NONE"),
                              (setup.pending_member_id, None, "NONE"),
                              ("unknown-member-id", None, "UNKNOWN_MEMBER_ID")]
    # Removed members' parked JoinGroups are answered UNKNOWN_MEMBER_ID.
    assert setup.leader_join.error == setup.follower_join.error == "UNKNOWN_MEMBER_ID"


def test_leaving_member_parked_join_is_answered_unknown_member(ctx):
    ctx.dynamic_leader_stable()
    other_id = ctx.join_new_dynamic()
    other = ctx.join(member_id=other_id)
    assert not other.done
    ctx.leave(other_id)
    assert (other.error, other.member_id, other.generation_id) == ("UNKNOWN_MEMBER_ID", "", -1)


def test_leave_in_stable_starts_one_rebalance_per_request(ctx):
    joins = [ctx.join(version=3, rebalance_ms=500) for _ in range(3)]
    ctx.sleep(3000)
    leader = joins[0].leader_id
    ctx.sync(leader, 1)
    others = [j.member_id for j in joins if j.member_id != leader]
    before = len(ctx.transitions())
    ctx.leave(*others)
    assert ctx.transitions()[before:][0][:2] == ("Stable", "PreparingRebalance")
    assert [t[:2] for t in ctx.transitions()[before:]] == [("Stable", "PreparingRebalance")]
    assert ctx.member_ids == [leader]


def test_leave_in_preparing_rebalance_completes_when_the_rest_rejoined(ctx):
    leader = ctx.dynamic_leader_stable()
    other = ctx.join(version=3)
    assert ctx.state == "PreparingRebalance"
    ctx.leave(leader.member_id)
    assert other.error == "NONE" and other.generation_id == 2 and other.leader_id == other.member_id


def test_leave_during_the_initial_delay_does_not_complete_the_join_early(ctx):
    # maybeCompleteJoinPhase refuses while previousState == Empty.
    first = ctx.join(version=3, rebalance_ms=500)
    second_id = ctx.join_new_dynamic()
    ctx.join(member_id=second_id, rebalance_ms=500)
    ctx.sleep(1000)
    ctx.leave(second_id)
    assert not first.done and ctx.state == "PreparingRebalance"
    ctx.sleep(2000)
    assert first.error == "NONE" and first.generation_id == 1


def test_pending_member_leave_in_stable_starts_a_rebalance(ctx):
    # Any successful leave in Stable goes through maybePrepareRebalanceOrCompleteJoin, even a pending one.
    leader = ctx.dynamic_leader_stable()
    pending = ctx.join_new_dynamic()
    assert ctx.leave(pending).error == "NONE"
    assert ctx.state == "PreparingRebalance" and ctx.group.generation_id == 1
    assert ctx.member_ids == [leader.member_id]


def test_leader_leaving_is_replaced_by_the_first_member_in_hashmap_order():
    ctx = make_ctx(group_id="group-1")
    joins = [ctx.join(version=3, rebalance_ms=3000, session_ms=30_000) for _ in range(4)]
    ctx.sleep(3000)
    ids = [j.member_id for j in joins]
    leader = joins[0].leader_id
    assert leader == ids[0]
    ctx.sync(leader, 1)
    ctx.leave(leader)
    expected = java_hashmap_order(ids)
    expected.remove(leader)
    assert expected[0] != ids[1], "scenario must distinguish HashMap order from join order"
    assert ctx.group.leader_id == expected[0]


def test_pending_member_leave_in_empty_group_changes_nothing(ctx):
    # After the loop Kafka switches on the group state: Stable/CompletingRebalance rebalance,
    # PreparingRebalance tries to complete the join, and Empty (default) does nothing.
    member_id = ctx.join_new_dynamic(version=4)
    leave = ctx.leave(member_id)
    assert results(leave) == [(member_id, None, "NONE")]
    assert ctx.state == "Empty"
    ctx.sleep(3000)
    assert ctx.state == "Empty" and ctx.group.generation_id == 0
    assert [t[:2] for t in ctx.transitions()] == [(None, "Empty")]


def test_leave_by_instance_id_answers_the_parked_join(ctx):
    result = ctx.static_members_join_and_rebalance(session_ms=30_000)
    parked = ctx.join(member_id=result.follower_id, instance_id="follower-instance-id",
                      names=("range", "roundrobin"), topics=("foo", "bar"), session_ms=30_000)
    assert not parked.done and ctx.state == "PreparingRebalance"
    ctx.leave(("", "follower-instance-id"))
    assert (parked.error, parked.member_id) == ("UNKNOWN_MEMBER_ID", "")
    assert ctx.member_ids == [result.leader_id]
