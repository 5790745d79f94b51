"""The client's ClientMemberState table (Kafka's clients/.../internals/ClientMemberState.java)."""

from __future__ import annotations

import pytest

from state.consumer_group.client.member_state import InvalidTransition, ClientMemberState, check_transition

S = ClientMemberState


@pytest.mark.parametrize("current, next_state", [
    (S.UNSUBSCRIBED, S.JOINING), (S.JOINING, S.RECONCILING), (S.JOINING, S.STABLE), (S.RECONCILING, S.ACKNOWLEDGING),
    (S.ACKNOWLEDGING, S.STABLE), (S.ACKNOWLEDGING, S.RECONCILING), (S.STABLE, S.FENCED), (S.FENCED, S.JOINING),
    (S.STABLE, S.PREPARE_LEAVING), (S.PREPARE_LEAVING, S.LEAVING), (S.LEAVING, S.UNSUBSCRIBED), (S.LEAVING, S.STALE),
    (S.STALE, S.JOINING), (S.UNSUBSCRIBED, S.FATAL), (S.FATAL, S.FATAL),
])
def test_allowed_transitions(current, next_state):
    check_transition(current, next_state)


@pytest.mark.parametrize("current, next_state", [
    (S.UNSUBSCRIBED, S.STABLE), (S.STABLE, S.ACKNOWLEDGING), (S.FATAL, S.JOINING), (S.STALE, S.FENCED),
    (S.STALE, S.FATAL), (S.FENCED, S.FATAL), (S.JOINING, S.LEAVING), (S.PREPARE_LEAVING, S.STALE),
])
def test_forbidden_transitions(current, next_state):
    with pytest.raises(InvalidTransition, match=f"from {current.name} to {next_state.name}"):
        check_transition(current, next_state)


def test_can_handle_new_assignment_only_where_reconciling_may_start():
    # ClientMemberState.canHandleNewAssignment
    assert {s for s in S if s.can_handle_new_assignment()} == {S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING}
