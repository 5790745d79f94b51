"""Online migration of a classic group (state/consumer_group/migration.py, run by
state/consumer_group_handlers.py): a ConsumerGroupHeartbeat joining a non-empty classic group converts it
under group.consumer.migration.policy, as Kafka's GroupMetadataManagerTest's
testConsumerGroupHeartbeatWith*ClassicGroup cases do."""

from __future__ import annotations

import json

import pytest

from state.consumer_group.heartbeat import JOIN_TIMEOUT, SESSION_TIMEOUT, SYNC_TIMEOUT
from state.consumer_group.records import ClassicMemberMetadata, ClassicProtocol
from state.consumer_group_handlers import CONSUMER_GROUP_TIMER
from state.runtime import GroupRuntime
from tests.state.harness import GroupContext, protocols
from tests.state.test_consumer_group_handlers import FOO_ID, SESSION_MS, assert_log_replays_to_group, heartbeat, rows

CLASSIC_SESSION_MS = 10_000  # the harness's JoinGroup session timeout


def context(**config) -> GroupContext:
    ctx = GroupContext(group_consumer_assignment_interval_ms=0, **config)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 4, "topic_id": FOO_ID}])
    return ctx


def stable_classic_group(ctx: GroupContext) -> tuple[str, str]:
    """Two classic members, Stable at generation 1: the leader holds foo 0-1, the other foo 2-3."""
    ids = [ctx.join_new_dynamic() for _ in range(2)]
    for member_id in ids:
        ctx.join(member_id)
    while ctx.state == "PreparingRebalance":
        ctx.sleep(ctx.config.group_initial_rebalance_delay_ms)
    leader, other = ctx.group.leader_id, next(m for m in ids if m != ctx.group.leader_id)
    ctx.sync(other, 1)
    ctx.sync(leader, 1, assignments={leader: [("foo", [0, 1])], other: [("foo", [2, 3])]})
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


def test_a_classic_fleet_goes_on_consuming_after_one_client_moves_to_the_consumer_protocol():
    """Three synthetic classic consumers form a group; one restarts with group.protocol=consumer, which
    converts the group; the other two rejoin, sync and heartbeat inside the consumer group without errors,
    and every partition ends owned by exactly one client."""
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 6, "records_per_second": 10}])
    for name in ("c0", "c1", "c2"):
        ctx.send("CLIENT_START", client_id=name, topics=["orders"])
    ctx.sleep(20_000)
    assert ctx.state == "Stable"
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(5_000)
    converted_at = ctx.time
    ctx.send("CLIENT_START", client_id="c3", topics=["orders"], config={"group.protocol": "consumer"})
    ctx.sleep(60_000)
    group = ctx.runtime.consumer_group
    assert ctx.runtime.group is None and group is not None and group.state.value == "Stable"
    assert {m.client_id: m.use_classic_protocol for m in group.members.values()} == {
        "c1": True, "c2": True, "c3": False}
    classic = [r for r in ctx.rows("responses") if r["client_id"] in ("c1", "c2") and r["response_ts"] > converted_at]
    assert {r["api"] for r in classic} >= {"JoinGroup", "SyncGroup", "Heartbeat"}
    # REBALANCE_IN_PROGRESS is how a heartbeat tells a classic member to rejoin; nothing else fails.
    assert {r["error"] for r in classic} <= {"NONE", "REBALANCE_IN_PROGRESS"}
    assert ctx.runtime.metrics.failed_commits == 0
    settled = [r for r in classic if r["api"] == "Heartbeat" and r["response_ts"] > ctx.time - 20_000]
    assert settled and all(r["error"] == "NONE" for r in settled)
    owners = {}
    for client in ctx.runtime.fleet.clients.values():
        if client.alive:
            for tp in client.owned:
                owners.setdefault(tp.partition, []).append(client.client_id)
    assert sorted(owners) == list(range(6)) and all(len(o) == 1 for o in owners.values())
    assert {c for o in owners.values() for c in o} == {"c1", "c2", "c3"}
