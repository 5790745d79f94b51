"""Parity of the server-side assignors (state/consumer_group/uniform.py and range.py) and the native
engine's: Hypothesis-generated groups give the identical target assignment on both cores (members in
GroupSpec order, topics in TopicId order, partitions ascending), or the same PartitionAssignorError.

The groups cover both subscription types (so both uniform builders), static members, member maps in the
broker's HashMap order and in sorted order, current targets in HashMap order holding partitions of topics the
member no longer subscribes to, topics with no partitions, and subscriptions to a topic missing from the
metadata. The Kafka-named cases of tests/state/consumer_group/ run on both cores as well (their conftest.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group.group_spec import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    in_java_hash_map_order,
    subscription_type,
)
from state.consumer_group.topic_id import TopicId
from tests.native import cores
from tests.state.consumer_group.helpers import draw_current_targets

# Kafka's uniform assignor tests' ids, and ids whose signed halves order unlike their text.
TOPIC_POOL = [TopicId.from_string(s) for s in ("T1-A4s3VTwiI5CTbEp6POw", "T2-B4s3VTwiI5YHbPp6YUe",
                                                "T3-CU8fVTLCz5YMkLoDQsa", "T4-Tw9fVTLCz5HbPp6YQsa")]
TOPIC_POOL += [TopicId(-7, 3), TopicId(2**40, -5), TopicId(-2**62, 2**33)]
MISSING = TopicId(99, 99)  # never in the metadata
MEMBER_IDS = ["A", "B", "C", "a", "member-10", "member-2", "m\U0001f600", "m\ufb01", "z", "Z1", "x-y", "q"]


@st.composite
def groups(draw) -> tuple[GroupSpec, dict[TopicId, int]]:
    topics = draw(st.lists(st.sampled_from(TOPIC_POOL), min_size=1, max_size=5, unique=True))
    counts = {t: draw(st.integers(0, 14)) for t in topics}
    member_ids = draw(st.lists(st.sampled_from(MEMBER_IDS), max_size=10, unique=True))
    known = topics + ([MISSING] if draw(st.integers(0, 9)) == 0 else [])
    shared = draw(st.none() | st.lists(st.sampled_from(known), unique=True))
    subscriptions = {m: tuple(draw(st.permutations(shared)) if shared is not None
                              else draw(st.lists(st.sampled_from(known), unique=True))) for m in member_ids}
    current = draw_current_targets(draw, counts, member_ids)
    instances = draw(st.permutations(range(len(member_ids))))
    members = {}
    for m, place in zip(member_ids, instances):
        assignment = in_java_hash_map_order({t: frozenset(ps) for t, ps in current[m].items()}, TopicId.java_hash)
        members[m] = MemberSpec(subscriptions[m], assignment, draw(st.none() | st.just(f"instance-{place}")))
    if draw(st.booleans()):
        members = in_java_hash_map_order(members)  # the broker's member map
    kind = subscription_type([([str(t) for t in topics], "") for topics in subscriptions.values()])
    return GroupSpec(members, kind), counts


def outcome(assignor, group: GroupSpec, counts, **kafka_4_0):
    try:
        result = assignor.assign(group, counts, **kafka_4_0)
    except PartitionAssignorError as error:
        return "PartitionAssignorError", str(error)
    return [(m, [(tuple(t), tuple(ps)) for t, ps in topics.items()]) for m, topics in result.items()]


@pytest.mark.parametrize("name", ("uniform", "range"))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_and_counts=groups())
def test_every_group_gives_the_references_target_assignment(name, group_and_counts) -> None:
    group, counts = group_and_counts
    native = cores.server_assignor("native", name)
    assert outcome(native, group, counts) == outcome(cores.server_assignor("python", name), group, counts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_and_counts=groups())
def test_every_group_gives_kafka_4_0s_uniform_target_assignment(group_and_counts) -> None:
    # coordsim.kafka.version 4.0: the uniform assignor before KAFKA-18688 (state.consumer_group.SERVER_ASSIGNORS_4_0)
    group, counts = group_and_counts
    native, python = cores.server_assignor("native", "uniform"), cores.server_assignor("python", "uniform")
    assert outcome(native, group, counts, kafka_4_0=True) == outcome(python, group, counts, kafka_4_0=True)
