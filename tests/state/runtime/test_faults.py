"""Coordinator faults: failed appends of the group's records (COORDINATOR_FAULT write_failure) and the
group's partition moving to another coordinator (COORDINATOR_FAULT move). Ported from Kafka's
`testSyncGroupAsLeaderAppendFailureTransformsError`, `testJoinGroupAppendErrorConversion`,
`testReplaceStaticMemberInStableStateErrors`, `testStaticMemberRejoin...PersistenceFailure`,
`testGenerateRecordsOnNewClassicGroupFailureTransformsError`, `testOnLoaded*`,
`testClassicGroupOnUnloaded*`, `testReplayGroupMetadataRecords`, `testRequestHandlingWhileLoadingInProgress`
(Scala) and checked against GroupMetadataManager.appendGroupMetadataErrorToResponseError,
CoordinatorOperationExceptionHelper.handleOperationException, GroupCoordinatorService (heartbeat while
loading), GroupMetadataManager.onUnloaded / onLoaded / replay(GroupMetadataKey, GroupMetadataValue)."""

from __future__ import annotations

import dataclasses

import pytest

from tests.state.conftest import make_ctx

APPEND_ERRORS = [
    ("NOT_ENOUGH_REPLICAS", "COORDINATOR_NOT_AVAILABLE"),
    ("UNKNOWN_TOPIC_OR_PARTITION", "COORDINATOR_NOT_AVAILABLE"),
    ("REQUEST_TIMED_OUT", "COORDINATOR_NOT_AVAILABLE"),
    ("NOT_LEADER_OR_FOLLOWER", "NOT_COORDINATOR"),
    ("KAFKA_STORAGE_ERROR", "NOT_COORDINATOR"),
    ("MESSAGE_TOO_LARGE", "UNKNOWN_SERVER_ERROR"),
    ("RECORD_LIST_TOO_LARGE", "UNKNOWN_SERVER_ERROR"),
    ("INVALID_FETCH_SIZE", "UNKNOWN_SERVER_ERROR"),
    ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
    ("UNKNOWN_SERVER_ERROR", "UNKNOWN_SERVER_ERROR"),
]


def fail_next_write(ctx, error="NOT_ENOUGH_REPLICAS", count=1):
    ctx.fault(fault="write_failure", error=error, count=count)


def move(ctx, load_delay_ms=0):
    ctx.fault(fault="move", load_delay_ms=load_delay_ms)


def completing_pair(ctx):
    leader = ctx.dynamic_leader_stable(rebalance_ms=10_000, session_ms=5_000)
    follower = ctx.join(version=3, rebalance_ms=10_000, session_ms=5_000)
    ctx.join(member_id=leader.member_id, version=3, rebalance_ms=10_000, session_ms=5_000)
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 2
    return leader.member_id, follower.member_id


# -- write failures ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("append_error,response_error", APPEND_ERRORS)
def test_failed_leader_sync_store_is_mapped_and_starts_a_new_rebalance(ctx, append_error, response_error):
    # testSyncGroupAsLeaderAppendFailureTransformsError / testJoinGroupAppendErrorConversion
    leader, follower = completing_pair(ctx)
    follower_sync = ctx.sync(follower, 2)
    records = len(ctx.rows("group_metadata"))
    fail_next_write(ctx, append_error)
    leader_sync = ctx.sync(leader, 2, assignments={leader: [("foo", [0])], follower: [("foo", [1])]})
    assert leader_sync.error == follower_sync.error == response_error
    assert leader_sync.assignment == follower_sync.assignment == []
    assert len(ctx.rows("group_metadata")) == records
    assert ctx.state == "PreparingRebalance" and ctx.group.generation_id == 2
    assert all(m.assignment == b"" for m in ctx.group.all_members())


def test_failed_leader_sync_of_a_single_member_group(ctx):
    join = ctx.join_and_complete(instance_id="leader-instance-id")
    fail_next_write(ctx, "NOT_LEADER_OR_FOLLOWER")
    sync = ctx.sync(join.member_id, 1)
    assert sync.error == "NOT_COORDINATOR"
    assert ctx.state == "PreparingRebalance"
    rejoin = ctx.join(member_id=join.member_id, instance_id="leader-instance-id")
    assert rejoin.error == "NONE" and rejoin.generation_id == 2


def test_failed_commit_append_fails_every_partition(ctx):
    [member_id] = ctx.stable_group(1)
    fail_next_write(ctx, "NOT_LEADER_OR_FOLLOWER")
    commit = ctx.send("OFFSET_COMMIT", api_version=9, member_id=member_id, generation_id=1, offsets=[
        {"topic": "foo", "partition": 0, "offset": 1},
        {"topic": "foo", "partition": 1, "offset": 2, "metadata": "x" * 4097}])
    assert [r["error"] for r in commit.results] == ["NOT_COORDINATOR", "NOT_COORDINATOR"]
    assert ctx.committed() == {} and ctx.rows("offsets") == []
    assert ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1).error == "NONE"


def test_failed_static_replacement_store_rolls_back(ctx):
    # testReplaceStaticMemberInStableStateErrors
    old = ctx.join_and_complete(instance_id="group-instance-id", names=("range",), rebalance_ms=4000,
                                session_ms=3000)
    ctx.sync(old.member_id, 1)
    fail_next_write(ctx, "UNKNOWN_TOPIC_OR_PARTITION")
    new = ctx.join(instance_id="group-instance-id", rebalance_ms=7000, session_ms=6000, protocols=[
        {"name": "range", "topics": ["foo"]}, {"name": "roundrobin", "topics": ["bar"]}])
    assert (new.error, new.member_id, new.generation_id, new.protocol_type, new.protocol_name,
            new.leader_id, new.skip_assignment) == \
        ("COORDINATOR_NOT_AVAILABLE", "", 1, "consumer", "range", old.member_id, False)
    assert not new.members
    assert ctx.group.static_members["group-instance-id"] == old.member_id
    member = ctx.group.member(old.member_id)
    assert (member.rebalance_timeout_ms, member.session_timeout_ms) == (4000, 3000)
    assert member.protocol_names() == ["range"]
    assert ctx.member_ids == [old.member_id] and ctx.group.leader_id == old.member_id
    assert ctx.state == "Stable" and ctx.group.generation_id == 1
    assert ctx.heartbeat_deadline(old.member_id) == ctx.time + 3000
    assert ctx.heartbeat(old.member_id, 1, instance_id="group-instance-id").error == "NONE"


def test_old_follower_carries_on_after_a_failed_replacement(ctx):
    # testStaticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchangedPersistenceFailure
    result = ctx.static_members_join_and_rebalance()
    fail_next_write(ctx, "MESSAGE_TOO_LARGE")
    failed = ctx.join(instance_id="follower-instance-id", names=("range",))
    assert (failed.error, failed.generation_id, failed.member_id, failed.leader_id, failed.protocol_name) == \
        ("UNKNOWN_SERVER_ERROR", 1, "", result.leader_id, "range")
    assert ctx.state == "Stable"
    follower = ctx.join(member_id=result.follower_id, instance_id="follower-instance-id", names=("range",))
    leader = ctx.join(member_id=result.leader_id, instance_id="leader-instance-id", names=("range",))
    assert follower.error == leader.error == "NONE" and leader.generation_id == 2
    assert ctx.sync(result.leader_id, 2, instance_id="leader-instance-id").error == "NONE"
    assert ctx.sync(result.follower_id, 2, instance_id="follower-instance-id").error == "NONE"
    assert ctx.state == "Stable"


def test_failed_group_creation_for_a_static_join(ctx):
    # testGenerateRecordsOnNewClassicGroupFailureTransformsError: the new group is reverted.
    fail_next_write(ctx, "NOT_LEADER_OR_FOLLOWER")
    join = ctx.join(instance_id="group-instance-id")
    assert join.error == "NOT_COORDINATOR"
    assert ctx.group is None and ctx.rows("group_metadata") == []


def test_failed_group_creation_for_a_v4_dynamic_join_keeps_member_id_required(ctx):
    # The MEMBER_ID_REQUIRED answer was already given; the group (and its pending member) are reverted.
    fail_next_write(ctx, "NOT_ENOUGH_REPLICAS")
    first = ctx.join(version=4)
    assert first.error == "MEMBER_ID_REQUIRED" and ctx.group is None
    assert ctx.join(member_id=first.member_id, version=4).error == "UNKNOWN_MEMBER_ID"


def test_write_failure_count_fails_that_many_appends(ctx):
    [member_id] = ctx.stable_group(1)
    fail_next_write(ctx, "REQUEST_TIMED_OUT", count=2)
    assert ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1).error == "COORDINATOR_NOT_AVAILABLE"
    assert ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1).error == "COORDINATOR_NOT_AVAILABLE"
    assert ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1).error == "NONE"


def test_failed_sweep_is_retried_at_the_next_tick():
    ctx = make_ctx(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    ctx.commit({("foo", 0): 1})
    ctx.sleep(59_000)
    fail_next_write(ctx, "NOT_ENOUGH_REPLICAS")
    ctx.sleep(1000)
    assert ctx.committed() == {("foo", 0): 1}
    ctx.sleep(10_000)
    assert ctx.committed() == {} and ctx.group is None


def test_failed_empty_group_record_is_only_logged(ctx):
    # completeClassicGroupJoin only warns: in memory the group is Empty at generation 2, but after a
    # failover the last persisted generation (Stable, with its member) becomes active again.
    [member_id] = ctx.stable_group(1)
    fail_next_write(ctx, "NOT_ENOUGH_REPLICAS")
    ctx.leave(member_id)
    assert ctx.state == "Empty" and ctx.group.generation_id == 2
    assert ctx.rows("group_metadata")[-1]["generation_id"] == 1
    move(ctx)
    assert ctx.state == "Stable" and ctx.group.generation_id == 1 and ctx.member_ids == [member_id]


@pytest.mark.parametrize("version", [3, 9])
def test_rejected_join_that_created_a_group_keeps_its_error_when_the_record_fails(ctx, version):
    # classicGroupJoinToClassicGroup completes the response future with INCONSISTENT_GROUP_PROTOCOL, then
    # appends the empty group record; the append's failure handler calls responseFuture.complete(...) on an
    # already-completed future (a no-op) and the group is reverted.
    fail_next_write(ctx, "NOT_ENOUGH_REPLICAS")
    join = ctx.join(protocol_type="", version=version)
    assert join.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.group is None


def test_failed_standalone_commit_does_not_create_the_group(ctx):
    # OffsetMetadataManager.validateOffsetCommit creates the group with getOrMaybeCreateClassicGroup in the
    # `groups` TimelineHashMap; CoordinatorRuntime reverts it when the append fails.
    fail_next_write(ctx, "NOT_ENOUGH_REPLICAS")
    assert ctx.commit({("foo", 0): 1}).error == "COORDINATOR_NOT_AVAILABLE"
    assert ctx.group is None
    commit = ctx.commit({("foo", 0): 1}, member_id="member", generation_id=1, version=9)
    assert commit.error == "GROUP_ID_NOT_FOUND"


# -- coordinator moves ---------------------------------------------------------------------------------------

def test_parked_join_gets_not_coordinator_on_unload(ctx):
    # testClassicGroupOnUnloadedEmptyAndPreparingRebalance
    ctx.dynamic_leader_stable()
    other_id = ctx.join_new_dynamic()
    other = ctx.join(member_id=other_id)
    assert not other.done
    move(ctx, load_delay_ms=100)
    assert (other.error, other.member_id) == ("NOT_COORDINATOR", other_id)
    assert ctx.transitions()[-1][:2] == ("PreparingRebalance", "Dead")


def test_parked_sync_gets_not_coordinator_on_unload(ctx):
    # testClassicGroupOnUnloadedCompletingRebalance
    leader, follower = completing_pair(ctx)
    sync = ctx.sync(follower, 2)
    move(ctx, load_delay_ms=100)
    assert sync.error == "NOT_COORDINATOR"


def test_requests_during_load_get_load_in_progress_except_heartbeat(ctx):
    # Heartbeat is blindly acknowledged while loading (GroupCoordinatorService.heartbeat).
    [member_id] = ctx.stable_group(1)
    move(ctx, load_delay_ms=1000)
    assert ctx.group is None
    assert ctx.join(member_id=member_id).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert ctx.sync(member_id, 1).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert ctx.leave(member_id).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert ctx.fetch({"foo": [0]}).error == "COORDINATOR_LOAD_IN_PROGRESS"
    assert ctx.heartbeat(member_id, 1).error == "NONE"
    assert ctx.heartbeat("anybody", 42).error == "NONE"
    ctx.sleep(1000)
    assert ctx.state == "Stable" and ctx.heartbeat(member_id, 1).error == "NONE"


def test_group_reloads_stable_at_the_last_persisted_generation(ctx):
    # testReplayGroupMetadataRecords / testOnLoadedSchedulesClassicGroupMemberHeartbeats: generation 2 was
    # only in memory (CompletingRebalance writes nothing), so the group comes back at generation 1.
    leader = ctx.join_and_complete(session_ms=5000)
    ctx.sync(leader.member_id, 1, assignments={leader.member_id: [("foo", [0, 1])]})
    ctx.join(member_id=leader.member_id, session_ms=5000)
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 2
    move(ctx, load_delay_ms=500)
    ctx.sleep(500)
    assert ctx.state == "Stable" and ctx.group.generation_id == 1
    assert ctx.member_ids == [leader.member_id] and ctx.group.leader_id == leader.member_id
    assert ctx.group.protocol_name == "range" and ctx.group.protocol_type == "consumer"
    assert ctx.heartbeat_deadline(leader.member_id) == ctx.time + 5000
    assert ctx.heartbeat(leader.member_id, 2).error == "ILLEGAL_GENERATION"
    sync = ctx.sync(leader.member_id, 1)
    assert sync.error == "NONE" and sync.assignment == [{"topic": "foo", "partitions": [0, 1]}]


def test_static_members_and_assignments_are_reloaded(ctx):
    result = ctx.static_members_join_and_rebalance()
    move(ctx)
    assert ctx.state == "Stable" and ctx.group.static_members == {
        "leader-instance-id": result.leader_id, "follower-instance-id": result.follower_id}
    assert ctx.sync(result.follower_id, 1, instance_id="follower-instance-id").assignment == \
        result.follower_assignment
    assert ctx.join(instance_id="leader-instance-id", names=("range", "roundrobin")).generation_id == 1


def test_empty_group_reloads_empty_and_keeps_its_expiry_base():
    ctx = make_ctx(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    [member_id] = ctx.stable_group(1)
    ctx.commit({("foo", 0): 1}, member_id=member_id, generation_id=1)
    ctx.sleep(2000)
    ctx.leave(member_id)                   # Empty at t = 5000: the offset is due at 65000 (tick 70000)
    move(ctx, load_delay_ms=30_000)
    ctx.sleep(30_000)
    assert ctx.state == "Empty" and ctx.group.generation_id == 2 and ctx.group.protocol_type == "consumer"
    assert ctx.committed() == {("foo", 0): 1}
    ctx.sleep(69_999 - ctx.time)
    assert ctx.committed() == {("foo", 0): 1}
    ctx.sleep(1)
    assert ctx.committed() == {} and ctx.group is None


def test_offsets_without_a_group_record_reload_as_a_simple_group(ctx):
    ctx.commit({("foo", 0): 1})
    move(ctx)
    assert ctx.state == "Empty" and ctx.group.protocol_type is None
    assert ctx.committed() == {("foo", 0): 1}


def test_nothing_to_reload(ctx):
    move(ctx)
    assert ctx.group is None


def test_group_over_max_size_rebalances_after_load(ctx):
    # testOnLoadedExceedGroupMaxSizeTriggersRebalance (the cap was lowered while the group was away)
    result = ctx.static_members_join_and_rebalance()
    ctx.runtime.reconfigure(dataclasses.replace(ctx.config, group_max_size=1))
    move(ctx)
    assert ctx.state == "PreparingRebalance" and len(ctx.group.members) == 2
    assert {result.leader_id, result.follower_id} == set(ctx.member_ids)


def test_a_second_move_while_loading_is_ignored(ctx):
    ctx.stable_group(1)
    move(ctx, load_delay_ms=1000)
    ctx.sleep(500)
    move(ctx, load_delay_ms=5000)
    ctx.sleep(500)
    assert ctx.state == "Stable"


def test_commit_during_load_fails_every_partition(ctx):
    # OffsetCommitRequest.getErrorResponse puts the (COORDINATOR_LOAD_IN_PROGRESS) error on every partition.
    [member_id] = ctx.stable_group(1)
    move(ctx, load_delay_ms=1000)
    commit = ctx.commit({("foo", 0): 1, ("foo", 1): 2}, member_id=member_id, generation_id=1)
    assert [r["error"] for r in commit.results] == ["COORDINATOR_LOAD_IN_PROGRESS"] * 2


def test_loaded_members_only_know_the_selected_protocol(ctx):
    # replay(GroupMetadataKey, ...) rebuilds each member with one protocol (the selected one): a follower
    # rejoining with its full protocol list no longer "matches" and triggers a rebalance.
    result = ctx.static_members_join_and_rebalance()
    move(ctx)
    assert ctx.group.member(result.follower_id).protocol_names() == ["range"]
    rejoin = ctx.join(member_id=result.follower_id, instance_id="follower-instance-id",
                      names=("range", "roundrobin"))
    assert not rejoin.done and ctx.state == "PreparingRebalance"


def test_join_answered_while_loading_carries_the_response_defaults(ctx):
    # GroupCoordinatorService.joinGroup(...).exceptionally -> handleOperationException ->
    # new JoinGroupResponseData().setErrorCode(error.code()); docs/tables.md: JoinGroup member_id is ""
    # and generation_id -1 on errors, leader_id "" on errors.
    [member_id] = ctx.stable_group(1)
    move(ctx, load_delay_ms=1000)
    join = ctx.join(member_id=member_id)
    assert (join.error, join.member_id, join.generation_id, join.leader_id) == \
        ("COORDINATOR_LOAD_IN_PROGRESS", "", -1, "")


def test_sync_answered_while_loading_has_an_empty_assignment(ctx):
    [member_id] = ctx.stable_group(1)
    move(ctx, load_delay_ms=1000)
    sync = ctx.sync(member_id, 1)
    assert sync.error == "COORDINATOR_LOAD_IN_PROGRESS" and sync.assignment == []
