"""Which of a run's rows are a consumer group's (KIP-848, `state/consumer_group`), and the consumer
protocol's reading of the invariants that `invariants` states for both protocols.

**Which rows.** A group id is one protocol for a life: a classic group may be replaced (Empty) by or
converted to a consumer group, and a consumer group replaced (Empty) by or downgraded to a classic group
(`group_converted`). A row is a consumer group's when its group's `group_type` was `consumer` when it was
written (simulations/views/group_types.py; a `group_states` row says its own).

**The records.** The rules here replay a group's `consumer_group_records` rows in output order, as a
coordinator loading them would (the last value of each key), and compare the other tables with them:

- one owner per partition at a time: no member's CurrentMemberAssignment takes a partition (assigned or
  pending revocation) that another member holds (Kafka's partition epochs refuse it);
- a Stable group at group epoch E has its target assignment written at E (TargetAssignmentMetadata), and
  every member is at member epoch E, nothing pending revocation, holding exactly its target (what
  ConsumerGroup.maybeUpdateGroupState calls reconciled);
- an accepted commit passes ConsumerGroup.validateOffsetCommit: a member epoch < 0 only to a group without
  members; otherwise the committing member exists and the commit's member epoch is its current one, or older
  (KIP-1251) with every committed partition held since that epoch or before (assigned or pending revocation
  at an assignment epoch no later than the commit's); anything else is STALE_MEMBER_EPOCH or
  UNKNOWN_MEMBER_ID in Kafka.
"""

from __future__ import annotations

import json

import pandas as pd

from simulations.validation.group_rows import Finding, first, history
from simulations.views.group_types import CONSUMER, row_group_types
from simulations.views.quiet_runs import repeat_counts

METADATA = "ConsumerGroupMetadata"
MEMBER = "ConsumerGroupMemberMetadata"
TARGET_METADATA = "ConsumerGroupTargetAssignmentMetadata"
TARGET_MEMBER = "ConsumerGroupTargetAssignmentMember"
CURRENT = "ConsumerGroupCurrentMemberAssignment"
RECORD_COLUMNS = ("record_type", "member_id", "tombstone", "value", "write_ts")
# CurrentMemberAssignment's `state` byte of a member with nothing to revoke or wait for.
MEMBER_STABLE = 0

Partition = tuple[str, int]  # (topic id, partition)


def split_protocols(tables: dict[str, pd.DataFrame]) -> tuple[dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """The tables' rows of classic groups, and those of consumer groups (see Which rows); a table without
    (group_id, out_seq) is in both as it is."""
    states = tables["group_states"]
    if not (states["group_type"] == CONSUMER).any():
        # No consumer group (a conversion writes the new group's rows in the same step): every row is classic.
        return dict(tables), {name: frame.iloc[0:0] if "group_id" in frame and "out_seq" in frame else frame
                              for name, frame in tables.items()}
    classic, consumer = {}, {}
    for name, frame in tables.items():
        if "group_id" not in frame or "out_seq" not in frame:
            classic[name] = consumer[name] = frame
            continue
        types = frame["group_type"] if name == "group_states" else row_group_types(frame, states)
        runs = repeat_counts(frame) > 1
        if name == "offsets" and runs.any():
            # A quiet run of commits is written when it ends, at the group's next change: it is placed at its
            # first commit (its write_ts), in the life it was committed in.
            types[runs] = row_group_types(frame[runs], states, on="write_ts", states_on="ts")
        mask = (types == CONSUMER).to_numpy(bool)
        classic[name], consumer[name] = frame[~mask], frame[mask]
    return classic, consumer


def group_epochs(records: pd.DataFrame) -> pd.DataFrame:
    """The group epochs the ConsumerGroupMetadata records persist, in the columns of `group_metadata` the
    invariants read (a tombstone: the group was converted to, or replaced by, a classic group)."""
    rows = records[records["record_type"] == METADATA]
    tombstone = rows["tombstone"].astype(bool)
    return pd.DataFrame({"group_id": rows["group_id"], "out_seq": rows["out_seq"], "write_ts": rows["write_ts"],
                         "tombstone": tombstone,
                         "generation_id": [None if dead else json.loads(value)["epoch"]
                                           for dead, value in zip(tombstone, rows["value"])]})


def _held(value: dict | None) -> dict[Partition, int]:
    """A CurrentMemberAssignment value's partitions, assigned or pending revocation, with their assignment
    epochs."""
    if value is None:
        return {}
    return {(topic, int(partition)): epoch
            for field in ("assigned_partitions", "partitions_pending_revocation")
            for topic, partitions in value[field].items() for partition, epoch in partitions.items()}


def _assigned(value: dict) -> set[Partition]:
    return {(topic, int(partition)) for topic, partitions in value["assigned_partitions"].items()
            for partition in partitions}


class _Group:
    """A consumer group as its records leave it, at one point of its history."""

    def __init__(self) -> None:
        self.group_epoch: int | None = None
        self.assignment_epoch: int | None = None
        self.members: set[str] = set()
        self.targets: dict[str, set[Partition]] = {}
        self.current: dict[str, dict] = {}  # member -> its CurrentMemberAssignment value
        self.owners: dict[Partition, str] = {}

    def replay(self, row) -> list[tuple[Partition, str]]:
        """Apply one record row; for a CurrentMemberAssignment, the partitions it gives its member that another
        member holds, with that member."""
        value = None if row.tombstone else json.loads(row.value)
        if row.record_type == METADATA:
            self.group_epoch = None if value is None else value["epoch"]
        elif row.record_type == MEMBER:
            (self.members.add if value is not None else self.members.discard)(row.member_id)
        elif row.record_type == TARGET_METADATA:
            self.assignment_epoch = -1 if value is None else value["assignment_epoch"]
        elif row.record_type == TARGET_MEMBER:
            self.targets[row.member_id] = {(topic, int(p)) for topic, partitions in value or () for p in partitions}
        elif row.record_type == CURRENT:
            held = _held(value)
            taken = [(partition, self.owners[partition]) for partition in held
                     if self.owners.get(partition, row.member_id) != row.member_id]
            for partition in _held(self.current.get(row.member_id)):
                if self.owners.get(partition) == row.member_id:
                    del self.owners[partition]
            self.owners.update(dict.fromkeys(held, row.member_id))
            if value is None:
                self.current.pop(row.member_id, None)  # it left: epoch -1, holding nothing
            else:
                self.current[row.member_id] = value
            return taken
        return []


def _replayed(tables: dict[str, pd.DataFrame], others: tuple[str, ...], columns: tuple[str, ...]):
    """(table, row, group, taken) for the record rows and the rows of the tables `others`, in each group's
    output order: `group` as the records so far leave it, `taken` what `_Group.replay` found for a record."""
    groups: dict[str, _Group] = {}
    for table, row in history(tables, ("consumer_group_records",) + others, RECORD_COLUMNS + columns):
        group = groups.setdefault(row.group_id, _Group())
        taken = group.replay(row) if table == "consumer_group_records" else []
        yield table, row, group, taken


def _topic_names(tables: dict[str, pd.DataFrame]) -> dict[tuple[str, str], str]:
    """(group, topic id) -> topic name. The records name topics by id, the other tables by name: a member's
    `assignments` rows of a write list what its CurrentMemberAssignment record of that write assigns, so an
    id and a name holding the same partitions there, alone to do so, are one topic."""
    rows = tables["assignments"]
    named: dict[tuple, dict[str, frozenset]] = {}
    for (group, member, ts, topic), partitions in rows.groupby(
            ["group_id", "member_id", "assign_ts", "topic"])["partition"]:
        named.setdefault((group, member, int(ts)), {})[topic] = frozenset(int(p) for p in partitions)
    records = tables["consumer_group_records"]
    records = records[(records["record_type"] == CURRENT) & ~records["tombstone"].astype(bool)]
    names = {}
    for row in records.itertuples(index=False):
        by_name = named.get((row.group_id, row.member_id, int(row.write_ts)))
        if by_name is None:
            continue
        by_id = {topic: frozenset(map(int, partitions))
                 for topic, partitions in json.loads(row.value)["assigned_partitions"].items()}
        for topic_id, partitions in by_id.items():
            matches = [name for name, held in by_name.items() if held == partitions]
            if len(matches) == 1 and list(by_id.values()).count(partitions) == 1:
                names[(row.group_id, topic_id)] = matches[0]
    return names


def one_owner(tables: dict[str, pd.DataFrame]) -> Finding:
    names = _topic_names(tables)
    problems = []
    for _, row, _, taken in _replayed(tables, (), ()):
        for (topic_id, partition), holder in taken:
            topic = names.get((row.group_id, topic_id), topic_id)
            problems.append((row.group_id, row.out_seq, f"{row.group_id} {topic}-{partition}: given to "
                             f"{row.member_id} at {row.write_ts} while {holder} holds it"))
    return first(problems)


def _reconciled(current: dict | None, epoch: int, target: set[Partition]) -> bool:
    """Whether a member is Stable at `epoch` holding its target and nothing pending revocation."""
    return (current is not None and current["member_epoch"] == epoch and current["state"] == MEMBER_STABLE
            and not current["partitions_pending_revocation"] and _assigned(current) == target)


def stable_at_target(tables: dict[str, pd.DataFrame]) -> Finding:
    problems = []
    for table, row, group, _ in _replayed(tables, ("group_states",), ("to_state", "generation_id", "ts")):
        if table != "group_states" or row.to_state != "Stable":
            continue
        epoch = int(row.generation_id)
        why = None
        if group.group_epoch != epoch or group.assignment_epoch != epoch:
            why = f"group epoch {group.group_epoch}, target assignment of epoch {group.assignment_epoch} written"
        unreconciled = [member for member in sorted(group.members) if not _reconciled(
            group.current.get(member), epoch, group.targets.get(member, set()))]
        if why is None and unreconciled:
            current = group.current.get(unreconciled[0]) or {}
            why = (f"member {unreconciled[0]} at member epoch {current.get('member_epoch')} not holding its "
                   f"target assignment alone")
        if why is not None:
            problems.append((row.group_id, row.out_seq, f"{row.group_id} Stable at group epoch {epoch} at "
                             f"{row.ts} with {why}"))
    return first(problems)


def _at_first_commit(offsets: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """`offsets` with each quiet run of commits (a classic client's, inside the consumer group: one row
    standing for several, written when the run ends) placed at its first commit: right after the last record
    written by then. Consumer-protocol clients are never elided (docs/consumer-protocol.md)."""
    runs = repeat_counts(offsets) > 1
    if not runs.any() or records.empty:
        return offsets
    firsts = offsets.loc[runs, ["group_id", "write_ts"]].astype({"write_ts": "int64"}).reset_index()
    written = records[["group_id", "write_ts", "out_seq"]].astype({"write_ts": "int64", "out_seq": "int64"})
    placed = pd.merge_asof(firsts.sort_values("write_ts"), written.sort_values("write_ts"), on="write_ts",
                           by="group_id").set_index("index")["out_seq"].dropna()
    placed_offsets = offsets.copy()
    placed_offsets.loc[placed.index, "out_seq"] = placed
    return placed_offsets


def commits_member_epoch(tables: dict[str, pd.DataFrame]) -> Finding:
    ids = {(group, name): topic_id for (group, topic_id), name in _topic_names(tables).items()}
    tables = {**tables, "offsets": _at_first_commit(tables["offsets"], tables["consumer_group_records"])}
    problems = []
    for table, row, group, _ in _replayed(tables, ("offsets",), ("offset", "topic", "partition", "generation_id",
                                                                  "member_id")):
        if table != "offsets" or pd.isna(row.offset):
            continue
        epoch = int(row.generation_id)
        current = group.current.get(row.member_id)
        if epoch < 0:
            why = f"the group has {len(group.members)} members" if group.members else None
        elif row.member_id not in group.members or current is None:
            why = f"{row.member_id} is not a member (UNKNOWN_MEMBER_ID)"
        elif epoch == current["member_epoch"]:
            why = None
        else:
            since = _held(current).get((ids.get((row.group_id, row.topic)), int(row.partition)))
            why = (None if epoch < current["member_epoch"] and since is not None and since <= epoch else
                   f"{row.member_id} is at member epoch {current['member_epoch']}, holding the partition since "
                   f"{'no epoch' if since is None else f'epoch {since}'} (STALE_MEMBER_EPOCH)")
        if why is not None:
            problems.append((row.group_id, row.out_seq, f"{row.group_id} {row.topic}-{row.partition} offset "
                             f"{row.offset} committed at member epoch {epoch}: {why}"))
    return first(problems)
