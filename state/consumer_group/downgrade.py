"""Online migration of a consumer group back to a classic group (Kafka's GroupMetadataManager
validateOnlineDowngradeWithFencedMembers, validateOnlineDowngradeWithReplacedMember and convertToClassicGroup,
ConsumerGroup.createGroupTombstoneRecords(WithReplacedMember), ClassicGroup.fromConsumerGroup and
createClassicGroupRecords, trunk), under `group.consumer.migration.policy` `downgrade` or `bidirectional`.

When. A fencing (a leave with epoch -1, a LeaveGroup, a session, rebalance, join or sync timeout) that would
leave only members using the classic protocol, at least one and at most group.max.size of them; or a
classic JoinGroup whose static member takes the place of the group's only member using the consumer protocol,
in a group of at most group.max.size members. The fencing then writes no member tombstones and no epoch bump:
the downgrade's records replace them. An Empty consumer group is never downgraded (a JoinGroup replaces it
with a new classic group instead: state/consumer_group/manager.py).

What. In one append: the consumer group's tombstones (every member's current assignment, every member's target,
the target assignment metadata, every member's metadata, every resolved regular expression, the partition
metadata, the group epoch; members in
the order of the consumer group's member map, the joining member's id standing for the member it replaces),
then the classic group's GroupMetadata record. The classic group is Stable at generation = the group epoch,
protocol type `consumer`, its members those of the consumer group but the fenced ones (the joining member in
place of the one it replaces, added last), the leader the first added, the protocol the members' vote, each
member's assignment its target assignment (the replaced member's for the joining one) serialized at the version
of its subscription metadata. Its members' sessions restart (their classic session timeouts) and it prepares
a rebalance unless a joining member replaced one without the group needing a new target assignment.

Pure: `convert_to_classic_group` returns the tombstones and the classic group; the runtime writes them with the
GroupMetadata record, answers and arms the classic group's timers (state/consumer_group/manager.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Iterable

from state.classic import consumer_protocol
from state.config import CoordinatorConfig
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember
from state.consumer_group.group_spec import in_java_hash_map_order, java_hash_set_order
from state.consumer_group.records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
)
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from state.events import Protocol
from state.classic.group import (CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupMember, decode_assignment_partitions,
                         subscription_topics)
from state.classic.group_state import GroupState
from state.java_compat import string_hash_code

# ConsumerGroupMigrationPolicy.isDowngradeEnabled.
DOWNGRADE_POLICIES = ("downgrade", "bidirectional")


@dataclass(frozen=True)
class Downgrade:
    """A downgrade a request or a timer triggers: the fenced members' ids (`leaving`), or the member a classic
    JoinGroup made of its static member replacing the last one using the consumer protocol (`joining`, as the
    join's records leave it), and whether the classic group then rebalances."""

    leaving: frozenset[str] = frozenset()
    joining: ConsumerGroupMember | None = None
    rebalance: bool = True


def _downgrade_allowed(remaining: int, config: CoordinatorConfig) -> bool:
    """The policy allows a downgrade and the classic group would not be larger than group.max.size."""
    return config.group_consumer_migration_policy in DOWNGRADE_POLICIES and remaining <= config.group_max_size


def downgrade_with_fenced_members(group: ConsumerGroup, fenced: Collection[ConsumerGroupMember],
                                  config: CoordinatorConfig) -> Downgrade | None:
    """validateOnlineDowngradeWithFencedMembers: the downgrade fencing `fenced` triggers, if any."""
    leaving = frozenset(member.member_id for member in fenced)
    remaining = [m for m in group.members.values() if m.member_id not in leaving]
    if not remaining or not all(m.use_classic_protocol for m in remaining):
        return None
    return Downgrade(leaving=leaving) if _downgrade_allowed(len(remaining), config) else None


def downgrade_allowed_with_replaced_member(group: ConsumerGroup, replaced: ConsumerGroupMember,
                                           config: CoordinatorConfig) -> bool:
    """validateOnlineDowngradeWithReplacedMember: `replaced` is the only member using the consumer protocol."""
    others = [m for m in group.members.values() if m.member_id != replaced.member_id]
    return (not replaced.use_classic_protocol and all(m.use_classic_protocol for m in others)
            and _downgrade_allowed(len(group.members), config))


def convert_to_classic_group(group: ConsumerGroup, downgrade: Downgrade, topics: TopicsImage,
                             now: int) -> tuple[list[ConsumerGroupRecord], ClassicGroup]:
    """convertToClassicGroup: the consumer group's tombstones and the classic group taking its place (its
    GroupMetadata record is `state.records.group_log.group_metadata_value(classic, its members' assignments)`)."""
    joining = downgrade.joining
    replaced = None if joining is None else group.static_member(joining.instance_id)
    if joining is not None and replaced is None:
        raise ValueError("the joining member must replace a static member")
    order = in_timeline_hash_map_order(group.members)
    ids = [joining.member_id if replaced is not None and m == replaced.member_id else m for m in order]
    records: list[ConsumerGroupRecord] = [ConsumerGroupCurrentMemberAssignment(m, None) for m in ids]
    records += [ConsumerGroupTargetAssignmentMember(m, None) for m in ids]
    records.append(ConsumerGroupTargetAssignmentMetadata(None))
    records += [ConsumerGroupMemberMetadata(m, None) for m in ids]
    # The resolved regexes' tombstones, in the order of the group's TimelineHashMap of them.
    records += [ConsumerGroupRegularExpression(regex, None) for regex in in_timeline_hash_map_order(group.resolved_regexes)]
    records += [ConsumerGroupPartitionMetadata(), ConsumerGroupMetadata(None)]

    classic = ClassicGroup(group.group_id, now, state=GroupState.STABLE, protocol_type=CONSUMER_PROTOCOL_TYPE,
                           generation_id=group.group_epoch)
    targets = {}
    for member_id in order:
        member = group.members[member_id]
        if member_id in downgrade.leaving or member is replaced:
            continue
        classic.add(_classic_member(member), None)
        targets[member_id] = group.target_of(member_id)
    if joining is not None:
        classic.add(_classic_member(joining), None)
        targets[joining.member_id] = group.target_of(replaced.member_id)
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.compute_subscribed_topics()
    for member in classic.all_members():
        version = consumer_protocol.decode_version(member.metadata(classic.protocol_name))
        member.assignment = consumer_protocol.encode_assignment(
            consumer_protocol.Assignment(_named_partitions(targets[member.member_id], topics)), version)
        member.assignment_partitions = decode_assignment_partitions(CONSUMER_PROTOCOL_TYPE, member.assignment)
    return records, classic


def _classic_member(member: ConsumerGroupMember) -> ClassicGroupMember:
    """The classic group's member for a consumer group member using the classic protocol."""
    classic = member.classic_member_metadata
    return ClassicGroupMember(
        member_id=member.member_id, group_instance_id=member.instance_id, client_id=member.client_id,
        client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
        session_timeout_ms=classic.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocols=tuple(Protocol(p.name, p.metadata, subscription_topics(CONSUMER_PROTOCOL_TYPE, p.metadata))
                        for p in classic.supported_protocols))


def _named_partitions(target, topics: TopicsImage) -> tuple[consumer_protocol.TopicPartition, ...]:
    """toConsumerProtocolAssignment: the target's partitions by topic name, topics in its HashMap's order and
    partitions in their HashSet's; a topic the cluster does not know any more is left out."""
    names = {topic_id: name for name, (topic_id, _) in topics.topics.items()}
    return tuple(consumer_protocol.TopicPartition(names[topic_id], partition)
                 for topic_id, partitions in in_java_hash_map_order(target, TopicId.java_hash).items()
                 if topic_id in names for partition in java_hash_set_order(sorted(partitions), int))


# org.apache.kafka.timeline.BaseHashTable: Knuth's multiplicative hash picks a slot from the high bits.
_FIBONACCI = -7046029254386353131
_LONG_MASK = (1 << 64) - 1


def in_timeline_hash_map_order(keys: Iterable[str]) -> list[str]:
    """The order a TimelineHashMap (the consumer group's member map, created empty) filled with `keys` in
    their order iterates them: slot by slot, and within a slot last put first (a slot keeps its colliding keys
    in insertion order, and SnapshottableHashTable's CurrentIterator unpacks a slot into a list it takes from
    the end). A map that held more members once keeps its larger table in Kafka, which this rebuild from the
    present keys does not know of."""
    slots: list[list[str]] = [[], []]  # BaseHashTable.MIN_CAPACITY
    for size, key in enumerate(keys):
        if (size + 1) * 0.75 > len(slots):
            old, slots = slots, [[] for _ in range(2 * len(slots))]
            for chain in old:
                for moved in chain:
                    slots[_slot(moved, len(slots))].append(moved)
        slots[_slot(key, len(slots))].append(key)
    return [key for chain in slots for key in reversed(chain)]


def _slot(key: str, table_size: int) -> int:
    shift = 65 - table_size.bit_length()
    return ((string_hash_code(key) * _FIBONACCI) & _LONG_MASK) >> shift
