"""The records a consumer group's coordinator appends to `__consumer_offsets` (Kafka's
GroupCoordinatorRecordHelpers for consumer groups, trunk) and what each one says: a consumer group's state
is the replay of these records (`state.consumer_group.group.ConsumerGroup.replay`).

Each record is its key's fields plus `value`; `value` None is a tombstone. `key` tells which records a
compacted log keeps apart: the record type id (CoordinatorRecordType) and the key's member id, if any.

* ConsumerGroupMetadata (3): the group epoch and the metadata hash of the subscribed topics.
* ConsumerGroupPartitionMetadata (4): written by Kafka <= 4.0; trunk only ever tombstones it, and only
  when it replayed one, which a group this simulator built never holds. Modelled as a tombstone.
* ConsumerGroupMemberMetadata (5): one member's identity and subscription, with its ClassicMemberMetadata
  (session timeout, supported protocols) if it uses the classic protocol (a member of a classic group the
  consumer group was converted from).
* ConsumerGroupTargetAssignmentMetadata (6): the assignment epoch and when it was computed.
* ConsumerGroupTargetAssignmentMember (7): one member's target partitions.
* ConsumerGroupCurrentMemberAssignment (8): one member's reconciliation state, with the assignment epoch of
  every partition it holds; the value is `reconciliation.CurrentAssignment`.
* ConsumerGroupRegularExpression (16): what one regular expression the members subscribe with resolved to
  (the matching topic names, the metadata image version and the time of the resolution), keyed by the
  regex; tombstoned when its last member leaves or changes it (state.consumer_group.regex).
"""

from __future__ import annotations

from dataclasses import dataclass

from state.consumer_group.messages import TopicPartitions
from state.consumer_group.reconciliation import CurrentAssignment

CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16


@dataclass(frozen=True, slots=True)
class GroupEpoch:
    epoch: int
    metadata_hash: int


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol joined with: None for a member using the consumer protocol."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """ConsumerGroupMemberMetadataValue. `subscribed_topic_names` sorted, as Kafka writes them."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str
    server_assignor: str | None
    rebalance_timeout_ms: int
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class AssignmentMetadata:
    assignment_epoch: int
    assignment_timestamp_ms: int  # 0: unknown, so the next assignment is never held back by the interval


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """ConsumerGroupRegularExpressionValue: the topics a regex matched (sorted, for a stable record; Kafka
    writes its HashSet's order), the metadata image version it was resolved against and when."""

    topics: tuple[str, ...]
    version: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    value: GroupEpoch | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_METADATA,)


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadata:
    value: None = None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_PARTITION_METADATA,)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadata:
    member_id: str
    value: MemberSubscription | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_MEMBER_METADATA, self.member_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadata:
    value: AssignmentMetadata | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMember:
    member_id: str
    value: TopicPartitions | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, self.member_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignment:
    member_id: str
    value: CurrentAssignment | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, self.member_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpression:
    regex: str
    value: ResolvedRegularExpression | None

    @property
    def key(self) -> tuple:
        return (CONSUMER_GROUP_REGULAR_EXPRESSION, self.regex)


ConsumerGroupRecord = (ConsumerGroupMetadata | ConsumerGroupPartitionMetadata | ConsumerGroupMemberMetadata
                       | ConsumerGroupTargetAssignmentMetadata | ConsumerGroupTargetAssignmentMember
                       | ConsumerGroupCurrentMemberAssignment | ConsumerGroupRegularExpression)


def member_tombstones(member_id: str) -> list[ConsumerGroupRecord]:
    """Kafka's removeMember: a member's three tombstones, in the order replay accepts them (the current
    assignment first, the member metadata last)."""
    return [ConsumerGroupCurrentMemberAssignment(member_id, None),
            ConsumerGroupTargetAssignmentMember(member_id, None),
            ConsumerGroupMemberMetadata(member_id, None)]


_BY_TYPE = {
    CONSUMER_GROUP_METADATA: ConsumerGroupMetadata,
    CONSUMER_GROUP_PARTITION_METADATA: ConsumerGroupPartitionMetadata,
    CONSUMER_GROUP_MEMBER_METADATA: ConsumerGroupMemberMetadata,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadata,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMember,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignment,
    CONSUMER_GROUP_REGULAR_EXPRESSION: ConsumerGroupRegularExpression,
}


def is_consumer_group_key(key: tuple) -> bool:
    """Whether a record key (`record.key`) is a consumer group record's: its type id is one of these."""
    return key[0] in _BY_TYPE


def record_of(key: tuple, value) -> ConsumerGroupRecord:
    """The record with this key and value (what a compacted log keeps of it)."""
    record_type, *member_id_or_regex = key
    return _BY_TYPE[record_type](*member_id_or_regex, value)
