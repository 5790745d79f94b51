"""Online migration (state/consumer_group/migration.py and downgrade.py, run by
state/consumer_group/manager.py) under group.consumer.migration.policy: a ConsumerGroupHeartbeat joining a
non-empty classic group converts it, as Kafka's GroupMetadataManagerTest's
testConsumerGroupHeartbeatWith*ClassicGroup cases do; the last member using the consumer protocol leaving, or
replaced by a classic static member, converts it back, as its testLastConsumerProtocolMember* and
testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember cases do; a JoinGroup replaces an Empty
consumer group (testClassicGroupJoinWithEmptyConsumerGroup)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from state.consumer_group.downgrade import in_timeline_hash_map_order
from state.consumer_group.heartbeat import JOIN_TIMEOUT, SESSION_TIMEOUT, SYNC_TIMEOUT
from state.consumer_group.records import ClassicMemberMetadata, ClassicProtocol
from state.consumer_group.manager import CONSUMER_GROUP_TIMER
from state.events import PartitionList
from state.records.group_log import group_from_value
from state.runtime.group_runtime import GroupRuntime
from tests.state.harness import GroupContext, protocols
from tests.state.consumer_group.test_manager import (FOO_ID, SESSION_MS, assert_log_replays_to_group, heartbeat, owned,
                                                      rows)

CLASSIC_SESSION_MS = 10_000  # the harness's JoinGroup session timeout


def context(**config) -> GroupContext:
    ctx = GroupContext(group_consumer_assignment_interval_ms=0, **config)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    return ctx


def stable_classic_group(ctx: GroupContext, names=("range",), others=(2, 3)) -> tuple[str, str]:
    """Two classic members offering the protocols `names`, Stable at generation 1: the leader holds foo 0-1,
    the other the partitions `others` of foo."""
    ids = [ctx.join_new_dynamic(names=names) for _ in range(2)]
    for member_id in ids:
        ctx.join(member_id, names=names)
    while ctx.state == "PreparingRebalance":
        ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
    leader, other = ctx.group.leader_id, next(m for m in ids if m != ctx.group.leader_id)
    ctx.sync(other, 1)
    ctx.sync(leader, 1, assignments={leader: [("foo", [0, 1])], other: [("foo", list(others))]})
    assert ctx.state == "Stable"
    return leader, other


def test_upgrade_from_stable_classic_to_consumer_group():
    """testConsumerGroupHeartbeatWithStableClassicGroup: the classic group's tombstone, the consumer group's
    records built from its members, then the joining member's records, in one append."""
    ctx = context()
    leader, other = stable_classic_group(ctx)
    ctx.sleep(100)
    joined = heartbeat(ctx, "C", 0)
    assert (joined.error, joined.generation_id, joined.assignment) == ("NONE", 2, [])
    assert ctx.runtime.group is None
    group = ctx.runtime.consumer_group
    assert (group.group_epoch, group.assignment_epoch, group.state.value) == (2, 2, "Reconciling")
    for member_id, partitions in ((leader, {0, 1}), (other, {2, 3})):
        member = group.members[member_id]
        assert member.use_classic_protocol and member.member_epoch == 1
        assert member.classic_member_metadata.session_timeout_ms == CLASSIC_SESSION_MS
        assert set(next(iter(member.assigned_partitions.values()))) == partitions
    assert not group.members["C"].use_classic_protocol

    records = rows(ctx, "consumer_group_records", "record_type", "member_id")
    members = [r[1] for r in records[:2]]
    assert sorted(members) == sorted([leader, other])
    assert records[:8] == [
        *(("ConsumerGroupMemberMetadata", m) for m in members), ("ConsumerGroupMetadata", None),
        *(("ConsumerGroupTargetAssignmentMember", m) for m in members),
        ("ConsumerGroupTargetAssignmentMetadata", None),
        *(("ConsumerGroupCurrentMemberAssignment", m) for m in members)]
    assert records[8:10] == [("ConsumerGroupMemberMetadata", "C"), ("ConsumerGroupMetadata", None)]
    converted = json.loads(ctx.tables["consumer_group_records"][2]["value"])
    assert converted["epoch"] == 1  # the classic generation
    assert rows(ctx, "group_metadata", "tombstone")[-1] == (True,)
    assert_log_replays_to_group(ctx)

    assert rows(ctx, "group_states", "group_type", "from_state", "to_state", "generation_id", "cause")[-4:] == [
        ("classic", "Stable", "Dead", 1, "group_converted"), ("consumer", None, "Empty", 1, "group_created"),
        ("consumer", "Empty", "Stable", 1, "group_converted"), ("consumer", "Stable", "Reconciling", 2, "member_join")]
    assert rows(ctx, "members", "change", "cause")[-5:] == [
        ("removed", "group_converted"), ("removed", "group_converted"), ("added", "group_converted"),
        ("added", "group_converted"), ("added", "member_join")]
    # Generation 1 is the classic group's; the consumer group's first is epoch 2.
    assert rows(ctx, "generations", "generation_id", "protocol_type") == [(1, "consumer")]
    ctx.finish()
    assert rows(ctx, "generations", "generation_id")[-1] == (2,)

    # The converted members' sessions run at their classic session timeout; the classic timers are gone.
    now = ctx.time
    assert ctx.timer_deadline(CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, leader) == now + CLASSIC_SESSION_MS
    assert ctx.timer_deadline(CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, "C") == now + SESSION_MS
    assert ctx.timer_deadline("heartbeat", leader) is None


def test_upgrade_answers_the_parked_requests_rebalance_in_progress():
    """testConsumerGroupHeartbeatWithPreparingRebalanceClassicGroup: the members waiting in JoinGroup are told
    to rejoin."""
    ctx = context()
    leader, other = stable_classic_group(ctx)
    newcomer = ctx.join_new_dynamic()
    parked = ctx.join(newcomer)
    assert not parked.done and ctx.state == "PreparingRebalance"
    assert heartbeat(ctx, "C", 0).error == "NONE"
    assert (parked.error, parked.member_id) == ("REBALANCE_IN_PROGRESS", newcomer)
    assert set(ctx.runtime.consumer_group.members) == {leader, other, newcomer, "C"}
    # The newcomer never synced: it holds nothing (an empty assignment is accepted).
    assert ctx.runtime.consumer_group.members[newcomer].assigned_partitions == {}


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_when_the_policy_does_not_allow_it(policy):
    ctx = context(group_consumer_migration_policy=policy)
    stable_classic_group(ctx)
    assert heartbeat(ctx, "C", 0).error == "GROUP_ID_NOT_FOUND"
    assert ctx.runtime.consumer_group is None and ctx.state == "Stable"


def test_upgrade_refused_for_a_group_not_using_the_consumer_protocol():
    ctx = context()
    ctx.join(ctx.join_new_dynamic(protocol_type="connect"), protocol_type="connect")
    assert ctx.group.members
    assert heartbeat(ctx, "C", 0).error == "GROUP_ID_NOT_FOUND"


def test_upgrade_refused_beyond_the_consumer_group_max_size():
    """validateOnlineUpgrade lets a classic group of group.consumer.max.size members through; the joining
    member is then one too many (nothing is written)."""
    ctx = context(group_consumer_max_size=2)
    stable_classic_group(ctx)
    assert heartbeat(ctx, "C", 0).error == "GROUP_MAX_SIZE_REACHED"
    assert ctx.runtime.consumer_group is None and ctx.state == "Stable"
    ctx = context(group_consumer_max_size=1)
    stable_classic_group(ctx)
    assert heartbeat(ctx, "C", 0).error == "GROUP_ID_NOT_FOUND"


def test_heartbeats_other_than_a_join_never_convert():
    ctx = context()
    stable_classic_group(ctx)
    assert heartbeat(ctx, "C", 3, {}).error == "GROUP_ID_NOT_FOUND"
    # The request's own checks come first.
    assert heartbeat(ctx, "C", 0, rebalance_timeout_ms=-1).error == "INVALID_REQUEST"


def test_a_classic_group_without_a_protocol_yet_fails_to_convert():
    """fromClassicGroup reads classicGroup.protocolName().get(): before its first generation the group has
    none, and the heartbeat fails (NoSuchElementException: UNKNOWN_SERVER_ERROR)."""
    ctx = GroupContext()
    ctx.join(ctx.join_new_dynamic())
    assert ctx.state == "PreparingRebalance"
    assert heartbeat(ctx, "C", 0).error == "UNKNOWN_SERVER_ERROR"


def test_a_member_without_the_groups_protocol_fails_the_conversion():
    """fromClassicGroup reads each member's metadata for the group's protocol (ClassicGroupMember.metadata): a
    member that joined a rebalance with other protocols only has none, the IllegalArgumentException is not
    caught, and the heartbeat fails (UNKNOWN_SERVER_ERROR); the group stays classic."""
    ctx = context()
    stable_classic_group(ctx, names=("range", "roundrobin"))
    assert ctx.group.protocol_name == "range"
    newcomer = ctx.join_new_dynamic(names=("roundrobin",))
    parked = ctx.join(newcomer, names=("roundrobin",))
    assert not parked.done and ctx.group.protocol_name == "range"
    assert heartbeat(ctx, "C", 0).error == "UNKNOWN_SERVER_ERROR"
    assert ctx.runtime.consumer_group is None and ctx.state == "PreparingRebalance"


def test_two_classic_members_holding_one_partition_fail_the_conversion():
    """A leader's assignment that gives a partition to two members (a custom assignor's, or a captured one):
    fromClassicGroup's addPartitionEpochs throws IllegalStateException, not caught, and the heartbeat fails
    (UNKNOWN_SERVER_ERROR); the group stays classic."""
    ctx = context()
    stable_classic_group(ctx, others=(1, 2))  # foo-1 twice
    assert heartbeat(ctx, "C", 0).error == "UNKNOWN_SERVER_ERROR"
    assert ctx.runtime.consumer_group is None and ctx.state == "Stable"


def test_a_converted_group_reloads_and_round_trips_through_encoding():
    ctx = context()
    leader, _ = stable_classic_group(ctx)
    heartbeat(ctx, "C", 0)
    ctx.runtime.take_output()
    decoded = GroupRuntime.decode(ctx.runtime.encode(), ctx.config)
    assert decoded.consumer_group == ctx.runtime.consumer_group
    assert decoded.consumer_group.members[leader].classic_member_metadata == ClassicMemberMetadata(
        CLASSIC_SESSION_MS, (ClassicProtocol("range", ctx.runtime.consumer_group.members[leader]
                                              .classic_member_metadata.supported_protocols[0].metadata),))
    before = ctx.runtime.consumer_group
    ctx.send("COORDINATOR_FAULT", fault="move", load_delay_ms=500)
    ctx.sleep(500)
    assert ctx.runtime.consumer_group == before and ctx.runtime.group is None


# -- the converted group's classic members (state/consumer_group/classic_members.py) --------------------------

def test_converted_classic_members_rejoin_sync_and_heartbeat_inside_the_consumer_group():
    """After the upgrade the classic members are told to rejoin (their epoch is behind the new target's); a
    JoinGroup answers their member epoch as the generation (still 1 while they have a partition to revoke),
    SyncGroup the partitions they may keep, and a cooperative rejoin without the revoked one brings them to
    the new epoch (testReconciliationInJoiningConsumerGroupWithCooperativeProtocol, end to end)."""
    ctx = context()
    leader, other = stable_classic_group(ctx)
    heartbeat(ctx, "C", 0)
    group = ctx.runtime.consumer_group
    assert group.assignment_epoch == 2
    assert ctx.heartbeat(leader, 1).error == "REBALANCE_IN_PROGRESS"
    assert ctx.timer_deadline(CONSUMER_GROUP_TIMER, JOIN_TIMEOUT, leader) == ctx.time + 10_000
    for member_id, owned in ((leader, [0, 1]), (other, [2, 3])):
        generation = 1
        for _ in range(3):
            joined = ctx.join(member_id, protocols=protocols("range", owned=[("foo", owned)], generation_id=generation))
            assert (joined.error, joined.protocol_name, joined.leader_id, joined.members) == ("NONE", "range", "", [])
            generation = joined.generation_id
            synced = ctx.sync(member_id, generation)
            assert synced.error == "NONE"
            owned = [p for plist in synced.assignment for p in plist["partitions"]]
            if ctx.heartbeat(member_id, generation).error == "NONE":
                break
        assert generation == 2 and ctx.timer_deadline(CONSUMER_GROUP_TIMER, JOIN_TIMEOUT, member_id) is None
    # C gets what the classic members gave up. Every partition has one owner.
    heartbeat(ctx, "C", group.members["C"].member_epoch, owned={})
    assert group.state.value == "Stable"
    owners = {}
    for member_id, member in group.members.items():
        for partition in next(iter(member.assigned_partitions.values()), {}):
            owners.setdefault(partition, []).append(member_id)
    assert sorted(owners) == [0, 1, 2, 3] and all(len(o) == 1 for o in owners.values())
    assert rows(ctx, "members", "change", "cause")[-1] == ("added", "member_join")  # C's, not the rejoins'
    assert_log_replays_to_group(ctx)


def test_a_new_classic_member_joins_the_converted_group():
    """classicGroupJoinToConsumerGroup for an unknown member: MEMBER_ID_REQUIRED (a Kafka Uuid), then a member
    using the classic protocol, `members` row `member_join`."""
    ctx = context()
    stable_classic_group(ctx)
    heartbeat(ctx, "C", 0)
    first = ctx.join()
    assert first.error == "MEMBER_ID_REQUIRED" and len(first.member_id) == 22
    joined = ctx.join(first.member_id, rebalance_ms=5_000)
    assert (joined.error, joined.member_id) == ("NONE", first.member_id)
    assert ctx.runtime.consumer_group.members[first.member_id].use_classic_protocol
    assert rows(ctx, "members", "change", "cause")[-1] == ("added", "member_join")
    assert ctx.timer_deadline(CONSUMER_GROUP_TIMER, SYNC_TIMEOUT, first.member_id) == ctx.time + 5_000
    ctx.sleep(5_000)  # it never syncs: fenced
    assert first.member_id not in ctx.runtime.consumer_group.members
    assert rows(ctx, "members", "change", "cause")[-1] == ("removed", "pending_sync_timeout")


def upgraded_fleet() -> GroupContext:
    """Three synthetic classic consumers of orders (6 partitions) form a group; c0 stops; at 25 s c3 starts
    with group.protocol=consumer, which converts the group; a minute later it is Stable."""
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 6, "records_per_second": 10}])
    for name in ("c0", "c1", "c2"):
        ctx.send("CLIENT_START", client_id=name, topics=["orders"])
    ctx.sleep(20_000)
    assert ctx.state == "Stable"
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(5_000)
    ctx.send("CLIENT_START", client_id="c3", topics=["orders"], config={"group.protocol": "consumer"})
    ctx.sleep(60_000)
    return ctx


def test_a_classic_fleet_goes_on_consuming_after_one_client_moves_to_the_consumer_protocol():
    """Three synthetic classic consumers form a group; one restarts with group.protocol=consumer, which
    converts the group; the other two rejoin, sync and heartbeat inside the consumer group without errors,
    and every partition ends owned by exactly one client."""
    ctx = upgraded_fleet()
    converted_at = 25_000
    group = ctx.runtime.consumer_group
    assert ctx.runtime.group is None and group is not None and group.state.value == "Stable"
    assert {m.client_id: m.use_classic_protocol for m in group.members.values()} == {
        "c1": True, "c2": True, "c3": False}
    classic = classic_clients_rejoined(ctx, converted_at)
    settled = [r for r in classic if r["api"] == "Heartbeat" and r["response_ts"] > ctx.time - 20_000]
    assert settled and all(r["error"] == "NONE" for r in settled)
    assert {c for o in single_owners(ctx).values() for c in o} == {"c1", "c2", "c3"}


def classic_clients_rejoined(ctx: GroupContext, since: int) -> list[dict]:
    """c1's and c2's responses since `since`, which must have rejoined, synced and heartbeated, and been
    failed nothing but REBALANCE_IN_PROGRESS (how a heartbeat tells a classic member to rejoin)."""
    classic = [r for r in ctx.rows("responses") if r["client_id"] in ("c1", "c2") and r["response_ts"] > since]
    assert {r["api"] for r in classic} >= {"JoinGroup", "SyncGroup", "Heartbeat"}
    assert {r["error"] for r in classic} <= {"NONE", "REBALANCE_IN_PROGRESS"}
    assert ctx.runtime.metrics.failed_commits == 0
    return classic


def single_owners(ctx: GroupContext) -> dict[int, list[str]]:
    """Partition -> the live clients owning it: every partition of orders, one owner each."""
    owners = {}
    for client in ctx.runtime.fleet.clients.values():
        if client.alive:
            for tp in client.owned:
                owners.setdefault(tp.partition, []).append(client.client_id)
    assert sorted(owners) == list(range(6)) and all(len(o) == 1 for o in owners.values())
    return owners


# -- the downgrade (state/consumer_group/downgrade.py) -------------------------------------------------------

CONSUMER_TOMBSTONES = ("ConsumerGroupCurrentMemberAssignment", "ConsumerGroupTargetAssignmentMember",
                       "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupMemberMetadata",
                       "ConsumerGroupPartitionMetadata", "ConsumerGroupMetadata")


def consumer_and_classic_member(ctx: GroupContext, **fields) -> str:
    """C (consumer protocol; `fields`: its heartbeat's, e.g. instance_id) joins and gets foo 0-3 at epoch 2;
    K (classic protocol, returned) joins: epoch 3, C gives up foo 2-3 and K takes them. Stable at 3."""
    heartbeat(ctx, "C", 0, **fields)
    k = ctx.join().member_id
    assert ctx.join(k).generation_id == 3
    assert owned(heartbeat(ctx, "C", 2, {"foo": [0, 1, 2, 3]}, **fields)) == {"foo": [0, 1]}
    assert heartbeat(ctx, "C", 2, {"foo": [0, 1]}, **fields).generation_id == 3
    assert ctx.heartbeat(k, 3).error == "REBALANCE_IN_PROGRESS"  # foo 2-3 are free: rejoin to take them
    assert ctx.join(k, protocols=protocols("range", generation_id=3)).generation_id == 3
    assert ctx.sync(k, 3).assignment == [{"topic": "foo", "partitions": [2, 3]}]
    assert ctx.runtime.consumer_group.state.value == "Stable"
    return k


def downgrade_records(ctx: GroupContext, count: int) -> list[tuple]:
    """The last `count` consumer_group_records rows: (record type, member id), all tombstones."""
    records = ctx.tables["consumer_group_records"][-count:]
    assert all(r["tombstone"] for r in records)
    return [(r["record_type"], r["member_id"]) for r in records]


def expected_tombstones(member_ids: list[str]) -> list[tuple]:
    """createGroupTombstoneRecords for members in this order."""
    current, target, metadata, member, partitions, epoch = CONSUMER_TOMBSTONES
    return [*((current, m) for m in member_ids), *((target, m) for m in member_ids), (metadata, None),
            *((member, m) for m in member_ids), (partitions, None), (epoch, None)]


def assert_log_replays_to_classic_group(ctx: GroupContext) -> None:
    """The log holds no consumer group record any more, and its GroupMetadata record is the classic group."""
    assert ctx.runtime.log.consumer_group_records() == []
    group, loaded = ctx.runtime.group, group_from_value(ctx.group_id, ctx.runtime.log.group_metadata(), ctx.time)
    assert (loaded.generation_id, loaded.protocol_type, loaded.protocol_name, loaded.leader_id) == (
        group.generation_id, group.protocol_type, group.protocol_name, group.leader_id)
    assert [(m.member_id, m.assignment) for m in loaded.all_members()] == [
        (m.member_id, m.assignment) for m in group.all_members()]


def test_last_consumer_protocol_member_leaving_consumer_group():
    """testLastConsumerProtocolMemberLeavingConsumerGroup: C, the last member using the consumer protocol,
    leaves with epoch -1: the consumer group's tombstones, then the classic group's GroupMetadata record, in
    one append; the classic group, Stable at the group epoch with K holding its target, prepares a rebalance
    (its join timer at K's rebalance timeout) and K's session restarts."""
    ctx = context(group_consumer_migration_policy="downgrade")
    k = consumer_and_classic_member(ctx)
    order = in_timeline_hash_map_order(ctx.runtime.consumer_group.members)
    ctx.sleep(100)
    left = heartbeat(ctx, "C", -1)
    assert (left.error, left.member_id, left.generation_id) == ("NONE", "C", -1)
    assert downgrade_records(ctx, 9) == expected_tombstones(order)
    group = ctx.runtime.group
    assert ctx.runtime.consumer_group is None
    assert (group.state.value, group.generation_id, group.protocol_name, group.leader_id) == (
        "PreparingRebalance", 3, "range", k)
    [stored] = rows(ctx, "group_metadata", "tombstone", "generation_id", "protocol_name", "leader_id", "members")[-1:]
    assert stored[:4] == (False, 3, "range", k) and [m["member_id"] for m in stored[4]] == [k]
    assert group.member(k).assignment_partitions == (PartitionList("foo", (2, 3)),)
    assert ctx.timer_deadline("heartbeat", k) == ctx.time + CLASSIC_SESSION_MS
    assert ctx.timer_deadline("join",) == ctx.time + 10_000  # K's rebalance timeout
    assert ctx.timer_deadline(CONSUMER_GROUP_TIMER, SESSION_TIMEOUT, k) is None
    assert_log_replays_to_classic_group(ctx)

    assert rows(ctx, "group_states", "group_type", "from_state", "to_state", "generation_id", "cause",
                "member_count")[-3:] == [
        ("consumer", "Stable", "Dead", 3, "group_converted", 2), ("classic", None, "Stable", 3, "group_converted", 1),
        ("classic", "Stable", "PreparingRebalance", 3, "group_converted", 1)]
    assert rows(ctx, "members", "member_id", "change", "cause")[-3:] == [
        (order[0], "removed", "group_converted"), (order[1], "removed", "group_converted"),
        (k, "added", "group_converted")]
    assert rows(ctx, "assignments", "generation_id", "member_id", "partition")[-2:] == [(3, k, 2), (3, k, 3)]

    # K rejoins the classic group, which completes the rebalance at once: generation 4.
    assert ctx.heartbeat(k, 3).error == "REBALANCE_IN_PROGRESS"
    joined = ctx.join(k, protocols=protocols("range", owned=[("foo", [2, 3])], generation_id=3))
    assert (joined.error, joined.generation_id, joined.leader_id) == ("NONE", 4, k)
    assert ctx.sync(k, 4, assignments={k: [("foo", [0, 1, 2, 3])]}).error == "NONE"
    assert ctx.state == "Stable"


def test_a_failed_downgrade_write_leaves_the_consumer_group():
    """testLastConsumerProtocolMemberLeavingConsumerGroup's rollback: nothing changes when the append fails."""
    ctx = context()
    consumer_and_classic_member(ctx)
    before = len(ctx.tables["consumer_group_records"])
    ctx.send("COORDINATOR_FAULT", fault="write_failure", error="NOT_ENOUGH_REPLICAS")
    assert heartbeat(ctx, "C", -1).error == "COORDINATOR_NOT_AVAILABLE"
    assert ctx.runtime.group is None and "C" in ctx.runtime.consumer_group.members
    assert len(ctx.tables["consumer_group_records"]) == before
    assert_log_replays_to_group(ctx)


def test_last_consumer_protocol_member_session_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberSessionTimeoutInConsumerGroup: C stops heartbeating while K goes on;
    C's session expires and the group becomes a classic group."""
    ctx = context()
    k = consumer_and_classic_member(ctx)
    for _ in range(SESSION_MS // 5_000):
        ctx.sleep(5_000)
        assert ctx.heartbeat(k, 3).error in ("NONE", "REBALANCE_IN_PROGRESS")
    group = ctx.runtime.group
    assert ctx.runtime.consumer_group is None and group.state.value == "PreparingRebalance"
    assert [m.member_id for m in group.all_members()] == [k]
    assert downgrade_records(ctx, 9)[-1] == ("ConsumerGroupMetadata", None)
    assert rows(ctx, "group_states", "to_state", "cause")[-3][0] == "Dead"
    assert_log_replays_to_classic_group(ctx)


def test_last_consumer_protocol_member_rebalance_timeout_in_consumer_group():
    """testLastConsumerProtocolMemberRebalanceTimeoutInConsumerGroup: C, told to give up foo 2-3 for K, does
    not within its rebalance timeout (30 s); K waits for them, heartbeating; C is fenced: a classic group
    whose K holds its target (foo 2-3), though it never got them."""
    ctx = context()
    heartbeat(ctx, "C", 0)
    k = ctx.join().member_id
    assert ctx.join(k).generation_id == 3 and ctx.sync(k, 3).assignment == []
    assert owned(heartbeat(ctx, "C", 2, {"foo": [0, 1, 2, 3]})) == {"foo": [0, 1]}
    for _ in range(6):
        ctx.sleep(5_000)
        if ctx.runtime.group is None:
            assert ctx.heartbeat(k, 3).error == "NONE"  # waiting for partitions C still holds
    group = ctx.runtime.group
    assert (group.state.value, group.generation_id) == ("PreparingRebalance", 3)
    assert group.member(k).assignment_partitions == (PartitionList("foo", (2, 3)),)
    assert_log_replays_to_classic_group(ctx)


@pytest.mark.parametrize("subscription_changed", [False, True])
def test_last_static_consumer_protocol_member_replaced_by_classic_protocol_member(subscription_changed):
    """testLastStaticConsumerProtocolMemberReplacedByClassicProtocolMember: a JoinGroup with C's instance id
    replaces it (C's tombstones, the new member's records), updates the new member, then downgrades the group
    with the new member in C's place. With the same subscription it is reconciled to C's target and the
    classic group stays Stable; with another one the group epoch is bumped, nothing is reconciled and the
    classic group rebalances."""
    ctx = context()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "bar", "partitions": 2}])
    k = consumer_and_classic_member(ctx, instance_id="i-1")
    before = len(ctx.tables["consumer_group_records"])
    topics = ("foo", "bar") if subscription_changed else ("foo",)
    joined = ctx.join(instance_id="i-1", topics=topics)
    new = joined.member_id
    assert (joined.error, joined.generation_id, joined.leader_id, joined.members) == (
        "NONE", 0 if subscription_changed else 3, "", [])
    written = [(r["record_type"], r["member_id"]) for r in ctx.tables["consumer_group_records"][before:]]
    replacing = [("ConsumerGroupCurrentMemberAssignment", "C"), ("ConsumerGroupTargetAssignmentMember", "C"),
                 ("ConsumerGroupMemberMetadata", "C"), ("ConsumerGroupMemberMetadata", new),
                 ("ConsumerGroupTargetAssignmentMember", new), ("ConsumerGroupCurrentMemberAssignment", new)]
    update = [("ConsumerGroupMemberMetadata", new), ("ConsumerGroupMetadata", None) if subscription_changed
              else ("ConsumerGroupCurrentMemberAssignment", new)]
    order = [new if m == "C" else m for m in in_timeline_hash_map_order(["C", k])]
    assert written == replacing + update + expected_tombstones(order)
    group = ctx.runtime.group
    assert (group.state.value, group.generation_id) == (
        "PreparingRebalance" if subscription_changed else "Stable", 3)
    assert {m.member_id: m.assignment_partitions for m in group.all_members()} == {
        k: (PartitionList("foo", (2, 3)),), new: (PartitionList("foo", (0, 1)),)}
    assert group.leader_id in (k, new)  # the first of the consumer group's member map
    assert ctx.timer_deadline("heartbeat", new) == ctx.time + CLASSIC_SESSION_MS
    assert_log_replays_to_classic_group(ctx)
    synced = ctx.sync(new, joined.generation_id)
    if subscription_changed:
        assert synced.error == "ILLEGAL_GENERATION"  # generation 0: it must rejoin
    else:
        assert (synced.error, synced.assignment) == ("NONE", [{"topic": "foo", "partitions": [0, 1]}])


@pytest.mark.parametrize("policy", ["disabled", "upgrade"])
def test_no_downgrade_when_the_policy_does_not_allow_it(policy):
    ctx = context(group_consumer_migration_policy=policy)
    if policy == "disabled":
        heartbeat(ctx, "C", 0)
        assert ctx.join().error == "INCONSISTENT_GROUP_PROTOCOL"
        return
    k = consumer_and_classic_member(ctx)
    heartbeat(ctx, "C", -1)
    assert ctx.runtime.group is None and list(ctx.runtime.consumer_group.members) == [k]


def test_no_downgrade_beyond_the_classic_group_max_size():
    """group.max.size bounds the classic group the downgrade would make (classic members joining the consumer
    group count against group.consumer.max.size only)."""
    ctx = context(group_max_size=1)
    consumer_and_classic_member(ctx)
    other = ctx.join().member_id
    assert ctx.join(other).error == "NONE"
    heartbeat(ctx, "C", -1)  # two classic members would remain
    assert ctx.runtime.group is None and len(ctx.runtime.consumer_group.members) == 2


def classic_state(group) -> tuple:
    """A classic group's fields, its member map as (id, member) pairs in its order."""
    fields = {f.name: getattr(group, f.name) for f in dataclasses.fields(group) if f.name != "members"}
    return fields, list(group.members.items())


def test_a_downgraded_group_reloads_and_round_trips_through_encoding():
    ctx = context()
    k = consumer_and_classic_member(ctx)
    heartbeat(ctx, "C", -1)
    ctx.runtime.take_output()
    decoded = GroupRuntime.decode(ctx.runtime.encode(), ctx.config)
    assert decoded.consumer_group is None and classic_state(decoded.group) == classic_state(ctx.runtime.group)
    ctx.send("COORDINATOR_FAULT", fault="move", load_delay_ms=500)
    ctx.sleep(500)
    group = ctx.runtime.group
    assert ctx.runtime.consumer_group is None
    assert (group.state.value, group.generation_id, [m.member_id for m in group.all_members()]) == ("Stable", 3, [k])


def test_classic_group_join_with_empty_consumer_group():
    """testClassicGroupJoinWithEmptyConsumerGroup: a JoinGroup to the Empty consumer group replaces it with a
    classic group, whatever the policy: the consumer group's tombstones, then the new group's empty
    GroupMetadata record (the join is MEMBER_ID_REQUIRED)."""
    ctx = context(group_consumer_migration_policy="disabled")
    heartbeat(ctx, "C", 0)
    heartbeat(ctx, "C", -1)
    assert ctx.runtime.consumer_group.state.value == "Empty"
    before = len(ctx.tables["consumer_group_records"])
    assert ctx.join("someone").error == "UNKNOWN_MEMBER_ID"  # a known member id creates no group
    assert len(ctx.tables["consumer_group_records"]) == before and ctx.runtime.group is None
    joined = ctx.join()
    assert joined.error == "MEMBER_ID_REQUIRED"
    assert downgrade_records(ctx, 3) == [("ConsumerGroupTargetAssignmentMetadata", None),
                                         ("ConsumerGroupPartitionMetadata", None), ("ConsumerGroupMetadata", None)]
    assert rows(ctx, "group_metadata", "tombstone", "generation_id", "members")[-1] == (False, 0, [])
    assert ctx.runtime.consumer_group is None and ctx.state == "Empty"
    assert rows(ctx, "group_states", "group_type", "from_state", "to_state", "cause")[-2:] == [
        ("consumer", "Empty", "Dead", "group_converted"), ("classic", None, "Empty", "group_created")]
    assert ctx.runtime.log.consumer_group_records() == []
    ctx.join(joined.member_id)
    assert ctx.state == "PreparingRebalance"


def test_a_classic_fleet_goes_on_consuming_after_the_consumer_protocol_client_leaves():
    """The fleet of the upgrade test above; c3, the client using the consumer protocol, stops (a leave with
    epoch -1): the group becomes a classic group again; c1 and c2, told to rejoin by their heartbeats, form its
    next generation and share every partition."""
    ctx = upgraded_fleet()
    downgraded_at = ctx.time
    ctx.send("CLIENT_STOP", client_id="c3")
    ctx.sleep(60_000)
    group = ctx.runtime.group
    assert ctx.runtime.consumer_group is None and group.state.value == "Stable" and group.generation_id == 4
    classic_clients_rejoined(ctx, downgraded_at)
    assert {c for o in single_owners(ctx).values() for c in o} == {"c1", "c2"}
