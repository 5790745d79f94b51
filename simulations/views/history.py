"""What one group looked like at a simulated time TS, rebuilt from the tables by replaying its rows up to TS.

- state, generation and leader: the group's last `group_states` row at or before TS; a Dead row caused by
  `coordinator_unload` is no Dead group but a coordinator outage: until the next `coordinator_load` the group's
  coordinator is not available (`GroupAt.coordinator_unavailable`);
- committed offsets: its `offsets` rows written up to TS, in `out_seq` order (a tombstone removes one);
- members and their partitions, as a coordinator answers DescribeGroups (partitions only while Stable):
  Stable: the last GroupMetadata record (members with their Assignment bytes, static replacements included);
  CompletingRebalance: the members of the generation just created;
  Empty, Dead: none;
  PreparingRebalance: the `members` table replayed up to TS (members join and leave within this state).

A consumer group (KIP-848: its last `group_states` row by TS says `group_type` consumer) is described as
ConsumerGroupDescribe answers, in every state: its members from the `members` table replayed up to TS, each with the partitions it
holds (its last `assignments` rows at its member epoch then, none when its last CurrentMemberAssignment
record holds nothing), and the assignor of its last target assignment. The members come in java.util.HashMap
order; Kafka keeps them in a TimelineHashMap, whose order this does not model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import json

import pandas as pd

from simulations.views.group_types import CONSUMER
from simulations.views.quiet_runs import expand_runs
from simulations.views.run_tables import RunTables
from state.classic import consumer_protocol
from state.java_compat import JavaHashMap
from state.offsets.production import rule_offset

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"
ASSIGNING, RECONCILING = "Assigning", "Reconciling"  # a consumer group's (KIP-848) other states
UNLOAD, LOAD = "coordinator_unload", "coordinator_load"  # the causes of a coordinator move's two rows
# Not a Kafka state: the time from a coordinator's unload of a group to the next load, which the tables record
# as Dead (the unloading coordinator forgets the group) though the group lives on in its records.
UNAVAILABLE = "coordinator unavailable"


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    # (topic, partition) in the Assignment's order; empty unless the group is Stable.
    partitions: tuple[tuple[str, int], ...] = ()


@dataclass
class GroupAt:
    group_id: str
    ts: int
    # None: the group had not been created by TS.
    state: str | None
    cause: str | None = None  # the cause of the `group_states` row that put it in `state`
    generation_id: int | None = None
    protocol_name: str | None = None
    coordinator_partition: int | None = None
    coordinator_id: int | None = None  # the broker leading that partition at TS (None: no cluster, no leader)
    members: list[Member] = field(default_factory=list)
    # Committed offset of each (topic, partition).
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    # Each topic's production model at TS (the `log_end_offsets` table): (since ts, records/s, base offset).
    production: dict[str, tuple[int, float, int]] = field(default_factory=dict)

    def log_end_offset(self, topic: str) -> int | None:
        """A partition's log-end offset at TS, as the coordinator's model computes it (ClusterImage.log_end_offset);
        None for a topic the run has no production model of (a replay of captured requests)."""
        if topic not in self.production:
            return None
        since, rate, base = self.production[topic]
        return rule_offset((rate, since, base), self.ts)

    @property
    def exists(self) -> bool:
        return self.state not in (None, DEAD)

    @property
    def coordinator_unavailable(self) -> bool:
        """Between an unload and the next load: no broker coordinates the group (its state: `shown_state`)."""
        return shown_state(self.state, self.cause) == UNAVAILABLE


def shown_state(state: str | None, cause: str | None) -> str | None:
    """A `group_states` row's state as every view shows it: Dead, except for an unload's Dead row, which
    starts a coordinator outage (UNAVAILABLE) that the group's next `group_states` row (its load) ends."""
    return UNAVAILABLE if state == DEAD and cause == UNLOAD else state


def group_at(run: RunTables, group_id: str, ts: int) -> GroupAt:
    states = run.group("group_states", group_id)
    states = states[states["ts"] <= ts]
    view = GroupAt(group_id, ts, None, coordinator_partition=coordinator_partition_of(run, group_id))
    view.offsets = committed_offsets(run, group_id, ts)
    production = run.group("log_end_offsets", group_id)
    for row in production[production["ts"] <= ts].itertuples(index=False):
        view.production[row.topic] = (int(row.ts), float(row.records_per_second), int(row.base_offset))
    if states.empty:
        return view
    last = states.iloc[-1]
    view.coordinator_id = None if pd.isna(last["coordinator_id"]) else int(last["coordinator_id"])
    view.state, view.cause = last["to_state"], last["cause"]
    view.generation_id = int(last["generation_id"])
    records = run.group("consumer_group_records", group_id)
    # The group's type at TS (a group id may change protocol online, both ways); a run written before
    # `group_states.group_type` existed had a consumer group from its first record on.
    consumer = last["group_type"] == CONSUMER if "group_type" in states else len(records) > 0
    if consumer:
        if view.exists:
            _describe_consumer_group(run, view, records[records["write_ts"] <= ts], states)
        return view
    if view.state == STABLE:
        record = _last_record(run, group_id, ts)
        view.protocol_name = record["protocol_name"]
        view.members = [_member(m, _assigned(m["assignment"])) for m in record["members"]]
    elif view.state == COMPLETING:
        view.members = _generation_members(run, group_id, view.generation_id)
    elif view.state == PREPARING:
        view.members = _preparing_members(run, group_id, ts, states)
    return view


def coordinator_partition_of(run: RunTables, group_id: str) -> int | None:
    for table in ("group_metadata", "offsets", "generations", "responses"):
        rows = run.group(table, group_id)["coordinator_partition"].dropna()
        if len(rows):
            return int(rows.iloc[0])
    return None


def committed_offsets(run: RunTables, group_id: str, ts: int) -> dict[tuple[str, int], int]:
    rows = run.group("offsets", group_id)
    rows = expand_runs("offsets", rows[rows["write_ts"] <= ts])
    # A quiet run is written when it ends, after records of later commits: time order, not table order.
    rows = rows[rows["write_ts"] <= ts].sort_values(["write_ts", "out_seq"], kind="stable")
    offsets: dict[tuple[str, int], int] = {}
    for row in rows.itertuples(index=False):
        key = (row.topic, int(row.partition))
        if pd.isna(row.offset):
            offsets.pop(key, None)
        else:
            offsets[key] = int(row.offset)
    return offsets


def _member(struct: dict, partitions: tuple[tuple[str, int], ...] = ()) -> Member:
    return Member(struct["member_id"], struct.get("group_instance_id"), struct.get("client_id"),
                  struct.get("client_host"), partitions)


def _assigned(blob: bytes | None) -> tuple[tuple[str, int], ...]:
    if not blob:
        return ()
    try:
        return tuple((tp.topic, tp.partition) for tp in consumer_protocol.decode_assignment(blob).partitions)
    except consumer_protocol.ConsumerProtocolError:
        return ()  # not a consumer-protocol group: DescribeGroups would show no partitions either


def _last_record(run: RunTables, group_id: str, ts: int):
    records = run.group("group_metadata", group_id)
    records = records[(records["write_ts"] <= ts) & ~records["tombstone"].astype(bool)]
    return records.iloc[-1]


def _generation_members(run: RunTables, group_id: str, generation_id: int) -> list[Member]:
    rows = run.group("generations", group_id)
    rows = rows[rows["generation_id"] == generation_id]
    return [_member(m) for m in rows.iloc[-1]["members"]] if len(rows) else []


def _preparing_members(run: RunTables, group_id: str, ts: int, states: pd.DataFrame) -> list[Member]:
    """The member map at TS, replayed from the `members` table into a HashMap as the coordinator fills its
    own, so the members come in the order DescribeGroups lists them. Only rows since the group was last Dead
    count (a load starts a new map), less the unload's removals that follow the Dead row."""
    rows = run.group("members", group_id)
    rows = rows[rows["ts"] <= ts]
    deaths = states.loc[states["to_state"] == DEAD, "out_seq"]
    if len(deaths):
        rows = rows[(rows["out_seq"] > deaths.iloc[-1]) & (rows["cause"] != UNLOAD)]
    members: JavaHashMap = JavaHashMap()
    for row in rows.sort_values("out_seq").itertuples(index=False):
        if row.change == "added":
            members[row.member_id] = Member(row.member_id, row.group_instance_id, row.client_id, row.client_host)
        else:
            del members[row.member_id]
    return members.values()


def _describe_consumer_group(run: RunTables, view: GroupAt, records: pd.DataFrame, states: pd.DataFrame) -> None:
    group_id, ts = view.group_id, view.ts
    generations = run.group("generations", group_id)
    assignors = generations.loc[(generations["join_complete_ts"] <= ts), "protocol_name"].dropna()
    view.protocol_name = assignors.iloc[-1] if len(assignors) else None
    current = records[records["record_type"] == "ConsumerGroupCurrentMemberAssignment"]
    latest = current.drop_duplicates("member_id", keep="last").set_index("member_id")["value"]
    assignments = run.group("assignments", group_id)
    assignments = assignments[assignments["assign_ts"] <= ts]
    view.members = [Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                           _held(assignments, m.member_id, latest.get(m.member_id)))
                    for m in _preparing_members(run, group_id, ts, states)]


def _held(assignments: pd.DataFrame, member_id: str, value: str | None) -> tuple[tuple[str, int], ...]:
    """The partitions a consumer group member holds: its last `assignments` rows (one write's, at one member
    epoch), unless its last CurrentMemberAssignment record holds none."""
    if value is None or pd.isna(value) or not json.loads(value)["assigned_partitions"]:
        return ()
    rows = assignments[assignments["member_id"] == member_id]
    if rows.empty:
        return ()
    last = rows.iloc[-1]
    rows = rows[(rows["assign_ts"] == last["assign_ts"]) & (rows["generation_id"] == last["generation_id"])]
    return tuple((row.topic, int(row.partition)) for row in rows.itertuples(index=False))
