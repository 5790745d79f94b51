"""The "uniform" server-side assignor (Kafka's `UniformAssignor`, the broker's default), computing exactly
Kafka's target assignment.

Balance comes first (member sizes differ by at most one where subscriptions allow it), stickiness to the
current target assignment second. A HOMOGENEOUS group (everyone subscribes to the same topics) takes the
quota-based path of `UniformHomogeneousAssignmentBuilder`; any other group the balancing path of
`UniformHeterogeneousAssignmentBuilder`. Which one runs is the group's subscription type, as in Kafka.
"""

from __future__ import annotations

from typing import Mapping

from state.consumer_group.group_spec import (
    GroupAssignment,
    GroupSpec,
    PartitionAssignorError,
    SubscriptionType,
    TopicId,
    canonical,
    java_hash_set_order,
    java_int_set_order,
    partition_count,
)

NAME = "uniform"

# The heterogeneous path's limit on passes over the topics while balancing.
MAX_BALANCE_ITERATIONS = 16


def assign(group: GroupSpec, partition_counts: Mapping[TopicId, int], kafka_4_0: bool = False) -> GroupAssignment:
    if not group.members:
        return {}
    if group.subscription_type is SubscriptionType.HOMOGENEOUS:
        return assign_homogeneous(group, partition_counts, kafka_4_0)
    return assign_heterogeneous(group, partition_counts)


def assign_homogeneous(group: GroupSpec, partition_counts: Mapping[TopicId, int],
                       kafka_4_0: bool = False) -> GroupAssignment:
    """Every member keeps up to its quota of its current target; the rest is handed out in topic order.

    The first `total % members` members in member order may keep one partition over the minimum quota, but
    a member that does not fill that extra slot from its current target gives it back unless it is among
    the last members that must take one (Kafka 4.1+, KAFKA-18688). Kafka 4.0 (`kafka_4_0`) gives the extra
    slots to the first members whatever they hold, so a balanced assignment may still move.
    """
    member_ids = list(group.members)
    # The topics of the first member, through a java.util.HashSet: this order is the hand-out order.
    topics = java_hash_set_order(group.members[member_ids[0]].subscribed_topic_ids, TopicId.java_hash)
    if not topics:
        return {}
    subscribed = set(topics)

    unassigned: list[tuple[TopicId, int]] = []
    total = 0
    for topic_id in topics:
        count = partition_count(partition_counts, topic_id)
        unassigned.extend((topic_id, p) for p in range(count) if not group.is_partition_assigned(topic_id, p))
        total += count
    minimum_quota, extra_left = divmod(total, len(member_ids))

    target: dict[str, dict[TopicId, list[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for index, member_id in enumerate(member_ids):
        quota = minimum_quota
        has_extra = extra_left > 0
        if has_extra:
            quota += 1
        kept: dict[TopicId, list[int]] = {}
        for topic_id, partitions in group.members[member_id].assignment.items():
            if topic_id not in subscribed:
                continue
            if len(partitions) <= quota:
                kept[topic_id] = list(partitions)
                quota -= len(partitions)
                continue
            order = java_int_set_order(partitions)
            if quota:
                kept[topic_id] = order[:quota]
            unassigned.extend((topic_id, p) for p in order[quota:])
            quota = 0
        if quota > 0 and has_extra and not kafka_4_0 and len(member_ids) - index > extra_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            unfilled.append((member_id, quota))
        if has_extra:
            extra_left -= 1
        target[member_id] = kept

    handed_out = 0
    for member_id, quota in unfilled:
        for topic_id, partition in unassigned[handed_out:handed_out + quota]:
            target[member_id].setdefault(topic_id, []).append(partition)
        handed_out += quota
    if handed_out < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return {member_id: canonical(assignment) for member_id, assignment in target.items()}


class _Balancer:
    """Hands out partitions to the least loaded and takes them from the most loaded of a set of members.

    Members are sorted by (size, index). The least loaded range [0, least_end) holds the members at
    `least_level + 1` or below once filled; the most loaded range [most_start, most_end) the members at
    `most_level`. Both ranges widen as the levels move towards each other; members that have nothing of the
    topic to give are swapped out past `most_end`. `sizes` is shared with the builder and read live.
    """

    def __init__(self, sizes: list[int], members: list[int]) -> None:
        self.sizes = sizes
        self.order = sorted(members, key=lambda m: (sizes[m], m))
        self.least_end = 0
        self.least_level = sizes[self.order[0]] - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.order)
        self.most_level = sizes[self.order[-1]] + 1
        self.next_most = len(self.order) - 1

    def imbalance(self) -> int:
        return self.sizes[self.order[-1]] - self.sizes[self.order[0]]

    def least_loaded(self) -> int:
        """The member to give the next partition to."""
        sizes, order = self.sizes, self.order
        if self.next_least >= self.least_end:
            self.least_level += 1
            while self.least_end < len(order) and sizes[order[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least = 0
        member = order[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        """The member to take the next partition from, or -1 when no member is left to take from."""
        sizes, order = self.sizes, self.order
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Every member of the range was excluded: restart the level from the next member down.
                self.most_level = sizes[order[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and sizes[order[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = order[self.next_most]
        self.next_most -= 1
        return member

    def exclude_last_most_loaded(self) -> None:
        """Drop the member `most_loaded` just returned from the most loaded range."""
        order, slot, last = self.order, self.next_most + 1, self.most_end - 1
        order[slot], order[last] = order[last], order[slot]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_level - self.least_level <= 1


class _HeterogeneousBuilder:
    def __init__(self, group: GroupSpec, partition_counts: Mapping[TopicId, int]) -> None:
        self.group = group
        self.member_ids = list(group.members)
        self.counts: dict[TopicId, int] = {}
        self.subscribers: dict[TopicId, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in group.members[member_id].subscribed_topic_ids:
                self.counts[topic_id] = partition_count(partition_counts, topic_id)
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {topic_id: [-1] * count for topic_id, count in self.counts.items()}
        self.target: list[dict[TopicId, set[int]]] = []

    def topic_order(self, topic_id: TopicId) -> tuple[float, int, TopicId]:
        """Partitions per subscriber descending, then fewer subscribers first, then topic id."""
        subscribers = len(self.subscribers[topic_id])
        return -(self.counts[topic_id] / subscribers), subscribers, topic_id

    def build(self) -> GroupAssignment:
        if not self.counts:
            return {}
        self.keep_subscribed()
        unassigned = {
            topic_id: [p for p, owner in enumerate(self.owners[topic_id]) if owner == -1] for topic_id in self.counts
        }
        for topic_id in sorted((t for t, ps in unassigned.items() if ps), key=self.topic_order):
            balancer = _Balancer(self.sizes, self.subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self.move(topic_id, partition, balancer.least_loaded())
        self.balance()
        return {member_id: canonical(self.target[i]) for i, member_id in enumerate(self.member_ids)}

    def keep_subscribed(self) -> None:
        """Each member keeps the partitions of its current target whose topics it still subscribes to."""
        for index, member_id in enumerate(self.member_ids):
            member = self.group.members[member_id]
            subscribed = set(member.subscribed_topic_ids)
            kept: dict[TopicId, set[int]] = {}
            for topic_id, partitions in member.assignment.items():
                if topic_id in subscribed:
                    kept[topic_id] = set(partitions)
                    self.sizes[index] += len(partitions)
                    for partition in partitions:
                        self.owners[topic_id][partition] = index
            self.target.append(kept)

    def move(self, topic_id: TopicId, partition: int, member: int) -> None:
        owners = self.owners[topic_id]
        previous = owners[partition]
        if previous != -1:
            partitions = self.target[previous][topic_id]
            partitions.discard(partition)
            if not partitions:
                del self.target[previous][topic_id]
            self.sizes[previous] -= 1
        self.target[member].setdefault(topic_id, set()).add(partition)
        owners[partition] = member
        self.sizes[member] += 1

    def balance(self) -> None:
        """Pass over the shared topics until a whole pass moves nothing (or the iteration limit)."""
        topics = sorted((t for t, s in self.subscribers.items() if len(s) >= 2), key=self.topic_order)
        last_moved = -1
        for _ in range(MAX_BALANCE_ITERATIONS):
            for index, topic_id in enumerate(topics):
                if index == last_moved:
                    return
                if self.balance_topic(topic_id) or last_moved == -1:
                    last_moved = index

    def balance_topic(self, topic_id: TopicId) -> int:
        """Move the topic's partitions from its most to its least loaded subscribers; how many moved."""
        balancer = _Balancer(self.sizes, self.subscribers[topic_id])
        if balancer.imbalance() <= 1:
            return 0
        owners = self.owners[topic_id]
        # The topic's partitions grouped by owner; each owner gives away from the end of its slice.
        partitions = sorted(range(self.counts[topic_id]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for position, partition in enumerate(partitions):
            start.setdefault(owners[partition], position)
            end[owners[partition]] = position + 1
        moved = 0
        while not balancer.balanced():
            giver = balancer.most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_last_most_loaded()
                giver = balancer.most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = partitions[end[giver]]
            taker = balancer.least_loaded()
            if balancer.balanced():
                break
            self.move(topic_id, partition, taker)
            moved += 1
        return moved


def assign_heterogeneous(group: GroupSpec, partition_counts: Mapping[TopicId, int]) -> GroupAssignment:
    """Keep what members still subscribe to, hand out the rest to the least loaded subscribers topic by
    topic, then move partitions from the most to the least loaded subscribers until balanced."""
    return _HeterogeneousBuilder(group, partition_counts).build()
