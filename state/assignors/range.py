"""RangeAssignor ("range", RangeAssignor.java): each topic on its own, its partitions cut into consecutive ranges
over the topic's subscribers in MemberInfo order; the first `P % N` subscribers get one extra partition.

Because every topic starts again from the first-sorted subscriber, the extras of all topics pile up on the
same members, which is the well-known Range imbalance.

A member's list follows the iteration order of Kafka's partitionsPerTopic HashMap, then partition index,
so lists match the Java client element for element, not only as sets.

The rack-aware pass (KIP-881) only runs when partitions have replica racks, which our topic metadata does
not carry, so it never applies here.
"""

from __future__ import annotations

import heapq
from itertools import islice, repeat

from state.assignors.model import GroupAssignmentInput, TopicPartition
from state.consumer_protocol import new_topic_partition


def assign(inp: GroupAssignmentInput) -> dict[str, list[TopicPartition]]:
    result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in inp.members}
    rank = {m.member_id: i for i, m in enumerate(inp.member_info_order())}

    # Subscribers of a topic in MemberInfo order = the union of the (already sorted) groups of identical
    # subscriptions that contain the topic.
    groups_by_topic: dict[str, list[list[str]]] = {}
    for topics, members in inp.topic_groups.items():
        ids = sorted((m.member_id for m in members), key=rank.__getitem__)
        for topic in topics:
            groups_by_topic.setdefault(topic, []).append(ids)

    for topic, n_partitions in inp.partitions_per_topic.items():
        groups = groups_by_topic[topic]
        n_members = sum(len(g) for g in groups)
        quota, extra = divmod(n_partitions, n_members)
        subscribers = groups[0] if len(groups) == 1 else heapq.merge(*groups, key=rank.__getitem__)
        partitions = list(map(new_topic_partition, zip(repeat(topic), range(n_partitions))))
        start = 0
        # With fewer partitions than subscribers only the first n_partitions subscribers get one.
        for i, member_id in enumerate(islice(subscribers, min(n_members, n_partitions))):
            end = start + quota + (i < extra)
            result[member_id] += partitions[start:end]
            start = end
    return result
