"""Members using the classic protocol inside a consumer group (Kafka's GroupMetadataManager
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup and classicGroupHeartbeatToConsumerGroup,
trunk): the converted classic group's members, and classic clients joining the consumer group afterwards.
Their LeaveGroup is consumerGroupFenceMembers (`heartbeat.fence_members`), run by the runtime.

A classic member is a ConsumerGroupMember with ClassicMemberMetadata (its session timeout and the protocols
of its last JoinGroup). Its JoinGroup is its heartbeat: the subscription in its first protocol's metadata
updates the member, bumps the group epoch when the topics change, computes the target assignment if the
epoch is ahead of it and reconciles the member (the partitions its subscription says it owns stand for the
heartbeat's owned partitions); the answer is its member epoch as the generation id and its first protocol's
name, with no leader and no members, so the client sends SyncGroup as a follower. SyncGroup answers the
member's current assignment (the partitions it may hold at its epoch) unless a new target was computed
since (REBALANCE_IN_PROGRESS: rejoin); Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin
to move on (its epoch is behind the target's, it has partitions to revoke, or partitions it waits for
are free). Its session runs at its own session timeout, renewed by JoinGroup, SyncGroup and Heartbeat; a
join timer (its rebalance timeout, armed when it is told to rejoin) and a sync timer (armed by its
JoinGroup) fence it if it does not rejoin or sync in time.

Pure, as `heartbeat` is: each function reads the group and returns a CoordinatorResult whose response is a
`ClassicResponse`. A JoinGroup whose static member replaces the last member using the consumer protocol
downgrades the group when the policy allows (`state.consumer_group.downgrade`): its result carries the
join's records and the `Downgrade`, which the runtime writes instead of replaying them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

from state.classic import consumer_protocol
from state.consumer_group.downgrade import Downgrade, downgrade_allowed_with_replaced_member
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember, topic_partitions
from state.consumer_group.heartbeat import (
    JOIN_TIMEOUT,
    SYNC_TIMEOUT,
    CoordinatorResult,
    HeartbeatContext,
    HeartbeatError,
    MemberUpdate,
    TimerChange,
    session_timer,
)
from state.consumer_group.messages import JOIN_EPOCH, HeartbeatRequest, TopicPartitions
from state.consumer_group.reconciliation import MemberState
from state.consumer_group.records import ClassicMemberMetadata, ClassicProtocol
from state.classic.group import CONSUMER_PROTOCOL_TYPE

# JoinGroup v4+ (KIP-394): a dynamic member with no member id is given one and must join again with it.
REQUIRES_KNOWN_MEMBER_ID_VERSION = 4


@dataclass(frozen=True)
class ClassicResponse:
    """What a JoinGroup, SyncGroup or Heartbeat to the consumer group answers (the fields Kafka sets)."""

    error: str = "NONE"
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: TopicPartitions | None = None  # SyncGroup: the member's partitions


def _fail(error: HeartbeatError, **fields) -> CoordinatorResult:
    return CoordinatorResult(response=ClassicResponse(error.error, **fields))


# ----------------------------------------------------------------------------------------------------------
# JoinGroup (classicGroupJoinToConsumerGroup)

def classic_group_join(group: ConsumerGroup, *, member_id: str, instance_id: str | None, protocol_type: str,
                       protocols: tuple[ClassicProtocol, ...], session_timeout_ms: int, rebalance_timeout_ms: int,
                       api_version: int, now: int, context: HeartbeatContext, client_id: str, client_host: str,
                       generated_member_id: str) -> CoordinatorResult:
    """A JoinGroup to the non-empty consumer group. `generated_member_id`: the id a JoinGroup with an
    empty member id gets (Kafka draws a random Uuid); unused otherwise."""
    unknown_member = member_id == ""
    member_id = generated_member_id if unknown_member else member_id
    try:
        if context.config.group_consumer_migration_policy == "disabled":
            raise HeartbeatError("INCONSISTENT_GROUP_PROTOCOL", f"Cannot join the consumer group {group.group_id} "
                                 "with the classic protocol because the group migration is disabled.")
        # The subscription is read from the first protocol (all carry the same one), once the member is found.
        try:
            subscription = consumer_protocol.decode_subscription(protocols[0].metadata) if protocols else None
        except ValueError:
            subscription = None
        request = HeartbeatRequest(group_id=group.group_id, member_id=member_id, member_epoch=JOIN_EPOCH,
                                   instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
                                   subscribed_topic_regex="")  # no regex for a classic member
        if subscription is not None:
            request = dataclasses.replace(request, rack_id=subscription.rack_id,
                                          subscribed_topic_names=tuple(subscription.topics),
                                          topic_partitions=_owned(subscription, context))
        update = MemberUpdate(group, request, now, context, client_id, client_host,
                              classic=ClassicMemberMetadata(session_timeout_ms, protocols),
                              unknown_member=unknown_member)
        update.throw_if_group_is_full()
        if not _supports_classic_protocols(group, protocol_type, protocols):
            raise HeartbeatError("INCONSISTENT_GROUP_PROTOCOL", f"Member {member_id}'s protocols are not supported.")
        if unknown_member and instance_id is None and api_version >= REQUIRES_KNOWN_MEMBER_ID_VERSION:
            return CoordinatorResult(response=ClassicResponse("MEMBER_ID_REQUIRED", member_id=member_id))
        member = update.find_member()
        # A static member taking the place of the last member using the consumer protocol downgrades the group.
        replaced = group.static_member(instance_id)
        downgrading = replaced is not None and downgrade_allowed_with_replaced_member(group, replaced, context.config)
        if subscription is None:
            raise HeartbeatError("INCONSISTENT_GROUP_PROTOCOL",
                                 "Malformed embedded consumer protocol in subscription deserialization.")
        joined, refreshed = update.update(member, downgrading)
    except HeartbeatError as error:
        return _fail(error)
    if downgrading:
        # The classic group arms its members' sessions; the consumer group's timers go with it.
        response = ClassicResponse(member_id=member_id, generation_id=joined.member_epoch,
                                   protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0].name)
        return CoordinatorResult(tuple(update.records), response,
                                 downgrade=Downgrade(joining=joined, rebalance=update.stale_target))
    timers = (TimerChange((JOIN_TIMEOUT, member_id), None),
              session_timer(member_id, now, context.config, session_timeout_ms),
              TimerChange((SYNC_TIMEOUT, member_id), now + rebalance_timeout_ms, "on_sync_timeout", (member_id,)))
    response = ClassicResponse(member_id=member_id, generation_id=joined.member_epoch,
                               protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0].name)
    return CoordinatorResult(tuple(update.records), response, (*update.timers, *timers), refreshed,
                             resolve_regexes=update.resolve_regexes)


def _owned(subscription: consumer_protocol.Subscription, context: HeartbeatContext) -> TopicPartitions:
    """The subscription's owned partitions by topic id (toTopicPartitions: topics the cluster does not know
    are left out)."""
    owned: dict = {}
    for tp in subscription.owned_partitions:
        topic_id = context.topics.topic_id(tp.topic)
        if topic_id is not None:
            owned.setdefault(topic_id, set()).add(tp.partition)
    return topic_partitions(owned)


def _supports_classic_protocols(group: ConsumerGroup, protocol_type: str,
                                protocols: tuple[ClassicProtocol, ...]) -> bool:
    """ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol every classic member
    supports (any protocol when none uses the classic protocol)."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    classic = [m.classic_member_metadata for m in group.members.values() if m.use_classic_protocol]
    supported = Counter(p.name for metadata in classic for p in metadata.supported_protocols)
    return any(supported[p.name] == len(classic) for p in protocols)


# ----------------------------------------------------------------------------------------------------------
# SyncGroup and Heartbeat

def _validate_consumer_group_member(group: ConsumerGroup, member_id: str,
                                   instance_id: str | None) -> ConsumerGroupMember:
    """validateConsumerGroupMember: the member a classic request names, by member id or instance id."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {member_id} is not a member of the group.")
        return member
    member = group.static_member(instance_id)
    if member is None:
        raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member with instance id {instance_id} is not a member of the "
                             "group.")
    if member.member_id != member_id:
        raise HeartbeatError("FENCED_INSTANCE_ID", f"Member {member_id} with instance id {instance_id} is fenced "
                             f"by member {member.member_id}.")
    return member


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None,
                    generation_id: int) -> ConsumerGroupMember:
    """The member, which must use the classic protocol (throwIfMemberDoesNotUseClassicProtocol) and be at the
    request's generation (throwIfGenerationIdUnmatched)."""
    member = _validate_consumer_group_member(group, member_id, instance_id)
    if not member.use_classic_protocol:
        raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {member_id} does not use the classic protocol.")
    if member.member_epoch != generation_id:
        raise HeartbeatError("ILLEGAL_GENERATION", f"The request generation id {generation_id} is not equal to "
                             f"the member epoch {member.member_epoch} of member {member_id}.")
    return member


def join_timer(member: ConsumerGroupMember, now: int) -> TimerChange:
    """scheduleConsumerGroupJoinTimeoutIfAbsent: the member told to rejoin must do so within its rebalance
    timeout, counted from the first time it was told."""
    return TimerChange((JOIN_TIMEOUT, member.member_id), now + member.rebalance_timeout_ms, "on_join_timeout",
                       (member.member_id,), if_absent=True)


def classic_group_sync(group: ConsumerGroup, *, member_id: str, instance_id: str | None, generation_id: int,
                       protocol_type: str | None, protocol_name: str | None, now: int,
                       context: HeartbeatContext) -> CoordinatorResult:
    """A SyncGroup to the non-empty consumer group: nothing is written; the member gets its assignment."""
    try:
        member = _classic_member(group, member_id, instance_id, generation_id)
        group_protocol = member.classic_member_metadata.supported_protocols[0].name
        if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise HeartbeatError("INCONSISTENT_GROUP_PROTOCOL", f"The protocol type {protocol_type} is not the "
                                 f"group's {CONSUMER_PROTOCOL_TYPE}.")
        if protocol_name is not None and protocol_name != group_protocol:
            raise HeartbeatError("INCONSISTENT_GROUP_PROTOCOL", f"The protocol name {protocol_name} is not the "
                                 f"{group_protocol} returned in the join response.")
    except HeartbeatError as error:
        return _fail(error)
    # throwIfRebalanceInProgress: a new target was computed since the member joined; a member still revoking
    # has rejoined already and finishes its revocation first.
    if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        return CoordinatorResult(response=ClassicResponse("REBALANCE_IN_PROGRESS"), timers=(join_timer(member, now),))
    timers = (TimerChange((SYNC_TIMEOUT, member_id), None),
              session_timer(member_id, now, context.config, member.classic_member_metadata.session_timeout_ms))
    response = ClassicResponse(member_id=member_id, generation_id=generation_id, protocol_type=protocol_type,
                               protocol_name=protocol_name, assignment=topic_partitions(member.assigned_partitions))
    return CoordinatorResult(response=response, timers=timers)


def classic_group_heartbeat(group: ConsumerGroup, *, member_id: str, instance_id: str | None, generation_id: int,
                            now: int, context: HeartbeatContext) -> CoordinatorResult:
    """A Heartbeat to the consumer group: renews the member's session; REBALANCE_IN_PROGRESS when it must
    rejoin (its epoch is behind the target assignment's, it has partitions to revoke, or the partitions it
    waits for are all free), which also arms its join timer."""
    try:
        member = _classic_member(group, member_id, instance_id, generation_id)
    except HeartbeatError as error:
        return _fail(error)
    timers = [session_timer(member_id, now, context.config, member.classic_member_metadata.session_timeout_ms)]
    error = "NONE"
    if (member.member_epoch < group.assignment_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS
                and not _waiting_on_unreleased_partition(group, member))):
        error = "REBALANCE_IN_PROGRESS"
        timers.append(join_timer(member, now))
    return CoordinatorResult(response=ClassicResponse(error), timers=tuple(timers))


def _waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target still held by another member."""
    for topic_id, partitions in group.target_of(member.member_id).items():
        assigned = member.assigned_partitions.get(topic_id, {})
        if any(p not in assigned and group.partition_epochs(topic_id, p) != -1 for p in partitions):
            return True
    return False
