"""A consumer group and its members as the coordinator holds them (Kafka's ConsumerGroup and
ConsumerGroupMember, trunk). The group changes only by replaying its records (`ConsumerGroup.replay`):
handlers read it and return records, so a group rebuilt from its log equals the one that wrote it.

What a group derives from its members is kept in step on every replay, as Kafka's `updateMember` /
`removeMember` do: the static members by instance id, the count of members per subscribed topic name, per
subscribed regular expression and per server assignor name, and the member epoch holding each partition
(`CurrentPartitionEpochs`). The regular expressions the group resolved (ConsumerGroupRegularExpression
records) count the topics they matched per topic name (Kafka's SubscriptionCount.byRegexCount). The group
state is not stored: it is a function of the epochs and members (ConsumerGroup.maybeUpdateGroupState).

One field is not replayed: `metadata_expired`, Kafka's in-memory metadata refresh deadline, set on a new or
loaded group (and, in Kafka, when a subscribed topic changes in the metadata image) and cleared once a
heartbeat has recomputed the metadata hash.
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from typing import Iterable, Mapping

from state.consumer_group.group_spec import SubscriptionType, in_java_hash_map_order, subscription_type
from state.consumer_group.messages import LEAVE_EPOCH, TopicPartitions
from state.consumer_group.reconciliation import CurrentAssignment, CurrentPartitionEpochs, MemberState, PartitionEpochs
from state.consumer_group.records import (
    AssignmentMetadata,
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberSubscription,
    ResolvedRegularExpression,
)
from state.consumer_group.topic_id import TopicId
from state.java_compat import java_string_sort_key

# memberId's target: topicId -> partitions (Kafka's Assignment)
Assignment = dict[TopicId, frozenset[int]]


def initial_epoch(kafka_4_0: bool) -> int:
    """A new group's group epoch and assignment epoch: 1, so the first join bumps to 2 (KAFKA-20268, 4.3);
    Kafka 4.0 started at 0."""
    return 0 if kafka_4_0 else 1


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"  # the group epoch is ahead of the target assignment
    RECONCILING = "Reconciling"  # some member has not reached the target assignment yet
    STABLE = "Stable"
    DEAD = "Dead"  # Kafka's enum has it; its derivation never gives it


@dataclasses.dataclass(frozen=True)
class ConsumerGroupMember:
    """A member: its subscription (the MemberMetadata record) and its reconciliation state (the
    CurrentMemberAssignment record). The defaults are a member that has just been created: epoch 0,
    previous epoch -1, STABLE, nothing assigned."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str = ""
    server_assignor_name: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None
    current: CurrentAssignment = CurrentAssignment(MemberState.STABLE, 0, -1)

    @property
    def member_epoch(self) -> int:
        return self.current.member_epoch

    @property
    def previous_member_epoch(self) -> int:
        return self.current.previous_member_epoch

    @property
    def state(self) -> MemberState:
        return self.current.state

    @property
    def assigned_partitions(self) -> PartitionEpochs:
        return self.current.assigned_partitions

    @property
    def use_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def subscription(self) -> MemberSubscription:
        # Kafka writes the names sorted (GroupCoordinatorRecordHelpers.newConsumerGroupMemberSubscriptionRecord).
        names = tuple(sorted(self.subscribed_topic_names, key=java_string_sort_key))
        return MemberSubscription(self.instance_id, self.rack_id, self.client_id, self.client_host,
                                  names, self.subscribed_topic_regex,
                                  self.server_assignor_name, self.rebalance_timeout_ms, self.classic_member_metadata)

    def with_subscription(self, value: MemberSubscription) -> "ConsumerGroupMember":
        return dataclasses.replace(
            self, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex, server_assignor_name=value.server_assignor,
            rebalance_timeout_ms=value.rebalance_timeout_ms, classic_member_metadata=value.classic_member_metadata)


def topic_partitions(assignment: Mapping[TopicId, Iterable[int]]) -> TopicPartitions:
    """An assignment as records and responses carry it: topics in TopicId order, partitions ascending."""
    return tuple((topic_id, tuple(sorted(assignment[topic_id]))) for topic_id in sorted(assignment))


def preferred_server_assignor(counts: Mapping[str, int]) -> str | None:
    """The assignor most members name (ConsumerGroup.computePreferredServerAssignor). Kafka takes the max
    over a hash map, the first one met winning a tie; the map's order is taken to be java.util.HashMap's."""
    best = None
    for name, count in in_java_hash_map_order(counts).items():
        if best is None or count > counts[best]:
            best = name
    return best


class ConsumerGroup:
    def __init__(self, group_id: str, kafka_4_0: bool = False) -> None:
        self.group_id = group_id
        self.group_epoch = initial_epoch(kafka_4_0)
        self.metadata_hash = 0
        self.assignment_epoch = initial_epoch(kafka_4_0)
        self.assignment_timestamp_ms = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_assignment: dict[str, Assignment] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.subscribed_topic_names: Counter[str] = Counter()  # topic name -> members subscribing by name
        self.server_assignors: Counter[str] = Counter()  # assignor name -> members naming it
        self.subscribed_regexes: Counter[str] = Counter()  # regex -> members subscribing with it
        # regex -> what it resolved to, in the order Kafka's map has them (a re-resolved regex goes last).
        self.resolved_regexes: dict[str, ResolvedRegularExpression] = {}
        self.regex_topic_names: Counter[str] = Counter()  # topic name -> resolved regexes matching it
        self.partition_epochs = CurrentPartitionEpochs()
        self.metadata_expired = True

    _REPLAYED = ("group_id", "group_epoch", "metadata_hash", "assignment_epoch", "assignment_timestamp_ms",
                 "members", "target_assignment", "static_members", "subscribed_topic_names", "server_assignors",
                 "subscribed_regexes", "resolved_regexes", "regex_topic_names", "partition_epochs")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConsumerGroup) and all(
            getattr(self, name) == getattr(other, name) for name in self._REPLAYED)

    __hash__ = None  # mutable

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def subscription_type(self) -> SubscriptionType:
        return subscription_type((m.subscribed_topic_names, m.subscribed_topic_regex) for m in self.members.values())

    def preferred_server_assignor(self) -> str | None:
        return preferred_server_assignor(self.server_assignors)

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member subscribes to `topic`, by name or through a resolved regex
        (ModernGroup.isSubscribedToTopic): its offsets do not expire."""
        return topic in self.subscribed_topic_names or topic in self.regex_topic_names

    def all_subscribed_topic_names(self) -> Counter[str]:
        """Kafka's subscribedTopicNames: every topic a member subscribes to by name or a resolved regex
        matches, with its count of names plus regexes (what the metadata hash is computed over)."""
        return self.subscribed_topic_names + self.regex_topic_names

    def regex_topics(self, regex: str) -> frozenset[str]:
        """The topics `regex` resolved to; nothing if it is not resolved (yet)."""
        resolved = self.resolved_regexes.get(regex) if regex else None
        return frozenset(resolved.topics) if resolved is not None else frozenset()

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members[member_id]

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """The member's target assignment; a static member's is found through its instance id, so that the
        member replacing it gets it (ConsumerGroup.targetAssignment(memberId, instanceId))."""
        if instance_id is not None:
            member_id = self.static_members.get(instance_id)
        return self.target_assignment.get(member_id, {})

    # ------------------------------------------------------------------------------------------------
    # Replay: the only way the group changes.

    def replay(self, record: ConsumerGroupRecord) -> None:
        match record:
            case ConsumerGroupMetadata(value=None):
                # Deleting a group (ConsumerGroup.createGroupTombstoneRecords) is not modelled.
                raise ValueError(f"group {self.group_id}: a ConsumerGroupMetadata tombstone deletes the group")
            case ConsumerGroupMetadata(value=value):
                self.group_epoch = value.epoch
                self.metadata_hash = value.metadata_hash
            case ConsumerGroupPartitionMetadata():
                pass  # nothing of it is held: trunk keeps the metadata hash instead
            case ConsumerGroupMemberMetadata(member_id=member_id, value=None):
                self._remove_member(member_id)
            case ConsumerGroupMemberMetadata(member_id=member_id, value=value):
                old = self.members.get(member_id)
                self._update_member(old, (old or ConsumerGroupMember(member_id)).with_subscription(value))
            case ConsumerGroupTargetAssignmentMetadata(value=None):
                if self.target_assignment:
                    raise ValueError(f"group {self.group_id}: target assignment tombstone while members have targets")
                self._set_assignment_metadata(AssignmentMetadata(-1, 0))
            case ConsumerGroupTargetAssignmentMetadata(value=value):
                self._set_assignment_metadata(value)
            case ConsumerGroupTargetAssignmentMember(member_id=member_id, value=None):
                self.target_assignment.pop(member_id, None)
            case ConsumerGroupTargetAssignmentMember(member_id=member_id, value=value):
                self.target_assignment[member_id] = {topic_id: frozenset(ps) for topic_id, ps in value}
            case ConsumerGroupCurrentMemberAssignment(member_id=member_id, value=None):
                old = self.members.get(member_id)
                if old is not None:
                    # The member stays until its MemberMetadata tombstone, holding nothing, at epoch -1.
                    left = CurrentAssignment(old.state, LEAVE_EPOCH, LEAVE_EPOCH)
                    self._update_member(old, dataclasses.replace(old, current=left))
            case ConsumerGroupCurrentMemberAssignment(member_id=member_id, value=value):
                old = self.members.get(member_id)
                self._update_member(old, dataclasses.replace(old or ConsumerGroupMember(member_id), current=value))
            case ConsumerGroupRegularExpression(regex=regex, value=value):
                # updateResolvedRegularExpression / removeResolvedRegularExpression.
                old = self.resolved_regexes.pop(regex, None)
                if old is not None:
                    self.regex_topic_names.subtract(old.topics)
                if value is not None:
                    self.resolved_regexes[regex] = value
                    self.regex_topic_names.update(value.topics)
                _drop_zeros(self.regex_topic_names)
            case _:
                raise TypeError(f"not a consumer group record: {record!r}")

    def _set_assignment_metadata(self, value: AssignmentMetadata) -> None:
        self.assignment_epoch = value.assignment_epoch
        self.assignment_timestamp_ms = value.assignment_timestamp_ms

    def _update_member(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        self.members[new.member_id] = new
        self._count(old, -1)
        self._count(new, +1)
        if old is None or old.current is not new.current:
            self.partition_epochs.update_member(old.current if old else None, new.current)
        if old is not None and old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def _remove_member(self, member_id: str) -> None:
        old = self.members.get(member_id)
        if old is None:
            return
        # Kafka removes a member only after its current assignment and target are gone.
        if old.member_epoch != LEAVE_EPOCH or member_id in self.target_assignment:
            raise ValueError(f"group {self.group_id}: member {member_id} removed before its current assignment "
                             "and target assignment tombstones")
        del self.members[member_id]
        self._count(old, -1)
        self.partition_epochs.update_member(old.current, None)
        if old.instance_id is not None:
            self.static_members.pop(old.instance_id, None)

    def _count(self, member: ConsumerGroupMember | None, delta: int) -> None:
        if member is None:
            return
        self.subscribed_topic_names.update(dict.fromkeys(member.subscribed_topic_names, delta))
        if member.server_assignor_name is not None:
            self.server_assignors[member.server_assignor_name] += delta
        if member.subscribed_topic_regex:
            self.subscribed_regexes[member.subscribed_topic_regex] += delta
        for counter in (self.subscribed_topic_names, self.server_assignors, self.subscribed_regexes):
            _drop_zeros(counter)


def _drop_zeros(counter: Counter[str]) -> None:
    """Counter keeps zero counts; Kafka's maps drop a name nobody uses any more."""
    for name in [name for name, count in counter.items() if count == 0]:
        del counter[name]
