"""The `metrics` table against the rows it summarizes: each group's figures recomputed from its other tables
(docs/tables.md#metrics says how each is defined), so a figure that no row supports fails `coordsim validate`.

- `generations`: the group's `generations` rows;
- `rebalances` and `rebalance_causes`: the causes add up to the count; a classic group's are its
  `group_states` rows to PreparingRebalance, by cause; `rebalances_after_formation` is at most `rebalances`;
- `rebalance_durations`: the formation is a prefix of the group's rebalances, so the rebalances after it are
  its last `rebalances_after_formation`; a classic group's durations are theirs, each from its row to
  PreparingRebalance to the group's next row to Stable (none when the next Empty or Dead, or none, comes
  first); a consumer group's are at most as many; the `rebalance_ms_*` percentiles and the
  `unconsumed_gap_ms_*` ones are their distributions' (nearest rank, `state.metrics.nearest_rank`);
  `unconsumed_partition_ms` and `unconsumed_gaps` are their distribution's total and count;
- `end_state` and `end_members`: the group's last `group_states` row's state (none once it went Dead) and its
  last `members` row's count;
- `failed_commits`: the group's failed commit requests in `responses` (`state.metrics.failed_commit`, each
  row's `repeat_count` of them);
- the client-side figures are all null (no synthetic clients) or all set.

A group that was a consumer group (KIP-848) at some time is held to the rules both protocols share.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

from simulations.validation.group_rows import Finding
from state.classic.group_state import GroupState
from simulations.views.quiet_runs import repeat_counts
from state.metrics import OFFSET_COMMIT, failed_commit, nearest_rank

CLIENT_SIDE = ("unconsumed_partition_ms", "unconsumed_gaps", "unconsumed_gap_durations", "partitions_moved",
               "duplicate_records", "skipped_records", "unsent_commits")
PERCENTILES = {"rebalance": ("rebalance_durations", "rebalance_ms"),
               "unconsumed gap": ("unconsumed_gap_durations", "unconsumed_gap_ms")}


def _counts(distribution) -> Counter:
    return Counter({int(entry["ms"]): int(entry["count"]) for entry in distribution or ()})


def _by_group(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    if frame.empty:
        return {}
    ordered = frame.astype({"out_seq": "int64"}).sort_values("out_seq", kind="stable")
    return dict(tuple(ordered.groupby("group_id", sort=False)))


def metrics_agree(tables: dict[str, pd.DataFrame]) -> Finding:
    metrics = tables["metrics"]
    if metrics.empty:
        return None
    generations, states, members = (_by_group(tables[name]) for name in ("generations", "group_states", "members"))
    consumer = set(states_of_type(tables["group_states"], "consumer"))
    failed = _failed_commits(tables["responses"])
    empty = pd.DataFrame(columns=["to_state", "cause", "ts", "member_count", "generation_id", "stable_ts",
                                  "rebalance_start_ts", "group_type"])
    problems = []
    for row in metrics.sort_values("group_id", kind="stable").itertuples(index=False):
        group = row.group_id
        problem = _disagreement(row, generations.get(group, empty), states.get(group, empty),
                                members.get(group, empty), classic=group not in consumer)
        if problem is None and row.failed_commits != failed.get(group, 0):
            problem = (f"metrics.failed_commits {row.failed_commits}, its responses hold "
                       f"{failed.get(group, 0)} failed commit requests")
        if problem is not None:
            problems.append(f"{group} {problem}")
    return (len(problems), problems[0]) if problems else None


def _failed_commits(responses: pd.DataFrame) -> dict[str, int]:
    """Each group's failed commit requests: its OffsetCommit rows that `failed_commit`, repeat counts summed."""
    commits = responses[responses["api"] == OFFSET_COMMIT]
    failed = [failed_commit(OFFSET_COMMIT, error, results) for error, results in zip(commits["error"], commits["results"])]
    counts = repeat_counts(commits)[pd.Series(failed, index=commits.index, dtype=bool)]
    return {group: int(n) for group, n in counts.groupby(commits.loc[counts.index, "group_id"]).sum().items()}


def states_of_type(states: pd.DataFrame, group_type: str) -> list[str]:
    if states.empty or "group_type" not in states:
        return []
    return sorted(states.loc[states["group_type"] == group_type, "group_id"].unique())


def _disagreement(row, generations: pd.DataFrame, states: pd.DataFrame, members: pd.DataFrame,
                  classic: bool) -> str | None:
    if row.generations != len(generations):
        return f"metrics.generations {row.generations}, {len(generations)} generations rows"
    causes = Counter({entry["cause"]: int(entry["count"]) for entry in row.rebalance_causes or ()})
    if sum(causes.values()) != row.rebalances:
        return f"metrics.rebalances {row.rebalances}, its causes add up to {sum(causes.values())}"
    later = row.rebalances_after_formation
    if not 0 <= later <= row.rebalances:
        return f"metrics.rebalances_after_formation {later}, of {row.rebalances} rebalances"
    durations = _counts(row.rebalance_durations)
    if classic:
        preparing = Counter(states.loc[states["to_state"] == GroupState.PREPARING_REBALANCE.value, "cause"])
        if preparing != causes:
            return (f"metrics.rebalance_causes {_named(causes)}, group_states to PreparingRebalance "
                    f"{_named(preparing)}")
        expected = _later_durations(states, later)
        if durations != expected:
            return (f"metrics.rebalance_durations {_named(durations)}, its last {later} rebalances give "
                    f"{_named(expected)}")
    elif sum(durations.values()) > later:
        return f"metrics.rebalance_durations {_named(durations)}, for {later} rebalances after formation"
    for name, (distribution, prefix) in PERCENTILES.items():
        counts = _counts(getattr(row, distribution))
        for percent, suffix in ((50, "p50"), (99, "p99"), (100, "max")):
            figure = getattr(row, f"{prefix}_{suffix}")
            expected = nearest_rank(counts, percent) if counts else None
            if (None if pd.isna(figure) else int(figure)) != expected:
                return f"metrics.{prefix}_{suffix} {figure}, its {name} distribution gives {expected}"
    client_side = [_null(getattr(row, column)) for column in CLIENT_SIDE]
    if any(client_side) and not all(client_side):
        return "client-side figures partly null: " + ", ".join(c for c, null in zip(CLIENT_SIDE, client_side) if null)
    if not any(client_side):
        gaps = _counts(row.unconsumed_gap_durations)
        total = sum(ms * n for ms, n in gaps.items())
        if row.unconsumed_partition_ms != total or row.unconsumed_gaps != sum(gaps.values()):
            return (f"metrics.unconsumed_partition_ms {row.unconsumed_partition_ms} in {row.unconsumed_gaps} gaps, "
                    f"its gap distribution gives {total} in {sum(gaps.values())}")
    last_state = None if states.empty else states["to_state"].iloc[-1]
    end_state = None if last_state in (None, GroupState.DEAD.value) else last_state
    if (None if pd.isna(row.end_state) else row.end_state) != end_state:
        return f"metrics.end_state {row.end_state}, its last group_states row leaves it {last_state}"
    end_members = 0 if members.empty else int(members["member_count"].iloc[-1])
    if end_state is not None and row.end_members != end_members:
        return f"metrics.end_members {row.end_members}, its last members row counts {end_members}"
    return None


def _null(value) -> bool:
    return value is None or (not isinstance(value, list) and pd.isna(value))


def _later_durations(states: pd.DataFrame, later: int) -> Counter:
    """Durations of a classic group's last `later` rebalances, each to the next Stable (in output order)."""
    ends = {GroupState.STABLE.value, GroupState.EMPTY.value, GroupState.DEAD.value}
    durations: Counter = Counter()
    pending: list[int] = []
    starts = states.index[states["to_state"] == GroupState.PREPARING_REBALANCE.value]
    counted = set(starts[len(starts) - later:]) if later else set()
    for index, row in zip(states.index, states.itertuples(index=False)):
        if index in counted:
            pending.append(int(row.ts))
        elif row.to_state in ends:
            if row.to_state == GroupState.STABLE.value:
                durations.update(int(row.ts) - start for start in pending)
            pending = []
    return durations


def _named(counts: Counter) -> str:
    return ", ".join(f"{key} {value}" for key, value in sorted(counts.items())) or "none"
