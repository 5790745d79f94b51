"""Kafka's UniformHomogeneousAssignmentBuilderTest (trunk), case by case; each test asserts Kafka's exact
expected target assignment."""

from __future__ import annotations

import random

import pytest

from state.config import CoordinatorConfig
from state.consumer_group import SERVER_ASSIGNORS, uniform
from state.consumer_group.heartbeat import HeartbeatContext
from state.consumer_group.group_spec import PartitionAssignorError
from state.consumer_group.topic_id import TopicId
from tests.state.consumer_group.helpers import (
    HOMOGENEOUS,
    TOPIC_1,
    TOPIC_2,
    TOPIC_3,
    assert_valid_and_balanced,
    expected,
    group,
    member,
    mk_assignment,
    mk_ordered_assignment,
)

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")


def check(members, partition_counts, want):
    spec = group(members, HOMOGENEOUS)
    computed = uniform.assign(spec, partition_counts)
    assert computed == expected(want)
    assert_valid_and_balanced(spec, computed)


def test_one_member_no_topic_subscription():
    assert uniform.assign(group({"A": member()}, HOMOGENEOUS), {TOPIC_1: 3}) == {}


def test_one_member_subscribed_to_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        uniform.assign(group({"A": member(TOPIC_2)}, HOMOGENEOUS), {TOPIC_1: 3})


def test_first_assignment_two_members_two_topics_no_member_racks():
    # HashSet order of the topics is topic3, topic1; A gives its extra slot back to B.
    check({"A": member(TOPIC_1, TOPIC_3), "B": member(TOPIC_1, TOPIC_3)}, {TOPIC_1: 3, TOPIC_3: 2},
          {"A": {TOPIC_3: [0, 1]}, "B": {TOPIC_1: [0, 1, 2]}})


def test_first_assignment_two_members_two_topics_no_member_racks_kafka_4_0():
    # Kafka 4.0.0's case (OptimizedUniformAssignmentBuilderTest, before KAFKA-18688): the extra slot stays
    # with A, the first member, which then takes topic1's partition 0.
    spec = group({"A": member(TOPIC_1, TOPIC_3), "B": member(TOPIC_1, TOPIC_3)}, HOMOGENEOUS)
    assert uniform.assign(spec, {TOPIC_1: 3, TOPIC_3: 2}, kafka_4_0=True) == expected(
        {"A": {TOPIC_1: [0], TOPIC_3: [0, 1]}, "B": {TOPIC_1: [1, 2]}})


def test_a_consumer_group_under_kafka_4_0_assigns_with_4_0s_uniform_assignor():
    config = CoordinatorConfig(coordsim_kafka_version="4.0")
    assert HeartbeatContext.from_config(config, None).assignors["uniform"].keywords == {"kafka_4_0": True}
    # The coordinator's wiring, whichever core the module's assignor cases run on.
    assert HeartbeatContext.from_config(CoordinatorConfig(), None).assignors["uniform"] is SERVER_ASSIGNORS["uniform"]


def test_first_assignment_num_members_greater_than_total_num_partitions():
    check({"A": member(TOPIC_3), "B": member(TOPIC_3), "C": member(TOPIC_3)}, {TOPIC_3: 2},
          {"A": {}, "B": {TOPIC_3: [0]}, "C": {TOPIC_3: [1]}})


def test_validity_and_balance_for_large_sample_set():
    rng = random.Random(848)
    topics = [TopicId(rng.getrandbits(63), rng.getrandbits(63)) for _ in range(100)]
    members = {f"member{i}": member(*topics) for i in range(1, 50)}
    spec = group(members, HOMOGENEOUS)
    assert_valid_and_balanced(spec, uniform.assign(spec, dict.fromkeys(topics, 3)))


def test_reassignment_for_two_members_two_topics_given_unbalanced_prev_assignment():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [0, 1]), (TOPIC_2, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [2]), (TOPIC_2, [2]))),
    }, {TOPIC_1: 3, TOPIC_2: 3},
        {"A": {TOPIC_1: [0, 1], TOPIC_2: [0]}, "B": {TOPIC_1: [2], TOPIC_2: [1, 2]}})


def test_reassignment_when_partitions_are_added_for_two_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [0, 2]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [1]), (TOPIC_2, [1, 2]))),
    }, {TOPIC_1: 6, TOPIC_2: 5},
        {"A": {TOPIC_1: [0, 2], TOPIC_2: [0, 3, 4]}, "B": {TOPIC_1: [1, 3, 4, 5], TOPIC_2: [1, 2]}})


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [0, 2]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_ordered_assignment((TOPIC_1, [1]), (TOPIC_2, [1, 2]))),
        "C": member(TOPIC_1, TOPIC_2),
    }, {TOPIC_1: 3, TOPIC_2: 3},
        {"A": {TOPIC_1: [0, 2]}, "B": {TOPIC_1: [1], TOPIC_2: [1]}, "C": {TOPIC_2: [0, 2]}})


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [0]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [1]), (TOPIC_2, [1]))),
    }, {TOPIC_1: 3, TOPIC_2: 3},
        {"A": {TOPIC_1: [0], TOPIC_2: [0, 2]}, "B": {TOPIC_1: [1, 2], TOPIC_2: [1]}})


def test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    check({
        "A": member(TOPIC_2, assignment=mk_assignment((TOPIC_1, [0]), (TOPIC_2, [0]))),
        "B": member(TOPIC_2, assignment=mk_assignment((TOPIC_1, [1]), (TOPIC_2, [1]))),
    }, {TOPIC_1: 2, TOPIC_2: 2},
        {"A": {TOPIC_2: [0]}, "B": {TOPIC_2: [1]}})
