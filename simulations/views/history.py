"""What one group looked like at a simulated time TS, rebuilt from the tables by replaying its rows up to TS.

- state, generation and leader: the group's last `group_states` row at or before TS;
- committed offsets: its `offsets` rows written up to TS, in `out_seq` order (a tombstone removes one);
- members and their partitions, as a coordinator answers DescribeGroups (partitions only while Stable):
  Stable: the last GroupMetadata record (members with their Assignment bytes, static replacements included);
  CompletingRebalance: the members of the generation just created;
  Empty, Dead: none;
  PreparingRebalance: the tables hold no member list for this state, so it is rebuilt: the members before
  the rebalance, less those that left (LeaveGroup results) or were removed when it began (the
  transition's member count says how many; those missing from the next generation go, least recently
  heard from first), plus every member whose JoinGroup arrived by TS and was accepted. A member expired
  while the group is still preparing shows until the join phase ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from simulations.views.quiet_runs import expand_runs, last_repeat
from simulations.views.run_tables import RunTables
from state import consumer_protocol
from state.production import rule_offset

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"


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
    generation_id: int | None = None
    protocol_name: str | None = None
    coordinator_partition: int | None = None
    members: list[Member] = field(default_factory=list)
    # Committed offset of each (topic, partition).
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    # Each topic's production model at TS (the `log_end_offsets` table): (since ts, records/s, base offset).
    production: dict[str, tuple[int, float, int]] = field(default_factory=dict)

    def log_end_offset(self, topic: str) -> int | None:
        """A partition's log-end offset at TS, as the coordinator's model computes it (GroupRuntime.log_end_offset);
        None for a topic the run has no production model of (a replay of captured requests)."""
        if topic not in self.production:
            return None
        since, rate, base = self.production[topic]
        return rule_offset((rate, since, base), self.ts)

    @property
    def exists(self) -> bool:
        return self.state not in (None, DEAD)


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
    view.state = last["to_state"]
    view.generation_id = int(last["generation_id"])
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


def _directory(run: RunTables, group_id: str) -> dict[str, Member]:
    """Every member id the group's generations and records name, with its client id and host."""
    found: dict[str, Member] = {}
    for table in ("generations", "group_metadata"):
        for members in run.group(table, group_id)["members"].dropna():
            for struct in members:
                found.setdefault(struct["member_id"], _member(struct))
    return found


def _preparing_members(run: RunTables, group_id: str, ts: int, states: pd.DataFrame) -> list[Member]:
    entered = states.iloc[-1]
    before = states.iloc[-2] if len(states) > 1 else None
    if before is None or before["to_state"] in (EMPTY, DEAD):
        members: list[Member] = []
    elif before["to_state"] == STABLE:
        members = [_member(m) for m in _last_record(run, group_id, int(entered["ts"]))["members"]]
    else:
        members = _generation_members(run, group_id, int(before["generation_id"]))
    directory = _directory(run, group_id)
    responses = run.group("responses", group_id)
    responses = responses[(responses["request_ts"] >= entered["ts"]) & (responses["request_ts"] <= ts)]
    responses = responses.sort_values(["request_ts", "out_seq"], kind="stable")
    at_start = responses[responses["request_ts"] == entered["ts"]]
    members = _apply_requests(members, at_start, directory)
    if len(members) > entered["member_count"]:
        members = _drop_removed(run, group_id, members, int(entered["generation_id"]) + 1,
                                len(members) - int(entered["member_count"]), int(entered["ts"]))
    return _apply_requests(members, responses[responses["request_ts"] > entered["ts"]], directory)


def _apply_requests(members: list[Member], responses: pd.DataFrame, directory: dict[str, Member]) -> list[Member]:
    members = list(members)
    for row in responses.itertuples(index=False):
        if row.api == "JoinGroup" and row.error == "NONE" and row.member_id:
            if all(m.member_id != row.member_id for m in members):
                members.append(directory.get(row.member_id) or Member(row.member_id, row.group_instance_id,
                                                                      row.client_id, None))
        elif row.api == "LeaveGroup":
            for gone in (r for r in row.results if r["error"] == "NONE"):
                members = [m for m in members if not _same(m, gone)]
    return members


def _same(member: Member, identity: dict) -> bool:
    if identity.get("member_id"):
        return member.member_id == identity["member_id"]
    return identity.get("group_instance_id") is not None and member.group_instance_id == identity["group_instance_id"]


def _drop_removed(run: RunTables, group_id: str, members: list[Member], next_generation: int, count: int,
                  at: int) -> list[Member]:
    """Remove `count` members that the coordinator removed when the rebalance began (session or sync
    timeouts): members the next generation does not have, the least recently heard from first."""
    survivors = {m.member_id for m in _generation_members(run, group_id, next_generation)}
    responses = run.group("responses", group_id)
    responses = responses[responses["request_ts"] <= at]
    heard = responses.assign(last=last_repeat(responses, "request_ts", at)).groupby("member_id")["last"].max().to_dict()
    candidates = sorted((m for m in members if m.member_id not in survivors), key=lambda m: heard.get(m.member_id, -1))
    removed = {m.member_id for m in candidates[:count]}
    return [m for m in members if m.member_id not in removed]
