"""Kafka's GroupMetadataManagerTest cases for members using the classic protocol inside a consumer group
(trunk): JoinGroup (testJoiningConsumerGroup*, testClassicGroupJoinToConsumerGroup*), SyncGroup
(testClassicGroupSyncToConsumerGroup*), Heartbeat (testClassicGroupHeartbeatToConsumerGroup*) and their
timers (testConsumerGroupMemberUsingClassicProtocolFencedWhen*), and ConsumerGroupTest's offset commit
validation for such a member."""

from __future__ import annotations

import dataclasses

import pytest

from state.classic import consumer_protocol
from state.consumer_group.classic_members import classic_group_heartbeat, classic_group_join, classic_group_sync
from state.consumer_group.heartbeat import JOIN_TIMEOUT, SYNC_TIMEOUT, CoordinatorResult
from state.consumer_group.offset_commit import validate_offset_commit
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    member_tombstones,
)
from state.consumer_group.topic_id import derived_topic_id
from tests.state.consumer_group.coordinator_context import (
    BAR,
    CLIENT_HOST,
    CLIENT_ID,
    FOO,
    Context,
    assignment_metadata_record,
    epoch_record,
    member,
)

ZAR = derived_topic_id("zar")
M1, M2, M3 = "member-id-1", "member-id-2", "member-id-3"
GENERATED = "generated-member-id"
SESSION_MS, REBALANCE_MS = 5000, 500  # JoinGroupRequestBuilder's timeouts in Kafka's tests


def protocols(*topics: str, owned=(), names=("range",), version=consumer_protocol.HIGHEST_VERSION):
    """GroupMetadataManagerTestContext.toConsumerProtocol: the same subscription under each protocol name."""
    metadata = consumer_protocol.encode_subscription(
        consumer_protocol.Subscription(topics, owned_partitions=owned), version)
    return tuple(ClassicProtocol(name, metadata) for name in names)


def classic(m, protocol_list=None, session_timeout_ms=SESSION_MS):
    """The member using the classic protocol (setClassicMemberMetadata)."""
    protocol_list = protocol_list or protocols(*sorted(m.subscribed_topic_names))
    return dataclasses.replace(m, classic_member_metadata=ClassicMemberMetadata(session_timeout_ms, protocol_list))


class ClassicContext(Context):
    """Context with sendClassicGroupJoin / Sync / Heartbeat."""

    def classic_join(self, member_id: str, protocol_list, instance_id=None, protocol_type="consumer",
                     session_timeout_ms=SESSION_MS, rebalance_timeout_ms=REBALANCE_MS,
                     api_version=9) -> CoordinatorResult:
        return self.apply(classic_group_join(
            self.group, member_id=member_id, instance_id=instance_id, protocol_type=protocol_type,
            protocols=protocol_list, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms, api_version=api_version, now=self.time,
            context=self.context, client_id=CLIENT_ID, client_host=CLIENT_HOST, generated_member_id=GENERATED))

    def classic_sync(self, member_id: str, generation_id: int, instance_id=None, protocol_type="consumer",
                     protocol_name="range") -> CoordinatorResult:
        return self.apply(classic_group_sync(
            self.group, member_id=member_id, instance_id=instance_id, generation_id=generation_id,
            protocol_type=protocol_type, protocol_name=protocol_name, now=self.time, context=self.context))

    def classic_heartbeat(self, member_id: str, generation_id: int, instance_id=None) -> CoordinatorResult:
        return self.apply(classic_group_heartbeat(self.group, member_id=member_id, instance_id=instance_id,
                                                  generation_id=generation_id, now=self.time, context=self.context))

    def deadline(self, name: str, member_id: str) -> int | None:
        timer = self.timers.get((name, member_id))
        return None if timer is None else timer[0]


def foo_bar_zar() -> ClassicContext:
    return ClassicContext({"foo": (FOO, 2), "bar": (BAR, 1), "zar": (ZAR, 1)})


def two_member_group(ctx: ClassicContext, m1=None, m2=None) -> None:
    """M1 (foo-0) and M2 (foo-1), Stable at epoch 10, subscribed to foo and bar."""
    m1 = m1 or member(M1, epoch=10, previous=10, assigned={FOO: {0: 10}}, rebalance_timeout_ms=REBALANCE_MS)
    m2 = m2 or member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}}, rebalance_timeout_ms=REBALANCE_MS)
    ctx.with_group(m1, m2, group_epoch=10, assignment_epoch=10)
    ctx.group.metadata_expired = False


# -- JoinGroup ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(consumer_protocol.HIGHEST_VERSION + 1))
def test_joining_consumer_group_with_new_dynamic_member(version):
    # testJoiningConsumerGroupWithNewDynamicMember, for every ConsumerProtocolSubscription version
    ctx = foo_bar_zar()
    ctx.with_group(member(M1, epoch=10, previous=10, assigned={FOO: {0: 10, 1: 10}}, names=("foo",)),
                   group_epoch=10, assignment_epoch=10, names=("foo",))
    request = protocols("foo", "bar", version=version)
    first = ctx.classic_join("", request)
    assert (first.records, first.response.error, first.response.member_id) == ((), "MEMBER_ID_REQUIRED", GENERATED)
    assert first.timers == ()

    ctx.assignor.prepare({M1: {FOO: (0,)}, GENERATED: {BAR: (0,)}})
    second = ctx.classic_join(GENERATED, request)
    expected = dataclasses.replace(
        member(GENERATED, epoch=11, previous=0, assigned={BAR: {0: 11}}, assignor=None,
               rebalance_timeout_ms=REBALANCE_MS),
        subscribed_topic_regex="", classic_member_metadata=ClassicMemberMetadata(SESSION_MS, request))
    assert second.records[:2] == (ConsumerGroupMemberMetadata(GENERATED, expected.subscription()),
                                  epoch_record(11, ctx.metadata_hash("foo", "bar")))
    assert second.records[-2:] == (assignment_metadata_record(11, ctx.time),
                                   ConsumerGroupCurrentMemberAssignment(GENERATED, expected.current))
    assert ctx.group.members[GENERATED] == expected
    assert second.response == dataclasses.replace(second.response, error="NONE", member_id=GENERATED,
                                                  generation_id=11, protocol_type="consumer", protocol_name="range")
    assert ctx.session_deadline(GENERATED) == ctx.time + SESSION_MS
    assert ctx.deadline(SYNC_TIMEOUT, GENERATED) == ctx.time + REBALANCE_MS
    assert ctx.rebalance_timer(GENERATED) is None  # a classic member has no rebalance timer


@pytest.mark.parametrize("static", [False, True])
def test_classic_member_join_to_consumer_group_with_disabled_migration_policy(static):
    # testClassicMemberJoinToConsumerGroupWithDisabledMigrationPolicy
    ctx = ClassicContext({"foo": (FOO, 2), "bar": (BAR, 1)}, group_consumer_migration_policy="disabled")
    two_member_group(ctx)
    result = ctx.classic_join("", protocols("foo"), instance_id="instance" if static else None)
    assert (result.records, result.response.error) == ((), "INCONSISTENT_GROUP_PROTOCOL")


def test_joining_consumer_group_throws_exception_if_protocol_is_not_supported():
    # testJoiningConsumerGroupThrowsExceptionIfProtocolIsNotSupported: a protocol every classic member
    # supports, and the consumer protocol type.
    ctx = foo_bar_zar()
    two_member_group(ctx, m1=classic(member(M1, epoch=10, previous=10, assigned={FOO: {0: 10}})))
    assert ctx.classic_join(M3, protocols("foo", names=("roundrobin",))).response.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.classic_join(M3, protocols("foo"), protocol_type="connect").response.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.classic_join(M3, ()).response.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.classic_join(M3, protocols("foo", names=("roundrobin", "range"))).response.error == "NONE"


def test_classic_group_join_to_consumer_group_fails_on_malformed_subscription_metadata():
    # testClassicGroupJoinToConsumerGroupFailsOnMalformedSubscriptionMetadata
    ctx = foo_bar_zar()
    two_member_group(ctx)
    poison = (ClassicProtocol("range", b"\x00\x01\xff\xff\xff\xff"),)
    result = ctx.classic_join(M3, poison)
    assert (result.records, result.response.error) == ((), "INCONSISTENT_GROUP_PROTOCOL")


def test_joining_consumer_group_throws_exception_if_group_over_max_size():
    # testJoiningConsumerGroupThrowsExceptionIfGroupOverMaxSize,
    # testNewStaticMemberClassicGroupJoinThrowsGroupMaxSizeReachedExceptionWhenConsumerGroupIsFull,
    # testStaticMemberCanRejoinConsumerGroupWithClassicProtocolWhenGroupIsFull
    ctx = ClassicContext({"foo": (FOO, 2), "bar": (BAR, 1)}, group_consumer_max_size=2)
    two_member_group(ctx, m2=classic(member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}},
                                            instance_id="instance-2")))
    assert ctx.classic_join("", protocols("foo")).response.error == "GROUP_MAX_SIZE_REACHED"
    assert ctx.classic_join("", protocols("foo"), instance_id="instance-3").response.error == "GROUP_MAX_SIZE_REACHED"
    result = ctx.classic_join("", protocols("foo", "bar"), instance_id="instance-2")
    assert result.response.error == "NONE" and ctx.group.static_member("instance-2").member_id == GENERATED


def test_static_member_joining_consumer_group_with_unknown_instance_id_or_unmatched_member_id():
    # testStaticMemberJoiningConsumerGroupWithUnknownInstanceId, ...WithUnmatchedMemberId
    ctx = foo_bar_zar()
    two_member_group(ctx, m2=member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}}, instance_id="instance-2"))
    assert ctx.classic_join(M3, protocols("foo"), instance_id="unknown").response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.classic_join(M3, protocols("foo"), instance_id="instance-2").response.error == "FENCED_INSTANCE_ID"


def test_joining_consumer_group_replacing_existing_static_member():
    # testJoiningConsumerGroupReplacingExistingStaticMember: a classic member takes the place of a static
    # member using the consumer protocol without waiting for its leave, with its epoch and partitions.
    ctx = foo_bar_zar()
    old = member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}}, instance_id="instance-2",
                 rebalance_timeout_ms=REBALANCE_MS)
    two_member_group(ctx, m2=old)
    request = protocols("foo", "bar")
    result = ctx.classic_join("", request, instance_id="instance-2")
    assert list(result.records[:3]) == member_tombstones(M2)
    assert [type(r).__name__ for r in result.records[3:]] == [
        "ConsumerGroupMemberMetadata", "ConsumerGroupTargetAssignmentMember", "ConsumerGroupCurrentMemberAssignment",
        "ConsumerGroupMemberMetadata", "ConsumerGroupCurrentMemberAssignment"]
    replacement = ctx.group.members[GENERATED]
    assert M2 not in ctx.group.members and replacement.use_classic_protocol
    assert (replacement.member_epoch, replacement.assigned_partitions) == (10, {FOO: {1: 10}})
    assert (result.response.member_id, result.response.generation_id) == (GENERATED, 10)


def test_reconciliation_in_joining_consumer_group_with_eager_protocol():
    # testReconciliationInJoiningConsumerGroupWithEagerProtocol: M1 (classic) rejoins with zar added and
    # nothing owned (eager); bar-0 is revoked at once, foo-1 waits for M2, which then releases it.
    ctx = foo_bar_zar()
    m1 = classic(member(M1, epoch=10, previous=10, assigned={FOO: {0: 10}, BAR: {0: 10}},
                        rebalance_timeout_ms=REBALANCE_MS, assignor=None),
                 protocols("foo", "bar", owned=(("foo", 0), ("bar", 0))))
    m2 = member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}}, rebalance_timeout_ms=REBALANCE_MS)
    two_member_group(ctx, m1, m2)
    ctx.assignor.prepare({M1: {FOO: (0, 1), ZAR: (0,)}, M2: {BAR: (0,)}})
    request = protocols("foo", "bar", "zar")

    first = ctx.classic_join(M1, request)
    joined = ctx.group.members[M1]
    assert joined.current == CurrentAssignment(MemberState.UNRELEASED_PARTITIONS, 11, 10,
                                               {FOO: {0: 10}, ZAR: {0: 11}})
    assert first.records[1] == epoch_record(11, ctx.metadata_hash("foo", "bar", "zar"))
    assert (first.response.member_id, first.response.generation_id, first.response.protocol_name) == (M1, 11, "range")
    synced = ctx.classic_sync(M1, 11)
    assert dict(synced.response.assignment) == {FOO: (0,), ZAR: (0,)}
    assert ctx.deadline(SYNC_TIMEOUT, M1) is None

    # M2 gives up foo-1: M1's partitions pending assignment are free, so it must rejoin.
    ctx.heartbeat(M2, 10, topic_partitions=())
    assert ctx.classic_heartbeat(M1, 11).response.error == "REBALANCE_IN_PROGRESS"
    assert ctx.deadline(JOIN_TIMEOUT, M1) == ctx.time + REBALANCE_MS

    second = ctx.classic_join(M1, request)
    assert second.records == (ConsumerGroupCurrentMemberAssignment(M1, CurrentAssignment(
        MemberState.STABLE, 11, 11, {FOO: {0: 10, 1: 11}, ZAR: {0: 11}})),)
    assert ctx.deadline(JOIN_TIMEOUT, M1) is None
    assert dict(ctx.classic_sync(M1, 11).response.assignment) == {FOO: (0, 1), ZAR: (0,)}
    assert ctx.classic_heartbeat(M1, 11).response.error == "NONE"


# -- SyncGroup ----------------------------------------------------------------------------------------------

def stable_classic_pair(ctx: ClassicContext) -> None:
    two_member_group(ctx, m1=classic(member(M1, epoch=10, previous=10, assigned={FOO: {0: 10}},
                                            rebalance_timeout_ms=REBALANCE_MS, instance_id="instance-1")),
                     m2=classic(member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}},
                                       rebalance_timeout_ms=REBALANCE_MS)))


def test_classic_group_sync_to_consumer_group():
    # testClassicGroupSyncToConsumerGroupWithAllConsumerProtocolVersions: the member's partitions, its
    # session renewed at its own session timeout, nothing written.
    ctx = foo_bar_zar()
    stable_classic_pair(ctx)
    result = ctx.classic_sync(M2, 10)
    assert result.records == ()
    assert result.response.assignment == ((FOO, (1,)),)
    assert (result.response.protocol_type, result.response.protocol_name) == ("consumer", "range")
    assert ctx.session_deadline(M2) == ctx.time + SESSION_MS


def test_classic_group_sync_to_consumer_group_errors():
    # testClassicGroupSyncToConsumerGroupWithUnknownMemberId, ...WithFencedInstanceId,
    # ...WithInconsistentGroupProtocol, ...WithIllegalGeneration
    ctx = foo_bar_zar()
    stable_classic_pair(ctx)
    assert ctx.classic_sync("unknown", 10).response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.classic_sync("unknown", 10, instance_id="unknown").response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.classic_sync(M2, 10, instance_id="instance-1").response.error == "FENCED_INSTANCE_ID"
    assert ctx.classic_sync(M2, 10, protocol_type="connect").response.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.classic_sync(M2, 10, protocol_name="roundrobin").response.error == "INCONSISTENT_GROUP_PROTOCOL"
    assert ctx.classic_sync(M2, 10, protocol_type=None, protocol_name=None).response.error == "NONE"
    assert ctx.classic_sync(M2, 9).response.error == "ILLEGAL_GENERATION"
    assert ctx.session_deadline(M2) == ctx.time + SESSION_MS  # only the successful sync


def test_classic_group_sync_to_consumer_group_rebalance_in_progress():
    # testClassicGroupSyncToConsumerGroupRebalanceInProgress: a new target was computed since the member's
    # epoch; a member still revoking is let through.
    ctx = foo_bar_zar()
    two_member_group(ctx, m1=classic(member(M1, epoch=9, previous=9, rebalance_timeout_ms=REBALANCE_MS)),
                     m2=classic(member(M2, epoch=9, previous=9, state=MemberState.UNREVOKED_PARTITIONS,
                                       pending={FOO: {1: 9}}, rebalance_timeout_ms=REBALANCE_MS)))
    assert ctx.classic_sync(M1, 9).response.error == "REBALANCE_IN_PROGRESS"
    assert ctx.deadline(JOIN_TIMEOUT, M1) == ctx.time + REBALANCE_MS
    ctx.sleep(100)
    ctx.classic_sync(M1, 9)
    assert ctx.deadline(JOIN_TIMEOUT, M1) == ctx.time - 100 + REBALANCE_MS  # scheduled if absent only
    assert ctx.classic_sync(M2, 9).response.error == "NONE"


# -- Heartbeat ----------------------------------------------------------------------------------------------

def test_classic_group_heartbeat_to_consumer_group_maintains_session():
    # testClassicGroupHeartbeatToConsumerGroupMaintainsSession
    ctx = foo_bar_zar()
    stable_classic_pair(ctx)
    for _ in range(3):
        assert ctx.classic_heartbeat(M2, 10).response.error == "NONE"
        assert ctx.session_deadline(M2) == ctx.time + SESSION_MS
        assert ctx.sleep(SESSION_MS // 2) == []


def test_classic_group_heartbeat_to_consumer_group_rebalance_in_progress():
    # testClassicGroupHeartbeatToConsumerGroupRebalanceInProgress: behind the target's epoch; partitions to
    # revoke; partitions pending assignment that are all free.
    ctx = foo_bar_zar()
    m1 = classic(member(M1, epoch=9, previous=9, rebalance_timeout_ms=10000))
    m2 = classic(member(M2, epoch=10, previous=10, state=MemberState.UNREVOKED_PARTITIONS, pending={FOO: {0: 10}},
                        rebalance_timeout_ms=10000))
    m3 = classic(member(M3, epoch=10, previous=10, state=MemberState.UNRELEASED_PARTITIONS,
                        assigned={BAR: {0: 10}}, rebalance_timeout_ms=10000))
    ctx.with_group(m1, m2, m3, group_epoch=10, assignment_epoch=10,
                   targets={M1: {}, M2: {}, M3: {"bar": (0,), "foo": (1,)}})
    for member_id, generation in ((M1, 9), (M2, 10), (M3, 10)):
        result = ctx.classic_heartbeat(member_id, generation)
        assert (result.records, result.response.error) == ((), "REBALANCE_IN_PROGRESS")
        assert ctx.session_deadline(member_id) == ctx.time + SESSION_MS
        assert ctx.deadline(JOIN_TIMEOUT, member_id) == ctx.time + 10000


def test_classic_group_heartbeat_to_consumer_group_waiting_on_an_unreleased_partition():
    # ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target still held by another member.
    ctx = foo_bar_zar()
    m1 = classic(member(M1, epoch=10, previous=10, state=MemberState.UNRELEASED_PARTITIONS,
                        assigned={FOO: {0: 10}}))
    m2 = member(M2, epoch=10, previous=10, assigned={FOO: {1: 10}})
    ctx.with_group(m1, m2, group_epoch=10, assignment_epoch=10, targets={M1: {"foo": (0, 1)}, M2: {}})
    assert ctx.classic_heartbeat(M1, 10).response.error == "NONE"
    assert ctx.deadline(JOIN_TIMEOUT, M1) is None


def test_classic_group_heartbeat_to_consumer_group_errors():
    # testClassicGroupHeartbeatToConsumerWithUnknownMember, ...WithFencedInstanceId,
    # ...WithIllegalGenerationId, ...WithMemberNotUsingClassicProtocol
    ctx = foo_bar_zar()
    two_member_group(ctx, m1=classic(member(M1, epoch=10, previous=10, instance_id="instance-1")))
    assert ctx.classic_heartbeat("unknown", 10).response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.classic_heartbeat("unknown", 10, instance_id="unknown").response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.classic_heartbeat(M2, 10, instance_id="instance-1").response.error == "FENCED_INSTANCE_ID"
    assert ctx.classic_heartbeat(M1, 9, instance_id="instance-1").response.error == "ILLEGAL_GENERATION"
    assert ctx.classic_heartbeat(M2, 10).response.error == "UNKNOWN_MEMBER_ID"
    assert ctx.timers == {}


# -- timers -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("timer", ["session", "join", "sync"])
def test_consumer_group_member_using_classic_protocol_fenced_when_timing_out(timer):
    # testConsumerGroupMemberUsingClassicProtocolFencedWhenSessionTimeout, ...WhenJoinTimeout, and the sync
    # timeout a JoinGroup arms
    ctx = foo_bar_zar()
    two_member_group(ctx, m1=classic(member(M1, epoch=9, previous=9, rebalance_timeout_ms=REBALANCE_MS)))
    if timer == "session":
        ctx.classic_heartbeat(M1, 9)
        ctx.timers.pop((JOIN_TIMEOUT, M1))
        wait = SESSION_MS
    elif timer == "join":
        ctx.classic_heartbeat(M1, 9)
        wait = REBALANCE_MS
    else:
        ctx.classic_join(M1, protocols("foo", "bar"))
        ctx.timers.pop((JOIN_TIMEOUT, M1), None)
        wait = REBALANCE_MS
    (fenced,) = ctx.sleep(wait)
    assert list(fenced.records[:3]) == member_tombstones(M1)
    assert M1 not in ctx.group.members
    assert not any(key[1] == M1 for key in ctx.timers)


# -- OffsetCommit -------------------------------------------------------------------------------------------

def test_validate_offset_commit_of_a_member_using_the_classic_protocol():
    # ConsumerGroupTest.testValidateOffsetCommit for a classic member: ILLEGAL_GENERATION, any version
    ctx = foo_bar_zar()
    two_member_group(ctx, m1=classic(member(M1, epoch=10, previous=9, assigned={FOO: {0: 10}})))
    group = ctx.group
    assert validate_offset_commit(group, M1, None, 10, [(FOO, 0)], api_version=8) == "NONE"
    assert validate_offset_commit(group, M1, None, 11, [(FOO, 0)]) == "ILLEGAL_GENERATION"
    assert validate_offset_commit(group, M1, None, 9, [(FOO, 0)]) == "ILLEGAL_GENERATION"
    assert validate_offset_commit(group, M2, None, 11, [(FOO, 1)]) == "STALE_MEMBER_EPOCH"
