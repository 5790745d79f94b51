"""Builders shaped like the helpers of Kafka's group-coordinator tests (AssignmentTestUtil, the assignor
tests' fixtures), so that ported cases read like their originals."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from hypothesis import strategies as st

from state.consumer_group.group_spec import (
    GroupAssignment,
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    canonical,
    in_java_hash_map_order,
)
from state.consumer_group.topic_id import TopicId
from state.java_compat import java_string_sort_key

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS

# The fixed ids of Kafka's uniform assignor tests; their HashSet buckets (of 16) are 10, 1, 9 and 5.
TOPIC_1 = TopicId.from_string("T1-A4s3VTwiI5CTbEp6POw")
TOPIC_2 = TopicId.from_string("T2-B4s3VTwiI5YHbPp6YUe")
TOPIC_3 = TopicId.from_string("T3-CU8fVTLCz5YMkLoDQsa")
TOPIC_4 = TopicId.from_string("T4-Tw9fVTLCz5HbPp6YQsa")


def mk_assignment(*topics: tuple[TopicId, Iterable[int]]) -> dict[TopicId, frozenset[int]]:
    """mkAssignment: a java.util.HashMap of topic -> HashSet of partitions."""
    return in_java_hash_map_order({topic_id: frozenset(ps) for topic_id, ps in topics}, TopicId.java_hash)


def mk_ordered_assignment(*topics: tuple[TopicId, Iterable[int]]) -> dict[TopicId, frozenset[int]]:
    """mkOrderedAssignment: a LinkedHashMap, iterated in the order written."""
    return {topic_id: frozenset(ps) for topic_id, ps in topics}


def member(*topics: TopicId, assignment: Mapping[TopicId, Iterable[int]] | None = None,
           instance: str | None = None) -> MemberSpec:
    return MemberSpec(tuple(topics), assignment or {}, instance)


def tree_map(members: Mapping[str, MemberSpec]) -> dict[str, MemberSpec]:
    """The tests' TreeMap of members: member ids in Java String order."""
    return {m: members[m] for m in sorted(members, key=java_string_sort_key)}


def group(members: Mapping[str, MemberSpec], subscription_type: SubscriptionType) -> GroupSpec:
    return GroupSpec(tree_map(members), subscription_type)


def expected(assignment: Mapping[str, Mapping[TopicId, Iterable[int]]]) -> GroupAssignment:
    return {m: canonical(topics) for m, topics in assignment.items()}


def assert_valid_and_balanced(spec: GroupSpec, computed: GroupAssignment) -> None:
    """checkValidityAndBalance: members get only topics they subscribe to, no partition twice, and member
    sizes within one of each other."""
    seen: set[tuple[TopicId, int]] = set()
    for member_id, topics in computed.items():
        assert set(topics) <= set(spec.members[member_id].subscribed_topic_ids), member_id
        for topic_id, partitions in topics.items():
            for p in partitions:
                assert (topic_id, p) not in seen, f"{topic_id}-{p} assigned twice"
                seen.add((topic_id, p))
    sizes = [sum(map(len, topics.values())) for topics in computed.values()]
    assert not sizes or max(sizes) - min(sizes) <= 1, sizes


def draw_current_targets(draw: Callable, counts: Mapping[TopicId, int],
                         member_ids: Sequence[str]) -> dict[str, dict[TopicId, list[int]]]:
    """For Hypothesis strategies: a valid current target assignment, each partition with at most one owner,
    not necessarily a subscriber (a member may have stopped subscribing since)."""
    current: dict[str, dict[TopicId, list[int]]] = {m: {} for m in member_ids}
    for topic_id, count in counts.items():
        for partition in range(count):
            owner = draw(st.sampled_from([None, *member_ids]))
            if owner is not None:
                current[owner].setdefault(topic_id, []).append(partition)
    return current
