"""Kafka's GroupMetadataManagerTest consumer group heartbeat cases (trunk), case by case, with the request
checks of GroupCoordinatorServiceTest. Where Kafka checks the records unordered within a group (its
TargetAssignmentMember records), they are checked here in the order Kafka writes them: the members'
java.util.HashMap order."""

from __future__ import annotations

import pytest

from state.consumer_group.group import ConsumerGroupState
from state.consumer_group.group_spec import PartitionAssignorError, in_java_hash_map_order
from state.consumer_group.messages import HeartbeatRequest, HeartbeatResponse
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    member_tombstones,
)
from tests.state.consumer_group.coordinator_context import (
    BAR,
    FOO,
    FOO_BAR,
    Context,
    MockAssignor,
    assignment_metadata_record,
    epoch_record,
    epochs,
    member,
    target_record,
    tps,
)

STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS
M1, M2, M3 = "member-id-1", "member-id-2", "member-id-3"


def hash_order(*member_ids: str) -> list[str]:
    """The order Kafka writes the members' TargetAssignmentMember records in."""
    return list(in_java_hash_map_order(dict.fromkeys(member_ids)))


def current(m, state, epoch, previous, assigned=None, pending=None):
    return ConsumerGroupCurrentMemberAssignment(m, CurrentAssignment(state, epoch, previous, assigned or {}, pending or {}))


def ok(member_id, epoch, assignment=None, interval=5000):
    return HeartbeatResponse(member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=interval,
                             assignment=assignment)


def error_of(result):
    assert result.records == () and result.timers == ()
    return result.response.error


def two_member_group(ctx, *, instance_ids=False, m2_names=("foo", "bar")):
    """m1 with foo 0-2, bar 0-1 and m2 with foo 3-5, bar 2, both STABLE at 10 (previous 9), as most of
    Kafka's tests start."""
    m1 = member(M1, epoch=10, previous=9, assigned=epochs(10, foo=[0, 1, 2], bar=[0, 1]), rebalance_timeout_ms=5000,
                instance_id=M1 if instance_ids else None)
    m2 = member(M2, epoch=10, previous=9, assigned=epochs(10, foo=[3, 4, 5], bar=[2]), rebalance_timeout_ms=5000,
                instance_id=M2 if instance_ids else None, names=m2_names)
    ctx.with_group(m1, m2, group_epoch=10, assignment_epoch=10)
    return m1, m2


# --------------------------------------------------------------------------------------------------------
# Request checks

VALID_JOIN = dict(group_id="fooup", member_id="m", member_epoch=0, rebalance_timeout_ms=5000,
                  subscribed_topic_names=("foo",), topic_partitions=())


@pytest.mark.parametrize("changes, message", [
    (dict(member_id=""), "MemberId is blank."),
    (dict(member_id=" ", member_epoch=1), "MemberId is blank."),
    (dict(group_id=""), "GroupId is blank."),
    (dict(instance_id=""), "InstanceId is blank."),
    (dict(rack_id=""), "RackId is blank."),
    (dict(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be given when (re-)joining."),
    (dict(topic_partitions=None), "TopicPartitions must be empty when (re-)joining."),
    (dict(topic_partitions=((FOO, (0,)),)), "TopicPartitions must be empty when (re-)joining."),
    (dict(subscribed_topic_names=None), "SubscribedTopicNames or SubscribedTopicRegex must be given when (re-)joining."),
    (dict(member_epoch=-2), "InstanceId must be given to leave with epoch -2."),
    (dict(member_epoch=-3), "MemberEpoch -3 is invalid."),
])
def test_consumer_group_heartbeat_request_validation(changes, message):
    # GroupCoordinatorServiceTest.testConsumerGroupHeartbeatRequestValidation
    ctx = Context(FOO_BAR)
    result = ctx.heartbeat(**{**VALID_JOIN, **changes})
    assert error_of(result) == "INVALID_REQUEST"
    assert result.response.error_message == message
    assert ctx.group is None


def test_blank_member_id_is_accepted_from_a_v0_join():
    # GroupCoordinatorServiceTest.testConsumerGroupHeartbeatRequestValidation (v0: the coordinator makes the id)
    ctx = Context(FOO_BAR)
    assert ctx.heartbeat(**{**VALID_JOIN, "member_id": "", "api_version": 0}).response.error == "NONE"


def test_unsupported_assignor():
    # GroupCoordinatorServiceTest.testConsumerGroupHeartbeatRequestValidation (UNSUPPORTED_ASSIGNOR)
    ctx = Context(FOO_BAR)
    result = ctx.heartbeat(**{**VALID_JOIN, "server_assignor": "foo"})
    assert error_of(result) == "UNSUPPORTED_ASSIGNOR"


def test_an_empty_regex_is_no_regex():
    # A regex is a subscription (tests/state/consumer_group/test_regex.py); "" is none at all.
    ctx = Context(FOO_BAR)
    result = ctx.heartbeat(**{**VALID_JOIN, "subscribed_topic_regex": ""})
    assert result.response.error == "NONE" and result.resolve_regexes is None
    assert ctx.group.subscribed_regexes == {}


# --------------------------------------------------------------------------------------------------------
# Joining, member ids and epochs

def test_member_id_generation():
    # GroupMetadataManagerTest.testMemberIdGeneration
    ctx = Context()
    result = ctx.heartbeat("", 0, server_assignor="range", rebalance_timeout_ms=5000,
                           subscribed_topic_names=("foo", "bar"), topic_partitions=(), api_version=0)
    assert result.response == ok("generated-member-id", 2, ())


def test_unknown_group_id():
    # GroupMetadataManagerTest.testUnknownGroupId
    ctx = Context()
    result = ctx.heartbeat(M1, 100, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                           topic_partitions=())
    assert error_of(result) == "GROUP_ID_NOT_FOUND"


def test_a_group_of_another_type_is_not_found():
    # GroupMetadataManagerTest.testConsumerGroupHeartbeatWithNonEmptyClassicGroup (classic conversion not modelled)
    ctx = Context(FOO_BAR)
    ctx.group = object()
    assert error_of(ctx.join(M1)) == "GROUP_ID_NOT_FOUND"


def test_unknown_member_id_joins_consumer_group():
    # GroupMetadataManagerTest.testUnknownMemberIdJoinsConsumerGroup
    ctx = Context()
    ctx.join(M1, server_assignor="range")
    result = ctx.heartbeat("unknown", 1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                           topic_partitions=())
    assert error_of(result) == "UNKNOWN_MEMBER_ID"


def test_consumer_group_member_epoch_validation():
    # GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation
    ctx = Context()
    m = member(M1, epoch=100, previous=99, assigned=epochs(100, foo=[1, 2, 3]), rebalance_timeout_ms=5000)
    ctx.replay(ConsumerGroupMemberMetadata(M1, m.subscription()), epoch_record(100, 0), target_record(M1, foo=[1, 2, 3]),
               assignment_metadata_record(100, 12345), ConsumerGroupCurrentMemberAssignment(M1, m.current))
    hb = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert error_of(ctx.heartbeat(M1, 200, **hb)) == "FENCED_MEMBER_EPOCH"
    assert error_of(ctx.heartbeat(M1, 50, **hb)) == "FENCED_MEMBER_EPOCH"
    # The previous epoch, but without the partitions it owns.
    assert error_of(ctx.heartbeat(M1, 99, **hb)) == "FENCED_MEMBER_EPOCH"
    # The previous epoch with a subset of its partitions: the response bumping it may have been lost.
    result = ctx.heartbeat(M1, 99, topic_partitions=tps(foo=[1, 2]), **hb)
    assert result.response.member_epoch == 100


def test_previous_epoch_with_partitions_outside_the_assignment_is_fenced():
    # GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation (isSubset: a partition not assigned)
    ctx = Context()
    m = member(M1, epoch=100, previous=99, assigned=epochs(100, foo=[1, 2, 3]), rebalance_timeout_ms=5000)
    ctx.with_group(m, group_epoch=100, assignment_epoch=100)
    result = ctx.heartbeat(M1, 99, topic_partitions=tps(foo=[1, 4]))
    assert error_of(result) == "FENCED_MEMBER_EPOCH"


def rejoining_member_group(kafka_4_0=False):
    ctx = Context(FOO_BAR, kafka_4_0=kafka_4_0)
    m = member(M1, epoch=100, previous=99, assigned=epochs(100, foo=[0, 1, 2]), rebalance_timeout_ms=5000,
               names=("foo",))
    ctx.with_group(m, group_epoch=100, assignment_epoch=100, names=("foo",))
    return ctx, m


def test_member_can_rejoin_with_epoch_zero_in_stable_state():
    # GroupMetadataManagerTest.testMemberCanRejoinWithEpochZeroInStableState
    ctx, m = rejoining_member_group()
    result = ctx.join(M1, names=("foo",), server_assignor="range")
    assert result.response == ok(M1, 100, tps(foo=[0, 1, 2]))
    assert result.records == ()
    assert ctx.group.group_epoch == 100


def test_member_rejoining_with_epoch_zero_is_fenced_in_kafka_4_0():
    # Kafka 4.0.0: epoch 0 is checked like any other epoch (KAFKA-19233 lifted that in 4.3)
    ctx, m = rejoining_member_group(kafka_4_0=True)
    assert error_of(ctx.join(M1, names=("foo",), server_assignor="range")) == "FENCED_MEMBER_EPOCH"


def test_member_can_rejoin_with_epoch_zero_in_unrevoked_partitions_state():
    # GroupMetadataManagerTest.testMemberCanRejoinWithEpochZeroInUnrevokedPartitionsState
    ctx = Context(FOO_BAR)
    m = member(M1, epoch=100, previous=99, state=UNREVOKED, assigned=epochs(100, foo=[0, 1]),
               pending=epochs(100, foo=[2]), rebalance_timeout_ms=5000, names=("foo",))
    ctx.with_group(m, group_epoch=101, assignment_epoch=101, targets={M1: {"foo": [0, 1]}}, names=("foo",))
    result = ctx.join(M1, names=("foo",), server_assignor="range")
    assert result.response == ok(M1, 101, tps(foo=[0, 1]))
    assert result.records == (current(M1, STABLE, 101, 100, epochs(100, foo=[0, 1])),)
    assert ctx.rebalance_timer(M1) is None


def test_member_can_rejoin_with_epoch_zero_in_unreleased_partitions_state():
    # GroupMetadataManagerTest.testMemberCanRejoinWithEpochZeroInUnreleasedPartitionsState
    ctx = Context(FOO_BAR)
    m = member(M1, epoch=100, previous=99, state=UNRELEASED, assigned=epochs(100, foo=[0]), rebalance_timeout_ms=5000,
               names=("foo",))
    ctx.with_group(m, group_epoch=100, assignment_epoch=100, targets={M1: {"foo": [0, 1, 2]}}, names=("foo",))
    result = ctx.join(M1, names=("foo",), server_assignor="range")
    assert result.response == ok(M1, 100, tps(foo=[0, 1, 2]))
    assert result.records == (current(M1, STABLE, 100, 100, {FOO: {0: 100, 1: 100, 2: 100}}),)


def test_member_joins_empty_consumer_group():
    # GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup
    ctx = Context(FOO_BAR)
    ctx.assignor.prepare({M1: {FOO: range(6), BAR: range(3)}})
    result = ctx.join(M1, server_assignor="range")
    assert result.response == ok(M1, 2, tps(foo=range(6), bar=range(3)))
    expected = member(M1, epoch=2, previous=0, assigned=epochs(2, foo=range(6), bar=range(3)), rebalance_timeout_ms=5000)
    assert result.records == (
        ConsumerGroupMemberMetadata(M1, expected.subscription()),
        epoch_record(2, ctx.metadata_hash("foo", "bar")),
        target_record(M1, foo=range(6), bar=range(3)),
        assignment_metadata_record(2, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M1, expected.current),
    )
    assert ctx.group.members[M1] == expected
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_member_joins_empty_consumer_group_in_kafka_4_0():
    # Kafka 4.0.0's GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup: epochs start at 0, so the
    # first member gets epoch 1 (its PartitionMetadata record is not modelled)
    ctx = Context(FOO_BAR, kafka_4_0=True)
    ctx.assignor.prepare({M1: {FOO: range(6), BAR: range(3)}})
    result = ctx.join(M1, server_assignor="range")
    assert result.response == ok(M1, 1, tps(foo=range(6), bar=range(3)))
    assert result.records[1] == epoch_record(1, ctx.metadata_hash("foo", "bar"))


def test_updating_subscription_triggers_new_target_assignment():
    # GroupMetadataManagerTest.testUpdatingSubscriptionTriggersNewTargetAssignment
    ctx = Context(FOO_BAR)
    m = member(M1, epoch=10, previous=9, assigned=epochs(10, foo=range(6)), names=("foo",))
    ctx.with_group(m, group_epoch=10, assignment_epoch=10, names=("foo",))
    ctx.assignor.prepare({M1: {FOO: range(6), BAR: range(3)}})
    result = ctx.heartbeat(M1, 10, subscribed_topic_names=("foo", "bar"))
    assert result.response == ok(M1, 11, tps(foo=range(6), bar=range(3)))
    expected = member(M1, epoch=11, previous=10, names=("foo", "bar"),
                      assigned={FOO: dict.fromkeys(range(6), 10), BAR: dict.fromkeys(range(3), 11)})
    assert result.records == (
        ConsumerGroupMemberMetadata(M1, expected.subscription()),
        epoch_record(11, ctx.metadata_hash("foo", "bar")),
        target_record(M1, foo=range(6), bar=range(3)),
        assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M1, expected.current),
    )


def test_new_joining_member_triggers_new_target_assignment():
    # GroupMetadataManagerTest.testNewJoiningMemberTriggersNewTargetAssignment
    ctx = Context(FOO_BAR)
    two_member_group(ctx)
    targets = {M1: dict(foo=[0, 1], bar=[0]), M2: dict(foo=[2, 3], bar=[1]), M3: dict(foo=[4, 5], bar=[2])}
    ctx.assignor.prepare({m: {FOO: t["foo"], BAR: t["bar"]} for m, t in targets.items()})
    result = ctx.join(M3, server_assignor="range")
    assert result.response == ok(M3, 11, ())
    expected3 = member(M3, epoch=11, previous=0, state=UNRELEASED, rebalance_timeout_ms=5000)
    assert result.records == (
        ConsumerGroupMemberMetadata(M3, expected3.subscription()),
        epoch_record(11, ctx.metadata_hash("foo", "bar")),
        *[target_record(m, **targets[m]) for m in hash_order(M1, M2, M3)],
        assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M3, expected3.current),
    )
    assert ctx.group.state is ConsumerGroupState.RECONCILING


def test_leaving_member_bumps_group_epoch():
    # GroupMetadataManagerTest.testLeavingMemberBumpsGroupEpoch
    ctx = Context(FOO_BAR)
    two_member_group(ctx, m2_names=("foo", "bar", "zar"))
    result = ctx.heartbeat(M2, -1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert result.response == HeartbeatResponse(member_id=M2, member_epoch=-1)
    assert result.records == (*member_tombstones(M2), epoch_record(11, ctx.metadata_hash("foo", "bar")))
    assert M2 not in ctx.group.members


def test_leaving_unknown_member_and_unknown_group():
    # GroupMetadataManagerTest.testConsumerGroupLeaveWithUnknownMember / testUnknownGroupId (leave path)
    ctx = Context(FOO_BAR)
    assert error_of(ctx.heartbeat(M1, -1)) == "GROUP_ID_NOT_FOUND"
    two_member_group(ctx)
    assert error_of(ctx.heartbeat(M3, -1)) == "UNKNOWN_MEMBER_ID"


def test_last_member_leaving_brings_the_assignment_epoch_up():
    # GroupMetadataManagerTest.testTopicHashIsRemoveFromCacheIfNoGroupSubscribesIt (the leave)
    ctx = Context(FOO_BAR)
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    ctx.join(M1, names=("foo",), server_assignor="range")
    result = ctx.heartbeat(M1, -1)
    assert result.response == HeartbeatResponse(member_id=M1, member_epoch=-1)
    assert result.records == (*member_tombstones(M1), epoch_record(3, 0), assignment_metadata_record(3, 0))
    assert ctx.group.state is ConsumerGroupState.EMPTY


def test_last_member_leaving_in_kafka_4_0_leaves_the_assignment_epoch_behind():
    # Kafka 4.0.0's consumerGroupFenceMembers: no TargetAssignmentMetadata record (KAFKA-20442 is 4.4)
    ctx = Context(FOO_BAR, kafka_4_0=True)
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    ctx.join(M1, names=("foo",), server_assignor="range")
    assert ctx.heartbeat(M1, -1).records == (*member_tombstones(M1), epoch_record(2, 0))


# --------------------------------------------------------------------------------------------------------
# Static members

def test_group_epoch_bump_when_new_static_member_joins():
    # GroupMetadataManagerTest.testGroupEpochBumpWhenNewStaticMemberJoins
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True, m2_names=("foo", "bar", "zar"))
    targets = {M1: dict(foo=[0, 1], bar=[0]), M2: dict(foo=[2, 3], bar=[1]), M3: dict(foo=[4, 5], bar=[2])}
    ctx.assignor.prepare({m: {FOO: t["foo"], BAR: t["bar"]} for m, t in targets.items()})
    result = ctx.join(M3, instance_id=M3, server_assignor="range")
    assert result.response == ok(M3, 11, ())
    expected3 = member(M3, epoch=11, previous=0, state=UNRELEASED, instance_id=M3, rebalance_timeout_ms=5000)
    assert result.records == (
        ConsumerGroupMemberMetadata(M3, expected3.subscription()),
        epoch_record(11, ctx.metadata_hash("foo", "bar")),
        *[target_record(m, **targets[m]) for m in hash_order(M1, M2, M3)],
        assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(M3, expected3.current),
    )


def test_no_group_epoch_bump_when_static_member_temporarily_leaves():
    # GroupMetadataManagerTest.testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves
    ctx = Context(FOO_BAR)
    m1, m2 = two_member_group(ctx, instance_ids=True, m2_names=("foo", "bar", "zar"))
    result = ctx.heartbeat(M2, -2, instance_id=M2, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                           topic_partitions=())
    assert result.response == HeartbeatResponse(member_id=M2, member_epoch=-2)
    assert result.records == (current(M2, STABLE, -2, 9, epochs(0, foo=[3, 4, 5], bar=[2])),)
    assert result.timers == ()
    assert ctx.group.group_epoch == 10
    # Its partitions stay held, at epoch -2: nobody else gets them.
    assert ctx.group.partition_epochs(FOO, 3) == -2


def test_leaving_static_member_bumps_group_epoch():
    # GroupMetadataManagerTest.testLeavingStaticMemberBumpsGroupEpoch
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True, m2_names=("foo", "bar", "zar"))
    result = ctx.heartbeat(M2, -1, instance_id=M2, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"),
                           topic_partitions=())
    assert result.response == HeartbeatResponse(member_id=M2, member_epoch=-1)
    assert result.records == (*member_tombstones(M2), epoch_record(11, ctx.metadata_hash("foo", "bar")))


def test_static_member_gets_back_assignment_upon_rejoin():
    # GroupMetadataManagerTest.testStaticMemberGetsBackAssignmentUponRejoin
    ctx = Context(FOO_BAR)
    m1, m2 = two_member_group(ctx, instance_ids=True)
    ctx.heartbeat(M2, -2, instance_id=M2, subscribed_topic_names=("foo", "bar"), topic_partitions=())
    rejoin = "member-id-2-rejoin"
    result = ctx.join(rejoin, instance_id=M2, server_assignor="range")
    assert result.response == ok(rejoin, 10, tps(foo=[3, 4, 5], bar=[2]))
    copied = member(rejoin, epoch=0, previous=0, instance_id=M2, assigned=epochs(0, foo=[3, 4, 5], bar=[2]),
                    rebalance_timeout_ms=5000)
    assert result.records == (
        *member_tombstones(M2),
        ConsumerGroupMemberMetadata(rejoin, copied.subscription()),
        target_record(rejoin, foo=[3, 4, 5], bar=[2]),
        ConsumerGroupCurrentMemberAssignment(rejoin, copied.current),
        current(rejoin, STABLE, 10, 0, epochs(0, foo=[3, 4, 5], bar=[2])),
    )
    assert ctx.session_deadline(M2) is None and ctx.rebalance_timer(M2) is None
    assert ctx.group.static_members[M2] == rejoin and M2 not in ctx.group.members


def test_static_member_rejoins_with_new_subscribed_topics():
    # GroupMetadataManagerTest.testStaticMemberRejoinsWithNewSubscribedTopics
    ctx = Context(FOO_BAR)
    m1 = member(M1, epoch=10, previous=9, instance_id="instance-id-1", assigned=epochs(10, foo=[0, 1, 2]),
                rebalance_timeout_ms=5000, names=("foo",))
    m2 = member(M2, epoch=10, previous=9, instance_id="instance-id-2", assigned=epochs(10, foo=[3, 4, 5]),
                rebalance_timeout_ms=5000, names=("foo",))
    ctx.with_group(m1, m2, group_epoch=10, assignment_epoch=10, names=("foo",))
    rejoin = "member-id-2-rejoin"
    ctx.assignor.prepare({M1: {FOO: [0, 1, 2]}, rejoin: {FOO: [3, 4, 5], BAR: [0, 1, 2]}})
    left = ctx.heartbeat(M2, -2, instance_id="instance-id-2")
    assert left.response == HeartbeatResponse(member_id=M2, member_epoch=-2)
    result = ctx.join(rejoin, instance_id="instance-id-2", server_assignor="range")
    assert result.response == ok(rejoin, 11, tps(foo=[3, 4, 5], bar=[0, 1, 2]))
    copied = member(rejoin, epoch=0, previous=0, instance_id="instance-id-2", assigned=epochs(0, foo=[3, 4, 5]),
                    rebalance_timeout_ms=5000, names=("foo",))
    updated = member(rejoin, epoch=11, previous=0, instance_id="instance-id-2", rebalance_timeout_ms=5000,
                     assigned={FOO: dict.fromkeys([3, 4, 5], 0), BAR: dict.fromkeys([0, 1, 2], 11)})
    assert result.records == (
        *member_tombstones(M2),
        ConsumerGroupMemberMetadata(rejoin, copied.subscription()),
        target_record(rejoin, foo=[3, 4, 5]),
        ConsumerGroupCurrentMemberAssignment(rejoin, copied.current),
        ConsumerGroupMemberMetadata(rejoin, updated.subscription()),
        epoch_record(11, ctx.metadata_hash("foo", "bar")),
        target_record(rejoin, foo=[3, 4, 5], bar=[0, 1, 2]),
        assignment_metadata_record(11, ctx.time),
        ConsumerGroupCurrentMemberAssignment(rejoin, updated.current),
    )


def test_should_throw_unreleased_instance_id_exception_when_new_member_joins_with_in_use_instance_id():
    # GroupMetadataManagerTest.testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True)
    assert error_of(ctx.join(M3, instance_id=M1, server_assignor="range")) == "UNRELEASED_INSTANCE_ID"
    # Even under the member id that holds it.
    assert error_of(ctx.join(M1, instance_id=M1, server_assignor="range")) == "UNRELEASED_INSTANCE_ID"


def test_should_throw_unknown_member_id_exception_when_unknown_static_member_joins():
    # GroupMetadataManagerTest.testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True)
    result = ctx.heartbeat(M3, 11, instance_id="unknown-instance", rebalance_timeout_ms=5000,
                           subscribed_topic_names=("foo", "bar"))
    assert error_of(result) == "UNKNOWN_MEMBER_ID"


def test_should_throw_fenced_instance_id_exception_when_static_member_with_different_member_id_joins():
    # GroupMetadataManagerTest.testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True)
    result = ctx.heartbeat(M3, 11, instance_id=M1, rebalance_timeout_ms=5000, subscribed_topic_names=("foo", "bar"))
    assert error_of(result) == "FENCED_INSTANCE_ID"


def test_consumer_group_member_epoch_validation_for_static_member():
    # GroupMetadataManagerTest.testConsumerGroupMemberEpochValidationForStaticMember
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True)
    assert error_of(ctx.heartbeat(M1, 11, instance_id=M1)) == "FENCED_MEMBER_EPOCH"
    assert error_of(ctx.heartbeat(M1, 8, instance_id=M1)) == "FENCED_MEMBER_EPOCH"
    assert ctx.heartbeat(M1, 9, instance_id=M1, topic_partitions=tps(foo=[0])).response.member_epoch == 10


@pytest.mark.parametrize("instance_id, error", [("unknown-instance", "UNKNOWN_MEMBER_ID"), (M2, "FENCED_INSTANCE_ID")])
def test_static_member_leave_errors(instance_id, error):
    # GroupMetadataManagerTest.testShouldThrowUnknownMemberIdExceptionWhenUnknownStaticMemberLeaves,
    # testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdLeaves
    ctx = Context(FOO_BAR)
    two_member_group(ctx, instance_ids=True)
    assert error_of(ctx.heartbeat(M1, -2, instance_id=instance_id)) == error


# --------------------------------------------------------------------------------------------------------
# Group size

def test_new_member_is_rejected_with_maximum_members_is_reached():
    # GroupMetadataManagerTest.testNewMemberIsRejectedWithMaximumMembersIsReached
    ctx = Context(FOO_BAR, group_consumer_max_size=2)
    two_member_group(ctx)
    assert error_of(ctx.join(M3, server_assignor="range")) == "GROUP_MAX_SIZE_REACHED"
    # A member already in the group is not a new one.
    assert ctx.heartbeat(M1, 10).response.error == "NONE"


@pytest.mark.parametrize("kafka_4_0, error", [(False, "NONE"), (True, "GROUP_MAX_SIZE_REACHED")])
def test_static_member_can_rejoin_when_consumer_group_is_full(kafka_4_0, error):
    # GroupMetadataManagerTest.testStaticMemberCanRejoinWhenConsumerGroupIsFull (4.4+; 4.0 rejects it)
    ctx = Context(FOO_BAR, kafka_4_0=kafka_4_0, group_consumer_max_size=2)
    two_member_group(ctx, instance_ids=True)
    ctx.heartbeat(M2, -2, instance_id=M2)
    assert ctx.join("member-id-2-rejoin", instance_id=M2, server_assignor="range").response.error == error


def test_static_member_rejoin_with_unreleased_instance_id_fails_when_consumer_group_is_full():
    # GroupMetadataManagerTest.testStaticMemberRejoinWithUnreleasedInstanceIdFailsWhenConsumerGroupIsFull
    ctx = Context(FOO_BAR, group_consumer_max_size=2)
    two_member_group(ctx, instance_ids=True)
    assert error_of(ctx.join("member-id-2-rejoin", instance_id=M2)) == "UNRELEASED_INSTANCE_ID"


def test_new_static_member_is_rejected_when_consumer_group_is_full():
    # GroupMetadataManagerTest.testNewStaticMemberIsRejectedWhenConsumerGroupIsFull
    ctx = Context(FOO_BAR, group_consumer_max_size=2)
    two_member_group(ctx, instance_ids=True)
    assert error_of(ctx.join(M3, instance_id=M3)) == "GROUP_MAX_SIZE_REACHED"


# --------------------------------------------------------------------------------------------------------
# Reconciliation through heartbeats

def test_reconciliation_process():
    # GroupMetadataManagerTest.testReconciliationProcess
    ctx = Context(FOO_BAR)
    two_member_group(ctx)
    ctx.assignor.prepare({M1: {FOO: [0, 1], BAR: [0]}, M2: {FOO: [2, 3], BAR: [2]}, M3: {FOO: [4, 5], BAR: [1]}})

    # Member 3 joins: the group epoch is bumped and the new target computed.
    result = ctx.join(M3, server_assignor="range")
    assert result.response == ok(M3, 11, ())
    assert ctx.group.state is ConsumerGroupState.RECONCILING

    # Member 1 heartbeats: it must revoke foo 2 and bar 1 first.
    result = ctx.heartbeat(M1, 10)
    assert result.response == ok(M1, 10, tps(foo=[0, 1], bar=[0]))
    assert result.records == (current(M1, UNREVOKED, 10, 10, epochs(10, foo=[0, 1], bar=[0]),
                                      epochs(10, foo=[2], bar=[1])),)
    ctx.assert_rebalance_timeout(M1, 5000)

    # Member 2 heartbeats: it must revoke foo 4 and 5.
    result = ctx.heartbeat(M2, 10)
    assert result.response == ok(M2, 10, tps(foo=[3], bar=[2]))
    assert result.records == (current(M2, UNREVOKED, 10, 10, epochs(10, foo=[3], bar=[2]), epochs(10, foo=[4, 5])),)

    # Member 3 heartbeats: nothing is free yet, its previous epoch catches up.
    result = ctx.heartbeat(M3, 11)
    assert result.response == ok(M3, 11)
    assert result.records == (current(M3, UNRELEASED, 11, 11),)

    # Member 1 acknowledges its revocation and moves to epoch 11.
    result = ctx.heartbeat(M1, 10, topic_partitions=tps(foo=[0, 1], bar=[0]))
    assert result.response == ok(M1, 11)
    assert result.records == (current(M1, STABLE, 11, 10, epochs(10, foo=[0, 1], bar=[0])),)
    assert ctx.rebalance_timer(M1) is None

    # Member 2 heartbeats without saying what it owns: it stays where it is.
    result = ctx.heartbeat(M2, 10)
    assert result.response == ok(M2, 10)
    assert result.records == ()

    # Member 3 gets bar 1, which member 1 gave up; foo 4 and 5 are still member 2's.
    result = ctx.heartbeat(M3, 11)
    assert result.response == ok(M3, 11, tps(bar=[1]))
    assert result.records == (current(M3, UNRELEASED, 11, 11, epochs(11, bar=[1])),)
    result = ctx.heartbeat(M3, 11)
    assert result.response == ok(M3, 11)
    assert result.records == ()

    # Member 2 acknowledges its revocation and gets foo 2, freed by member 1.
    result = ctx.heartbeat(M2, 10, topic_partitions=tps(foo=[3], bar=[2]))
    assert result.response == ok(M2, 11, tps(foo=[2, 3], bar=[2]))
    assert result.records == (current(M2, STABLE, 11, 10, {FOO: {2: 11, 3: 10}, BAR: {2: 10}}),)

    # Member 3 gets foo 4 and 5 and the group is stable.
    result = ctx.heartbeat(M3, 11, topic_partitions=tps(bar=[1]))
    assert result.response == ok(M3, 11, tps(foo=[4, 5], bar=[1]))
    assert result.records == (current(M3, STABLE, 11, 11, epochs(11, foo=[4, 5], bar=[1])),)
    assert ctx.group.state is ConsumerGroupState.STABLE


def test_duplicate_full_heartbeat_with_revocation_ack():
    # GroupMetadataManagerTest.testDuplicateFullHeartbeatWithRevocationAck
    ctx = Context(FOO_BAR)
    m = member(M1, epoch=100, previous=99, state=UNREVOKED, assigned=epochs(100, foo=[0, 1]),
               pending=epochs(100, foo=[2]), rebalance_timeout_ms=5000, names=("foo",))
    ctx.with_group(m, group_epoch=101, assignment_epoch=101, targets={M1: {"foo": [0, 1]}}, names=("foo",))
    full = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), topic_partitions=tps(foo=[0, 1]))
    first = ctx.heartbeat(M1, 100, **full)
    assert first.response == ok(M1, 101, tps(foo=[0, 1]))
    assert first.records == (current(M1, STABLE, 101, 100, epochs(100, foo=[0, 1])),)
    # The same request again (its response was lost): the same answer, nothing written.
    again = ctx.heartbeat(M1, 100, **full)
    assert again.response == first.response and again.records == ()


def test_consumer_group_heartbeat_full_response():
    # GroupMetadataManagerTest.testConsumerGroupHeartbeatFullResponse
    ctx = Context(FOO_BAR)
    ctx.assignor.prepare({M1: {FOO: [0, 1]}})
    assert ctx.join(M1, names=("foo",), server_assignor="range").response == ok(M1, 2, tps(foo=[0, 1]))
    # A heartbeat with nothing new: no assignment.
    assert ctx.heartbeat(M1, 2).response == ok(M1, 2)
    # A full heartbeat (rebalance timeout, subscription and owned partitions): the assignment.
    full = ctx.heartbeat(M1, 2, rebalance_timeout_ms=5000, subscribed_topic_names=("foo",),
                         topic_partitions=tps(foo=[0, 1]))
    assert full.response == ok(M1, 2, tps(foo=[0, 1]))


def test_consumer_group_assignment_interval():
    # GroupMetadataManagerTest.testConsumerGroupAssignmentInterval
    ctx = Context({"foo": (FOO, 6)}, group_consumer_assignment_interval_ms=5000)
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    start = ctx.time
    assert ctx.join(M1, names=("foo",), server_assignor="range").response == ok(M1, 2, tps(foo=range(6)))

    # Within the interval a new member bumps the group epoch, but the target is not recomputed.
    ctx.time = start + 4995
    ctx.assignor.prepare({M1: {FOO: [0, 1, 2]}, M2: {FOO: [3, 4, 5]}})
    result = ctx.join(M2, names=("foo",), server_assignor="range")
    assert result.response == ok(M2, 2, ())
    m2 = member(M2, epoch=2, previous=0, names=("foo",), rebalance_timeout_ms=5000)
    assert result.records == (ConsumerGroupMemberMetadata(M2, m2.subscription()),
                              epoch_record(3, ctx.metadata_hash("foo")),
                              ConsumerGroupCurrentMemberAssignment(M2, m2.current))
    assert ctx.group.state is ConsumerGroupState.ASSIGNING

    # Once the interval has passed, the next heartbeat computes it.
    ctx.time = start + 5005
    result = ctx.heartbeat(M2, 2)
    assert result.response == ok(M2, 3)
    assert result.records == (*[target_record(m, foo=[0, 1, 2] if m == M1 else [3, 4, 5]) for m in hash_order(M1, M2)],
                              assignment_metadata_record(3, ctx.time),
                              current(M2, UNRELEASED, 3, 2))


def test_static_members_rejoin_with_new_server_assignor():
    # GroupMetadataManagerTest.testStaticMembersRejoinWithNewServerAssignor
    uniform_mock, range_mock = MockAssignor(), MockAssignor()
    ctx = Context({"foo": (FOO, 6)}, assignors={"uniform": uniform_mock, "range": range_mock})
    members = [member(f"member-id-{i}", epoch=10, previous=9, instance_id=f"instance-id-{i}", names=("foo",),
                      assignor="uniform", rebalance_timeout_ms=5000, assigned=epochs(10, foo=ps))
               for i, ps in ((1, [0, 1]), (2, [2, 3]), (3, [4, 5]))]
    ctx.with_group(*members, group_epoch=10, assignment_epoch=10, names=("foo",))
    for m in members:
        assert ctx.heartbeat(m.member_id, -2, instance_id=m.instance_id).response.member_epoch == -2
    # Member 2 comes back naming range: uniform is still the most named (2 to 1), no bump.
    result = ctx.join("member-id-2-rejoin", names=("foo",), instance_id="instance-id-2", server_assignor="range")
    assert result.response == ok("member-id-2-rejoin", 10, tps(foo=[2, 3]))
    # Member 3 comes back naming range: range is now the most named, the epoch is bumped and the target
    # computed by range.
    range_mock.prepare({"member-id-1": {FOO: [0, 1]}, "member-id-2-rejoin": {FOO: [2, 3]},
                        "member-id-3-rejoin": {FOO: [4, 5]}})
    result = ctx.join("member-id-3-rejoin", names=("foo",), instance_id="instance-id-3", server_assignor="range")
    assert result.response == ok("member-id-3-rejoin", 11, tps(foo=[4, 5]))
    assert len(range_mock.calls) == 1 and uniform_mock.calls == []


def test_preferred_assignor_change_does_not_bump_in_kafka_4_0():
    # Kafka 4.0.0: no bump for a change of the preferred assignor (KAFKA-20434 is 4.4)
    ctx = Context(FOO_BAR, assignors={"uniform": MockAssignor(), "range": MockAssignor()}, kafka_4_0=True)
    ctx.join(M1, names=("foo",))
    assert ctx.heartbeat(M1, 1, server_assignor="range").records[1:] == ()
    assert ctx.group.group_epoch == 1


def test_static_member_rejoins_with_same_member_id_and_different_instance_id():
    # GroupMetadataManagerTest.testStaticMemberRejoinsWithSameMemberIdAndDifferentInstanceId
    ctx = Context({"foo": (FOO, 6)})
    m = member(M1, epoch=10, previous=9, instance_id="instance-1", assigned=epochs(10, foo=range(6)))
    ctx.with_group(m, group_epoch=10, assignment_epoch=10, names=("foo",))
    assert ctx.group.static_members == {"instance-1": M1}
    ctx.join(M1, instance_id="instance-2")
    assert ctx.group.static_members == {"instance-2": M1}


def test_partition_assignor_exception_on_regular_heartbeat():
    # GroupMetadataManagerTest.testPartitionAssignorExceptionOnRegularHeartbeat
    def failing(group, partition_counts):
        raise PartitionAssignorError("Assignment failed.")

    ctx = Context(FOO_BAR, assignors={"range": failing})
    result = ctx.join(M1, server_assignor="range")
    assert error_of(result) == "UNKNOWN_SERVER_ERROR"
    assert "Assignment failed." in result.response.error_message
    assert ctx.group is None


@pytest.mark.parametrize("state, assigned, pending", [
    (STABLE, dict(foo=[0, 1, 2]), {}),
    (UNRELEASED, dict(foo=[0, 1]), {}),
])
def test_duplicate_full_heartbeat(state, assigned, pending):
    # GroupMetadataManagerTest.testDuplicateFullHeartbeatInStableState, ...InUnreleasedPartitionsState:
    # a full heartbeat sent again (its response was lost) gets the same answer and writes nothing
    ctx = Context({"foo": (FOO, 6)})
    other = member(M2, epoch=10, previous=9, assigned=epochs(10, foo=[2]), names=("foo",), rebalance_timeout_ms=5000)
    m = member(M1, epoch=10, previous=9, state=state, assigned=epochs(10, **assigned), names=("foo",),
               rebalance_timeout_ms=5000)
    members = (m,) if state is STABLE else (m, other)
    targets = {M1: {"foo": [0, 1, 2]}, M2: {"foo": []}}
    ctx.with_group(*members, group_epoch=10, assignment_epoch=10, names=("foo",),
                   targets={k: v for k, v in targets.items() if k in {x.member_id for x in members}})
    full = dict(rebalance_timeout_ms=5000, subscribed_topic_names=("foo",), topic_partitions=tps(**assigned))
    first, again = ctx.heartbeat(M1, 10, **full), ctx.heartbeat(M1, 10, **full)
    assert first.response == again.response == ok(M1, 10, tps(**assigned))
    assert again.records == ()
    assert ctx.group.members[M1].state is state


def test_subscription_metadata_refreshed_after_group_is_loaded():
    # GroupMetadataManagerTest.testSubscriptionMetadataRefreshedAfterGroupIsLoaded
    ctx = Context({"foo": (FOO, 6)})
    m = member(M1, epoch=10, previous=10, assigned=epochs(10, foo=[0, 1, 2]), rebalance_timeout_ms=5000, names=("foo",))
    ctx.with_group(m, group_epoch=10, assignment_epoch=10, names=("foo",))
    # The hash stored was computed when foo had 3 partitions; it has 6 now.
    stale = Context({"foo": (FOO, 3)}).metadata_hash("foo")
    ctx.replay(epoch_record(10, stale))
    assert ctx.group.metadata_expired
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    result = ctx.heartbeat(M1, 10)
    assert result.response == ok(M1, 11, tps(foo=range(6)))
    assert result.records == (
        epoch_record(11, ctx.metadata_hash("foo")),
        target_record(M1, foo=range(6)),
        assignment_metadata_record(11, ctx.time),
        current(M1, STABLE, 11, 10, {FOO: {**dict.fromkeys([0, 1, 2], 10), **dict.fromkeys([3, 4, 5], 11)}}),
    )
    # Refreshed: the next heartbeat does not recompute the hash.
    assert not ctx.group.metadata_expired
    ctx.group.metadata_hash = stale
    assert ctx.heartbeat(M1, 11).records == ()


def test_same_names_in_another_order_change_nothing():
    # GroupMetadataManager.hasMemberSubscriptionChanged compares the members, whose names are sets
    ctx = Context(FOO_BAR)
    two_member_group(ctx)
    result = ctx.heartbeat(M1, 10, subscribed_topic_names=("bar", "foo"))
    assert result.records == () and result.response == ok(M1, 10)


@pytest.mark.parametrize("kafka_4_0, kinds", [
    (False, ["ConsumerGroupMemberMetadata", "ConsumerGroupCurrentMemberAssignment"]),
    (True, ["ConsumerGroupMemberMetadata", "ConsumerGroupMetadata", "ConsumerGroupTargetAssignmentMember",
            "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupCurrentMemberAssignment"]),
])
def test_first_member_subscribing_to_nothing(kafka_4_0, kinds):
    # GroupMetadataManager.consumerGroupHeartbeat: trunk bumps only on a change (a new group starts at epoch
    # 1, so no bump and no target); 4.0 bumped a new group's epoch 0 (bumpGroupEpoch = groupEpoch == 0) and
    # computed a target, also reaching epoch 1
    ctx = Context(FOO_BAR, kafka_4_0=kafka_4_0)
    result = ctx.join(M1, names=())
    assert result.response == ok(M1, 1, ())
    assert [type(r).__name__ for r in result.records] == kinds
