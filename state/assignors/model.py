"""Inputs and outputs shared by every assignor, and the input preparation all of Kafka's built-in assignors
go through (AbstractPartitionAssignor.assign).

The leader decodes each JoinGroup member's metadata into a Subscription and puts it in a java.util.HashMap
keyed by member id, inserting in the order of the JoinGroup response's member list. The collected topics
go through a HashSet, and the partition counts through a HashMap. Several results depend on the iteration
order of those maps, so GroupAssignmentInput keeps the members and topics in exactly that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from state import consumer_protocol
from state.consumer_protocol import TopicPartition
from state.java_compat import JavaHashMap, java_string_sort_key

__all__ = ["AssignorError", "GroupAssignmentInput", "MemberSubscription", "TopicPartition"]


class AssignorError(RuntimeError):
    """The leader's assignor fails where Kafka's client throws (IllegalStateException, NullPointerException,
    ...): the real leader would not send any assignment for this generation."""


@dataclass(frozen=True)
class MemberSubscription:
    """One JoinGroup member as the leader's assignor sees it.

    `generation_id` is the Subscription's GenerationId field (v2+); None or a negative value means absent,
    which Kafka compares as -1. `user_data` is the assignor's opaque blob (for "sticky" it carries the
    previous assignment). `rack` is kept but has no effect, see the package docstring.
    """

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int | None = None
    rack: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str):
            raise TypeError(f"member {self.member_id!r}: topics must be a sequence of names, not a string")
        topics = tuple(self.topics)
        if len(set(topics)) != len(topics):
            # A Java client subscribes with a Set, so it never sends a topic twice; Kafka's assignors would
            # count such a member twice per topic in places.
            raise ValueError(f"member {self.member_id!r} lists a topic more than once: {topics}")
        object.__setattr__(self, "topics", topics)
        object.__setattr__(self, "owned_partitions", tuple(TopicPartition(*tp) for tp in self.owned_partitions))

    @property
    def subscription_generation(self) -> int:
        """The GenerationId field as Kafka compares it (absent = -1)."""
        g = self.generation_id
        return g if g is not None and g >= 0 else -1

    @property
    def has_generation(self) -> bool:
        """Subscription.generationId().isPresent(): v2+ and not negative."""
        return self.generation_id is not None and self.generation_id >= 0

    @classmethod
    def from_metadata(cls, member_id: str, metadata: bytes, group_instance_id: str | None = None) -> MemberSubscription:
        """Decode a JoinGroup member's consumer-protocol metadata, as ConsumerCoordinator.onLeaderElected does."""
        sub = consumer_protocol.decode_subscription(metadata)
        return cls(
            member_id=member_id,
            topics=sub.topics,
            group_instance_id=group_instance_id,
            owned_partitions=sub.owned_partitions,
            generation_id=sub.generation_id,
            rack=sub.rack_id,
            user_data=sub.user_data,
        )


def member_info_key(member: MemberSubscription) -> tuple:
    """AbstractPartitionAssignor.MemberInfo order: static members first by group.instance.id, then dynamic
    members by member.id, both in Java String.compareTo order."""
    if member.group_instance_id is not None:
        return (0, java_string_sort_key(member.group_instance_id))
    return (1, java_string_sort_key(member.member_id))


@dataclass(frozen=True)
class GroupAssignmentInput:
    """The leader's view of one assignment round.

    members: every member, in the iteration order of the leader's `subscriptions` HashMap.
    partitions_per_topic: the subscribed topics that exist with at least one partition, in the iteration
        order of Kafka's `partitionsPerTopic` HashMap.
    """

    members: tuple[MemberSubscription, ...]
    partitions_per_topic: dict[str, int]
    # Members grouped by identical topic list, lists in order of first appearance: per-topic work is done
    # once per distinct subscription instead of once per member.
    topic_groups: dict[tuple[str, ...], list[MemberSubscription]]

    @classmethod
    def build(cls, members: Sequence[MemberSubscription], partitions_per_topic: Mapping[str, int]) -> GroupAssignmentInput:
        by_id: JavaHashMap[str, MemberSubscription] = JavaHashMap()
        for m in members:
            if m.member_id in by_id:
                raise ValueError(f"member id {m.member_id!r} appears twice in the member list")
            by_id[m.member_id] = m
        ordered = tuple(by_id.values())

        groups: dict[tuple[str, ...], list[MemberSubscription]] = {}
        for m in ordered:
            groups.setdefault(m.topics, []).append(m)
        # The HashSet of subscribed topics is filled member by member; a member whose topic list was already
        # seen adds nothing new, so each distinct list is walked once.
        subscribed: JavaHashMap[str, None] = JavaHashMap()
        for topics in groups:
            for topic in topics:
                subscribed[topic] = None

        existing: JavaHashMap[str, int] = JavaHashMap()
        for topic in subscribed.keys():
            count = partitions_per_topic.get(topic)
            if count is None or count == 0:
                continue
            if count < 0:
                raise ValueError(f"topic {topic!r} has a negative partition count {count}")
            existing[topic] = count
        return cls(ordered, dict(existing.items()), groups)

    def member_info_order(self) -> list[MemberSubscription]:
        # Stable sort over the HashMap order, like Collections.sort over a list filled from the HashMap.
        return sorted(self.members, key=member_info_key)
