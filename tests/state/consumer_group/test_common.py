"""Kafka's CommonAssignorTests (trunk), run for each assignor and path as Kafka's assignor tests run them:
testAssignmentReuse (an assignment fed back in comes out unchanged) and testReassignmentStickiness (fed
back in with the members in any order, it still comes out unchanged). Kafka's tests use random topic ids
and run each case with and without member racks; racks change nothing at this commit, ids are fixed here.
"""

from __future__ import annotations

from itertools import permutations

import pytest

from state.consumer_group import SERVER_ASSIGNORS
from state.consumer_group.group_spec import GroupSpec
from tests.state.consumer_group.helpers import HETEROGENEOUS, HOMOGENEOUS, TOPIC_1, TOPIC_2, TOPIC_3, member

COUNTS = {TOPIC_1: 2, TOPIC_2: 5, TOPIC_3: 7}
CASES = [("uniform", HOMOGENEOUS), ("uniform", HETEROGENEOUS), ("range", HOMOGENEOUS), ("range", HETEROGENEOUS)]


def first_assignment(assign, subscription_type):
    members = {m: member(TOPIC_1, TOPIC_2, TOPIC_3) for m in ("A", "B", "C")}
    return assign(GroupSpec(members, subscription_type), COUNTS)


@pytest.mark.parametrize("name, subscription_type", CASES)
def test_assignment_reuse(name, subscription_type):
    assign = SERVER_ASSIGNORS[name]
    first = first_assignment(assign, subscription_type)
    fed_back = {m: member(TOPIC_1, TOPIC_2, TOPIC_3, assignment=first[m]) for m in first}
    assert assign(GroupSpec(fed_back, subscription_type), COUNTS) == first


@pytest.mark.parametrize("name, subscription_type", CASES)
def test_reassignment_stickiness(name, subscription_type):
    assign = SERVER_ASSIGNORS[name]
    first = first_assignment(assign, subscription_type)
    for order in permutations("ABC"):
        fed_back = {m: member(TOPIC_1, TOPIC_2, TOPIC_3, assignment=first[m]) for m in order}
        assert assign(GroupSpec(fed_back, subscription_type), COUNTS) == first, order
