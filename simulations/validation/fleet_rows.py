"""Invariants across groups, gathered one range of groups at a time and judged once every range is in:

- **a broker hosts only groups whose partition it leads.** A `__consumer_offsets` partition has one leader at
  a time, and every group of the partition is coordinated by it: a group is hosted by a broker from the
  `group_states` row that brings it into existence there (created, loaded, converted) to its next Dead row,
  every `group_states` row between carries that broker, and two groups of one partition are never hosted by
  two brokers at the same time. (A run without a `cluster:` has one implicit coordinator: nothing to check.)
- **`coordinator_load` counts the rows it summarizes**: per API its `requests`, per error name its
  `responses` and per record type its `records` add up, over brokers and windows, to the requests and
  responses of `responses` (but a client's failed connection, `NETWORK_EXCEPTION`, which no broker answered)
  and the records of `offsets`, `group_metadata` and `consumer_group_records` (a quiet run's every request
  and record: `repeat_count`).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from simulations.validation.group_rows import Finding
from simulations.views.quiet_runs import repeat_counts
from state.errors import NETWORK_EXCEPTION
from state.classic.group_state import GroupState

LEADERSHIP = "a broker hosts only groups whose partition it leads"
LOAD_TOTALS = "coordinator_load counts the rows it summarizes"
FOREVER = float("inf")


@dataclass
class Hosting:
    """Each group's hosting intervals by partition, as ranges of groups come in."""
    intervals: dict[int, list[tuple[int, float, int, str]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, tables: dict[str, pd.DataFrame]) -> None:
        states = tables["group_states"]
        if states.empty or states["coordinator_id"].isna().all():
            return
        states = states.astype({"out_seq": "int64"}).sort_values(["group_id", "out_seq"], kind="stable")
        for group, rows in states.groupby("group_id", sort=False):
            self._lives(group, rows)

    def _lives(self, group: str, rows: pd.DataFrame) -> None:
        broker = start = None
        for row in rows.itertuples(index=False):
            if pd.isna(row.from_state):
                broker, start = (None if pd.isna(row.coordinator_id) else int(row.coordinator_id)), int(row.ts)
            elif broker is not None and (pd.isna(row.coordinator_id) or int(row.coordinator_id) != broker):
                self.problems.append(f"{group} at {row.ts}: {row.from_state} -> {row.to_state} at broker "
                                     f"{row.coordinator_id}, hosted by broker {broker}")
            if row.to_state == GroupState.DEAD.value:
                if broker is not None:
                    self._interval(int(row.coordinator_partition), start, int(row.ts), broker, group)
                broker = None
        if broker is not None:
            self._interval(int(rows["coordinator_partition"].iloc[-1]), start, FOREVER, broker, group)

    def _interval(self, partition: int, start: int, end: float, broker: int, group: str) -> None:
        self.intervals.setdefault(partition, []).append((start, end, broker, group))

    def finding(self) -> Finding:
        problems = list(self.problems)
        for partition, intervals in sorted(self.intervals.items()):
            active: list[tuple[float, int, str]] = []  # (end, broker, group) of the lives still hosted
            for start, end, broker, group in sorted(intervals):
                while active and active[0][0] <= start:
                    heapq.heappop(active)
                other = next(((b, g) for _, b, g in active if b != broker), None)
                if other is not None:
                    problems.append(f"__consumer_offsets-{partition} at {start}: {group} hosted by broker {broker} "
                                    f"while {other[1]} is hosted by broker {other[0]}")
                heapq.heappush(active, (end, broker, group))
        return (len(problems), problems[0]) if problems else None


# (coordinator_load measure, table, its column naming the figure): what each measure counts.
_COUNTED = (("requests", "responses", "api"), ("responses", "responses", "error"),
            ("records", "offsets", None), ("records", "group_metadata", None),
            ("records", "consumer_group_records", "record_type"))
_RECORD_NAMES = {"offsets": "OffsetCommit", "group_metadata": "GroupMetadata"}


@dataclass
class LoadTotals:
    """`coordinator_load`'s totals against the rows' counts, as ranges of groups come in."""
    rows: Counter = field(default_factory=Counter)      # (measure, name) -> count in the group tables
    load: Counter | None = None                          # (measure, name) -> sum of coordinator_load values

    def add(self, tables: dict[str, pd.DataFrame]) -> None:
        for measure, table, column in _COUNTED:
            frame = tables[table]
            if table == "responses":  # a client's failed connection is no broker's request nor response
                frame = frame[frame["error"] != NETWORK_EXCEPTION]
            if frame.empty:
                continue
            names = frame[column] if column else pd.Series(_RECORD_NAMES[table], index=frame.index)
            counts = repeat_counts(frame) if "repeat_count" in frame else pd.Series(1, index=frame.index)
            for name, count in counts.groupby(names.to_numpy()).sum().items():
                self.rows[(measure, name)] += int(count)
        load = tables["coordinator_load"]
        if not load.empty:
            summed = load[load["measure"].isin(["requests", "responses", "records"])].groupby(
                ["measure", "name"])["value"].sum()
            self.load = (self.load or Counter()) + Counter({key: int(v) for key, v in summed.items()})

    def finding(self) -> Finding:
        if self.load is None and not self.rows:
            return None
        load = self.load or Counter()
        wrong = sorted(key for key in set(load) | set(self.rows) if load[key] != self.rows[key])
        if not wrong:
            return None
        measure, name = wrong[0]
        return len(wrong), (f"{measure} {name}: {load[wrong[0]]} in coordinator_load, "
                            f"{self.rows[wrong[0]]} in the rows")
