"""Online migration of a classic group to a consumer group (Kafka's GroupMetadataManager.validateOnlineUpgrade
and convertToConsumerGroup, ConsumerGroup.fromClassicGroup and createConsumerGroupRecords, trunk), under
`group.consumer.migration.policy` (ConsumerGroupMigrationPolicy). The way back: `downgrade`.

A ConsumerGroupHeartbeat joining a non-empty classic group converts it when the policy allows an upgrade, the
classic group uses the consumer embedded protocol and it has no more members than
group.consumer.max.size; the group's state does not matter (Kafka answers the members' parked JoinGroup and
SyncGroup requests REBALANCE_IN_PROGRESS, which the runtime does). Every classic member becomes a consumer
group member using the classic protocol: at member epoch = the classic generation, STABLE, holding the
partitions of its last classic assignment (which are also its target), with its subscription decoded from
its protocol metadata. The group epoch and assignment epoch are the classic generation. The heartbeat then
runs against that group, so its join bumps the epoch and computes a new target for everyone.

Pure: the conversion is returned as records (after the classic group's GroupMetadata tombstone, which the
runtime writes) and session timers; replaying the records gives the converted group.
"""

from __future__ import annotations

from state.classic import consumer_protocol
from state.config import CoordinatorConfig
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember, topic_partitions
from state.consumer_group.group_spec import in_java_hash_map_order
from state.consumer_group.heartbeat import CoordinatorResult, HeartbeatError, session_timer
from state.consumer_group.reconciliation import CurrentAssignment, MemberState, PartitionEpochConflict
from state.consumer_group.records import (
    AssignmentMetadata,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupEpoch,
)
from state.consumer_group.topics import TopicsImage
from state.classic.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupMember

# ConsumerGroupMigrationPolicy.isUpgradeEnabled (the downgrade's: state.consumer_group.downgrade).
UPGRADE_POLICIES = ("upgrade", "bidirectional")


def validate_online_upgrade(classic: ClassicGroup, config: CoordinatorConfig) -> None:
    """validateOnlineUpgrade: GROUP_ID_NOT_FOUND unless the classic group may become a consumer group."""
    group_id = classic.group_id
    if config.group_consumer_migration_policy not in UPGRADE_POLICIES:
        message = "online upgrade is disabled"
    elif classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
        message = "the group does not use the consumer embedded protocol"
    elif len(classic.members) > config.group_consumer_max_size:
        message = "the group size exceeds the consumer group maximum size"
    else:
        return
    raise HeartbeatError("GROUP_ID_NOT_FOUND", f"Cannot upgrade classic group {group_id} to consumer group "
                         f"because {message}.")


def convert_to_consumer_group(classic: ClassicGroup, topics: TopicsImage, now: int,
                              config: CoordinatorConfig) -> tuple[ConsumerGroup, CoordinatorResult]:
    """convertToConsumerGroup once validated: the consumer group's records (createConsumerGroupRecords: every
    member's MemberMetadata, the group epoch, every member's target, the target's metadata, every member's
    current assignment; members in the consumer group's HashMap order), a session timer per member at its
    classic session timeout, and the group they replay to."""
    generation = classic.generation_id
    members: dict[str, ConsumerGroupMember] = {}
    targets = {}
    for classic_member in classic.all_members():
        member, assigned = _from_classic_member(classic, classic_member, topics, generation)
        members[member.member_id] = member
        targets[member.member_id] = topic_partitions(assigned)
    members = in_java_hash_map_order(members)
    names = {name for member in members.values() for name in member.subscribed_topic_names}
    records: list[ConsumerGroupRecord] = [ConsumerGroupMemberMetadata(m.member_id, m.subscription())
                                          for m in members.values()]
    records.append(ConsumerGroupMetadata(GroupEpoch(generation, topics.metadata_hash(names))))
    records += [ConsumerGroupTargetAssignmentMember(member_id, targets[member_id]) for member_id in members]
    records.append(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(generation, 0)))
    records += [ConsumerGroupCurrentMemberAssignment(m.member_id, m.current) for m in members.values()]
    group = ConsumerGroup(classic.group_id)
    try:
        for record in records:
            group.replay(record)
    except PartitionEpochConflict as error:
        # Two classic members holding one partition (the leader's assignment gave it to both): Kafka's
        # addPartitionEpochs throws IllegalStateException, which no caller catches.
        raise HeartbeatError("UNKNOWN_SERVER_ERROR", str(error)) from None
    timers = tuple(session_timer(m.member_id, now, config, m.classic_member_metadata.session_timeout_ms)
                   for m in members.values())
    return group, CoordinatorResult(tuple(records), timers=timers)


def _from_classic_member(classic: ClassicGroup, classic_member: ClassicGroupMember, topics: TopicsImage,
                         generation: int) -> tuple[ConsumerGroupMember, dict]:
    """ConsumerGroup.fromClassicGroup for one member: the member and its assigned partitions by topic id
    (topics the cluster does not know are dropped, as toTopicPartitionMap does)."""
    group_id = classic.group_id
    if classic.protocol_name is None:
        # Kafka reads classicGroup.protocolName().get(): no protocol is chosen before the first generation.
        raise HeartbeatError("UNKNOWN_SERVER_ERROR", f"Classic group {group_id} has no protocol yet.")
    if classic.protocol_name not in (p.name for p in classic_member.protocols):
        # A member that joined the ongoing rebalance with other protocols only: ClassicGroupMember.metadata
        # throws IllegalArgumentException, which no caller catches.
        raise HeartbeatError("UNKNOWN_SERVER_ERROR", f"Member does not support protocol {classic.protocol_name}")
    try:
        subscription = consumer_protocol.decode_subscription(classic_member.metadata(classic.protocol_name))
        assignment = (consumer_protocol.decode_assignment(classic_member.assignment)
                      if classic_member.assignment else consumer_protocol.Assignment(()))
    except ValueError:
        raise HeartbeatError("GROUP_ID_NOT_FOUND", f"Cannot upgrade classic group {group_id} to consumer group "
                             "because the embedded consumer protocol is malformed.") from None
    if assignment.user_data:
        raise HeartbeatError("GROUP_ID_NOT_FOUND", f"Cannot upgrade classic group {group_id} to consumer group "
                             "because an unsupported custom assignor is in use.")
    assigned: dict = {}
    for tp in assignment.partitions:
        topic_id = topics.topic_id(tp.topic)
        if topic_id is not None:
            assigned.setdefault(topic_id, set()).add(tp.partition)
    current = CurrentAssignment(MemberState.STABLE, generation, generation,
                                {topic_id: dict.fromkeys(sorted(assigned[topic_id]), generation)
                                 for topic_id in sorted(assigned)})
    member = ConsumerGroupMember(
        classic_member.member_id, instance_id=classic_member.group_instance_id, rack_id=subscription.rack_id,
        rebalance_timeout_ms=classic_member.rebalance_timeout_ms, client_id=classic_member.client_id,
        client_host=classic_member.client_host, subscribed_topic_names=frozenset(subscription.topics),
        classic_member_metadata=ClassicMemberMetadata(
            classic_member.session_timeout_ms,
            tuple(ClassicProtocol(p.name, p.metadata) for p in classic_member.protocols)),
        current=current)
    return member, assigned
