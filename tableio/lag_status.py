"""Burrow-style consumer lag status: each committed partition and each group judged OK, WARN, STOP, STALL or
REWIND (groups: OK, WARN, ERR) at a simulated time, from the `offsets` table, by LinkedIn Burrow's rules.
Both engines derive their `lag_status` table with it once a run has ended (`lag_status_rows`, and
`lag_status_arrow_rows` for the Spark engine's compaction, one range of groups at a time); the views and
reports evaluate it at any time (`LagHistory`). It is a monitoring tool's rules over written rows, not the
coordinator's protocol, so it sits with the table code below both engines rather than in `state/`.

Facts carried over from Burrow (core/internal/storage/inmemory.go and core/internal/evaluator/caching.go):
- storage keeps, per group and partition, a window of the last `intervals` commits (default 10), each with
  its offset, its commit timestamp and its lag when stored: the broker's log-end offset minus the offset,
  never below zero. A commit arriving less than `min-distance` after the previous stored one replaces it
  and keeps the earlier timestamp (default 0 s: off). A commit with no known log-end offset is dropped, an
  offset tombstone is ignored, a group tombstone deletes the group, and a group with no commit for
  `expire-group` (7 days) is gone (NOTFOUND);
- the broker's log-end offsets are sampled every `offset-refresh` (10 s); the last `intervals` samples are
  kept, and the current lag is the latest sample minus the last committed offset;
- the rules, in order, for a partition whose current lag exceeds `allowed-lag` (otherwise it is OK):
  STOP when the time since the last commit is greater than the window's span (last minus first commit
  timestamp), unless a recent broker sample was at or below the last committed offset; REWIND when an offset
  went backwards and no later commit reached the offset before the drop; then, only if no commit in the
  window had a lag at or below `allowed-lag`: STALL when every commit has the same offset, WARN when no
  commit's lag is smaller than the one before it; else OK;
- a partition whose window is filled below `minimum-complete` is OK; a group's status is its worst
  partition's, with STOP, STALL and REWIND reported as ERR; `complete` is the share of its partitions with
  a full window, and `maxlag` the partition with the highest current lag.

Where a simulated run differs, and why:
- the brokers' log-end offsets come from the run's production model (the `log_end_offsets` table), exact at
  any time from the topic's first production rate on. Given commits alone (rows of another source), they
  are known only from the commits' `log_end_offset`: between two commits interpolated linearly, after the
  last extrapolated at the partition's average rate since the first, a single commit's value held, none
  before the first commit. Burrow's samples are read at multiples of `offset-refresh` on the simulated
  clock (Burrow's own phase is whenever it started);
- times are compared in milliseconds (Burrow compares the current time in whole seconds);
- partitions whose commits carry no log-end offset (a replay of captured requests has no production model)
  get no status rather than an invented one (Burrow would not list them); a group with no other partition
  then has no status either.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

from state.offsets.production import rule_offset
from state.quiet_run import OFFSETS_RUN_COLUMNS, Run
from tableio.commit_log import CommitLog, cell

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

PARTITION_STATUSES = ("OK", "WARN", "STOP", "STALL", "REWIND")
GROUP_STATUSES = ("OK", "WARN", "ERR")
# Burrow's StatusConstant order, worst last; a group reports anything above WARN as ERR.
SEVERITY = {"OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}


class LagSettingsError(ValueError):
    """A Burrow setting out of its range."""


@dataclass(frozen=True)
class Settings:
    """Burrow's storage and evaluator settings, with Burrow's defaults (durations in ms)."""

    intervals: int = 10
    min_distance_ms: int = 0
    allowed_lag: int = 0
    minimum_complete: float = 0.0
    offset_refresh_ms: int = 10_000
    expire_group_ms: int = 604_800_000

    def __post_init__(self) -> None:
        if self.intervals < 1:
            raise LagSettingsError(f"intervals must be at least 1, got {self.intervals}")
        if self.min_distance_ms < 0 or self.allowed_lag < 0:
            raise LagSettingsError("min-distance and allowed-lag cannot be negative")
        if not 0.0 <= self.minimum_complete <= 1.0:
            raise LagSettingsError(f"minimum-complete is a fraction from 0 to 1, got {self.minimum_complete}")
        if self.offset_refresh_ms < 1 or self.expire_group_ms < 1:
            raise LagSettingsError("offset-refresh and expire-group must be positive")


# A value, never changed once built; not frozen=True, whose per-field object.__setattr__ was a quarter of a
# window's cost (as for state.events' classes).
@dataclass(slots=True, unsafe_hash=True)
class Commit:
    """One stored commit of a window: Burrow's ConsumerOffset."""

    order: int
    offset: int
    ts: int
    lag: int | None


# -- the rules, over a window of commits (oldest first) --------------------------------------------------

def lag_always_not_zero(window: list[Commit], allowed_lag: int) -> bool:
    """Rule 1: no commit of the window had a lag within `allowed_lag` (a window with such a commit is OK)."""
    return not any(c.lag is not None and c.lag <= allowed_lag for c in window)


def rewind_index(window: list[Commit]) -> int:
    """Rule 2: the index of the first commit whose offset is below the one before it, or -1."""
    return next((i for i in range(1, len(window)) if window[i].offset < window[i - 1].offset), -1)


def rewind_recovered(window: list[Commit], index: int) -> bool:
    """Rule 2, second part: a commit from the rewind on reached the offset committed just before it."""
    return any(c.offset >= window[index - 1].offset for c in window[index:])


def offsets_stopped(window: list[Commit], now: int) -> bool:
    """Rule 3: longer since the last commit than the window spans."""
    return now - window[-1].ts > window[-1].ts - window[0].ts


def offsets_stalled(window: list[Commit]) -> bool:
    """Rule 4: every commit of the window has the same offset."""
    return all(c.offset == window[0].offset for c in window)


def lag_not_decreasing(window: list[Commit]) -> bool:
    """Rule 5: no commit's lag is below the previous known lag (commits without a lag are skipped)."""
    lags = [c.lag for c in window if c.lag is not None]
    return all(b >= a for a, b in zip(lags, lags[1:]))


def recent_lag_zero(window: list[Commit], broker_offsets: list[int]) -> bool:
    """A recent broker sample was at or below the last committed offset: the consumer was caught up lately."""
    return any(b <= window[-1].offset for b in broker_offsets)


def partition_status(window: list[Commit], broker_offsets: list[int], current_lag: int, now: int,
                     allowed_lag: int = 0) -> str:
    """The status of a non-empty window at time `now` (ms), Burrow's calculatePartitionStatus."""
    if current_lag <= allowed_lag:
        return "OK"
    if offsets_stopped(window, now) and not recent_lag_zero(window, broker_offsets):
        return "STOP"
    index = rewind_index(window)
    if index > 0 and not rewind_recovered(window, index):
        return "REWIND"
    if lag_always_not_zero(window, allowed_lag):
        if offsets_stalled(window):
            return "STALL"
        if lag_not_decreasing(window):
            return "WARN"
    return "OK"


def group_status(statuses: list[str]) -> str:
    """The worst partition status, STOP, STALL and REWIND counting as ERR."""
    worst = max((SEVERITY[s] for s in statuses), default=SEVERITY["OK"])
    return "ERR" if worst > SEVERITY["ERR"] else ("WARN" if worst == SEVERITY["WARN"] else "OK")


# -- a run's commits, evaluated at any time ---------------------------------------------------------------

@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    partition: int
    status: str | None  # None: no log-end offset, so no status
    window: tuple[Commit, ...]
    window_size: int
    current_lag: int | None

    @property
    def complete(self) -> bool:
        return len(self.window) == self.window_size


@dataclass(frozen=True)
class GroupStatus:
    group_id: str
    at: int
    status: str | None  # None: no partition has a status
    partitions: tuple[PartitionStatus, ...]

    @property
    def complete(self) -> float:
        """Burrow's `complete`: the share of partitions whose window is full."""
        return sum(p.complete for p in self.partitions) / len(self.partitions)

    @property
    def total_lag(self) -> int:
        return sum(p.current_lag or 0 for p in self.partitions)

    @property
    def maxlag(self) -> PartitionStatus | None:
        """The partition with the highest current lag (the first in topic, partition order on a tie)."""
        rated = [p for p in self.partitions if p.current_lag is not None]
        return max(rated, key=lambda p: p.current_lag) if rated else None


@dataclass
class _Partition:
    """A partition's commits (Burrow stores those with a log-end offset) and the lag each stored commit was
    stored with, by commit index (computed when a window first needs it)."""

    commits: CommitLog = field(default_factory=CommitLog)
    lag: dict[int, int] = field(default_factory=dict)
    # The topic's production model, (since ts, records/s, base offset) in time order (the `log_end_offsets`
    # table), where the run has one: the broker's log-end offsets are then known exactly, at any time.
    model: list[tuple[int, float, int]] | None = None


COMMIT_COLUMNS = ("group_id", "topic", "partition", "out_seq", "write_ts", "commit_ts", "offset", "log_end_offset",
                  *OFFSETS_RUN_COLUMNS)
DELETION_COLUMNS = ("group_id", "write_ts", "out_seq", "tombstone")
PRODUCTION_COLUMNS = ("group_id", "ts", "topic", "records_per_second", "base_offset")
# What the lag status reads of each table it is derived from.
INPUT_COLUMNS = {"offsets": COMMIT_COLUMNS, "log_end_offsets": PRODUCTION_COLUMNS, "group_metadata": DELETION_COLUMNS}


class LagHistory:
    """Every group's commits, to evaluate at any time. `commits`: offsets rows (dicts with COMMIT_COLUMNS;
    tombstones are skipped); `deletions`: (group_id, write_ts, out_seq) of the group tombstones; `production`:
    `log_end_offsets` rows (PRODUCTION_COLUMNS), without which log-end offsets come from the commits alone.
    `until`: the history is evaluated at that time only (a run's end), so a partition's commits no window can
    hold then are not read (`_needed`)."""

    def __init__(self, commits: Iterable[Mapping], deletions: Iterable[tuple[str, int, int]] = (),
                 settings: Settings = Settings(), production: Iterable[Mapping] = (), until: int | None = None):
        self.settings = settings
        models: dict[tuple[str, str], list[tuple[int, float, int]]] = {}
        for r in sorted(production, key=itemgetter("group_id", "ts")):
            models.setdefault((r["group_id"], r["topic"]), []).append(
                (r["ts"], r["records_per_second"], r["base_offset"]))
        by_partition: dict[tuple[str, str, int], list[Mapping]] = {}
        for r in sorted((r for r in commits if r["offset"] is not None), key=itemgetter("group_id", "out_seq")):
            key = (r["group_id"], r["topic"], r["partition"])
            rows = by_partition.get(key)
            if rows is None:
                rows = by_partition[key] = []
            rows.append(r)
        self._groups: dict[str, dict[tuple[str, int], _Partition]] = {}
        for (group_id, topic, partition), rows in by_partition.items():
            part = _Partition(model=models.get((group_id, topic)))
            self._groups.setdefault(group_id, {})[(topic, partition)] = part
            if until is not None and part.model and settings.min_distance_ms == 0:
                rows = self._needed(rows, until)
            for r in rows:
                part.commits.add(r, stored=self._stored(r))
        self._deletions: dict[str, list[tuple[int, int]]] = {}
        for group_id, ts, order in deletions:
            self._deletions.setdefault(group_id, []).append((ts, order))

    def _stored(self, row: Mapping) -> bool:
        # Too old a commit is dropped (a run's commits all share its commit_ts - write_ts).
        return row["commit_ts"] >= row["write_ts"] - self.settings.expire_group_ms

    def _needed(self, rows: list[Mapping], at: int) -> list[Mapping]:
        """The last of a partition's rows (write order) that hold its last `intervals` stored commits written
        by `at`: without min-distance merging, a window at `at` holds no earlier commit, the partition's
        log-end offsets come from its production model rather than from its commits, and the rows kept still
        say which commit arrived last (a group deletion's place among them is found by out_seq)."""
        wanted, first = self.settings.intervals, len(rows)
        while first and wanted > 0:
            first -= 1
            row = rows[first]
            if cell(row, "log_end_offset") is not None and self._stored(row) and row["write_ts"] <= at:
                run = Run.of(row)
                wanted -= run.count if not run.interval else min(run.count, (at - row["write_ts"]) // run.interval + 1)
        return rows[first:]

    @classmethod
    def from_tables(cls, tables: Mapping[str, list[dict]], settings: Settings = Settings(),
                    until: int | None = None) -> "LagHistory":
        """From a run's rows, as the engines hold them at the end of a run."""
        deletions = [(r["group_id"], r["write_ts"], r["out_seq"]) for r in tables["group_metadata"] if r["tombstone"]]
        return cls(tables["offsets"], deletions, settings, tables.get("log_end_offsets", ()), until)

    @classmethod
    def from_run(cls, run: Mapping[str, "pd.DataFrame"], settings: Settings = Settings()) -> "LagHistory":
        """From a run folder's tables as pandas DataFrames (`simulations.views.run_tables.RunTables`)."""
        return cls.from_tables({name: _records(run[name], columns) for name, columns in INPUT_COLUMNS.items()},
                               settings)

    @property
    def groups(self) -> list[str]:
        """Groups with at least one committed offset."""
        return sorted(self._groups)

    def evaluate(self, group_id: str, at: int) -> GroupStatus | None:
        """The group at time `at`; None when Burrow would not know it (NOTFOUND): no commit yet, none since
        the group was deleted, or none within expire-group."""
        partitions = self._groups.get(group_id)
        if partitions is None:
            return None
        deleted = max((order for ts, order in self._deletions.get(group_id, ()) if ts <= at), default=-1)
        results, last_commit = [], None
        for (topic, partition), part in sorted(partitions.items()):
            arrived = part.commits.arrived(at)
            if arrived == 0 or part.commits.order(arrived - 1) <= deleted:
                continue  # nothing committed by then, or only before the group was deleted
            window = self._window(part, arrived, deleted)
            if window:
                last_commit = max(last_commit or window[-1].ts, window[-1].ts)
            results.append(self._status(topic, partition, part, arrived, window, at))
        if not results or (last_commit is not None and at - self.settings.expire_group_ms > last_commit):
            return None
        rated = [p.status for p in results if p.status is not None]
        return GroupStatus(group_id, at, group_status(rated) if rated else None, tuple(results))

    def _window(self, part: _Partition, arrived: int, deleted: int) -> list[Commit]:
        """Replays the stored commits that arrived by now (after the group's deletion) into the window."""
        settings = self.settings
        commits = part.commits
        stored = commits.stored_before(arrived)
        first = 0 if deleted < 0 else commits.stored_after_order(deleted)
        if settings.min_distance_ms == 0:
            first = max(first, stored - settings.intervals)  # no merging: the last `intervals` commits
        window: list[Commit] = []
        for i in map(commits.stored, range(first, stored)):
            order, write_ts, commit_ts, offset = commits.commit(i)
            if i not in part.lag:
                # Burrow's latest sample when the commit arrived, from what is known by then.
                known, log_end = _broker(part, write_ts)
                part.lag[i] = max(0, log_end(self._sample_time(known, write_ts)) - offset)
            commit = Commit(order, offset, commit_ts, part.lag[i])
            if window and commit.ts - window[-1].ts < settings.min_distance_ms:
                window[-1] = Commit(commit.order, commit.offset, window[-1].ts, commit.lag)
                continue
            window.append(commit)
            if len(window) > settings.intervals:
                del window[0]
        return window

    def _status(self, topic: str, partition: int, part: _Partition, arrived: int, window: list[Commit],
                at: int) -> PartitionStatus:
        settings = self.settings
        if not window:
            return PartitionStatus(topic, partition, None, (), settings.intervals, None)
        first, log_end = _broker(part, at)
        latest = self._sample_time(first, at)
        times = [latest - k * settings.offset_refresh_ms for k in range(settings.intervals - 1, -1, -1)]
        broker = [log_end(t) for t in times if t >= first]
        current_lag = max(0, broker[-1] - window[-1].offset)
        status = "OK"
        if len(window) / settings.intervals >= settings.minimum_complete:
            status = partition_status(window, broker, current_lag, at, settings.allowed_lag)
        return PartitionStatus(topic, partition, status, tuple(window), settings.intervals, current_lag)


    def _sample_time(self, first: int, t: int) -> int:
        """When Burrow last sampled the log-end offset at time t: the last multiple of offset-refresh, or
        `first` if that came later (the broker's offsets before it are not known here)."""
        return max(t - t % self.settings.offset_refresh_ms, first)


def _broker(part: _Partition, by: int) -> tuple[int, Callable[[int], int]]:
    """What is known at time `by` of the partition's log-end offsets: from when, and their value at any time
    from then to `by`. Exact where the run models production (from the production's start); otherwise
    from the log-end offsets of the commits written by `by` (from the first)."""
    if part.model:
        return part.model[0][0], lambda t: model_log_end(part.model, t)
    samples = part.commits.samples[:bisect.bisect_right(part.commits.samples, (by, float("inf")))]
    return samples[0][0], lambda t: log_end_at(samples, t)


def model_log_end(model: list[tuple[int, float, int]], t: int) -> int:
    """The log-end offset at time t (not before the model's start) under a topic's production model, as
    ClusterImage.log_end_offset computes it."""
    # Most topics keep one rate for the whole run: no search then.
    since, rate, base = model[0] if len(model) == 1 else model[bisect.bisect_right(model, (t, float("inf"), 0)) - 1]
    return rule_offset((rate, since, base), t)


def log_end_at(samples: list[tuple[int, int]], t: int) -> int | None:
    """The log-end offset at time `t` from (time, log-end offset) samples in time order: interpolated
    between samples, extrapolated after the last at the average rate from the first, None before the first."""
    if not samples or t < samples[0][0]:
        return None
    index = bisect.bisect_right(samples, (t, float("inf"))) - 1
    t0, leo0 = samples[index]
    if t == t0:
        return leo0
    if index + 1 < len(samples):
        t1, leo1 = samples[index + 1]
    else:
        (t1, leo1), (t0, leo0) = samples[-1], samples[0]
        if t1 == t0:
            return leo1
    return leo0 + (leo1 - leo0) * (t - t0) // (t1 - t0)


def lag_status_rows(tables: Mapping[str, list[dict]], at: int | None) -> list[dict]:
    """The `lag_status` table of a run's rows at its final time `at` (none for a run without events)."""
    return [] if at is None else lag_status(LagHistory.from_tables(tables, until=at), at)


def lag_status_arrow_rows(tables: Mapping[str, "pa.Table"], at: int | None) -> list[dict]:
    """`lag_status_rows` of Arrow tables: a run's, or only some of its groups' rows (each group is judged on
    its own rows)."""
    return lag_status_rows({name: tables[name].select(list(columns)).to_pylist()
                            for name, columns in INPUT_COLUMNS.items()}, at)


def lag_status(history: LagHistory, at: int) -> list[dict]:
    """The `lag_status` rows at time `at`: one per committed partition of every group Burrow knows."""
    rows = []
    for group_id in history.groups:
        evaluated = history.evaluate(group_id, at)
        if evaluated is not None:
            rows += status_rows(evaluated)
    return rows


def status_rows(evaluated: GroupStatus) -> list[dict]:
    maxlag = evaluated.maxlag
    rows = []
    for p in evaluated.partitions:
        start, end = (p.window[0], p.window[-1]) if p.window else (None, None)
        rows.append({
            "group_id": evaluated.group_id, "evaluated_ts": evaluated.at, "group_status": evaluated.status,
            "topic": p.topic, "partition": p.partition, "status": p.status,
            "window_commits": len(p.window), "window_size": p.window_size,
            "start_offset": start and start.offset, "start_ts": start and start.ts, "start_lag": start and start.lag,
            "end_offset": end and end.offset, "end_ts": end and end.ts, "end_lag": end and end.lag,
            "current_lag": p.current_lag, "maxlag": p is maxlag,
        })
    return rows


def _records(frame: "pd.DataFrame", columns: tuple[str, ...]) -> list[dict]:
    """A table's rows (those columns) as dicts of plain Python values, None for null."""
    frame = frame[list(columns)]
    return frame.astype(object).where(frame.notna(), None).to_dict("records")
