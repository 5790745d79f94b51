"""RoundRobinAssignor ("roundrobin", RoundRobinAssignor.java): members in MemberInfo order on a circular iterator;
partitions by topic name (String order) then index; each partition goes to the next member, from the
iterator's position, that subscribes to its topic, and the iterator moves past it. The iterator is not
reset between topics.

Skipping non-subscribers one by one costs O(members) per partition with disjoint subscriptions, so the
next subscriber is found by binary search over the topic's subscriber positions on the ring instead; the
result is the same.
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import merge

from state.assignors.model import AssignorError, GroupAssignmentInput, TopicPartition
from state.java_compat import java_string_sort_key


def assign(inp: GroupAssignmentInput) -> dict[str, list[TopicPartition]]:
    if not inp.members:
        raise AssignorError("IllegalArgumentException: CircularIterator can only be used on non-empty lists")
    ring = [m.member_id for m in inp.member_info_order()]
    position = {member_id: i for i, member_id in enumerate(ring)}
    result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in inp.members}

    group_positions: list[list[int]] = []
    groups_by_topic: dict[str, list[int]] = {}
    for topics, members in inp.topic_groups.items():
        group_positions.append(sorted(position[m.member_id] for m in members))
        for topic in topics:
            groups_by_topic.setdefault(topic, []).append(len(group_positions) - 1)

    # Topics sharing the same set of subscribing groups share one position list.
    positions_cache: dict[tuple[int, ...], list[int] | None] = {}
    cursor = 0
    for topic in sorted(inp.partitions_per_topic, key=java_string_sort_key):
        key = tuple(groups_by_topic[topic])
        if key not in positions_cache:
            lists = [group_positions[g] for g in key]
            everyone = sum(len(p) for p in lists) == len(ring)
            positions_cache[key] = None if everyone else list(merge(*lists))
        positions = positions_cache[key]
        for p in range(inp.partitions_per_topic[topic]):
            if positions is not None:
                i = bisect_left(positions, cursor)
                cursor = positions[i] if i < len(positions) else positions[0]
            result[ring[cursor]].append(TopicPartition(topic, p))
            cursor = (cursor + 1) % len(ring)
    return result
