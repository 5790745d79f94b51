"""Group states and their legal transitions (ClassicGroupState), the `group_states` rows, and the coordinator
partition (GroupCoordinatorService.partitionFor). Ported from ClassicGroupTest's transition cases (`test*Transition`,
`testCanRebalanceWhen*`) and checked against ClassicGroupState's valid-previous-states table."""

from __future__ import annotations

import itertools

import pytest

from state.classic.group import ClassicGroup
from state.classic.group_state import VALID_PREVIOUS_STATES, GroupState, IllegalStateTransition, check_transition
from tests.state.conftest import java_hash, make_ctx

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")

E, P, C, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                 GroupState.STABLE, GroupState.DEAD)

# ClassicGroupState's static initializer, transcribed.
KAFKA_VALID_PREVIOUS = {
    E: {P},
    P: {S, C, E},
    C: {P},
    S: {C},
    D: {S, P, C, E, D},
}


def test_valid_previous_states_match_kafka():
    assert {k: set(v) for k, v in VALID_PREVIOUS_STATES.items()} == KAFKA_VALID_PREVIOUS


@pytest.mark.parametrize("current,target", list(itertools.product(GroupState, GroupState)))
def test_every_transition_is_checked(current, target):
    if current in KAFKA_VALID_PREVIOUS[target]:
        check_transition(current, target)
    else:
        with pytest.raises(IllegalStateTransition):
            check_transition(current, target)


def test_group_transition_records_previous_state_and_timestamp():
    group = ClassicGroup("group-id", created_ts=5)
    assert group.state == E and group.current_state_ts == 5
    group.transition_to(P, 17)
    assert (group.state, group.previous_state, group.current_state_ts) == (P, E, 17)
    with pytest.raises(IllegalStateTransition):
        group.transition_to(S, 18)
    assert group.state == P


@pytest.mark.parametrize("state,can", [(E, True), (P, False), (C, True), (S, True), (D, False)])
def test_can_rebalance(state, can):
    # testCanRebalanceWhenStable / ...CompletingRebalance / testCannotRebalanceWhen...
    group = ClassicGroup("group-id", created_ts=0)
    group.state = state
    assert group.can_rebalance() is can


def test_group_states_rows_follow_a_lifecycle(ctx):
    [member_id] = ctx.stable_group(1)
    ctx.leave(member_id)
    rows = ctx.rows("group_states")
    assert [(r["from_state"], r["to_state"], r["generation_id"], r["member_count"]) for r in rows] == [
        (None, "Empty", 0, 0),
        ("Empty", "PreparingRebalance", 0, 1),
        ("PreparingRebalance", "CompletingRebalance", 1, 1),
        ("CompletingRebalance", "Stable", 1, 1),
        ("Stable", "PreparingRebalance", 1, 0),
        ("PreparingRebalance", "Empty", 2, 0),
    ]
    assert [r["ts"] for r in rows] == [0, 0, 3000, 3000, 3000, 3000]
    assert rows[2]["leader_id"] == member_id and rows[-1]["leader_id"] is None


def test_every_recorded_transition_is_legal(ctx):
    ctx.static_members_join_and_rebalance()
    ctx.join(version=3)
    ctx.sleep(20_000)
    ctx.fault(fault="move", load_delay_ms=10)
    ctx.sleep(60_000)
    previous = None
    for row in ctx.rows("group_states"):
        to_state = GroupState(row["to_state"])
        if row["from_state"] is None:
            assert to_state in (E, S) and previous in (None, D)
        else:
            assert GroupState(row["from_state"]) == previous
            assert previous in KAFKA_VALID_PREVIOUS[to_state]
        previous = to_state


@pytest.mark.parametrize("group_id,hash_code,partition", [
    ("KafkaConsumerDemo", -2039247585, 35),
    ("consumerGroupId", -437965020, 20),
    ("test-group", 627841412, 12),
    ("my-group", -1906497762, 12),
    ("", 0, 0),
    ("group-id", 506313513, 13),
    ("groupId", 293428218, 18),
    ("polygenelubricants", -2**31, 0),   # Utils.abs(Integer.MIN_VALUE) == 0
])
def test_coordinator_partition(group_id, hash_code, partition):
    assert java_hash(group_id) == hash_code
    ctx = make_ctx(group_id=group_id)
    assert ctx.runtime.coordinator_partition == partition
    response = ctx.commit({("foo", 0): 1})
    assert response.coordinator_partition == partition
    assert {r["coordinator_partition"] for r in ctx.rows("offsets")} == {partition}


def test_coordinator_partition_follows_the_number_of_partitions():
    ctx = make_ctx(group_id="KafkaConsumerDemo", offsets_topic_num_partitions=7)
    assert ctx.runtime.coordinator_partition == 2039247585 % 7
