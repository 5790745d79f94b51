"""Kafka's group-coordinator RangeAssignorTest (trunk), case by case; each test asserts Kafka's exact
expected target assignment. The topic ids are random in Kafka's test; range does not depend on them."""

from __future__ import annotations

import pytest

from state.consumer_group import range as range_assignor
from state.consumer_group.group_spec import PartitionAssignorError
from tests.state.consumer_group.helpers import (
    HETEROGENEOUS,
    HOMOGENEOUS,
    TOPIC_1,
    TOPIC_2,
    TOPIC_3,
    expected,
    group,
    member,
    mk_assignment,
)

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")


def check(members, subscription_type, partition_counts, want):
    assert range_assignor.assign(group(members, subscription_type), partition_counts) == expected(want)


def test_one_member_no_topic():
    check({"A": member()}, HOMOGENEOUS, {}, {"A": {}})


def test_one_member_subscribed_to_non_existent_topic():
    with pytest.raises(PartitionAssignorError):
        range_assignor.assign(group({"A": member(TOPIC_2)}, HOMOGENEOUS), {TOPIC_1: 3})


def test_first_assignment_two_members_two_topics_same_subscriptions():
    check({"A": member(TOPIC_1, TOPIC_3), "B": member(TOPIC_1, TOPIC_3)}, HOMOGENEOUS, {TOPIC_1: 3, TOPIC_3: 2},
          {"A": {TOPIC_1: [0, 1], TOPIC_3: [0]}, "B": {TOPIC_1: [2], TOPIC_3: [1]}})


def test_first_assignment_three_members_three_topics_different_subscriptions():
    check({"A": member(TOPIC_1, TOPIC_2), "B": member(TOPIC_3), "C": member(TOPIC_2, TOPIC_3)}, HETEROGENEOUS,
          {TOPIC_1: 3, TOPIC_2: 3, TOPIC_3: 2},
          {"A": {TOPIC_1: [0, 1, 2], TOPIC_2: [0, 1]}, "B": {TOPIC_3: [0]}, "C": {TOPIC_2: [2], TOPIC_3: [1]}})


def test_first_assignment_num_members_greater_than_num_partitions():
    both = member(TOPIC_1, TOPIC_3)
    check({"A": both, "B": both, "C": both}, HOMOGENEOUS, {TOPIC_1: 3, TOPIC_3: 2},
          {"A": {TOPIC_1: [0], TOPIC_3: [0]}, "B": {TOPIC_1: [1], TOPIC_3: [1]}, "C": {TOPIC_1: [2]}})


def restart_member_a(members, counts):
    """The assignment before and after static member A restarts as "memberA1" with the same instance id."""
    initial = range_assignor.assign(group(members, HOMOGENEOUS), counts)
    del members["A"]
    members["memberA1"] = member(TOPIC_1, instance="instanceA")
    again = range_assignor.assign(group(members, HOMOGENEOUS), counts)
    assert again["memberA1"] == initial["A"]
    return initial, again


def test_static_membership():
    members = {"A": member(TOPIC_1, instance="instanceA"), "B": member(TOPIC_1, instance="instanceB")}
    initial, again = restart_member_a(members, {TOPIC_1: 3})
    assert again["B"] == initial["B"]


def test_mixed_static_membership():
    members = {"A": member(TOPIC_1, instance="instanceA"), "C": member(TOPIC_1, instance="instanceC"),
               "B": member(TOPIC_1)}
    initial, again = restart_member_a(members, {TOPIC_1: 5})
    assert again["B"] == initial["B"]
    assert again["C"] == initial["C"]


def test_reassignment_num_members_greater_than_num_partitions_when_one_member_added():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [0]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [1]), (TOPIC_2, [1]))),
        "C": member(TOPIC_1, TOPIC_2),
    }, HOMOGENEOUS, {TOPIC_1: 2, TOPIC_2: 2},
        {"A": {TOPIC_1: [0], TOPIC_2: [0]}, "B": {TOPIC_1: [1], TOPIC_2: [1]}, "C": {}})


def test_reassignment_when_one_partition_added_for_two_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [0, 1]), (TOPIC_2, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [2]), (TOPIC_2, [2]))),
    }, HOMOGENEOUS, {TOPIC_1: 4, TOPIC_2: 4},
        {"A": {TOPIC_1: [0, 1], TOPIC_2: [0, 1]}, "B": {TOPIC_1: [2, 3], TOPIC_2: [2, 3]}})


def test_reassignment_when_one_member_added_after_initial_assignment_with_two_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [0, 1]), (TOPIC_2, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [2]), (TOPIC_2, [2]))),
        "C": member(TOPIC_1, TOPIC_2),
    }, HOMOGENEOUS, {TOPIC_1: 3, TOPIC_2: 3},
        {"A": {TOPIC_1: [0], TOPIC_2: [0]}, "B": {TOPIC_1: [1], TOPIC_2: [1]}, "C": {TOPIC_1: [2], TOPIC_2: [2]}})


def test_reassignment_when_one_member_added_and_one_partition_after_initial_assignment_with_two_members_two_topics():
    check({
        "A": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [0, 1]), (TOPIC_2, [0, 1]))),
        "B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [2]), (TOPIC_2, [2]))),
        "C": member(TOPIC_1),
    }, HETEROGENEOUS, {TOPIC_1: 4, TOPIC_2: 3},
        {"A": {TOPIC_1: [0, 1], TOPIC_2: [0, 1]}, "B": {TOPIC_1: [2], TOPIC_2: [2]}, "C": {TOPIC_1: [3]}})


def test_reassignment_when_one_member_removed_after_initial_assignment_with_two_members_two_topics():
    check({"B": member(TOPIC_1, TOPIC_2, assignment=mk_assignment((TOPIC_1, [2]), (TOPIC_2, [2])))},
          HOMOGENEOUS, {TOPIC_1: 3, TOPIC_2: 3}, {"B": {TOPIC_1: [0, 1, 2], TOPIC_2: [0, 1, 2]}})


def test_reassignment_when_multiple_subscriptions_removed_after_initial_assignment_with_three_members_two_topics():
    check({
        "A": member(TOPIC_1, assignment=mk_assignment((TOPIC_1, [0, 1, 2]), (TOPIC_2, [0]))),
        "B": member(TOPIC_1, TOPIC_2, TOPIC_3, assignment=mk_assignment((TOPIC_2, [1]))),
        "C": member(TOPIC_2, assignment=mk_assignment((TOPIC_2, [2]), (TOPIC_3, [0, 1]))),
    }, HETEROGENEOUS, {TOPIC_1: 3, TOPIC_2: 3, TOPIC_3: 2},
        {"A": {TOPIC_1: [0, 1]}, "B": {TOPIC_1: [2], TOPIC_2: [0, 1], TOPIC_3: [0, 1]}, "C": {TOPIC_2: [2]}})
