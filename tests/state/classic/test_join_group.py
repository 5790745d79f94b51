"""JoinGroup, ported from Kafka's GroupMetadataManagerTest `testJoinGroup*` / `testClassicGroup*`
cases and checked against GroupMetadataManager.classicGroupJoin*.

Kafka's test context sends JoinGroup v3 unless a case needs KIP-394 (v4) or KIP-814 (v9); the same
versions are used here."""

from __future__ import annotations

import dataclasses

import pytest

from state.events import EventError, parse_event

from tests.state.conftest import java_hashmap_order, make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


# -- request-level checks (GroupMetadataManager.classicGroupJoin) --------------------------------------------

def test_empty_group_id_is_invalid():
    ctx = make_ctx(group_id="")
    join = ctx.join(version=3)
    assert join.error == "INVALID_GROUP_ID"
    assert ctx.group is None


@pytest.mark.parametrize("session_ms", [9, 600_001])
def test_session_timeout_outside_bounds_is_invalid_and_creates_no_group(ctx, session_ms):
    join = ctx.join(member_id="", session_ms=session_ms, version=3)
    assert join.error == "INVALID_SESSION_TIMEOUT"
    assert join.member_id == ""
    assert ctx.group is None and ctx.rows("group_metadata") == []


def test_session_timeout_bounds_are_inclusive(ctx):
    assert ctx.join(session_ms=10, version=4).error == "MEMBER_ID_REQUIRED"
    assert ctx.join(session_ms=600_000, version=4).error == "MEMBER_ID_REQUIRED"


def test_known_member_id_for_unknown_group_is_unknown_member(ctx):
    # testJoinGroupUnknownMemberNewGroup
    assert ctx.join(member_id="member-id", version=3).error == "UNKNOWN_MEMBER_ID"
    assert ctx.join(member_id="member-id", instance_id="group-instance-id").error == "UNKNOWN_MEMBER_ID"
    assert ctx.group is None


def test_protocol_type_is_not_provided_when_an_error_occurs(ctx):
    join = ctx.join(member_id="member-id", version=3)
    assert join.error == "UNKNOWN_MEMBER_ID"
    assert join.protocol_type is None and join.protocol_name is None
    assert join.generation_id == -1


def test_new_group_writes_an_empty_group_metadata_record(ctx):
    # testGenerateRecordsOnNewClassicGroup
    join = ctx.join(version=4)
    assert join.error == "MEMBER_ID_REQUIRED"
    [record] = ctx.rows("group_metadata")
    assert (record["generation_id"], record["protocol_type"], record["protocol_name"], record["leader_id"]) == \
        (0, "", None, None)
    assert record["members"] == [] and ctx.state == "Empty"


# -- new members (classicGroupJoinNewDynamicMember, classicGroupJoinNewStaticMember) -------------------------

def test_v4_dynamic_member_gets_member_id_required_and_stays_pending(ctx):
    join = ctx.join(client_id="my-client", version=4)
    assert join.error == "MEMBER_ID_REQUIRED"
    assert join.member_id.startswith("my-client-")
    assert ctx.state == "Empty" and len(ctx.group.members) == 0
    assert list(ctx.group.pending_join_members) == [join.member_id]


def test_v3_dynamic_member_is_added_directly_and_parked(ctx):
    join = ctx.join(version=3)
    assert not join.done
    assert ctx.state == "PreparingRebalance" and len(ctx.group.members) == 1


def test_static_member_is_never_asked_for_a_member_id(ctx):
    # testStaticMemberJoinAsFirstMember
    join = ctx.join(instance_id="group-instance-id", version=9)
    assert not join.done
    ctx.sleep(3000)
    assert join.error == "NONE" and join.member_id.startswith("group-instance-id-")


def test_pending_member_joins_with_its_member_id(ctx):
    member_id = ctx.join_new_dynamic(version=4)
    join = ctx.join(member_id=member_id, version=4)
    assert not join.done and ctx.group.has_member(member_id)
    assert ctx.group.pending_join_members == {}


def test_pending_member_rejoining_with_an_instance_id_is_a_server_error(ctx):
    # testJoinGroupExistingPendingMemberWithGroupInstanceIdThrowsException: IllegalStateException
    member_id = ctx.join_new_dynamic(version=4)
    join = ctx.join(member_id=member_id, instance_id="group-instance-id", version=9)
    assert join.error == "UNKNOWN_SERVER_ERROR"


@pytest.mark.parametrize("instance_id", [None, "group-instance-id"])
def test_empty_protocol_type_is_inconsistent(ctx, instance_id):
    # testJoinGroupWithEmptyProtocolType
    join = ctx.join(protocol_type="", instance_id=instance_id, version=9 if instance_id else 3)
    assert join.error == "INCONSISTENT_GROUP_PROTOCOL"


def test_empty_protocol_list_is_inconsistent(ctx):
    # testJoinGroupWithEmptyGroupProtocol
    join = ctx.send("JOIN_GROUP", member_id="", protocol_type="consumer", protocols=[], api_version=3,
                    session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    assert join.error == "INCONSISTENT_GROUP_PROTOCOL"


def test_new_member_with_other_protocol_type_is_inconsistent(ctx):
    # testClassicGroupJoinInconsistentProtocolType
    ctx.join_and_complete()
    join = ctx.join(protocol_type="connect", version=3)
    assert join.error == "INCONSISTENT_GROUP_PROTOCOL"


def test_new_member_without_a_common_protocol_is_inconsistent(ctx):
    # testJoinGroupInconsistentGroupProtocol
    first = ctx.join(names=("range",), version=3, rebalance_ms=500)
    other = ctx.join(names=("roundrobin",), version=3, rebalance_ms=500)
    assert other.error == "INCONSISTENT_GROUP_PROTOCOL"
    ctx.sleep(3000)
    assert first.error == "NONE"


def test_second_join_of_pending_member_is_checked_for_protocols(ctx):
    # testJoinGroupSecondJoinInconsistentProtocol
    member_id = ctx.join_new_dynamic(version=4)
    refused = ctx.join(member_id=member_id, protocol_type="", version=4)
    assert refused.error == "INCONSISTENT_GROUP_PROTOCOL"
    accepted = ctx.join(member_id=member_id, version=4)
    assert not accepted.done
    ctx.sleep(3000)
    assert accepted.error == "NONE"


def test_group_protocol_type_comes_from_the_first_member(ctx):
    # testJoinGroupReturnsTheProtocolType
    leader = ctx.join(version=3, rebalance_ms=500)
    member = ctx.join(version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert leader.protocol_type == member.protocol_type == "consumer"
    assert ctx.group.protocol_type == "consumer"


def test_v0_join_uses_the_session_timeout_as_rebalance_timeout(ctx):
    join = ctx.join(version=0, session_ms=7000, rebalance_ms=20_000)
    member = ctx.group.member(ctx.member_ids[0])
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (7000, 7000)
    assert not join.done


# -- existing members (classicGroupJoinExistingMember) -------------------------------------------------------

def test_unknown_member_id_in_existing_group(ctx):
    # testJoinGroupUnknownConsumerExistingGroup
    ctx.join_and_complete(session_ms=5000, rebalance_ms=5000)
    assert ctx.join(member_id="other-member-id", version=3).error == "UNKNOWN_MEMBER_ID"


def test_existing_member_of_a_group_that_became_empty_is_unknown(ctx):
    # testJoinGroupExistingMemberInEmptyState: the member must reset its generation and rejoin.
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    assert ctx.state == "Empty"
    join = ctx.join(member_id=member_id, version=3)
    assert join.error == "UNKNOWN_MEMBER_ID" and join.generation_id == -1


def test_changed_metadata_in_completing_rebalance_starts_a_rebalance(ctx):
    # testJoinGroupExistingMemberUpdatedMetadataTriggersRebalance
    join = ctx.join_and_complete(names=("range",))
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 1
    rejoin = ctx.join(member_id=join.member_id, names=("range", "roundrobin"), version=3)
    assert rejoin.error == "NONE" and rejoin.generation_id == 2
    assert ctx.state == "CompletingRebalance"
    assert ctx.group.member(join.member_id).protocol_names() == ["range", "roundrobin"]


def test_same_metadata_in_completing_rebalance_resends_the_current_generation(ctx):
    # A client that lost its JoinGroup response: the leader gets the member list again, no rebalance.
    join = ctx.join_and_complete()
    rejoin = ctx.join(member_id=join.member_id, version=3)
    assert rejoin.error == "NONE" and rejoin.generation_id == 1
    assert rejoin.leader_id == join.member_id
    assert [m["member_id"] for m in rejoin.members] == [join.member_id]
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 1


def test_unchanged_follower_in_completing_rebalance_does_not_rebalance(ctx):
    # testJoinGroupFromUnchangedFollowerDoesNotRebalance
    leader = ctx.dynamic_leader_stable()
    follower = ctx.join(version=3)
    leader_rejoin = ctx.join(member_id=leader.member_id, version=3)
    assert follower.error == leader_rejoin.error == "NONE"
    assert follower.generation_id == leader_rejoin.generation_id == 2
    assert follower.leader_id == leader.member_id
    again = ctx.join(member_id=follower.member_id, version=3)
    assert again.error == "NONE" and again.generation_id == 2 and again.members == []
    assert ctx.state == "CompletingRebalance"


def test_leader_rejoin_in_stable_always_rebalances(ctx):
    # testJoinGroupFromUnchangedLeaderShouldRebalance / testGenerationIdIncrementsOnRebalance
    leader = ctx.dynamic_leader_stable()
    rejoin = ctx.join(member_id=leader.member_id, version=3)
    assert rejoin.error == "NONE" and rejoin.generation_id == 2
    assert ctx.state == "CompletingRebalance"


def test_follower_with_changed_metadata_in_stable_rebalances(ctx):
    # testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState
    leader = ctx.dynamic_leader_stable(names=("range",))
    member = ctx.join(names=("range",), version=3, rebalance_ms=500)
    ctx.join(member_id=leader.member_id, names=("range",), version=3)
    assert member.generation_id == 2
    ctx.sync(leader.member_id, 2)
    assert ctx.state == "Stable"
    changed = ctx.join(member_id=member.member_id, names=("range", "roundrobin"), version=3)
    assert not changed.done and ctx.state == "PreparingRebalance"
    leader_rejoin = ctx.join(member_id=leader.member_id, names=("range",), version=3)
    assert changed.error == leader_rejoin.error == "NONE"
    assert changed.generation_id == 3 and len(ctx.group.members) == 2


def test_follower_with_same_metadata_in_stable_gets_the_current_generation(ctx):
    # testJoinGroupExistingMemberDoesNotTriggerRebalanceInStableState
    leader = ctx.dynamic_leader_stable()
    member = ctx.join(version=3)
    ctx.join(member_id=leader.member_id, version=3)
    ctx.sync(leader.member_id, 2)
    rejoin = ctx.join(member_id=member.member_id, version=3)
    assert rejoin.error == "NONE" and rejoin.generation_id == 2
    assert rejoin.leader_id == leader.member_id and rejoin.members == []
    assert rejoin.protocol_name == "range" and rejoin.skip_assignment is False
    assert ctx.state == "Stable"


def test_existing_member_rejoin_must_keep_a_common_protocol(ctx):
    leader = ctx.dynamic_leader_stable(names=("range",))
    ctx.join(names=("range",), version=3, rebalance_ms=500)
    ctx.join(member_id=leader.member_id, names=("range",), version=3)
    refused = ctx.join(member_id=leader.member_id, names=("roundrobin",), version=3)
    assert refused.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert refused.member_id == leader.member_id


def test_not_rejoined_dynamic_members_are_removed_at_join_completion(ctx):
    # testCompleteJoinRemoveNotYetRejoinedDynamicMembers
    leader = ctx.join_and_complete(session_ms=1000, rebalance_ms=1000)
    member = ctx.join(session_ms=1000, rebalance_ms=1000, version=3)
    assert not member.done and ctx.state == "PreparingRebalance" and len(ctx.group.members) == 2
    ctx.sleep(1000)
    assert member.error == "NONE" and member.generation_id == 2
    assert ctx.member_ids == [member.member_id]
    assert not ctx.group.has_member(leader.member_id)


# -- responses and leader election (completeClassicGroupJoin) ------------------------------------------------

def test_only_the_leader_gets_the_member_list_with_selected_metadata(ctx):
    a = ctx.join(version=3, topics=("foo",), rebalance_ms=500)
    b = ctx.join(version=3, topics=("bar",), rebalance_ms=500)
    ctx.sleep(3000)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    assert follower.members == []
    by_id = {m["member_id"]: m for m in leader.members}
    assert set(by_id) == {a.member_id, b.member_id}
    assert by_id[a.member_id]["metadata"] == ctx.group.member(a.member_id).metadata("range")
    assert by_id[b.member_id]["metadata"] != by_id[a.member_id]["metadata"]


def test_leader_member_list_follows_java_hashmap_order(ctx):
    joins = [ctx.join(version=3, rebalance_ms=500) for _ in range(5)]
    ctx.sleep(3000)
    leader = next(j for j in joins if j.leader_id == j.member_id)
    expected = java_hashmap_order([j.member_id for j in joins])
    assert [m["member_id"] for m in leader.members] == expected


def test_first_member_to_complete_its_join_is_the_initial_leader(ctx):
    # KIP-394: the first MEMBER_ID_REQUIRED does not make a leader, the first full join does.
    first_pending = ctx.join_new_dynamic(version=4)
    second_pending = ctx.join_new_dynamic(version=4)
    second = ctx.join(member_id=second_pending, version=4, rebalance_ms=500)
    first = ctx.join(member_id=first_pending, version=4, rebalance_ms=500)
    ctx.sleep(3000)
    assert first.leader_id == second.leader_id == second_pending


def test_leader_that_did_not_rejoin_is_replaced_by_first_joined_member_in_hashmap_order():
    # maybeElectNewJoinedLeader: the first member in `members` iteration order that is awaiting join.
    ctx = make_ctx(group_id="group-1")  # its member ids iterate in a different order than they joined
    kw = dict(version=3, session_ms=30_000, rebalance_ms=3_000)
    joins = [ctx.join(**kw) for _ in range(4)]
    ctx.sleep(3000)
    leader_id = joins[0].leader_id
    assert leader_id == joins[0].member_id
    ctx.sync(leader_id, 1)
    others = [j.member_id for j in joins if j.member_id != leader_id]
    expected_leader = next(m for m in java_hashmap_order([j.member_id for j in joins]) if m != leader_id)
    assert expected_leader != others[0], "scenario must distinguish HashMap order from join order"
    # The followers rejoin with a new subscription (a rebalance); the leader never does.
    rejoins = [ctx.join(member_id=m, topics=("foo", "bar"), **kw) for m in others]
    assert ctx.state == "PreparingRebalance"
    ctx.sleep(3000)  # the rebalance timeout: the old leader is dropped
    assert all(r.leader_id == expected_leader for r in rejoins)
    assert ctx.group.leader_id == expected_leader


# -- protocol selection (ClassicGroup.selectProtocol, supportsProtocols) -------------------------------------

@pytest.mark.parametrize("first,second", [
    (("range", "roundrobin"), ("roundrobin", "range")),
    (("roundrobin", "range"), ("range", "roundrobin")),
])
def test_vote_tie_between_range_and_roundrobin_picks_range(ctx, first, second):
    # Votes are counted in a java.util.HashMap; stream().max keeps the first maximum: range (bucket 9)
    # iterates before roundrobin (bucket 10).
    ctx.join(names=first, version=3, rebalance_ms=500)
    ctx.join(names=second, version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "range"


def test_vote_tie_between_sticky_and_range_picks_sticky(ctx):
    ctx.join(names=("range", "sticky"), version=3, rebalance_ms=500)
    ctx.join(names=("sticky", "range"), version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "sticky"


def test_vote_majority_wins_over_hashmap_order(ctx):
    ctx.join(names=("range", "roundrobin"), version=3, rebalance_ms=500)
    ctx.join(names=("roundrobin", "range"), version=3, rebalance_ms=500)
    ctx.join(names=("roundrobin", "range"), version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "roundrobin"


def test_members_vote_only_for_protocols_every_member_supports(ctx):
    ctx.join(names=("roundrobin", "range"), version=3, rebalance_ms=500)
    ctx.join(names=("range",), version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "range"


# -- group.max.size (acceptJoiningMember) --------------------------------------------------------------------

def test_joins_beyond_max_size_are_rejected():
    # testJoinGroupShouldReceiveErrorIfGroupOverMaxSize
    ctx = make_ctx(group_max_size=10)
    joins = [ctx.join(version=3) for _ in range(10)]
    assert not any(j.done for j in joins)
    rejected = ctx.join(version=3)
    assert rejected.error == "GROUP_MAX_SIZE_REACHED" and rejected.member_id == ""


def test_dynamic_members_with_required_member_id_and_max_size():
    # testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember
    ctx = make_ctx(group_max_size=10, group_initial_rebalance_delay_ms=50)
    ids = [ctx.join_new_dynamic(version=4) for _ in range(11)]
    assert ctx.state == "Empty" and len(ctx.group.pending_join_members) == 11
    second = [ctx.join(member_id=m, version=4) for m in ids]
    ctx.sleep(50)
    ctx.sleep(50)
    assert [j.error for j in second] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"]
    assert len(ctx.group.members) == 10 and ctx.group.pending_join_members == {}
    assert ctx.state == "CompletingRebalance"
    third = [ctx.join(member_id=m, version=4) for m in ids]
    assert [j.error for j in third] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"]


def test_static_members_with_max_size():
    # testStaticMembersJoinGroupWithMaxSize
    ctx = make_ctx(group_max_size=10, group_initial_rebalance_delay_ms=50)
    first = [ctx.join(instance_id=f"instance-id-{i}") for i in range(11)]
    assert len(ctx.group.members) == 10 and ctx.group.num_members_awaiting_join == 10
    ctx.sleep(50)
    ctx.sleep(50)
    assert [j.error for j in first] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"]
    second = [ctx.join(member_id=j.member_id, instance_id=f"instance-id-{i}") for i, j in enumerate(first)]
    assert [j.error for j in second] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"]
    assert ctx.state == "CompletingRebalance" and ctx.group.num_members_awaiting_join == 0


def test_members_can_rejoin_while_rebalancing_at_max_size():
    # testDynamicMembersCanRejoinGroupWithMaxSizeWhileRebalancing
    ctx = make_ctx(group_max_size=10, group_initial_rebalance_delay_ms=50)
    ids = [ctx.join_new_dynamic(version=4) for _ in range(11)]
    [ctx.join(member_id=m, version=4) for m in ids]
    assert len(ctx.group.members) == 10 and ctx.state == "PreparingRebalance"
    third = [ctx.join(member_id=m, version=4) for m in ids]
    ctx.sleep(50)
    ctx.sleep(50)
    assert [j.error for j in third] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"]
    assert ctx.state == "CompletingRebalance" and ctx.group.num_members_awaiting_join == 0


def test_last_members_to_rejoin_are_kicked_out_when_max_size_was_lowered():
    # testLastJoiningMembersAreKickedOutWhenRejoiningGroupWithMaxSize (the cap is lowered under a group)
    ctx = make_ctx(group_initial_rebalance_delay_ms=50)
    joins = [ctx.join(version=3, rebalance_ms=10_000) for _ in range(12)]
    ctx.sleep(50)
    ctx.sleep(50)
    leader = joins[0].leader_id
    ctx.sync(leader, 1)
    ctx.runtime.reconfigure(dataclasses.replace(ctx.config, group_max_size=10))
    rejoins = [ctx.join(member_id=j.member_id, version=3, rebalance_ms=10_000)
               for j in sorted(joins, key=lambda j: j.member_id != leader)]
    assert len(ctx.group.members) == 10 and ctx.group.num_members_awaiting_join == 10
    ctx.sleep(10_000)
    assert [r.error for r in rejoins] == ["NONE"] * 10 + ["GROUP_MAX_SIZE_REACHED"] * 2
    assert ctx.state == "CompletingRebalance"
    assert set(ctx.member_ids) == {r.member_id for r in rejoins[:10]}


def test_vote_three_way_tie_follows_hashmap_order(ctx):
    # Buckets at capacity 16: sticky 8, range 9, roundrobin 10.
    ctx.join(names=("range", "roundrobin", "sticky"), version=3, rebalance_ms=500)
    ctx.join(names=("roundrobin", "sticky", "range"), version=3, rebalance_ms=500)
    ctx.join(names=("sticky", "range", "roundrobin"), version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "sticky"


def test_vote_tie_with_cooperative_sticky_picks_range(ctx):
    # cooperative-sticky hashes to bucket 15, after every built-in name.
    ctx.join(names=("cooperative-sticky", "range"), version=3, rebalance_ms=500)
    ctx.join(names=("range", "cooperative-sticky"), version=3, rebalance_ms=500)
    ctx.sleep(3000)
    assert ctx.group.protocol_name == "range"


def test_rejoin_with_same_metadata_does_not_update_timeouts(ctx):
    # The immediate-answer branches (CompletingRebalance, Stable follower) do not call updateMember.
    join = ctx.join_and_complete(session_ms=5000, rebalance_ms=5000)
    rejoin = ctx.join(member_id=join.member_id, version=3, session_ms=9000, rebalance_ms=9000)
    assert rejoin.error == "NONE" and rejoin.generation_id == 1
    member = ctx.group.member(join.member_id)
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (5000, 5000)


def test_protocol_type_comes_from_the_first_member_of_a_member_less_group(ctx):
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    assert ctx.state == "Empty" and ctx.group.protocol_type == "consumer"
    join = ctx.join(protocol_type="connect", version=3)
    ctx.sleep(3000)
    assert join.error == "NONE" and join.protocol_type == "connect"


def test_static_rejoin_with_unknown_member_id_at_max_size_is_rejected():
    # acceptJoiningMember(group, "") in Stable: the member id "" is not a member and the group is full.
    ctx = make_ctx(group_max_size=2)
    result = ctx.static_members_join_and_rebalance()
    join = ctx.join(instance_id="leader-instance-id", names=("range", "roundrobin"))
    assert join.error == "GROUP_MAX_SIZE_REACHED" and join.member_id == ""
    assert ctx.group.static_members["leader-instance-id"] == result.leader_id and ctx.state == "Stable"


def test_leader_repick_uses_the_member_map_capacity_high_water_mark():
    # The member HashMap grew to 32 buckets with 13 members and never shrinks: after the leader and nine
    # others leave, the first key is found with 32 buckets, not 16.
    ctx = make_ctx(group_id="group-3")
    joins = [ctx.join(version=3, rebalance_ms=500, session_ms=30_000) for _ in range(13)]
    ctx.sleep(3000)
    ids = [j.member_id for j in joins]
    leader = joins[0].leader_id
    ctx.sync(leader, 1)
    stay = [m for m in ids if m != leader][-3:]
    ctx.leave(*[m for m in ids if m not in stay])
    expected = [m for m in java_hashmap_order(ids, capacity=32) if m in stay]
    assert expected[0] != [m for m in java_hashmap_order(ids, capacity=16) if m in stay][0]
    assert ctx.group.leader_id == expected[0]
    assert ctx.member_ids == expected


def test_duplicate_protocol_names_are_rejected_at_input():
    # Kafka's coordinator cannot select a protocol when one member lists a name twice (its vote throws after
    # the generation was bumped); real clients refuse such configs, so the row is a reject, not a request.
    with pytest.raises(EventError, match="'range' more than once"):
        parse_event({"ts": 0, "group_id": "g", "type": "JOIN_GROUP", "session_timeout_ms": 10_000,
                     "protocol_type": "consumer",
                     "protocols": [{"name": "range", "topics": ["foo"]}, {"name": "range", "topics": ["foo"]}]})


def test_server_error_join_response_carries_no_member_id(ctx):
    member_id = ctx.join_new_dynamic(version=4)
    join = ctx.join(member_id=member_id, instance_id="group-instance-id", version=9)
    assert (join.error, join.member_id, join.generation_id) == ("UNKNOWN_SERVER_ERROR", "", -1)
