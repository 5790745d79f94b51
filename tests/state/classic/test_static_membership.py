"""Static membership (KIP-345), ported from Kafka's `testStaticMember*` and
`testReplaceStaticMember*` cases (GroupMetadataManagerTest) and checked against
GroupMetadataManager.updateStaticMemberThenRebalanceOrCompleteJoin / ClassicGroup.replaceStaticMember.

`ctx.static_members_join_and_rebalance()` is Kafka's staticMembersJoinAndRebalance: two static members
("leader-instance-id", "follower-instance-id") with protocols [range, roundrobin], rebalance timeout
10 s and session timeout 5 s, end Stable at generation 1 (at t=6000, after one extension of the initial
delay) with the leader owning foo-0 and the follower foo-1."""

from __future__ import annotations

import pytest

from tests.state.conftest import java_hashmap_order

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")

SUPERSET = ("range", "roundrobin")
LEADER, FOLLOWER = "leader-instance-id", "follower-instance-id"


def members_of(handle) -> set[tuple[str, str | None]]:
    return {(m["member_id"], m["group_instance_id"]) for m in handle.members}


# -- joining and fencing -------------------------------------------------------------------------------------

def test_rejoin_with_an_unknown_member_id_of_a_known_instance_is_fenced(ctx):
    # testStaticMemberRejoinWithExplicitUnknownMemberId
    ctx.join_and_complete(instance_id="group-instance-id", session_ms=5000, rebalance_ms=5000)
    join = ctx.join(member_id="unknown-member-id", instance_id="group-instance-id")
    assert join.error == "FENCED_INSTANCE_ID"


def test_unknown_instance_with_a_known_member_id_is_unknown_member(ctx):
    # testStaticMemberJoinWithUnknownInstanceIdAndKnownMemberId
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(member_id=result.leader_id, instance_id="unknown-instance-id", names=SUPERSET)
    assert join.error == "UNKNOWN_MEMBER_ID"


@pytest.mark.parametrize("member,instance", [("follower", LEADER), ("leader", FOLLOWER)])
def test_member_id_of_another_instance_is_fenced(ctx, member, instance):
    # testStaticMemberRejoinAsFollowerWithMismatchedInstanceId / ...AsLeaderWithMismatchedInstanceId
    result = ctx.static_members_join_and_rebalance()
    member_id = result.follower_id if member == "follower" else result.leader_id
    assert ctx.join(member_id=member_id, instance_id=instance, names=SUPERSET).error == "FENCED_INSTANCE_ID"


def test_every_rejoin_with_unknown_member_id_gets_a_new_member_id(ctx):
    # testGetDifferentStaticMemberIdAfterEachRejoin
    result = ctx.static_members_join_and_rebalance()
    last = result.leader_id
    for _ in range(5):
        join = ctx.join(instance_id=LEADER, names=SUPERSET)
        assert join.error == "NONE"
        assert join.member_id == ctx.group.static_members[LEADER] != last
        last = join.member_id


def test_rejoin_with_known_member_id_in_completing_rebalance(ctx):
    # testStaticMemberRejoinWithKnownMemberId
    join = ctx.join_and_complete(instance_id="group-instance-id")
    rejoin = ctx.join(member_id=join.member_id, instance_id="group-instance-id")
    assert rejoin.error == "NONE" and ctx.state == "CompletingRebalance"
    assert ctx.sync(join.member_id, join.generation_id, instance_id="group-instance-id").error == "NONE"
    assert ctx.state == "Stable"


def test_follower_rejoin_with_known_member_id_and_same_protocols(ctx):
    # testStaticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=SUPERSET)
    assert (join.error, join.generation_id, join.member_id, join.leader_id, join.protocol_name) == \
        ("NONE", 1, result.follower_id, result.leader_id, "range")
    assert join.members == [] and join.skip_assignment is False
    assert ctx.state == "Stable"


# -- replacement (ClassicGroup.replaceStaticMember) ----------------------------------------------------------

def test_replacement_while_preparing_fences_the_parked_join(ctx):
    # testJoinGroupReplaceStaticMember
    old = ctx.join(instance_id="group-instance-id", session_ms=5000)
    assert ctx.group.num_members_awaiting_join == 1
    new = ctx.join(instance_id="group-instance-id", session_ms=5000)
    assert not new.done
    assert (old.error, old.member_id, old.generation_id, old.leader_id) == \
        ("FENCED_INSTANCE_ID", old.member_id, -1, "")
    assert old.member_id != ctx.group.static_members["group-instance-id"]
    assert ctx.group.num_members_awaiting_join == 1 and len(ctx.group.members) == 1
    ctx.sleep(3000)
    assert new.error == "NONE" and ctx.group.num_members_awaiting_join == 0


@pytest.mark.parametrize("version", [9, 8])
def test_replacement_in_stable_without_protocol_change_keeps_the_generation(ctx, version):
    # testReplaceStaticMemberInStableStateNoError / ...Succeeds: a record is written, no rebalance.
    old = ctx.join_and_complete(instance_id="group-instance-id", names=("range",))
    ctx.sync(old.member_id, 1)
    records = len(ctx.rows("group_metadata"))
    new = ctx.join(instance_id="group-instance-id", names=("range", "roundrobin"), rebalance_ms=7000,
                   session_ms=4500, version=version)
    new_id = ctx.group.static_members["group-instance-id"]
    assert (new.error, new.member_id, new.generation_id, new.protocol_type, new.protocol_name) == \
        ("NONE", new_id, 1, "consumer", "range")
    if version >= 9:
        # The returning static leader resumes without running its assignor.
        assert new.leader_id == new_id and new.skip_assignment is True
        assert members_of(new) == {(new_id, "group-instance-id")}
        assert new.members[0]["metadata"] == ctx.group.member(new_id).metadata("range")
    else:
        # Older clients are told the previous leader id, so they do not reassign.
        assert new.leader_id == old.member_id and new.skip_assignment is False and new.members == []
    member = ctx.group.member(new_id)
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (7000, 4500)
    assert member.protocol_names() == ["range", "roundrobin"]
    assert ctx.state == "Stable" and ctx.group.generation_id == 1 and len(ctx.group.members) == 1
    assert ctx.group.leader_id == new_id
    [record] = ctx.rows("group_metadata")[records:]
    assert [m["member_id"] for m in record["members"]] == [new_id] and record["generation_id"] == 1


def test_replacement_in_stable_that_changes_the_selected_protocol_rebalances(ctx):
    # testReplaceStaticMemberInStableStateWithUpdatedProtocolTriggersRebalance
    old = ctx.join_and_complete(instance_id="group-instance-id", names=("range", "roundrobin"))
    ctx.sync(old.member_id, 1)
    new = ctx.join(instance_id="group-instance-id", names=("roundrobin",))
    assert new.error == "NONE" and new.generation_id == 2 and new.protocol_name == "roundrobin"
    assert ctx.state == "CompletingRebalance" and len(ctx.group.members) == 1


def test_replacement_in_completing_rebalance_rebalances(ctx):
    # testReplaceStaticMemberInCompletingRebalanceStateTriggersRebalance
    ctx.join_and_complete(instance_id="group-instance-id")
    new = ctx.join(instance_id="group-instance-id")
    assert new.error == "NONE" and new.generation_id == 2
    assert ctx.state == "CompletingRebalance" and len(ctx.group.members) == 1


def test_replacement_keeps_the_assignment_and_moves_leadership(ctx):
    result = ctx.static_members_join_and_rebalance()
    new = ctx.join(instance_id=LEADER, names=SUPERSET)
    assert ctx.group.leader_id == new.member_id
    assert not ctx.group.has_member(result.leader_id)
    sync = ctx.sync(new.member_id, 1, instance_id=LEADER)
    assert sync.assignment == result.leader_assignment


def test_replacement_rearms_the_session_with_the_previous_session_timeout(ctx):
    # The heartbeat is rescheduled right after replaceStaticMember, before the request's timeouts are
    # applied (updateStaticMemberThenRebalanceOrCompleteJoin).
    old = ctx.join_and_complete(instance_id="group-instance-id", session_ms=5000)
    ctx.sync(old.member_id, 1)
    ctx.sleep(1000)
    new = ctx.join(instance_id="group-instance-id", session_ms=20_000)
    assert ctx.heartbeat_deadline(new.member_id) == ctx.time + 5000
    assert ctx.group.member(new.member_id).session_timeout_ms == 20_000
    ctx.heartbeat(new.member_id, 1)
    assert ctx.heartbeat_deadline(new.member_id) == ctx.time + 20_000


def test_leader_rejoin_with_unknown_member_id_v9_resumes_as_leader(ctx):
    # testStaticMemberRejoinWithLeaderIdAndUnknownMemberId (supportSkippingAssignment = true)
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(instance_id=LEADER, names=SUPERSET, version=9)
    assert (join.error, join.generation_id, join.leader_id, join.protocol_name, join.skip_assignment) == \
        ("NONE", 1, join.member_id, "range", True)
    assert members_of(join) == {(join.member_id, LEADER), (result.follower_id, FOLLOWER)}
    assert ctx.state == "Stable"
    old_join = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=SUPERSET)
    assert old_join.error == "FENCED_INSTANCE_ID"
    assert ctx.sync(result.leader_id, 1, instance_id=LEADER).error == "FENCED_INSTANCE_ID"
    assert ctx.sync(result.leader_id, 1).error == "UNKNOWN_MEMBER_ID"


def test_leader_rejoin_with_unknown_member_id_before_v9_is_told_the_old_leader(ctx):
    # testStaticMemberRejoinWithLeaderIdAndUnknownMemberId (supportSkippingAssignment = false)
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(instance_id=LEADER, names=SUPERSET, version=8)
    assert (join.error, join.generation_id, join.leader_id, join.skip_assignment, join.members) == \
        ("NONE", 1, result.leader_id, False, [])
    assert ctx.group.leader_id == join.member_id


def test_follower_rejoin_with_unknown_member_id_keeps_generation_and_assignment(ctx):
    # testStaticMemberRejoinAsFollowerWithUnknownMemberId
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(instance_id=FOLLOWER, names=SUPERSET)
    assert (join.error, join.generation_id, join.leader_id, join.protocol_name, join.members) == \
        ("NONE", 1, result.leader_id, "range", [])
    assert join.member_id != result.follower_id and ctx.state == "Stable"
    sync = ctx.sync(join.member_id, 1, instance_id=FOLLOWER)
    assert sync.error == "NONE" and sync.assignment == result.follower_assignment


def test_unknown_id_rejoin_keeping_the_selected_protocol_fences_the_old_id(ctx):
    # testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(instance_id=FOLLOWER, names=("range",))
    assert (join.error, join.generation_id, join.leader_id, join.skip_assignment) == \
        ("NONE", 1, result.leader_id, False)
    assert ctx.state == "Stable"
    assert ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=("range",)).error == \
        "FENCED_INSTANCE_ID"
    assert ctx.sync(result.follower_id, 1, instance_id=FOLLOWER).error == "FENCED_INSTANCE_ID"
    sync = ctx.sync(join.member_id, 1, instance_id=FOLLOWER)
    assert sync.error == "NONE" and sync.assignment == result.follower_assignment


def test_unknown_id_rejoin_that_changes_the_selected_protocol_rebalances(ctx):
    # testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged
    ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    join = ctx.join(instance_id=FOLLOWER, names=("roundrobin",), rebalance_ms=10_000, session_ms=15_000)
    assert not join.done and ctx.state == "PreparingRebalance"
    ctx.sleep(10_000)
    assert (join.error, join.generation_id, join.leader_id, join.protocol_name) == \
        ("NONE", 2, join.member_id, "roundrobin")
    assert {i for _, i in members_of(join)} == {LEADER, FOLLOWER}
    assert ctx.state == "CompletingRebalance"


def test_follower_rejoin_with_known_id_and_changed_protocol_rebalances(ctx):
    # testStaticMemberRejoinWithFollowerIdAndChangeOfProtocol: the leader does not rejoin, the follower
    # becomes leader, and roundrobin (the only common protocol left) is selected.
    result = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    join = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=("roundrobin",),
                    rebalance_ms=10_000, session_ms=15_000)
    assert not join.done
    ctx.sleep(10_000)
    assert (join.error, join.generation_id, join.member_id, join.leader_id, join.protocol_name) == \
        ("NONE", 2, result.follower_id, result.follower_id, "roundrobin")
    assert members_of(join) == {(result.leader_id, LEADER), (result.follower_id, FOLLOWER)}
    assert LEADER in ctx.group.static_members


def test_leader_rejoin_with_known_id_rebalances_and_expired_follower_is_dropped(ctx):
    # testStaticMemberRejoinWithLeaderIdAndKnownMemberId: the follower never rejoins and its session
    # (5 s) expires before the rebalance timeout (10 s), which completes the join phase.
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=("range",), rebalance_ms=10_000)
    assert not join.done
    ctx.sleep(5000)
    assert (join.error, join.generation_id, join.leader_id, join.protocol_name) == \
        ("NONE", 2, result.leader_id, "range")
    assert members_of(join) == {(result.leader_id, LEADER)}
    assert not ctx.group.has_member(result.follower_id)


def test_leader_rejoin_then_follower_protocol_change(ctx):
    # testStaticMemberRejoinWithKnownLeaderIdToTriggerRebalanceAndFollowerWithChangeofProtocol
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=SUPERSET, session_ms=5000)
    follower = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=SUPERSET, session_ms=5000)
    assert leader.generation_id == follower.generation_id == 2 and ctx.state == "CompletingRebalance"
    assert leader.leader_id == follower.leader_id == result.leader_id
    assert {i for _, i in members_of(leader)} == {LEADER, FOLLOWER} and follower.members == []
    changed = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=("range",), session_ms=5000)
    assert not changed.done and ctx.state == "PreparingRebalance"
    ctx.sleep(5000)  # the leader's session expires: it never synced generation 2
    assert (changed.error, changed.generation_id, changed.leader_id) == ("NONE", 3, result.follower_id)
    assert members_of(changed) == {(result.follower_id, FOLLOWER)}


def test_duplicate_rejoined_follower_is_fenced(ctx):
    # testStaticMemberFenceDuplicateRejoinedFollower
    result = ctx.static_members_join_and_rebalance()
    ctx.join(version=3)
    assert ctx.state == "PreparingRebalance"
    old = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER)
    assert not old.done
    ctx.join(instance_id=FOLLOWER)
    assert (old.error, old.member_id, old.generation_id, old.leader_id, old.protocol_name) == \
        ("FENCED_INSTANCE_ID", result.follower_id, -1, "", None)
    assert ctx.state == "PreparingRebalance"


def test_duplicate_follower_fences_the_parked_sync_of_the_old_id(ctx):
    # testStaticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=SUPERSET, rebalance_ms=10_000, session_ms=5000)
    old = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=SUPERSET, rebalance_ms=10_000, session_ms=5000)
    assert leader.generation_id == old.generation_id == 2
    assert {i for _, i in members_of(leader)} == {LEADER, FOLLOWER}
    old_sync = ctx.sync(result.follower_id, 2, instance_id=FOLLOWER)
    assert not old_sync.done
    duplicate = ctx.join(instance_id=FOLLOWER, names=SUPERSET, rebalance_ms=10_000, session_ms=5000)
    assert ctx.state == "PreparingRebalance" and not duplicate.done
    assert old_sync.error == "FENCED_INSTANCE_ID"
    ctx.sleep(5000)  # the leader, which never synced generation 2, expires and the join completes
    assert duplicate.error == "NONE" and duplicate.generation_id == 3
    assert ctx.member_ids == [duplicate.member_id] and duplicate.leader_id == duplicate.member_id


def test_old_follower_rejoining_after_its_id_changed_is_fenced(ctx):
    # testStaticMemberFenceDuplicateRejoiningFollowerAfterMemberIdChanged
    result = ctx.static_members_join_and_rebalance()
    leader = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=("range",), rebalance_ms=10_000)
    assert ctx.state == "PreparingRebalance"
    duplicate = ctx.join(instance_id=FOLLOWER, names=("range",), rebalance_ms=10_000)
    assert duplicate.done and leader.done  # everyone rejoined: the join phase completes at once
    old = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=("range",))
    assert (leader.error, leader.generation_id, leader.leader_id) == ("NONE", 2, result.leader_id)
    assert {i for _, i in members_of(leader)} == {LEADER, FOLLOWER}
    assert (duplicate.error, duplicate.generation_id, duplicate.leader_id, duplicate.members) == \
        ("NONE", 2, result.leader_id, [])
    assert (old.error, old.generation_id, old.member_id, old.leader_id, old.protocol_name, old.members) == \
        ("FENCED_INSTANCE_ID", -1, result.follower_id, "", None, None)
    assert ctx.state == "CompletingRebalance"


# -- static members across rebalances (completeClassicGroupJoin keeps them) ----------------------------------

def test_static_follower_that_does_not_rejoin_is_kept(ctx):
    # testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout
    result = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    new = ctx.join(instance_id="new-member-instance-id", names=SUPERSET, rebalance_ms=10_000, session_ms=15_000)
    assert not new.done and ctx.state == "PreparingRebalance"
    leader = ctx.join(member_id=result.leader_id, instance_id=LEADER, names=SUPERSET)
    ctx.sleep(10_000)
    assert (leader.error, leader.generation_id, leader.leader_id) == ("NONE", 2, result.leader_id)
    assert {i for _, i in members_of(leader)} == {LEADER, FOLLOWER, "new-member-instance-id"}
    assert (new.error, new.generation_id, new.leader_id, new.members) == ("NONE", 2, result.leader_id, [])
    assert ctx.state == "CompletingRebalance"


def test_static_leader_that_does_not_rejoin_is_kept_and_leadership_moves(ctx):
    # testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout: the first joined member in the member
    # map's HashMap order becomes leader.
    result = ctx.static_members_join_and_rebalance(rebalance_ms=10_000, session_ms=15_000)
    new = ctx.join(instance_id="new-member-instance-id", names=SUPERSET, rebalance_ms=10_000, session_ms=15_000)
    follower = ctx.join(member_id=result.follower_id, instance_id=FOLLOWER, names=SUPERSET)
    ctx.sleep(10_000)
    joined = {new.member_id, result.follower_id}
    expected = next(m for m in java_hashmap_order([result.leader_id, result.follower_id, new.member_id])
                    if m in joined)
    assert new.leader_id == follower.leader_id == expected == ctx.group.leader_id
    leader_response = new if expected == new.member_id else follower
    assert {i for _, i in members_of(leader_response)} == {LEADER, FOLLOWER, "new-member-instance-id"}
    assert ctx.group.has_member(result.leader_id)


def test_replacing_a_static_member_that_never_synced_still_rebalances_at_the_sync_deadline(ctx):
    # Java's replaceStaticMember does not touch pendingSyncMembers: the replaced (old) id stays pending,
    # the new id's SyncGroup cannot clear it, and expirePendingSync removes the ghost id and calls
    # prepareRebalance. Generation 1 completes at t=6000; the sync deadline is 6000 + 10000.
    kw = dict(names=SUPERSET, rebalance_ms=10_000, session_ms=30_000)
    leader = ctx.join(instance_id=LEADER, **kw)
    follower = ctx.join(instance_id=FOLLOWER, **kw)
    ctx.sleep(3000)
    ctx.sleep(3000)
    assert ctx.state == "CompletingRebalance"
    ctx.sync(leader.member_id, 1, instance_id=LEADER,
             assignments={leader.member_id: [("foo", [0])], follower.member_id: [("foo", [1])]})
    assert ctx.state == "Stable"  # the follower has not synced yet
    restarted = ctx.join(instance_id=FOLLOWER, **kw)
    assert restarted.error == "NONE" and restarted.generation_id == 1
    assert ctx.sync(restarted.member_id, 1, instance_id=FOLLOWER).error == "NONE"
    ctx.sleep(10_000)
    assert ctx.state == "PreparingRebalance"
    assert set(ctx.member_ids) == {leader.member_id, restarted.member_id}
