"""The figures behind the report's panels, computed with pandas from a run's tables (no drawing here).

Time is cut into `Bins` (at most `MAX_BINS` equal bins over the run) and groups are ranked, so the work and
the output stay small for runs of any length and any number of groups.

Definitions the panels rely on:
- a rebalance is a classic group's transition to PreparingRebalance or a consumer group's group epoch bump,
  with its cause (`simulations.views.rebalances`, the reading of the `metrics` table's `rebalances`);
- partition time in rebalance, the coordinator's view (computed here and only here), of classic groups: a
  partition of a Stable generation's assignment is in rebalance from the start of a rebalance of the Stable group until the group
  is next Stable (or Empty or Dead, when nobody is left to own it). Eager assignors revoke every partition of
  the generation that was Stable; cooperative-sticky revokes only the partitions that change owner in the
  next Stable generation. A static member restarting within its session timeout causes no rebalance, so its
  partitions are never in rebalance, though nobody consumes them while it is down;
- unconsumed partition time, the consumers' view (nobody processing the partition), is the `metrics`
  table's, computed by the simulated consumers (state/metrics.py): read here, never recomputed;
- a partition is reassigned when its owner in a Stable generation (a consumer group: a group epoch its
  members all reconciled to) differs from its owner in the group's previous Stable generation (or it lost its
  owner): the coordinator's view, apart from the `metrics` table's `partitions_moved`, the consumers' (a
  client starting on a partition another client had). An owner is a member's group.instance.id when it has
  one, so a static member that restarts under a new member id keeps its partitions;
- ownership over time: a Stable generation's assignment holds from the group's transition to Stable at it
  until the group leaves Stable, through a coordinator reload that loads it Stable at the same generation
  (`simulations.views.ownership`, where it is defined);
- lag status over time: Burrow's evaluation (`tableio.lag_status`) at the end of each bin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tableio.lag_status import PARTITION_STATUSES, LagHistory
from simulations.views import coordinators
from simulations.views.quiet_runs import count_requests, counts_per_window, repeat_times
from simulations.views.rebalances import rebalance_starts
from simulations.views.history import shown_state
from simulations.views.ownership import holdings, owner_names
from simulations.views.run_tables import RunTables
from state.metrics import OFFSET_COMMIT, UNCONSUMED_COLUMNS, failed_commit
from tableio.coordinator_load import FIND_COORDINATOR, NO_BROKER

MAX_BINS = 60
# Bin widths a reader can count in (ms): 1, 2, 5 times powers of ten up to seconds, then clock steps.
NICE_WIDTHS = [m * 10**e for e in range(0, 3) for m in (1, 2, 5)] + [
    s * 1000 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400)]
PREPARING, STABLE = "PreparingRebalance", "Stable"
ENDS_REBALANCE = ("Stable", "Empty", "Dead")
COOPERATIVE = "cooperative-sticky"
# Cells of the lag status heatmap: Burrow's partition statuses, then "no status".
LAG_CELLS = list(PARTITION_STATUSES) + ["no status"]
NO_STATUS = len(PARTITION_STATUSES)
COMMIT_RATES = ("partitions committed", "commit requests ok", "commit requests failed")
# What `commit_rates` reads of every group's rows, one range of groups at a time.
COMMIT_COLUMNS = {"offsets": ("offset", "write_ts", "repeat_count", "repeat_interval_ms"),
                  "responses": ("api", "error", "results", "request_ts", "repeat_count", "repeat_interval_ms")}


@dataclass(frozen=True)
class Bins:
    start: int
    width_ms: int
    count: int

    @classmethod
    def over(cls, start: int, end: int, count: int = MAX_BINS) -> "Bins":
        span = max(end - start, 1)
        wanted = math.ceil(span / count)
        width = next((w for w in NICE_WIDTHS if w >= wanted), math.ceil(wanted / 86_400_000) * 86_400_000)
        aligned = start - start % width  # slices on round clock times
        return cls(aligned, width, max(1, math.ceil((max(end, start + 1) - aligned) / width)))

    @property
    def end(self) -> int:
        return self.start + self.width_ms * self.count

    def index(self, ts: pd.Series) -> pd.Series:
        return ((ts - self.start) // self.width_ms).clip(0, self.count - 1).astype(int)

    def counts(self, frame: pd.DataFrame, column: str) -> list[int]:
        """Requests (or commits) per bin of the rows' times in `column`, a quiet run's row counting each of
        its repeats in the bin it falls in."""
        # Edges inside the binned span; what falls before or after lands in the first or last bin (as `index`).
        return counts_per_window(frame, column, [self.start + self.width_ms * b for b in range(1, self.count)])

    def spread(self, t0: int, t1: int) -> list[tuple[int, int]]:
        """(bin, milliseconds of [t0, t1) inside it) for every bin the interval touches."""
        out = []
        first, last = max(0, (t0 - self.start) // self.width_ms), min(self.count - 1, (t1 - 1 - self.start) // self.width_ms)
        for b in range(int(first), int(last) + 1):
            lo, hi = self.start + b * self.width_ms, self.start + (b + 1) * self.width_ms
            if (overlap := min(t1, hi) - max(t0, lo)) > 0:
                out.append((b, overlap))
        return out


def rebalances(run: RunTables) -> pd.DataFrame:
    return rebalance_starts(run["group_states"], run["generations"])


def rank_groups(run: RunTables) -> list[str]:
    """Groups by rebalances, then by responses (busiest first), then by name."""
    counts = pd.DataFrame({"rebalances": rebalances(run).groupby("group_id").size(),
                           "responses": count_requests(run["responses"], by="group_id")}).fillna(0)
    counts = counts.reindex(run.groups, fill_value=0)
    ranked = counts.assign(name=counts.index).sort_values(["rebalances", "responses", "name"],
                                                          ascending=[False, False, True])
    return list(ranked.index)


def state_segments(run: RunTables, group_id: str, end: int) -> dict:
    """The group's state band: (t0, t1, state) segments from its first transition to `end` (a coordinator
    outage as `history.UNAVAILABLE`, not Dead), and the generations as ticks at their join-complete time."""
    states = run.group("group_states", group_id)
    times = states["ts"].astype("int64").tolist()
    shown = map(shown_state, states["to_state"], states["cause"])
    segments = [(t0, t1, state) for t0, t1, state in zip(times, times[1:] + [end], shown) if t1 > t0]
    generations = run.group("generations", group_id)
    # A consumer group's epoch superseded before its members reconciled never completed: no tick.
    generations = generations[generations["join_complete_ts"].notna()]
    ticks = list(zip(generations["join_complete_ts"].astype("int64"), generations["generation_id"].astype(int)))
    return {"label": group_id, "segments": segments, "ticks": ticks}


def rebalances_by_cause(run: RunTables, bins: Bins) -> dict[str, list[int]]:
    rows = rebalances(run)
    counts = {cause: [0] * bins.count for cause in sorted(rows["cause"].unique())}
    for cause, b in zip(rows["cause"], bins.index(rows["ts"].astype("int64"))):
        counts[cause][b] += 1
    return counts


def _owners(run: RunTables, group_id: str) -> dict[int, dict[tuple[str, int], str]]:
    """Generation -> {(topic, partition): owner}, owner = group.instance.id or member id."""
    rows = run.group("assignments", group_id)
    owner = owner_names(rows)
    result: dict[int, dict] = {}
    for generation, topic, partition, who in zip(rows["generation_id"], rows["topic"], rows["partition"], owner):
        result.setdefault(int(generation), {})[(topic, int(partition))] = who
    return result


def _protocols(run: RunTables, group_id: str) -> dict[int, str]:
    rows = run.group("generations", group_id)
    return dict(zip(rows["generation_id"].astype(int), rows["protocol_name"].fillna("")))


def in_rebalance_intervals(run: RunTables, group_id: str, end: int) -> list[tuple[int, int, int]]:
    """(start, end, partitions in rebalance) for each rebalance of a Stable group."""
    owners, protocols = _owners(run, group_id), _protocols(run, group_id)
    states = run.group("group_states", group_id)
    intervals, opened = [], None
    for row in states.itertuples(index=False):
        if opened is None and row.to_state == PREPARING and row.from_state == STABLE:
            opened = (int(row.ts), int(row.generation_id))
        elif opened is not None and row.to_state in ENDS_REBALANCE:
            intervals.append((opened[0], int(row.ts), _revoked(owners, protocols, opened[1],
                                                               int(row.generation_id) if row.to_state == STABLE else None)))
            opened = None
    if opened is not None:
        intervals.append((opened[0], end, _revoked(owners, protocols, opened[1], None)))
    return [(t0, t1, n) for t0, t1, n in intervals if n and t1 > t0]


def _revoked(owners: dict, protocols: dict, before: int, after: int | None) -> int:
    previous = owners.get(before, {})
    if protocols.get(before) != COOPERATIVE or after is None:
        return len(previous)
    following = owners.get(after, {})
    return sum(1 for tp, who in previous.items() if following.get(tp) != who)


def partition_seconds_in_rebalance(run: RunTables, groups: list[str], bins: Bins, end: int
                                   ) -> dict[str, list[float]]:
    per_group = {}
    for group_id in groups:
        seconds = [0.0] * bins.count
        for t0, t1, partitions in in_rebalance_intervals(run, group_id, end):
            for b, overlap in bins.spread(t0, t1):
                seconds[b] += partitions * overlap / 1000
        if any(seconds):
            per_group[group_id] = seconds
    return per_group


def partitions_reassigned(run: RunTables, group_id: str) -> list[tuple[int, int, int]]:
    """(generation, partitions reassigned since the previous Stable generation, partitions assigned) for each
    Stable generation after the group's first."""
    owners = _owners(run, group_id)
    generations = run.group("generations", group_id)
    # A consumer group's members write assignments at every member epoch, reconciled or not.
    stable = set(generations.loc[generations["stable_ts"].notna(), "generation_id"].astype(int))
    moved, previous = [], None
    for generation in sorted(owners.keys() & stable):
        current = owners[generation]
        if previous is not None:
            moved.append((generation, sum(1 for tp, who in previous.items() if current.get(tp) != who), len(current)))
        previous = current
    return moved


def ownership(run: RunTables, group_id: str, bins: Bins, end: int, max_rows: int = 64):
    """Partitions (at most `max_rows`) × bins: each cell the index of the owner holding the partition for
    most of the bin, or -1 when it had no owner for half the bin or more (owners: simulations.views.ownership).
    Returns (partitions, owners, cells)."""
    assignments = run.group("assignments", group_id)
    partitions = sorted(set(zip(assignments["topic"], assignments["partition"].astype(int))))[:max_rows]
    index: dict[str, int] = {}
    held: dict[tuple, dict[int, float]] = {}
    for holding in holdings(run, group_id, end):
        for tp, who in holding.owners.items():
            owner = index.setdefault(who, len(index))
            for b, overlap in bins.spread(holding.since, holding.until):
                cell = held.setdefault((tp, b), {})
                cell[owner] = cell.get(owner, 0) + overlap
    cells = [[_majority(held.get((tp, b)), min(bins.width_ms, end - bins.start - b * bins.width_ms))
              for b in range(bins.count)] for tp in partitions]
    return partitions, list(index), cells


def _majority(cell: dict[int, float] | None, bin_ms: int) -> int:
    if not cell:
        return -1
    best = max(cell, key=cell.get)
    return best if cell[best] * 2 >= bin_ms else -1


def commit_rates(run: RunTables, bins: Bins) -> dict[str, list[float]]:
    """Per second in each bin: partitions committed (offsets records, tombstones aside), OffsetCommit
    requests answered NONE, and OffsetCommit requests that failed (`state.metrics.failed_commit`: a top-level
    or a partition error, a failed connection among them; the `failed_commits` figure, at their request
    times). Counted one range of groups at a time: the responses' `results` of a large run do not fit in
    memory at once."""
    counts = {name: [0] * bins.count for name in COMMIT_RATES}
    for part in run.ranges(COMMIT_COLUMNS):
        offsets = part["offsets"]
        responses = part["responses"]
        commits = responses[responses["api"] == OFFSET_COMMIT]
        failed = pd.Series([failed_commit(OFFSET_COMMIT, error, results)
                            for error, results in zip(commits["error"], commits["results"])],
                           index=commits.index, dtype=bool)
        for name, rows, column in (("partitions committed", offsets[offsets["offset"].notna()], "write_ts"),
                                   ("commit requests ok", commits[~failed], "request_ts"),
                                   ("commit requests failed", commits[failed], "request_ts")):
            counts[name] = [a + b for a, b in zip(counts[name], bins.counts(rows, column))]
    per_second = 1000 / bins.width_ms
    return {name: [n * per_second for n in values] for name, values in counts.items()}


def partition_load(run: RunTables) -> pd.DataFrame:
    """Per `__consumer_offsets` partition with groups: groups, requests per second over the run, and the
    busiest second's requests."""
    responses = run["responses"]
    span_s = max((run.end_ts or 0) - (run.start_ts or 0), 1) / 1000
    parts = []
    for table in ("responses", "generations", "offsets", "group_metadata"):
        parts.append(run[table][["group_id", "coordinator_partition"]])
    groups = pd.concat(parts).dropna().drop_duplicates().groupby("coordinator_partition")["group_id"].nunique()
    requests = count_requests(responses, by="coordinator_partition")
    peak = pd.Series({partition: _peak_per_second(rows) for partition, rows in
                      responses.groupby("coordinator_partition")}, dtype="int64")
    load = pd.DataFrame({"groups": groups, "requests": requests, "peak_per_second": peak}).fillna(0)
    load["requests_per_second"] = load["requests"] / span_s
    load.index = load.index.astype(int)
    return load.sort_index()


def broker_requests(run: RunTables, bins: Bins, lookups: bool | None = None) -> dict[str, list[float]]:
    """Requests per second each broker received, per bin, from the `coordinator_load` table (the figures
    `coordsim capacity` reads): label -> one value per bin. Empty until the table is written (run end).
    `lookups`: True for FindCoordinator requests only, False for every API but FindCoordinator."""
    load = run["coordinator_load"]
    load = load[load["measure"] == "requests"]
    only_null = bool(load["broker_id"].isna().all())
    if lookups is not None:
        load = load[(load["name"] == FIND_COORDINATOR) == lookups]
    if load.empty:
        return {}
    load = load.assign(bin=bins.index(load["window_start_ts"]),
                       broker=load["broker_id"].astype("float64").fillna(NO_BROKER))
    per_bin = load.groupby(["broker", "bin"])["value"].sum()
    out: dict[str, list[float]] = {}
    for broker, values in per_bin.groupby(level=0):
        if broker == NO_BROKER:
            label = "one coordinator" if only_null else "any broker (FindCoordinator)"
        else:
            label = f"broker {int(broker)}"
        row = [0.0] * bins.count
        for (_, b), value in values.items():
            row[int(b)] = float(value) / (bins.width_ms / 1000)
        out[label] = row
    return out


def coordinator_moves(run: RunTables) -> pd.DataFrame:
    """The run's coordinator moves (`simulations.views.coordinators.coordinator_moves`: from, to, and the
    time without a coordinator), each with `answer_gap_ms`, from the unload to the group's first successful
    answer to anything but FindCoordinator, what its clients waited (null and `unanswered` when there was
    none by the end)."""
    moves = coordinators.coordinator_moves(run["group_states"], run.end_ts)
    responses = run["responses"]
    answered = responses[(responses["error"] == "NONE") & (responses["api"] != FIND_COORDINATOR)]
    answered = dict(iter(answered.sort_values(["group_id", "request_ts"]).groupby("group_id", sort=False)))
    no_rows = responses.iloc[0:0]
    gaps = []
    for group_id, ts in zip(moves["group_id"], moves["ts"]):
        own = answered.get(group_id, no_rows)
        i = int(np.searchsorted(own["request_ts"].to_numpy("int64"), ts, side="left"))
        gaps.append(int(own["response_ts"].iloc[i]) - ts if i < len(own) else None)
    return moves.assign(answer_gap_ms=pd.array(gaps, dtype="Int64"), unanswered=[gap is None for gap in gaps])


def _peak_per_second(responses: pd.DataFrame) -> int:
    """The busiest second's requests, each repeat of a quiet run in its own second (one partition's runs
    expanded at a time, as an array of times)."""
    seconds = repeat_times(responses, "request_ts").to_numpy() // 1000
    return int(np.unique(seconds, return_counts=True)[1].max()) if len(seconds) else 0


# The metrics table's unconsumed figures (state/metrics.py), but for the distribution the report does not draw.
UNCONSUMED = tuple(column for column in UNCONSUMED_COLUMNS if not column.endswith("_durations"))


def consumption(run: RunTables) -> pd.DataFrame | None:
    """Duplicate and skipped records per group."""
    return _client_figures(run, ("duplicate_records", "skipped_records"))


def unconsumed(run: RunTables) -> pd.DataFrame | None:
    """Unconsumed partition time per group and its gaps' count and p50/p99/max (the consumers' view)."""
    return _client_figures(run, UNCONSUMED)


def _client_figures(run: RunTables, columns: tuple[str, ...]) -> pd.DataFrame | None:
    """Figures of the `metrics` table that only synthetic consumers have, by group; None when no group has
    them (a replay of captured requests, or a run folder older than the figures)."""
    metrics = run.tables.get("metrics")
    if metrics is None or not {"group_id", *columns} <= set(metrics.columns):
        return None
    figures = metrics[["group_id", *columns]].dropna(subset=list(columns), how="all")
    return None if figures.empty else figures.fillna(0).groupby("group_id").last()


def lag_statuses(history: LagHistory, group_id: str, bins: Bins, end: int, max_rows: int = 64):
    """Partitions (at most `max_rows`) × bins: each cell the index in LAG_CELLS of the partition's Burrow
    status at the end of the bin (the run's end for the last), NO_STATUS before its first commit or without a
    log-end offset. Returns (partitions, cells)."""
    cells: dict[tuple[str, int], list[int]] = {}
    for b in range(bins.count):
        evaluated = history.evaluate(group_id, min(bins.start + (b + 1) * bins.width_ms, end))
        for p in evaluated.partitions if evaluated is not None else ():
            row = cells.setdefault((p.topic, p.partition), [NO_STATUS] * bins.count)
            row[b] = LAG_CELLS.index(p.status) if p.status is not None else NO_STATUS
    partitions = sorted(cells)[:max_rows]
    return partitions, [cells[tp] for tp in partitions]
