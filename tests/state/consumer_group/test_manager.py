"""GroupRuntime hosting a KIP-848 consumer group, driven by CONSUMER_GROUP_HEARTBEAT input rows
(state/consumer_group/manager.py): the responses, the rows of generations / assignments / group_states /
members, and the log, whose records replayed give the same group."""

from __future__ import annotations

import copy

import pytest

from state.config import CoordinatorConfig
from state.runtime.result import IN_STATE
from state.consumer_group.group import ConsumerGroup
from state.consumer_group.topic_id import TopicId
from state.events import parse_event
from state.runtime.output import Output
from state.records.record_bytes import batch_size
from state.records.group_log import GroupMetadataRecord
from state.runtime.group_runtime import GroupRuntime
from tests.state.harness import GroupContext

FOO_ID = "Xq6LK8SnRkGxz7Da8ZvqLA"
SESSION_MS = 45_000  # group.consumer.session.timeout.ms's default


@pytest.fixture
def ctx() -> GroupContext:
    ctx = GroupContext(group_consumer_assignment_interval_ms=0)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    return ctx


def heartbeat(ctx: GroupContext, member_id: str, epoch: int, owned=None, **fields):
    """A heartbeat; a join (epoch 0) carries the full request, as the Java client's first one does."""
    if epoch == 0:
        fields = {"rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["foo"], **fields}
        owned = owned or {}
    if owned is not None:
        fields["topic_partitions"] = [{"topic": t, "partitions": ps} for t, ps in owned.items()]
    return ctx.send("CONSUMER_GROUP_HEARTBEAT", member_id=member_id, member_epoch=epoch, **fields)


def owned(response) -> dict:
    return {p["topic"]: p["partitions"] for p in response.assignment}


def rows(ctx: GroupContext, table: str, *columns: str) -> list[tuple]:
    return [tuple(r[c] for c in columns) for r in ctx.tables.get(table, [])]


def assert_log_replays_to_group(ctx: GroupContext) -> None:
    replayed = ConsumerGroup(ctx.group_id)
    for record in ctx.runtime.log.consumer_group_records():
        replayed.replay(record)
    assert replayed == ctx.runtime.consumer_group


def join_two(ctx: GroupContext):
    """A joins alone and gets every partition; B joins (epoch 3); A revokes half, B gets it: Stable."""
    a = heartbeat(ctx, "A", 0)
    ctx.sleep(100)
    b = heartbeat(ctx, "B", 0)
    ctx.sleep(100)
    a_revoking = heartbeat(ctx, "A", a.generation_id, owned(a))
    a_revoked = heartbeat(ctx, "A", a_revoking.generation_id, owned(a_revoking))
    ctx.sleep(100)
    b_stable = heartbeat(ctx, "B", b.generation_id, owned(b))
    return a, b, a_revoking, a_revoked, b_stable


def test_join_of_two_members_and_reconciliation_to_stable(ctx):
    a, b, a_revoking, a_revoked, b_stable = join_two(ctx)

    assert (a.error, a.api, a.generation_id, a.heartbeat_interval_ms) == ("NONE", "ConsumerGroupHeartbeat", 2, 5_000)
    assert a.assignment == [{"topic": "foo", "partitions": [0, 1, 2, 3]}]
    # B joins at group epoch 3, with nothing yet: A still owns what B is to get.
    assert (b.generation_id, b.assignment) == (3, [])
    # A keeps epoch 2 until it no longer owns the partitions it gives up (trunk: KAFKA-19974).
    assert (a_revoking.generation_id, a_revoking.assignment) == (2, [{"topic": "foo", "partitions": [0, 1]}])
    assert (a_revoked.generation_id, a_revoked.assignment) == (3, None)  # nothing new to tell
    assert (b_stable.generation_id, b_stable.assignment) == (3, [{"topic": "foo", "partitions": [2, 3]}])

    assert rows(ctx, "group_states", "from_state", "to_state", "generation_id", "member_count", "cause") == [
        (None, "Empty", 1, 0, "group_created"),
        ("Empty", "Stable", 2, 1, "member_join"),
        ("Stable", "Reconciling", 3, 2, "member_join"),
        ("Reconciling", "Stable", 3, 2, "member_metadata_update"),
    ]
    assert rows(ctx, "generations", "generation_id", "protocol_type", "protocol_name", "member_count",
                "rebalance_start_ts", "join_complete_ts", "stable_ts", "cause") == [
        (2, "consumer", "uniform", 1, 0, 0, 0, "member_join"),
        (3, "consumer", "uniform", 2, 100, 100, 300, "member_join"),
    ]
    assert rows(ctx, "assignments", "generation_id", "member_id", "partition", "assign_ts") == [
        (2, "A", 0, 0), (2, "A", 1, 0), (2, "A", 2, 0), (2, "A", 3, 0),
        (2, "A", 0, 200), (2, "A", 1, 200),  # revoking 2 and 3 at epoch 2
        (3, "A", 0, 200), (3, "A", 1, 200),
        (3, "B", 2, 300), (3, "B", 3, 300),
    ]
    assert rows(ctx, "members", "member_id", "change", "generation_id", "member_count") == [
        ("A", "added", 2, 1), ("B", "added", 3, 2)]
    assert_log_replays_to_group(ctx)


def test_records_rows_carry_each_record_and_its_batch_bytes(ctx):
    heartbeat(ctx, "A", 0)
    records = ctx.tables["consumer_group_records"]
    assert [r["record_type"] for r in records] == [
        "ConsumerGroupMemberMetadata", "ConsumerGroupMetadata", "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupCurrentMemberAssignment"]
    # One heartbeat, one batch: the log holds exactly its records, in the order written.
    assert sum(r["batch_bytes"] for r in records) == batch_size(ctx.runtime.log.consumer_group_records(), ctx.group_id)
    assert FOO_ID in records[2]["value"]  # the TOPIC_METADATA row's topic id


def test_kafka_4_0_batch_bytes_leave_out_the_tagged_fields_4_0_does_not_write():
    # Kafka 4.0 writes no metadata hash, assignment timestamp or assignment epochs (state/record_bytes.py).
    ctx = GroupContext(coordsim_kafka_version="4.0", group_consumer_assignment_interval_ms=0)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    heartbeat(ctx, "A", 0)
    written = ctx.runtime.log.consumer_group_records()
    assert sum(r["batch_bytes"] for r in ctx.tables["consumer_group_records"]) == (
        batch_size(written, ctx.group_id, kafka_4_0=True)) < batch_size(written, ctx.group_id)


def test_session_expiry_fences_the_member_and_bumps_the_group_epoch(ctx):
    join_two(ctx)
    ctx.sleep(10_000)
    heartbeat(ctx, "B", 3, {"foo": [2, 3]})
    ctx.sleep(SESSION_MS - 10_000)  # A's last heartbeat was at 200: its session ends at 45_200
    group = ctx.runtime.consumer_group
    assert list(group.members) == ["B"] and group.group_epoch == 4
    assert rows(ctx, "members", "member_id", "change", "cause", "generation_id", "member_count")[-1] == (
        "A", "removed", "session_timeout", 4, 1)
    assert rows(ctx, "group_states", "from_state", "to_state", "generation_id", "cause")[-1] == (
        "Stable", "Assigning", 4, "session_timeout")
    # B's next heartbeat computes epoch 4's target: it gets A's partitions.
    b = heartbeat(ctx, "B", 3, {"foo": [2, 3]})
    assert (b.generation_id, b.assignment) == (4, [{"topic": "foo", "partitions": [0, 1, 2, 3]}])
    assert rows(ctx, "generations", "generation_id", "member_count", "stable_ts", "cause")[-1] == (
        4, 1, 10_300 + SESSION_MS - 10_000, "session_timeout")
    # A heartbeat from the fenced member is refused.
    assert heartbeat(ctx, "A", 3, {"foo": [0, 1]}).error == "UNKNOWN_MEMBER_ID"
    assert_log_replays_to_group(ctx)


def test_a_member_that_does_not_revoke_in_time_is_fenced(ctx):
    a = heartbeat(ctx, "A", 0)
    ctx.sleep(100)
    heartbeat(ctx, "B", 0)
    revoking = heartbeat(ctx, "A", a.generation_id, owned(a))  # told to give up foo-2 and foo-3
    for _ in range(5):  # it keeps heartbeating, still owning them, past its 30 s rebalance timeout
        ctx.sleep(6_000)
        heartbeat(ctx, "A", revoking.generation_id, owned(a))
    assert list(ctx.runtime.consumer_group.members) == ["B"]
    assert rows(ctx, "members", "member_id", "change", "cause")[-1] == ("A", "removed", "rebalance_timeout")
    assert ctx.tables["responses"][-1]["error"] == "UNKNOWN_MEMBER_ID"
    assert_log_replays_to_group(ctx)


def test_static_member_leaves_with_epoch_minus_2_and_returns(ctx):
    s = heartbeat(ctx, "S1", 0, instance_id="static-1")
    assert s.group_instance_id == "static-1"
    ctx.sleep(100)
    left = heartbeat(ctx, "S1", -2, instance_id="static-1")
    assert (left.error, left.generation_id) == ("NONE", -2)
    group = ctx.runtime.consumer_group
    assert group.members["S1"].member_epoch == -2 and group.group_epoch == 2  # no epoch bump, partitions kept
    ctx.sleep(100)
    # The restarted process joins with a new member id and takes its place, partitions and all.
    back = heartbeat(ctx, "S2", 0, instance_id="static-1")
    assert (back.error, back.generation_id, back.assignment) == (
        "NONE", 2, [{"topic": "foo", "partitions": [0, 1, 2, 3]}])
    assert list(ctx.runtime.consumer_group.members) == ["S2"]
    assert rows(ctx, "members", "member_id", "group_instance_id", "change", "cause") == [
        ("S1", "static-1", "added", "member_join"),
        ("S1", "static-1", "removed", "member_join"),
        ("S2", "static-1", "added", "member_join"),
    ]
    assert rows(ctx, "group_states", "to_state", "cause")[-2:] == [
        ("Reconciling", "member_leave"), ("Stable", "member_join")]
    assert_log_replays_to_group(ctx)


def test_a_static_member_restarted_with_another_client_id_is_removed_then_added_once(ctx):
    """The replacement's write holds two MemberMetadata records of the new id (the old member's copy, then the
    update to the new process's client.id): one `added` row, after the old id's `removed`, and member_count
    stays the group's size."""
    for member_id, instance_id in (("A", None), ("B", None), ("S1", "static-1")):
        heartbeat(ctx, member_id, 0, instance_id=instance_id, client_id=f"consumer-{member_id}")
        ctx.sleep(100)
    heartbeat(ctx, "S1", -2, instance_id="static-1", client_id="consumer-S1")
    ctx.sleep(100)
    back = heartbeat(ctx, "S2", 0, instance_id="static-1", client_id="consumer-S1-restarted")
    assert back.error == "NONE"
    records = [(r["record_type"], r["member_id"], r["tombstone"]) for r in ctx.tables["consumer_group_records"]
               if r["write_ts"] == ctx.time and r["record_type"] == "ConsumerGroupMemberMetadata"]
    assert records == [("ConsumerGroupMemberMetadata", "S1", True), ("ConsumerGroupMemberMetadata", "S2", False),
                       ("ConsumerGroupMemberMetadata", "S2", False)]
    assert rows(ctx, "members", "member_id", "client_id", "change", "member_count") == [
        ("A", "consumer-A", "added", 1),
        ("B", "consumer-B", "added", 2),
        ("S1", "consumer-S1", "added", 3),
        ("S1", "consumer-S1", "removed", 2),
        ("S2", "consumer-S1-restarted", "added", 3),
    ]
    assert len(ctx.runtime.consumer_group.members) == 3
    assert_log_replays_to_group(ctx)


def test_a_second_holder_of_a_static_instance_id_is_refused(ctx):
    heartbeat(ctx, "S1", 0, instance_id="static-1")
    assert heartbeat(ctx, "S2", 0, instance_id="static-1").error == "UNRELEASED_INSTANCE_ID"


def test_classic_requests_to_a_consumer_group_get_trunk_errors():
    """testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy; SyncGroup and Heartbeat from a member
    using the consumer protocol (testClassicGroupHeartbeatToConsumerWithMemberNotUsingClassicProtocol)."""
    ctx = GroupContext(group_consumer_assignment_interval_ms=0, group_consumer_migration_policy="disabled")
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    heartbeat(ctx, "A", 0, instance_id="i-1")
    join = ctx.join()
    assert (join.error, join.member_id, join.generation_id) == ("INCONSISTENT_GROUP_PROTOCOL", "", -1)
    assert ctx.sync("A", 2).error == "UNKNOWN_MEMBER_ID"  # A does not use the classic protocol
    assert ctx.heartbeat("A", 2).error == "UNKNOWN_MEMBER_ID"
    assert ctx.heartbeat("X", 2, instance_id="i-1").error == "FENCED_INSTANCE_ID"
    leave = ctx.leave("nobody", ("", "i-1"))
    assert [r["error"] for r in leave.results] == ["UNKNOWN_MEMBER_ID", "NONE"]
    # LeaveGroup removed A (an admin's removal): the group is Empty at a new epoch.
    assert ctx.runtime.consumer_group.members == {} and ctx.runtime.consumer_group.group_epoch == 3
    assert ctx.runtime.group is None


def test_a_join_replaces_an_empty_classic_group_in_one_append(ctx):
    ctx.commit({("foo", 0): 7})  # a standalone commit: a "simple" classic group holds the offsets
    assert ctx.runtime.group is not None
    a = heartbeat(ctx, "A", 0)
    assert (a.error, a.generation_id) == ("NONE", 2)
    assert ctx.runtime.group is None and ctx.runtime.consumer_group is not None
    assert rows(ctx, "group_metadata", "tombstone") == [(True,)]
    assert rows(ctx, "group_states", "from_state", "to_state", "cause")[:3] == [
        (None, "Empty", "group_created"), ("Empty", "Dead", "group_converted"), (None, "Empty", "group_created")]
    # The tombstone opens the heartbeat's batch: the consumer group's records follow it at offset delta 1.
    tombstone, records = GroupMetadataRecord(None), ctx.runtime.log.consumer_group_records()
    assert sum(r["batch_bytes"] for r in ctx.tables["consumer_group_records"]) == (
        batch_size([tombstone, *records], ctx.group_id) - batch_size([tombstone], ctx.group_id))
    assert [r["offset"] for r in ctx.fetch({"foo": [0]}).results] == [7]


def test_offset_commit_with_a_stale_member_epoch(ctx):
    a, b, *_ = join_two(ctx)
    # A is at epoch 3; it may commit at 2 what it has held since 2, not at 1, nor at 4.
    assert ctx.commit({("foo", 0): 10}, member_id="A", generation_id=3).error == "NONE"
    assert ctx.commit({("foo", 0): 11}, member_id="A", generation_id=2).error == "NONE"
    stale = ctx.commit({("foo", 0): 12}, member_id="A", generation_id=1)
    assert (stale.error, [r["error"] for r in stale.results]) == ("STALE_MEMBER_EPOCH", ["STALE_MEMBER_EPOCH"])
    assert ctx.commit({("foo", 0): 12}, member_id="A", generation_id=4).error == "STALE_MEMBER_EPOCH"
    # B got its partitions at epoch 3: a commit of them at 2 is stale.
    assert ctx.commit({("foo", 2): 5}, member_id="B", generation_id=2).error == "STALE_MEMBER_EPOCH"
    assert ctx.commit({("foo", 2): 5}, member_id="nobody", generation_id=3).error == "UNKNOWN_MEMBER_ID"
    assert [r["offset"] for r in ctx.tables["offsets"]] == [10, 11]
    fetched = ctx.fetch({"foo": [0]})
    assert [r["offset"] for r in fetched.results] == [11]
    assert ctx.runtime.group is None  # the commits made no simple group beside the consumer group
    assert_log_replays_to_group(ctx)


def test_a_coordinator_move_reloads_the_group_with_fresh_sessions(ctx):
    join_two(ctx)
    before = ctx.runtime.consumer_group
    ctx.sleep(1_000)
    ctx.send("COORDINATOR_FAULT", fault="move", load_delay_ms=500)
    assert heartbeat(ctx, "A", 3, {"foo": [0, 1]}).error == "COORDINATOR_LOAD_IN_PROGRESS"
    ctx.sleep(500)
    assert ctx.runtime.consumer_group == before
    assert rows(ctx, "group_states", "from_state", "to_state", "cause")[-2:] == [
        ("Stable", "Dead", "coordinator_unload"), (None, "Stable", "coordinator_load")]
    # Sessions start over at the load (1_300 + 500): A, silent since, is fenced a session later.
    ctx.sleep(SESSION_MS - 1)
    assert set(ctx.runtime.consumer_group.members) == {"A", "B"}
    ctx.sleep(1)
    assert ctx.runtime.consumer_group.members == {}


def test_a_failed_write_answers_its_error_and_changes_nothing(ctx):
    ctx.send("COORDINATOR_FAULT", fault="write_failure", error="NOT_ENOUGH_REPLICAS")
    # The append's error as the service normalizes it (GroupCoordinatorService.normalizeException).
    assert heartbeat(ctx, "A", 0).error == "COORDINATOR_NOT_AVAILABLE"
    assert ctx.runtime.consumer_group is None and ctx.runtime.timers.pending() == []
    assert heartbeat(ctx, "A", 0).generation_id == 2


def test_the_consumer_group_round_trips_through_encoding(ctx):
    join_two(ctx)
    ctx.runtime.take_output()
    decoded = GroupRuntime.decode(ctx.runtime.encode(), ctx.config)
    assert decoded.consumer_group == ctx.runtime.consumer_group
    assert decoded.timers.pending() == ctx.runtime.timers.pending()
    assert decoded.image.topic_ids == {"foo": TopicId.from_string(FOO_ID)}


def test_coordsim_kafka_version_4_0_gives_kafka_4_0_0s_epochs():
    # Kafka 4.0.0: a new group starts at epoch 0, so the first member gets epoch 1 (trunk: 2), and the
    # target assignment is computed on every bump whatever group.consumer.assignment.interval.ms says.
    ctx = GroupContext(coordsim_kafka_version="4.0")
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    a, b, a_revoking, a_revoked, b_stable = join_two(ctx)
    assert (a.generation_id, b.generation_id, b_stable.generation_id) == (1, 2, 2)
    assert b_stable.assignment == [{"topic": "foo", "partitions": [2, 3]}]


def _run_topics(rows: list[dict], until: int):
    runtime = GroupRuntime("g", CoordinatorConfig())
    runtime.offer([parse_event({"group_id": "g", **row}, "test", line) for line, row in enumerate(rows)])
    runtime.advance_to(until)
    return runtime.take_output()


CONSUMER_START = {"ts": 0, "type": "CLIENT_START", "client_id": "c0", "topics": ["t"],
                  "config": {"group.protocol": "consumer"}}


def test_a_topic_metadata_row_that_removes_partitions_is_rejected():
    # Kafka never removes a partition (CreatePartitions only adds), and the uniform assignor indexes a topic's
    # partitions by number up to its count: a member owning partition 1 of a topic given 1 partition broke it.
    output = _run_topics([{"ts": 0, "type": "TOPIC_METADATA", "topics": [{"topic": "t", "partitions": 2}]},
                          CONSUMER_START,
                          {"ts": 20_000, "type": "TOPIC_METADATA", "topics": [{"topic": "t", "partitions": 1}]}],
                         60_000)
    assert [row["reason"] for row in output.rejects] == [
        "topic 't' has 2 partitions and this row gives 1: Kafka never removes a topic's partitions; a topic deleted "
        "and created again has a new topic_id, give it in the row"]
    assert all(row["error"] == "NONE" for row in output.tables["responses"])


def test_a_topic_created_again_with_fewer_partitions_has_a_new_id_and_is_assigned_anew():
    # The member revokes the deleted topic's partitions, named as they were (the Java client's
    # assignedTopicNamesCache), and is assigned the new topic's.
    recreated = "AAAAAAAAAAAAAAAAAAAAAQ"
    output = _run_topics([{"ts": 0, "type": "TOPIC_METADATA", "topics": [{"topic": "t", "partitions": 2}]},
                          CONSUMER_START,
                          {"ts": 20_000, "type": "TOPIC_METADATA",
                           "topics": [{"topic": "t", "partitions": 1, "topic_id": recreated}]}], 60_000)
    assert output.rejects == []
    assert all(row["error"] == "NONE" for row in output.tables["responses"])
    last = max(row["generation_id"] for row in output.tables["assignments"])
    assert [(row["topic"], row["partition"]) for row in output.tables["assignments"]
            if row["generation_id"] == last] == [("t", 0)]


def test_an_unloaded_consumer_group_is_dead_for_the_figures_through_the_result(ctx):
    # The manager never tells the group's figures itself: what they observe is in the result it returns.
    join_two(ctx)
    before = copy.deepcopy(ctx.runtime.metrics)
    result = ctx.runtime.consumer.unload(ctx.time, Output(ctx.group_id))
    assert result.effects == [(IN_STATE, "Dead")] and ctx.runtime.metrics == before
