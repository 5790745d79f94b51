"""A consumer group as its records' replay (Kafka's ConsumerGroupTest and GroupMetadataManagerTest replay
cases, trunk), and a run of heartbeats replayed into a fresh group giving the same group."""

from __future__ import annotations

import dataclasses

import pytest

from state.consumer_group.uniform import NAME as UNIFORM
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember, ConsumerGroupState, preferred_server_assignor
from state.consumer_group.group_spec import SubscriptionType
from state.consumer_group.heartbeat import HeartbeatContext
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    member_tombstones,
)
from tests.state.consumer_group.coordinator_context import (
    BAR,
    FOO,
    FOO_BAR,
    GROUP_ID,
    Context,
    assignment_metadata_record,
    epoch_record,
    epochs,
    member,
    target_record,
    tps,
)

ZAR = FOO._replace(lsb=FOO.lsb + 1)

# On the native core every group's replay is shadowed by the native group (tests/native/consumer_group/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def add(group: ConsumerGroup, m: ConsumerGroupMember) -> None:
    """ConsumerGroup.updateMember, as the records of a member replay it."""
    group.replay(ConsumerGroupMemberMetadata(m.member_id, m.subscription()))
    group.replay(ConsumerGroupCurrentMemberAssignment(m.member_id, m.current))


def test_consumer_group_states():
    # GroupMetadataManagerTest.testConsumerGroupStates
    ctx = Context(FOO_BAR)
    ctx.replay(epoch_record(10, 0), assignment_metadata_record(10, 0))
    assert ctx.group.state is ConsumerGroupState.EMPTY
    ctx.replay(ConsumerGroupMemberMetadata("m1", member("m1", epoch=0, previous=-1, names=("foo",)).subscription()),
               epoch_record(11, ctx.metadata_hash("foo")))
    assert ctx.group.state is ConsumerGroupState.ASSIGNING
    ctx.replay(target_record("m1", foo=[1, 2, 3]), assignment_metadata_record(11, 12345))
    assert ctx.group.state is ConsumerGroupState.RECONCILING
    unrevoked = CurrentAssignment(MemberState.UNREVOKED_PARTITIONS, 11, 10, epochs(10, foo=[1, 2, 3]))
    ctx.replay(ConsumerGroupCurrentMemberAssignment("m1", unrevoked))
    assert ctx.group.state is ConsumerGroupState.RECONCILING
    ctx.replay(ConsumerGroupCurrentMemberAssignment("m1", dataclasses.replace(unrevoked, state=MemberState.STABLE)))
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_a_static_member_parked_at_minus_2_is_not_reconciled():
    # ConsumerGroupTest.testGroupState (a member not at the assignment epoch keeps the group reconciling)
    group = ConsumerGroup(GROUP_ID)
    group.replay(assignment_metadata_record(10, 0))
    group.replay(epoch_record(10, 0))
    add(group, member("m1", epoch=-2, previous=10, instance_id="i1"))
    assert group.state is ConsumerGroupState.RECONCILING


def test_new_group_epochs():
    # ModernGroup: group epoch 1 and TargetAssignmentMetadata.INITIAL (1, 0); Kafka 4.0: 0
    assert (ConsumerGroup(GROUP_ID).group_epoch, ConsumerGroup(GROUP_ID).assignment_epoch) == (1, 1)
    assert (ConsumerGroup(GROUP_ID, kafka_4_0=True).group_epoch, ConsumerGroup(GROUP_ID, True).assignment_epoch) == (0, 0)


def test_updating_member_updates_partition_epoch():
    # ConsumerGroupTest.testUpdatingMemberUpdatesPartitionEpoch
    group = ConsumerGroup(GROUP_ID)
    m = ConsumerGroupMember("member", current=CurrentAssignment(MemberState.STABLE, 10, -1, {FOO: dict.fromkeys([1, 2, 3], 5)},
                                                                {BAR: dict.fromkeys([4, 5, 6], 6)}))
    add(group, m)
    assert [group.partition_epochs(FOO, p) for p in (1, 2, 3)] == [10, 10, 10]
    assert [group.partition_epochs(BAR, p) for p in (4, 5, 6)] == [10, 10, 10]
    assert group.partition_epochs(ZAR, 7) == -1
    moved = CurrentAssignment(MemberState.STABLE, 11, 10, {BAR: dict.fromkeys([1, 2, 3], 7)},
                              {ZAR: dict.fromkeys([4, 5, 6], 8)})
    group.replay(ConsumerGroupCurrentMemberAssignment("member", moved))
    assert [group.partition_epochs(BAR, p) for p in (1, 2, 3)] == [11, 11, 11]
    assert [group.partition_epochs(ZAR, p) for p in (4, 5, 6)] == [11, 11, 11]
    assert [group.partition_epochs(FOO, p) for p in (1, 2, 3)] == [-1, -1, -1]


def test_deleting_member_removes_partition_epoch():
    # ConsumerGroupTest.testDeletingMemberRemovesPartitionEpoch, through the tombstones Kafka writes
    group = ConsumerGroup(GROUP_ID)
    add(group, member("member", epoch=10, previous=9, assigned=epochs(5, foo=[1, 2, 3]), pending=epochs(6, bar=[4])))
    group.replay(target_record("member", foo=[1, 2, 3]))
    for record in member_tombstones("member"):
        group.replay(record)
    assert group.members == {} and group.target_assignment == {}
    assert group.partition_epochs(FOO, 1) == -1 and group.partition_epochs(BAR, 4) == -1
    assert group.partition_epochs == ConsumerGroup(GROUP_ID).partition_epochs


def test_member_tombstone_before_its_assignment_tombstone_is_refused():
    # GroupMetadataManager.replay(ConsumerGroupMemberMetadataKey, null): the current assignment must go first
    group = ConsumerGroup(GROUP_ID)
    add(group, member("member", epoch=10, previous=9))
    with pytest.raises(ValueError):
        group.replay(ConsumerGroupMemberMetadata("member", None))


def test_static_members_by_instance_id():
    # ConsumerGroupTest.testGetStaticMemberByInstanceId, testRemoveStaticMember
    group = ConsumerGroup(GROUP_ID)
    add(group, member("member", epoch=10, previous=9, instance_id="instance"))
    assert group.static_member("instance").member_id == "member"
    assert group.static_member("other") is None and group.static_member(None) is None
    for record in member_tombstones("member"):
        group.replay(record)
    assert group.static_members == {}


def test_preferred_server_assignor():
    # ConsumerGroupTest.testPreferredServerAssignor
    group = ConsumerGroup(GROUP_ID)
    assert group.preferred_server_assignor() is None
    add(group, member("member1", epoch=0, previous=-1, assignor="range"))
    add(group, member("member2", epoch=0, previous=-1, assignor="range"))
    add(group, member("member3", epoch=0, previous=-1, assignor="uniform"))
    assert group.preferred_server_assignor() == "range"
    group.replay(ConsumerGroupMemberMetadata("member1", member("member1", epoch=0, previous=-1, assignor=None).subscription()))
    # A tie (Kafka's test accepts either): the first in java.util.HashMap order, "uniform" before "range".
    assert group.server_assignors == {"range": 1, "uniform": 1}
    assert group.preferred_server_assignor() == "uniform"
    group.replay(ConsumerGroupMemberMetadata("member2", member("member2", epoch=0, previous=-1, assignor=None).subscription()))
    assert group.preferred_server_assignor() == "uniform"
    group.replay(ConsumerGroupMemberMetadata("member3", member("member3", epoch=0, previous=-1, assignor=None).subscription()))
    assert group.preferred_server_assignor() is None and group.server_assignors == {}
    assert preferred_server_assignor({"uniform": 2, "range": 1}) == "uniform"


def test_update_subscribed_topic_names_and_subscription_type():
    # ConsumerGroupTest.testUpdateSubscribedTopicNamesAndSubscriptionType
    group = ConsumerGroup(GROUP_ID)
    assert group.subscribed_topic_names == {} and group.subscription_type is SubscriptionType.HOMOGENEOUS
    add(group, member("member1", epoch=0, previous=-1, names=("foo",)))
    assert group.subscribed_topic_names == {"foo": 1} and group.subscription_type is SubscriptionType.HOMOGENEOUS
    add(group, member("member2", epoch=0, previous=-1, names=("bar", "foo")))
    assert group.subscribed_topic_names == {"foo": 2, "bar": 1}
    assert group.subscription_type is SubscriptionType.HETEROGENEOUS
    add(group, member("member1", epoch=0, previous=-1, names=("bar", "foo")))
    assert group.subscription_type is SubscriptionType.HOMOGENEOUS


def test_is_subscribed_to_topic():
    # ConsumerGroupTest.testIsSubscribedToTopic
    group = ConsumerGroup(GROUP_ID)
    add(group, member("member1", epoch=1, previous=0, names=("foo",)))
    add(group, member("member2", epoch=1, previous=0, names=("bar",)))
    assert group.is_subscribed_to("foo") and group.is_subscribed_to("bar")
    for record in member_tombstones("member1"):
        group.replay(record)
    assert not group.is_subscribed_to("foo") and group.is_subscribed_to("bar")
    for record in member_tombstones("member2"):
        group.replay(record)
    assert not group.is_subscribed_to("bar")


def test_partition_metadata_tombstone_is_accepted_and_group_deletion_is_not_modelled():
    # GroupMetadataManager.replay(ConsumerGroupPartitionMetadataKey, null) changes nothing kept here
    group = ConsumerGroup(GROUP_ID)
    group.replay(ConsumerGroupPartitionMetadata())
    assert group == ConsumerGroup(GROUP_ID)
    with pytest.raises(ValueError):
        group.replay(ConsumerGroupMetadata(None))
    group.replay(ConsumerGroupTargetAssignmentMetadata(None))
    assert group.assignment_epoch == -1


def test_replaying_a_run_of_heartbeats_gives_the_same_group():
    """State = replay of records: the group the heartbeats built equals a fresh group fed their records,
    through joins, reconciliation, a static member's leave and return, a leave and both timeouts."""
    ctx = Context(FOO_BAR, group_consumer_assignment_interval_ms=0)
    ctx.context = HeartbeatContext.from_config(ctx.config, ctx.topics)  # the real uniform assignor
    ctx.join("a", server_assignor=UNIFORM)
    ctx.join("b", instance_id="b-instance")
    ctx.join("c", names=("foo",), rebalance_timeout_ms=1000)
    for _ in range(3):
        for member_id in ("a", "b", "c"):
            m = ctx.group.members[member_id]
            owned = tuple(sorted((t, tuple(sorted(ps))) for t, ps in m.assigned_partitions.items()))
            ctx.heartbeat(member_id, m.member_epoch, instance_id=m.instance_id, topic_partitions=owned)
    assert ctx.group.state is ConsumerGroupState.STABLE
    ctx.heartbeat("b", -2, instance_id="b-instance")
    ctx.join("b2", instance_id="b-instance")
    ctx.heartbeat("a", ctx.group.members["a"].member_epoch, subscribed_topic_names=("bar",))
    ctx.sleep(2000)  # c does not revoke in time
    ctx.heartbeat("a", -1)
    ctx.sleep(45_000)  # b2's session ends
    replayed = ConsumerGroup(GROUP_ID)
    for record in ctx.log:
        replayed.replay(record)
    assert replayed == ctx.group
    assert ctx.group.members == {} and ctx.group.state is ConsumerGroupState.EMPTY
    assert len(ctx.log) > 30


def test_replay_equality_sees_a_difference():
    ctx = Context(FOO_BAR)
    ctx.assignor.prepare({"a": {FOO: [0]}})
    ctx.join("a")
    replayed = ConsumerGroup(GROUP_ID)
    for record in ctx.log[:-1]:
        replayed.replay(record)
    assert replayed != ctx.group
    replayed.replay(ctx.log[-1])
    assert replayed == ctx.group
    assert ctx.group.members["a"].assigned_partitions == {FOO: {0: 2}}
    assert tps(foo=[0]) == ((FOO, (0,)),)


def test_member_metadata_record_carries_the_names_sorted():
    # GroupCoordinatorRecordHelpers.newConsumerGroupMemberSubscriptionRecord sorts the member's names
    m = member("m1", epoch=0, previous=-1, names=("foo", "bar", "Zed"))
    assert m.subscription().subscribed_topic_names == ("Zed", "bar", "foo")
    group = ConsumerGroup(GROUP_ID)
    add(group, m)
    assert group.members["m1"] == m
