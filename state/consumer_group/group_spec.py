"""What a server-side assignor is given and what it returns (Kafka's `GroupSpec`, `MemberSubscription`,
`GroupAssignment`), the group's subscription type, and the Java iteration orders the assignors depend on.

Kafka's assignors iterate several Java collections whose order is not a sorted order, and the uniform
assignor's output depends on it. Each order is therefore an explicit part of the input here:

* members: `GroupSpec.members` iterates like `groupSpec.memberIds()`. The broker builds that map as a
  java.util.HashMap keyed by member id (`TargetAssignmentBuilder.build`); `in_java_hash_map_order` gives that
  order. Kafka's unit tests use a TreeMap instead (sorted member ids).
* a member's subscribed topic ids: in the order of the member's set; the homogeneous uniform builder
  copies them into a HashSet itself.
* a member's current target assignment: topics in the order of its map (a HashMap after a record replay:
  `in_java_hash_map_order` again; some Kafka tests pass a LinkedHashMap). Partition sets are always
  java.util.HashSet<Integer> in Kafka and are iterated here as one built from the ascending partition list
  (`java_int_set_order`).

The inverted target assignment (`GroupSpec.isPartitionAssigned`) is derived from the members' current
target assignments, as every Kafka test builds it.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Collection, Hashable, Iterable, Mapping, Sequence, TypeVar

from state.consumer_group.topic_id import TopicId
from state.java_compat import JavaHashMap

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# memberId -> {topicId -> partitions}: an assignor's output, members in GroupSpec order, topics in TopicId
# order, partitions ascending.
GroupAssignment = dict[str, dict[TopicId, tuple[int, ...]]]


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException: the assignor cannot compute a target assignment."""


class SubscriptionType(enum.Enum):
    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


def subscription_type(subscriptions: Iterable[tuple[Collection[str], str]]) -> SubscriptionType:
    """`ConsumerGroup.subscriptionType` from each member's (topic names, regex); "" is no regex.

    Without regexes the group is HOMOGENEOUS iff every topic name is subscribed by every member (names
    count whether or not the topic exists; no members, or nobody subscribing to anything, is HOMOGENEOUS).
    With regexes it is HOMOGENEOUS iff every member uses the same one and nobody subscribes by name.
    """
    subscriptions = [(frozenset(names), regex) for names, regex in subscriptions]
    members = len(subscriptions)
    name_counts = Counter(name for names, _ in subscriptions for name in names)
    regex_counts = Counter(regex for _, regex in subscriptions if regex)
    if not regex_counts:
        homogeneous = all(count == members for count in name_counts.values())
    else:
        homogeneous = list(regex_counts.values()) == [members] and not name_counts
    return SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it (`MemberSubscriptionAndAssignmentImpl`).

    `assignment` is the member's current *target* assignment. `rack_id` is carried as Kafka carries it;
    neither server-side assignor reads it at the commit modelled.
    """

    subscribed_topic_ids: Sequence[TopicId] = ()
    assignment: Mapping[TopicId, Collection[int]] = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    """`GroupSpecImpl`: the members in `memberIds()` order and the group's subscription type."""

    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType

    @cached_property
    def assigned_partitions(self) -> dict[TopicId, frozenset[int]]:
        """Every partition in some member's current target assignment (the inverted target assignment)."""
        assigned: dict[TopicId, set[int]] = {}
        for member in self.members.values():
            for topic_id, partitions in member.assignment.items():
                assigned.setdefault(topic_id, set()).update(partitions)
        return {topic_id: frozenset(partitions) for topic_id, partitions in assigned.items()}

    def is_partition_assigned(self, topic_id: TopicId, partition: int) -> bool:
        return partition in self.assigned_partitions.get(topic_id, ())


def partition_count(partition_counts: Mapping[TopicId, int], topic_id: TopicId) -> int:
    """`SubscribedTopicDescriber.numPartitions`, failing as both assignors do for a topic that is not in
    the metadata."""
    count = partition_counts.get(topic_id)
    if count is None:
        raise PartitionAssignorError(f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
    return count


def canonical(assignment: Mapping[TopicId, Iterable[int]]) -> dict[TopicId, tuple[int, ...]]:
    """A member's assignment in output form: topics in TopicId order, partitions ascending."""
    return {topic_id: tuple(sorted(assignment[topic_id])) for topic_id in sorted(assignment)}


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two >= capacity."""
    return 1 << max(capacity - 1, 0).bit_length()


def java_hash_set_order(items: Iterable[K], hash_fn: Callable[[K], int]) -> list[K]:
    """Iteration order of `new HashSet<>(items)` (its capacity sized for the collection), `items` being
    inserted in the order given."""
    items = list(items)
    # HashSet(Collection): initial capacity max((int) (n / .75f) + 1, 16); (int) (n / .75f) == 4n // 3.
    table = JavaHashMap(hash_fn, _table_size_for(max(len(items) * 4 // 3 + 1, 16)))
    for item in items:
        table[item] = None
    return table.keys()


def java_int_set_order(partitions: Collection[int]) -> list[int]:
    """Iteration order of a java.util.HashSet<Integer> holding `partitions`, built from them ascending."""
    return java_hash_set_order(sorted(partitions), int)


def in_java_hash_map_order(mapping: Mapping[K, V], hash_fn: Callable[[K], int] | None = None) -> dict[K, V]:
    """`mapping` reordered as a java.util.HashMap (default capacity, grown by puts) filled from it in its own
    order would iterate. Member ids hash as Strings (the default), topic ids by `TopicId.java_hash`."""
    table = JavaHashMap(hash_fn)
    for key in mapping:
        table[key] = None
    return {key: mapping[key] for key in table.keys()}
