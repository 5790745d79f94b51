"""The written records are the group's durable state (GroupCoordinatorRecordHelpers' records): replaying the `offsets`
rows gives the committed offsets, and the last `group_metadata` row rebuilds (state.records.group_from_value, what a
coordinator does on load; Kafka's replay(GroupMetadataKey, GroupMetadataValue)) the generation, members,
assignments and leader the group had when the row was written."""

from __future__ import annotations

from state.records import group_from_value
from tests.state.conftest import make_ctx


def replay_offsets(rows) -> dict:
    committed = {}
    for row in rows:
        key = (row["topic"], row["partition"])
        if row["offset"] is None:
            committed.pop(key, None)  # a tombstone
        else:
            committed[key] = (row["offset"], row["leader_epoch"], row["metadata"])
    return committed


def runtime_offsets(ctx) -> dict:
    return {tp: (c["offset"], c["leader_epoch"], c["metadata"]) for tp, c in ctx.runtime.offsets.items()}


def snapshot(group) -> dict:
    return {
        "generation_id": group.generation_id,
        "protocol_type": group.protocol_type,
        "protocol_name": group.protocol_name,
        "leader_id": group.leader_id,
        "members": {m.member_id: (m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                  m.session_timeout_ms, m.assignment) for m in group.all_members()},
    }


def rebuilt(ctx) -> dict:
    record = ctx.rows("group_metadata")[-1]
    assert record["tombstone"] is False
    return snapshot(group_from_value(ctx.group_id, record, ctx.time))


def test_replaying_offset_rows_gives_the_committed_offsets():
    ctx = make_ctx(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    ctx.commit({("foo", 0): 1, ("foo", 1): 2})
    ctx.sleep(30_000)
    ctx.send("OFFSET_COMMIT", api_version=9, offsets=[
        {"topic": "foo", "partition": 1, "offset": 5, "leader_epoch": 2, "metadata": "m"},
        {"topic": "bar", "partition": 0, "offset": 9}])
    assert replay_offsets(ctx.rows("offsets")) == runtime_offsets(ctx)
    ctx.sleep(30_000)  # foo-0 expires at the t=60000 sweep
    assert replay_offsets(ctx.rows("offsets")) == runtime_offsets(ctx) == {
        ("foo", 1): (5, 2, "m"), ("bar", 0): (9, -1, "")}
    ctx.sleep(30_000)  # the rest expires and the group is deleted
    assert replay_offsets(ctx.rows("offsets")) == runtime_offsets(ctx) == {}


def test_replaying_offsets_of_a_consumer_group(ctx):
    result = ctx.static_members_join_and_rebalance()
    ctx.commit({("foo", 0): 3}, member_id=result.leader_id, generation_id=1)
    ctx.commit({("foo", 1): 4}, member_id=result.follower_id, generation_id=1)
    ctx.commit({("foo", 1): 6}, member_id=result.follower_id, generation_id=1, metadata="x")
    assert replay_offsets(ctx.rows("offsets")) == runtime_offsets(ctx) == {
        ("foo", 0): (3, -1, ""), ("foo", 1): (6, -1, "x")}


def test_leader_sync_record_rebuilds_the_stable_group(ctx):
    result = ctx.static_members_join_and_rebalance()
    expected = snapshot(ctx.group)
    assert rebuilt(ctx) == expected
    assert expected["generation_id"] == 1 and expected["leader_id"] == result.leader_id
    assert group_from_value(ctx.group_id, ctx.rows("group_metadata")[-1], ctx.time).state.value == "Stable"


def test_record_after_a_static_replacement_rebuilds_the_new_member_id(ctx):
    ctx.static_members_join_and_rebalance()
    new = ctx.join(instance_id="follower-instance-id", names=("range", "roundrobin"), version=9)
    assert new.error == "NONE"
    assert rebuilt(ctx) == snapshot(ctx.group)
    assert new.member_id in rebuilt(ctx)["members"]


def test_unpersisted_generation_is_not_in_the_last_record(ctx):
    ctx.static_members_join_and_rebalance()
    persisted = snapshot(ctx.group)
    ctx.join(instance_id="new-instance-id", names=("range", "roundrobin"))
    ctx.sleep(10_000)
    assert ctx.state == "CompletingRebalance" and ctx.group.generation_id == 2
    assert rebuilt(ctx) == persisted
    ctx.fault(fault="move")
    assert snapshot(ctx.group) == persisted


def test_empty_group_record_rebuilds_an_empty_group(ctx):
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    record = ctx.rows("group_metadata")[-1]
    group = group_from_value(ctx.group_id, record, ctx.time + 99)
    assert (group.state.value, group.generation_id, group.protocol_type, group.protocol_name, group.leader_id) == \
        ("Empty", 2, "consumer", None, None)
    assert group.current_state_ts == ctx.group.current_state_ts == 3000


def test_assignments_rows_match_the_stored_plan(ctx):
    result = ctx.static_members_join_and_rebalance()
    rows = [(r["generation_id"], r["member_id"], r["topic"], r["partition"]) for r in ctx.rows("assignments")]
    assert sorted(rows) == sorted([(1, result.leader_id, "foo", 0), (1, result.follower_id, "foo", 1)])


def test_an_unloaded_group_leaves_memory_and_the_load_replays_its_records(ctx):
    # GroupMetadataManager.onUnloaded / OffsetMetadataManager.replay on load: the partition keeps the records.
    result = ctx.static_members_join_and_rebalance()
    ctx.commit({("foo", 0): 3}, member_id=result.leader_id, generation_id=1)
    ctx.commit({("foo", 1): 4}, member_id=result.follower_id, generation_id=1)
    before = snapshot(ctx.group)
    ctx.fault(fault="move", load_delay_ms=1_000)
    assert ctx.runtime.group is None and ctx.runtime.offsets == {}
    ctx.sleep(1_000)
    assert runtime_offsets(ctx) == replay_offsets(ctx.rows("offsets")) == {("foo", 0): (3, -1, ""), ("foo", 1): (4, -1, "")}
    assert snapshot(ctx.group) == rebuilt(ctx) == before


def test_a_simple_group_is_created_by_replaying_its_first_offset_record(ctx):
    # OffsetMetadataManager.replay creates the classic group a commit without membership names.
    ctx.commit({("foo", 0): 7})
    assert ctx.state == "Empty" and ctx.group.protocol_type is None
    assert [r["cause"] for r in ctx.rows("group_states")] == ["group_created"]
    ctx.fault(fault="move")
    assert ctx.state == "Empty" and ctx.group.protocol_type is None and runtime_offsets(ctx) == {("foo", 0): (7, -1, "")}


def test_a_failed_commit_creates_no_simple_group(ctx):
    ctx.fault(fault="write_failure", error="NOT_ENOUGH_REPLICAS", count=1)
    assert ctx.commit({("foo", 0): 7}).error == "COORDINATOR_NOT_AVAILABLE"  # the append error, mapped
    assert ctx.runtime.group is None and ctx.runtime.offsets == {} and ctx.rows("offsets") == []
