"""Who owns each partition of a group over time, as its coordinator vouches for it: the one definition the
report's and the dashboard's "Partition ownership over time" (simulations/reports/figures.ownership) draw.

- A Stable generation's assignment (a consumer group's: a group epoch every member reconciled to) holds from
  the group's `group_states` row to Stable at that generation until the group leaves Stable.
- A coordinator reload does not end it. An unload (a row to Dead, cause `coordinator_unload`) followed by a
  load back to Stable at the same generation (cause `coordinator_load`) creates no generation: the members
  keep their assignment, the load replays it unchanged from the group's records (a classic group's
  GroupMetadata record, a consumer group's current member assignments), and `describe` lists the same owners
  after the load as before the unload. The assignment holds through the outage too. An outage that ends
  otherwise (loaded in another state, at another generation, or not by the end of the run) ends it at the
  unload.
- The assignment of a generation is, for each member, its last `assignments` write of that generation by the
  time the group went Stable (a consumer group's members write again at the same member epoch while they
  revoke), among the rows of the group's current life (after its last Dead row other than an unload's: a
  group deleted and created again numbers its generations again).
- An owner is a member's group.instance.id when it has one, else its member id: a static member that
  restarts under a new member id keeps its partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from simulations.views.history import DEAD, LOAD, STABLE, UNAVAILABLE, shown_state
from simulations.views.run_tables import RunTables

Partition = tuple[str, int]


@dataclass(frozen=True)
class Holding:
    """One generation's assignment, held from `since` to `until` (epoch ms, `until` excluded)."""

    since: int
    until: int
    generation_id: int
    owners: dict[Partition, str]


def owner_names(assignments: pd.DataFrame) -> pd.Series:
    """Each `assignments` row's owner: its group.instance.id, else its member id."""
    return assignments["group_instance_id"].fillna(assignments["member_id"])


def holdings(run: RunTables, group_id: str, end: int) -> list[Holding]:
    """The group's Stable assignments in time order, each through the coordinator outages it outlived, the
    last one until `end` if the group is still Stable then."""
    assignments = run.group("assignments", group_id)
    held: list[Holding] = []
    opened = None  # (since, generation, owners) of the assignment held now
    unloaded = None  # the unload's time while `opened` waits for a load that confirms it
    life = -1  # the out_seq of the group's last Dead row but an unload's: its assignments come after it
    for row in run.group("group_states", group_id).itertuples(index=False):
        ts, generation, state = int(row.ts), int(row.generation_id), shown_state(row.to_state, row.cause)
        if unloaded is not None:
            if row.cause == LOAD and state == STABLE and generation == opened[1]:
                unloaded = None  # the load confirms the assignment, held throughout
                continue
            held.append(Holding(opened[0], unloaded, opened[1], opened[2]))
            opened = unloaded = None
        if opened is not None and (state != STABLE or generation != opened[1]):
            if state == UNAVAILABLE:
                unloaded = ts
                continue
            held.append(Holding(opened[0], ts, opened[1], opened[2]))
            opened = None
        if state == DEAD:
            life = int(row.out_seq)
        elif opened is None and state == STABLE:
            opened = (ts, generation, _assignment(assignments, life, ts, generation))
    if opened is not None:
        held.append(Holding(opened[0], end if unloaded is None else unloaded, opened[1], opened[2]))
    return [h for h in held if h.until > h.since]


def _assignment(assignments: pd.DataFrame, life: int, ts: int, generation: int) -> dict[Partition, str]:
    """The assignment of `generation` as it stood at `ts`: each member's last write of it since `life`."""
    rows = assignments[(assignments["generation_id"] == generation) & (assignments["assign_ts"] <= ts)
                       & (assignments["out_seq"] > life)]
    rows = rows[rows["assign_ts"] == rows.groupby("member_id")["assign_ts"].transform("max")]
    return {(topic, int(partition)): owner
            for topic, partition, owner in zip(rows["topic"], rows["partition"], owner_names(rows))}
