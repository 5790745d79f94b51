"""Kafka's UniformHeterogeneousAssignmentBuilderTest (trunk), case by case; each test asserts Kafka's exact
expected target assignment."""

from __future__ import annotations

import pytest

from state.consumer_group import uniform
from state.consumer_group.group_spec import PartitionAssignorError
from tests.state.consumer_group.helpers import (
    HETEROGENEOUS,
    TOPIC_1,
    TOPIC_2,
    TOPIC_3,
    TOPIC_4,
    expected,
    group,
    member,
    mk_assignment,
)

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")


def check(members, partition_counts, want):
    assert uniform.assign(group(members, HETEROGENEOUS), partition_counts) == expected(want)


def test_two_members_no_topic_subscription():
    assert uniform.assign(group({"A": member(), "B": member()}, HETEROGENEOUS), {TOPIC_1: 3}) == {}


def test_two_members_subscribed_to_nonexistent_topics():
    with pytest.raises(PartitionAssignorError):
        uniform.assign(group({"A": member(TOPIC_3), "B": member(TOPIC_2)}, HETEROGENEOUS), {TOPIC_1: 3})


def test_first_assignment_two_members_two_topics():
    check({"A": member(TOPIC_1, TOPIC_3), "B": member(TOPIC_3)}, {TOPIC_1: 3, TOPIC_3: 6},
          {"A": {TOPIC_1: [0, 1, 2], TOPIC_3: [4]}, "B": {TOPIC_3: [0, 1, 2, 3, 5]}})


def test_first_assignment_num_members_greater_than_total_num_partitions():
    check({"A": member(TOPIC_3), "B": member(TOPIC_3), "C": member(TOPIC_1)}, {TOPIC_1: 2, TOPIC_3: 1},
          {"A": {TOPIC_3: [0]}, "B": {}, "C": {TOPIC_1: [0, 1]}})


def test_reassignment_for_two_members_three_topics_given_unbalanced_prev_assignment():
    check({
        "A": member(TOPIC_1, assignment=mk_assignment((TOPIC_1, [0, 1, 2]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [3]), (TOPIC_2, [0]))),
        "C": member(TOPIC_1, TOPIC_2, TOPIC_3,
                    assignment=mk_assignment((TOPIC_1, [4, 5]), (TOPIC_2, [1, 2, 3]), (TOPIC_3, [0, 1, 2, 3]))),
    }, {TOPIC_1: 6, TOPIC_2: 4, TOPIC_3: 4}, {
        "A": {TOPIC_1: [0, 1, 2, 5]},
        "B": {TOPIC_1: [3], TOPIC_2: [0, 1, 2, 3]},
        "C": {TOPIC_1: [4], TOPIC_3: [0, 1, 2, 3]},
    })


def test_reassignment_when_partitions_are_added_for_two_members():
    check({
        "A": member(TOPIC_1, TOPIC_3, assignment=mk_assignment((TOPIC_1, [0, 1, 2, 3]), (TOPIC_3, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, TOPIC_3, TOPIC_4,
                    assignment=mk_assignment((TOPIC_2, [0, 1, 2]), (TOPIC_4, [0, 1, 2]))),
    }, {TOPIC_1: 6, TOPIC_2: 5, TOPIC_3: 3, TOPIC_4: 3}, {
        "A": {TOPIC_1: [0, 1, 2, 3, 4, 5], TOPIC_3: [0, 1, 2]},
        "B": {TOPIC_2: [0, 1, 2, 3, 4], TOPIC_4: [0, 1, 2]},
    })


def test_reassignment_when_one_member_added_and_partitions_added_two_members_two_topics():
    check({
        "A": member(TOPIC_1, assignment=mk_assignment((TOPIC_1, [0, 2]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [1]), (TOPIC_2, [1, 2]))),
        "C": member(TOPIC_1, TOPIC_2),
    }, {TOPIC_1: 6, TOPIC_2: 7}, {
        "A": {TOPIC_1: [0, 2, 3, 4, 5]},
        "B": {TOPIC_1: [1], TOPIC_2: [1, 2, 6]},
        "C": {TOPIC_2: [0, 3, 4, 5]},
    })


def test_reassignment_when_one_member_removed_after_initial_assignment_with_three_members_three_topics():
    check({
        "A": member(TOPIC_1, TOPIC_3, assignment=mk_assignment((TOPIC_1, [0, 1, 2]), (TOPIC_3, [0, 1]))),
        "B": member(TOPIC_2, assignment=mk_assignment((TOPIC_2, [3, 4, 5, 6]))),
    }, {TOPIC_1: 3, TOPIC_2: 8, TOPIC_3: 3}, {
        "A": {TOPIC_1: [0, 1, 2], TOPIC_3: [0, 1, 2]},
        "B": {TOPIC_2: [0, 1, 2, 3, 4, 5, 6, 7]},
    })


def test_reassignment_when_one_subscription_removed_after_initial_assignment_with_two_members_two_topics():
    check({
        "A": member(TOPIC_1, assignment=mk_assignment((TOPIC_1, [0, 2]), (TOPIC_2, [1, 3]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [1]), (TOPIC_2, [0, 2, 4]))),
    }, {TOPIC_1: 3, TOPIC_2: 5}, {
        "A": {TOPIC_1: [0, 1, 2]},
        "B": {TOPIC_2: [0, 1, 2, 3, 4]},
    })


def test_reassignment_when_topic_partitions_run_out_and_members_have_no_partitions():
    check({
        "A": member(TOPIC_1, TOPIC_2, TOPIC_3,
                    assignment=mk_assignment((TOPIC_1, [0, 1]), (TOPIC_2, [0, 1]), (TOPIC_3, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, TOPIC_3),
    }, {TOPIC_1: 2, TOPIC_2: 2, TOPIC_3: 2}, {
        "A": {TOPIC_2: [0], TOPIC_3: [0, 1]},
        "B": {TOPIC_1: [0, 1], TOPIC_2: [1]},
    })


def test_first_assignment_with_two_members_including_one_without_subscriptions():
    check({"A": member(TOPIC_1), "B": member()}, {TOPIC_1: 3}, {"A": {TOPIC_1: [0, 1, 2]}, "B": {}})
