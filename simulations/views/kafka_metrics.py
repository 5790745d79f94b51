"""A run at a simulated time TS as a Kafka cluster's monitoring would report it: the group coordinator's own
metrics (GroupCoordinatorMetrics, `kafka.server:type=group-coordinator-metrics` and the older
`kafka.coordinator.group:type=GroupMetadataManager` gauges), the request metrics of the coordinator's APIs
(`kafka.network:type=RequestMetrics`), and consumer-group offsets and lag as kafka_exporter reads them
(OffsetFetch and the partitions' log-end offsets). `simulations.reports.prometheus` publishes them under
the names the JMX exporter and kafka_exporter give them (docs/prometheus.md).

What each figure counts, as Kafka counts it:
- groups by type and state (GroupMetadataManager.updateGroupSizeCounter): the groups the coordinators hold,
  each under its type (Group.GroupType, `classic` or `consumer`) and state, both from its last `group_states`
  row at or before TS (a group id converted online counts as its new group's type from the conversion on).
  A Dead group is held by no coordinator (deleted, converted, or its partition unloaded), so the Dead
  gauges Kafka registers read 0, and every group count is of groups not Dead;
- completed rebalances: transitions to Stable once the leader's assignment is stored (`leader_sync_stored`:
  where GroupMetadataManager records its CompletedRebalances sensor; a load after a move is not one);
- consumer group rebalances: group epoch bumps (Kafka's ConsumerGroupRebalances sensor, recorded where the
  epoch is bumped), the consumer groups' rows of `simulations.views.rebalances`;
- offset commits: offsets written (one per partition of an OffsetCommit); expirations: tombstones the
  expiry sweep wrote; retained offsets: (group, topic, partition) whose last record is not a tombstone;
- requests: responses sent, by API and version; errors: by API and error, `NONE` included, each partition's
  error for OffsetCommit (Kafka's `errorCounts`), the response's error for the other APIs. A client's failed
  connection (NETWORK_EXCEPTION: no broker answered) is no broker's response and counts in neither;
- failed commits (coordsim's, the `metrics` table's `failed_commits`): the failed commit requests answered by
  then, failed connections included (`state.metrics.failed_commit`);
- rates: Kafka's Meter over the last `RATE_WINDOW_MS` of simulated time, events per second.
Quiet runs are counted exactly, request by request, without expanding them (`quiet_runs.repeats_until`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulations.views.history import ASSIGNING, COMPLETING, DEAD, EMPTY, PREPARING, RECONCILING, STABLE
from simulations.views.quiet_runs import last_repeat, repeats_until
from simulations.views.rebalances import CLASSIC, CONSUMER, rebalance_starts
from simulations.views.run_tables import RunTables
from state.errors import NETWORK_EXCEPTION
from state.metrics import OFFSET_COMMIT, failed_commit
from state.production import rule_offsets
from state.quiet_run import grown_array

# Each group type coordsim simulates (Group.GroupType's names, the `protocol` tag of Kafka's group-count) and
# its states (ClassicGroupState's and ConsumerGroupState's names, the `state` tag of classic-group-count and
# consumer-group-count), in the order GroupCoordinatorMetrics registers them.
GROUP_STATES = {
    CLASSIC: (PREPARING, COMPLETING, STABLE, DEAD, EMPTY),
    CONSUMER: (EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD),
}
# Kafka's metrics.sample.window.ms (30 s): the span a Meter's rate is measured over.
RATE_WINDOW_MS = 30_000
COMPLETED_REBALANCE_CAUSE = "leader_sync_stored"

# The columns of a finished run these figures read (with every table's times: RunTables' own figures).
COLUMNS = {
    "responses": ("group_id", "request_ts", "response_ts", "api", "api_version", "error", "results",
                  "repeat_count", "repeat_interval_ms"),
    "generations": ("group_id", "rebalance_start_ts", "join_complete_ts", "stable_ts", "cause"),
    "assignments": ("group_id", "assign_ts"),
    "offsets": ("group_id", "topic", "partition", "offset", "commit_ts", "write_ts", "out_seq", "repeat_count",
                "repeat_interval_ms", "records_per_second", "rate_origin_ts"),
    "group_metadata": ("group_id", "write_ts"),
    "group_states": ("group_id", "ts", "group_type", "to_state", "cause"),
    "members": ("group_id", "ts", "member_count"),
    "log_end_offsets": ("group_id", "ts", "topic", "records_per_second", "base_offset"),
}


@dataclass(frozen=True)
class Counts:
    """The coordinator's cumulative counters at a time."""

    completed_rebalances: int
    consumer_group_rebalances: int
    offset_commits: int
    offset_expirations: int
    requests: dict[tuple[str, int], int]  # (api, version) -> responses sent
    errors: dict[tuple[str, str], int]  # (api, error) -> errors counted
    failed_commits: int  # failed commit requests, the clients' view (failed connections included)


@dataclass(frozen=True)
class PartitionOffset:
    group_id: str
    topic: str
    partition: int
    current_offset: int
    # Log-end offset minus the committed offset; None for a topic the run has no production model of.
    lag: int | None


@dataclass(frozen=True)
class KafkaFigures:
    at: int
    # Group type -> state -> groups of that type in that state, every type and state of GROUP_STATES (Dead: 0).
    groups_by_state: dict[str, dict[str, int]]
    group_count: dict[str, int]  # group type -> its groups (group-count; NumGroups for the classic ones)
    offsets: int
    counts: Counts
    # Events per second over the RATE_WINDOW_MS before `at`: completed rebalances, consumer group
    # rebalances, commits, expirations.
    rebalance_rate: float
    consumer_group_rebalance_rate: float
    offset_commit_rate: float
    offset_expiration_rate: float
    members: dict[str, int]  # group -> members, for every group that exists (not Dead) at `at`
    partitions: list[PartitionOffset]  # sorted by group, topic, partition


def figures_at(run: RunTables, at: int) -> KafkaFigures:
    """The figures of `run` at simulated time `at` (epoch ms)."""
    states = _last_rows(run["group_states"], "ts", at)
    held = states[states["to_state"] != DEAD]  # a Dead group is no coordinator's: no gauge counts it
    by_state = Counter(zip(held["group_type"], held["to_state"]))
    groups_by_state = {kind: {state: by_state.get((kind, state), 0) for state in names}
                       for kind, names in GROUP_STATES.items()}
    counts, before = counts_at(run, at), counts_at(run, at - RATE_WINDOW_MS)
    members = _last_rows(run["members"], "ts", at).set_index("group_id")["member_count"]
    partitions = _partition_offsets(run, at)
    return KafkaFigures(
        at, groups_by_state, {kind: sum(by.values()) for kind, by in groups_by_state.items()}, len(partitions), counts,
        _rate(counts.completed_rebalances, before.completed_rebalances),
        _rate(counts.consumer_group_rebalances, before.consumer_group_rebalances),
        _rate(counts.offset_commits, before.offset_commits),
        _rate(counts.offset_expirations, before.offset_expirations),
        {group: int(members.get(group, 0)) for group in held["group_id"]}, partitions)


def _rate(now: int, window_start: int) -> float:
    return (now - window_start) * 1000 / RATE_WINDOW_MS


def counts_at(run: RunTables, at: int) -> Counts:
    """The cumulative counters at `at`: events at or before it."""
    states = run["group_states"]
    stable = (states["ts"] <= at) & (states["to_state"] == STABLE) & (states["cause"] == COMPLETED_REBALANCE_CAUSE)
    started = rebalance_starts(states, run["generations"])
    bumps = (started["ts"] <= at) & (started["protocol"] == CONSUMER)
    offsets = run["offsets"]
    tombstone = offsets["offset"].isna()
    commits = repeats_until(offsets[~tombstone], "write_ts", at)
    responses = run["responses"]
    answered = repeats_until(responses, "response_ts", at)
    asked = (responses["api"] == OFFSET_COMMIT).to_numpy(bool)
    failed = np.zeros(len(responses), dtype=bool)
    failed[asked] = [failed_commit(OFFSET_COMMIT, error, results) for error, results in
                     zip(responses["error"].to_numpy(object)[asked], responses["results"].to_numpy(object)[asked])]
    failed_commits = int(answered.to_numpy()[failed].sum())
    # A failed connection is the client's: no broker sent it, none counted it.
    by_broker = responses["error"] != NETWORK_EXCEPTION
    responses, answered = responses[by_broker], answered[by_broker]
    requests = answered.groupby([responses["api"], responses["api_version"]]).sum()
    return Counts(int(stable.sum()), int(bumps.sum()), int(commits.sum()), int((tombstone & (offsets["write_ts"] <= at)).sum()),
                  {(api, int(version)): int(n) for (api, version), n in requests.items() if n},
                  _errors(responses, answered), failed_commits)


def _errors(responses: pd.DataFrame, answered: pd.Series) -> dict[tuple[str, str], int]:
    errors: Counter = Counter()
    for (api, error), n in answered.groupby([responses["api"], responses["error"]]).sum().items():
        if api != "OffsetCommit" and n:
            errors[api, error] += int(n)
    commits = (responses["api"] == "OffsetCommit") & (answered > 0)
    # Few distinct per-partition outcomes among many commits: count the outcomes, then their errors.
    outcomes = responses.loc[commits, "results"].map(lambda results: tuple(r["error"] for r in results))
    for outcome, n in answered[commits].groupby(outcomes).sum().items():
        for error in outcome:
            errors["OffsetCommit", error] += int(n)
    return dict(errors)


def _last_rows(frame: pd.DataFrame, column: str, at: int) -> pd.DataFrame:
    """Each group's last row (table order) with `column` at or before `at`."""
    return frame[frame[column] <= at].groupby("group_id", sort=False).tail(1)


def _partition_offsets(run: RunTables, at: int) -> list[PartitionOffset]:
    """Each retained offset at `at` with its lag: per partition, the record whose last commit at or before
    `at` is the latest (a quiet run's rows come when the run ends: time, then `out_seq`, orders them)."""
    rows = run["offsets"]
    rows = rows[rows["write_ts"] <= at].copy()
    if rows.empty:
        return []
    rows["last_ts"] = last_repeat(rows, "write_ts", at)
    rows = rows.sort_values(["last_ts", "out_seq"], kind="stable")
    rows = rows.groupby(["group_id", "topic", "partition"], sort=True).tail(1)
    rows = rows[rows["offset"].notna()].sort_values(["group_id", "topic", "partition"])
    current = _run_offsets(rows, at)
    log_ends = _log_end_offsets(run, at)
    return [PartitionOffset(group, topic, int(partition), int(offset),
                            None if (end := log_ends.get((group, topic))) is None else end - int(offset))
            for group, topic, partition, offset in zip(rows["group_id"], rows["topic"], rows["partition"], current)]


def _run_offsets(rows: pd.DataFrame, at: int) -> np.ndarray:
    """The offset of each row's last commit at or before `at`, by the row's offsets rule
    (`state.quiet_run.grown`, over whole columns)."""
    floats = {c: rows[c].to_numpy("float64", na_value=np.nan) for c in ("records_per_second", "rate_origin_ts")}
    first = rows["commit_ts"].to_numpy("int64")
    commit_ts = first + (rows["last_ts"] - rows["write_ts"]).to_numpy("int64")
    return grown_array(rows["offset"].to_numpy("int64"), floats["records_per_second"], floats["rate_origin_ts"],
                       first, commit_ts)


def _log_end_offsets(run: RunTables, at: int) -> dict[tuple[str, str], int]:
    """Each (group, topic)'s partition log-end offset at `at` under the run's production model."""
    rows = run["log_end_offsets"]
    rows = rows[rows["ts"] <= at].groupby(["group_id", "topic"], sort=False).tail(1)
    ends = rule_offsets(rows["records_per_second"].to_numpy("float64"), rows["ts"].to_numpy("int64"),
                        rows["base_offset"].to_numpy("int64"), at)
    return dict(zip(zip(rows["group_id"], rows["topic"]), ends.tolist()))
