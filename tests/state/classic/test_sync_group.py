"""SyncGroup, ported from Kafka's `testSyncGroup*` / `testLeaderFailureInSyncGroup` cases and
checked against GroupMetadataManager.classicGroupSyncToClassicGroup / validateSyncGroup /
propagateAssignment."""

from __future__ import annotations

import pytest

from tests.state.conftest import make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def two_member_completing(ctx):
    """A Stable single-member group, then a second member joins and the leader rejoins: both are in
    CompletingRebalance at generation 2 (testSyncGroupFollowerAfterLeader's setup)."""
    leader = ctx.dynamic_leader_stable(rebalance_ms=10_000, session_ms=5_000)
    follower = ctx.join(version=3, rebalance_ms=10_000, session_ms=5_000)
    rejoin = ctx.join(member_id=leader.member_id, version=3, rebalance_ms=10_000, session_ms=5_000)
    assert follower.generation_id == rejoin.generation_id == 2
    assert follower.leader_id == leader.member_id and ctx.state == "CompletingRebalance"
    return leader.member_id, follower.member_id


# -- validation (validateSyncGroup, in its order) ------------------------------------------------------------

def test_empty_group_id_is_invalid():
    ctx = make_ctx(group_id="")
    assert ctx.sync("member-id", 1).error == "INVALID_GROUP_ID"


def test_unknown_group_is_unknown_member(ctx):
    # testSyncGroupFromUnknownGroup
    sync = ctx.sync("member-id", 1)
    assert sync.error == "UNKNOWN_MEMBER_ID" and sync.assignment == []


def test_empty_group_is_unknown_member(ctx):
    ctx.join_new_dynamic()
    assert ctx.state == "Empty"
    assert ctx.sync("member-id", 0).error == "UNKNOWN_MEMBER_ID"


def test_unknown_member_in_existing_group(ctx):
    # testSyncGroupFromUnknownMember
    join = ctx.join_and_complete(instance_id="leader-instance-id")
    sync = ctx.sync(join.member_id, join.generation_id, assignments={join.member_id: [("foo", [0])]})
    assert sync.error == "NONE" and sync.assignment == [{"topic": "foo", "partitions": [0]}]
    unknown = ctx.sync("unknown-member-id", join.generation_id)
    assert unknown.error == "UNKNOWN_MEMBER_ID" and unknown.assignment == []


def test_wrong_generation_is_illegal_generation(ctx):
    # testSyncGroupFromIllegalGeneration
    join = ctx.join_and_complete(instance_id="leader-instance-id")
    assert ctx.sync(join.member_id, join.generation_id + 1).error == "ILLEGAL_GENERATION"


def test_member_validation_comes_before_the_generation_check(ctx):
    join = ctx.join_and_complete(instance_id="leader-instance-id")
    assert ctx.sync(join.member_id, 99, instance_id="other-instance").error == "UNKNOWN_MEMBER_ID"
    assert ctx.sync("invalid-member-id", 99, instance_id="leader-instance-id").error == "FENCED_INSTANCE_ID"


@pytest.mark.parametrize("protocol_type,protocol_name,error,expected_type,expected_name", [
    ("protocolType", None, "INCONSISTENT_GROUP_PROTOCOL", None, None),
    (None, "protocolName", "INCONSISTENT_GROUP_PROTOCOL", None, None),
    (None, None, "NONE", "consumer", "range"),
    ("consumer", "range", "NONE", "consumer", "range"),
])
def test_protocol_type_and_name_are_checked_when_given(ctx, protocol_type, protocol_name, error,
                                                       expected_type, expected_name):
    # testSyncGroupProtocolTypeAndNameWith (a null field is not checked)
    kw = dict(names=("range", "roundrobin"), rebalance_ms=500)
    leader = ctx.join(instance_id="leader-instance-id", **kw)
    follower = ctx.join(instance_id="follower-instance-id", **kw)
    ctx.sleep(3000)
    assert leader.error == follower.error == "NONE"
    fields = {k: v for k, v in (("protocol_type", protocol_type), ("protocol_name", protocol_name)) if v}
    leader_sync = ctx.sync(leader.member_id, leader.generation_id, assignments={leader.member_id: []}, **fields)
    follower_sync = ctx.sync(follower.member_id, follower.generation_id, **fields)
    for sync in (leader_sync, follower_sync):
        assert (sync.error, sync.protocol_type, sync.protocol_name) == (error, expected_type, expected_name)


def test_sync_while_preparing_rebalance_is_rebalance_in_progress(ctx):
    leader = ctx.dynamic_leader_stable()
    ctx.join(version=3)
    assert ctx.state == "PreparingRebalance"
    sync = ctx.sync(leader.member_id, 1)
    assert sync.error == "REBALANCE_IN_PROGRESS" and sync.protocol_type is None


def test_sync_with_the_previous_generation_after_the_join_completes_is_illegal(ctx):
    leader, follower = two_member_completing(ctx)
    assert ctx.sync(follower, 1).error == "ILLEGAL_GENERATION"


# -- CompletingRebalance: parking and the leader's assignment ------------------------------------------------

def test_follower_after_leader_gets_its_stored_assignment(ctx):
    # testSyncGroupFollowerAfterLeader
    leader, follower = two_member_completing(ctx)
    plan = {leader: [("foo", [0])], follower: [("foo", [1])]}
    leader_sync = ctx.sync(leader, 2, assignments=plan)
    assert leader_sync.error == "NONE" and leader_sync.assignment == [{"topic": "foo", "partitions": [0]}]
    assert ctx.state == "Stable"
    follower_sync = ctx.sync(follower, 2)
    assert follower_sync.error == "NONE" and follower_sync.assignment == [{"topic": "foo", "partitions": [1]}]


def test_follower_before_leader_is_parked_until_the_assignment_is_stored(ctx):
    # testSyncGroupLeaderAfterFollower
    leader, follower = two_member_completing(ctx)
    follower_sync = ctx.sync(follower, 2)
    assert not follower_sync.done
    records = len(ctx.rows("group_metadata"))
    leader_sync = ctx.sync(leader, 2, assignments={leader: [("foo", [0])], follower: [("foo", [1])]})
    assert leader_sync.error == follower_sync.error == "NONE"
    assert follower_sync.assignment == [{"topic": "foo", "partitions": [1]}]
    assert follower_sync.protocol_type == "consumer" and follower_sync.protocol_name == "range"
    [record] = ctx.rows("group_metadata")[records:]
    assert record["generation_id"] == 2 and record["leader_id"] == leader
    assert {m["member_id"] for m in record["members"]} == {leader, follower}
    assert ctx.state == "Stable"


def test_leader_assignment_fills_missing_members_with_empty_and_ignores_unknown_ids(ctx):
    leader, follower = two_member_completing(ctx)
    ctx.sync(leader, 2, assignments={leader: [("foo", [0])], "not-a-member": [("foo", [1])]})
    record = ctx.rows("group_metadata")[-1]
    assert {m["member_id"] for m in record["members"]} == {leader, follower}
    by_id = {m["member_id"]: m["assignment"] for m in record["members"]}
    assert by_id[follower] == b""
    sync = ctx.sync(follower, 2)
    assert sync.error == "NONE" and sync.assignment == []


def test_followers_sync_does_not_store_anything(ctx):
    leader, follower = two_member_completing(ctx)
    records = len(ctx.rows("group_metadata"))
    ctx.sync(follower, 2, assignments={follower: [("foo", [0, 1])]})
    assert len(ctx.rows("group_metadata")) == records and ctx.state == "CompletingRebalance"


def test_parked_sync_restarts_the_session_when_answered(ctx):
    leader, follower = two_member_completing(ctx)
    ctx.sleep(4000)
    ctx.sync(follower, 2)
    ctx.sleep(500)
    ctx.sync(leader, 2)
    assert ctx.heartbeat_deadline(follower) == ctx.time + 5000


def test_sync_in_stable_does_not_restart_the_session(ctx):
    # Java differs from Scala here: the Stable branch only answers with the stored assignment.
    leader, follower = two_member_completing(ctx)
    ctx.sync(leader, 2)
    deadline = ctx.heartbeat_deadline(follower)
    ctx.sleep(1000)
    assert ctx.sync(follower, 2).error == "NONE"
    assert ctx.heartbeat_deadline(follower) == deadline


def test_leader_failure_in_sync_group(ctx):
    # testLeaderFailureInSyncGroup: the leader never syncs; when it expires the parked follower gets
    # REBALANCE_IN_PROGRESS and the group starts a new rebalance without it.
    leader, follower = two_member_completing(ctx)
    follower_sync = ctx.sync(follower, 2)
    assert not follower_sync.done
    ctx.sleep(5000)
    assert follower_sync.error == "REBALANCE_IN_PROGRESS"
    assert ctx.member_ids == [follower] and ctx.state == "PreparingRebalance"


def test_last_pending_sync_cancels_the_sync_timer(ctx):
    leader, follower = two_member_completing(ctx)
    assert ctx.timer_deadline("sync") is not None
    ctx.sync(leader, 2)
    assert ctx.timer_deadline("sync") is not None  # the follower still has to sync
    ctx.sync(follower, 2)
    assert ctx.timer_deadline("sync") is None


def test_stable_transition_happens_only_after_the_leader_sync(ctx):
    leader, follower = two_member_completing(ctx)
    ctx.sync(follower, 2)
    assert ctx.state == "CompletingRebalance"
    ctx.sync(leader, 2)
    assert ctx.transitions()[-1][:2] == ("CompletingRebalance", "Stable")


def test_parked_sync_answered_with_an_error_carries_no_protocol(ctx):
    # GroupMetadataManager.propagateAssignment sets protocolName/protocolType only when error == NONE.
    leader, follower = two_member_completing(ctx)
    follower_sync = ctx.sync(follower, 2)
    ctx.leave(leader)  # CompletingRebalance -> prepareRebalance -> resetAndPropagateAssignmentWithError
    assert follower_sync.error == "REBALANCE_IN_PROGRESS" and follower_sync.assignment == []
    assert follower_sync.protocol_type is None and follower_sync.protocol_name is None
