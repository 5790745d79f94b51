"""The "range" server-side assignor (Kafka's group-coordinator `RangeAssignor`), computing exactly Kafka's
target assignment.

Each topic is cut into contiguous ranges over its subscribers in one fixed member order: static members
first, by instance id, then the others by member id (Java String order). The first
`partitions % subscribers` members take one partition more. When every member subscribes to the same topics
and those have equal partition counts, a member gets the same partition numbers of every topic
(co-partitioning).

Unlike the classic client-side assignor's sticky variants, it never looks at the current target
assignment: its only stickiness is that a static member keeps its place in the order, so a restarted
static member (same instance id, new member id) gets its partitions back while membership and metadata
stay the same.
"""

from __future__ import annotations

from typing import Mapping

from state.consumer_group.group_spec import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    TopicId,
    canonical,
    partition_count,
)
from state.java_compat import java_string_sort_key

NAME = "range"


def _member_order(item: tuple[str, MemberSpec]) -> tuple[int, bytes]:
    member_id, member = item
    if member.instance_id is not None:
        return 0, java_string_sort_key(member.instance_id)
    return 1, java_string_sort_key(member_id)


def assign(group: GroupSpec, partition_counts: Mapping[TopicId, int]) -> GroupAssignment:
    if not group.members:
        return {}
    members = sorted(group.members.items(), key=_member_order)
    # A homogeneous group is assigned by the first sorted member's topics; they are everyone's.
    homogeneous_topics = members[0][1].subscribed_topic_ids
    homogeneous = group.subscription_type is SubscriptionType.HOMOGENEOUS

    def topics_of(member: MemberSpec):
        return homogeneous_topics if homogeneous else member.subscribed_topic_ids

    subscribers: dict[TopicId, int] = {}
    counts: dict[TopicId, int] = {}
    for _, member in members:
        for topic_id in topics_of(member):
            counts[topic_id] = partition_count(partition_counts, topic_id)
            subscribers[topic_id] = subscribers.get(topic_id, 0) + 1

    next_start = dict.fromkeys(counts, 0)
    extra_left = {topic_id: counts[topic_id] % subscribers[topic_id] for topic_id in counts}
    assignment: GroupAssignment = {}
    for member_id, member in members:
        ranges: dict[TopicId, range] = {}
        for topic_id in topics_of(member):
            quota = counts[topic_id] // subscribers[topic_id]
            if extra_left[topic_id] > 0:
                quota += 1
                extra_left[topic_id] -= 1
            start = next_start[topic_id]
            end = min(start + quota, counts[topic_id])
            next_start[topic_id] = end
            if start < end:
                ranges[topic_id] = range(start, end)
        assignment[member_id] = canonical(ranges)
    return {member_id: assignment[member_id] for member_id in group.members}
