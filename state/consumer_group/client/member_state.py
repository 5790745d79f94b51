"""The client's view of its own membership, `ClientMemberState`: Kafka's `MemberState` of the consumer
(`clients/.../consumer/internals/MemberState.java`), the states a KIP-848 consumer (AsyncKafkaConsumer) moves
through and the table of states each one may be entered from. Kafka has a second `MemberState`, the group
coordinator's per-member state (`state.consumer_group.reconciliation.MemberState`: STABLE,
UNREVOKED_PARTITIONS, ...), which the client never sees; the client's takes its side's name here so that the
two cannot be confused.

* UNSUBSCRIBED: not subscribed (never, or after leaving); no heartbeats.
* JOINING: heartbeats at epoch 0 right away until a response gives it an epoch > 0.
* RECONCILING: a target assignment differs from what it owns; commit, callbacks, then apply it.
* ACKNOWLEDGING: reconciled; the next heartbeat (sent without waiting) tells the coordinator.
* STABLE: everything received is reconciled; heartbeats on the interval.
* FENCED: FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID; no heartbeats until onPartitionsLost completes, then JOINING.
* PREPARE_LEAVING: releasing its partitions (callbacks) before the leave heartbeat.
* LEAVING: the next heartbeat carries the leave epoch (-1, or -2 for a static member) and is sent at once.
* FATAL: an unrecoverable error; nothing more is sent; terminal.
* STALE: left because max.poll.interval.ms passed without a poll; no heartbeats until the next poll.
"""

from __future__ import annotations

import enum


class ClientMemberState(enum.Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    FATAL = "FATAL"
    STALE = "STALE"

    def can_handle_new_assignment(self) -> bool:
        """A member takes a new target only where it could start reconciling it (not while leaving)."""
        return self in PREVIOUS_VALID_STATES[ClientMemberState.RECONCILING]


_S = ClientMemberState
# For each state, the states it may be entered from (Kafka's MemberState.previousValidStates). Staying in the same
# state is always allowed.
PREVIOUS_VALID_STATES: dict[ClientMemberState, frozenset[ClientMemberState]] = {
    _S.STABLE: frozenset({_S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.RECONCILING: frozenset({_S.STABLE, _S.JOINING, _S.ACKNOWLEDGING, _S.RECONCILING}),
    _S.ACKNOWLEDGING: frozenset({_S.RECONCILING}),
    _S.FATAL: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING,
                         _S.LEAVING, _S.UNSUBSCRIBED}),
    _S.FENCED: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.PREPARE_LEAVING,
                          _S.LEAVING}),
    _S.JOINING: frozenset({_S.FENCED, _S.UNSUBSCRIBED, _S.STALE}),
    _S.PREPARE_LEAVING: frozenset({_S.JOINING, _S.STABLE, _S.RECONCILING, _S.ACKNOWLEDGING, _S.UNSUBSCRIBED}),
    _S.LEAVING: frozenset({_S.PREPARE_LEAVING}),
    _S.UNSUBSCRIBED: frozenset({_S.PREPARE_LEAVING, _S.LEAVING, _S.FENCED}),
    _S.STALE: frozenset({_S.LEAVING}),
}


class InvalidTransition(RuntimeError):
    """A move the table forbids: a bug in the state machine, as Kafka's IllegalStateException is."""


def check_transition(current: ClientMemberState, next_state: ClientMemberState) -> None:
    if current is not next_state and current not in PREVIOUS_VALID_STATES[next_state]:
        raise InvalidTransition(f"Invalid state transition from {current.name} to {next_state.name}")
