"""The classic group's states and the only moves between them.

Each state lists the states it may be entered from (Kafka's ClassicGroupState). Every transition is checked
against that table; an illegal one raises, because it means the simulator diverged from Kafka.

- Empty: no members. Offsets may still exist and are committed with generation -1 (admin, manual
  assignment) or expire after the retention counted from the moment the group became Empty.
- PreparingRebalance: the join phase. JoinGroups are parked until every known member rejoined or the
  rebalance timeout (or, from Empty, the initial rebalance delay) fires.
- CompletingRebalance: JoinGroup responses were sent; SyncGroups are parked until the leader's assignment
  is persisted.
- Stable: the generation's assignment is persisted and handed out; heartbeats and commits are accepted.
- Dead: the group was unloaded (coordinator moved) or deleted; nothing is accepted.
"""

from __future__ import annotations

from enum import Enum

CLASSIC, CONSUMER = "classic", "consumer"  # Group.GroupType: the `group_type` of a `group_states` row


class GroupState(str, Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(AssertionError):
    """The core tried a move Kafka forbids: a simulator bug, never a user error."""


def check_transition(current: GroupState, target: GroupState) -> None:
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"group cannot move from {current} to {target}")
