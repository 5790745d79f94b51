"""What `coordsim run` reports per group set: rebalances and their cost, condensed from the run's tables.

Per-group figures come from the `metrics` table (docs/tables.md defines them) and are summed, or spread
over the set's groups (time to Stable). Rebalance durations are spread over every rebalance of the set, from
`generations`, since percentiles of groups cannot be merged into the set's. Client-side figures that the
metrics table leaves null (groups without synthetic clients) show as "-".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from rich.console import Console
from rich.table import Table

from simulations.scenarios.schema import Scenario

CLIENT_FIGURES = ("unowned_partition_ms", "partitions_moved", "duplicate_records", "skipped_records",
                  "failed_commits")


@dataclass
class SetSummary:
    name: str
    groups: int
    members: int
    end_states: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    rebalance_ms: list[int] = field(default_factory=list)
    time_to_stable_ms: list[int] = field(default_factory=list)
    unowned_partition_ms: int | None = None
    partitions_moved: int | None = None
    duplicate_records: int | None = None
    skipped_records: int | None = None
    failed_commits: int | None = None

    @property
    def rebalances(self) -> int:
        return sum(self.causes.values())


def percentile(values: list[int], p: float) -> int | None:
    """Nearest-rank percentile, as the metrics table's (p99 of fewer than 100 values is their maximum)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, -(-round(p) * len(ordered) // 100)) - 1]


def summarize(scenario: Scenario, groups: Mapping[str, list[str]], tables: Mapping[str, list[dict]]
              ) -> list[SetSummary]:
    set_of = {group_id: name for name, ids in groups.items() for group_id in ids}
    summaries = {s.name: SetSummary(s.name, s.groups, s.members) for s in scenario.group_sets}
    for row in tables["generations"]:
        name = set_of.get(row["group_id"])
        if name is not None and row["stable_ts"] is not None:
            summaries[name].rebalance_ms.append(row["stable_ts"] - row["rebalance_start_ts"])
    for row in tables["metrics"]:
        name = set_of.get(row["group_id"])
        if name is None:
            continue
        summary = summaries[name]
        summary.end_states[row["end_state"] or "deleted"] += 1
        for entry in row["rebalance_causes"]:
            summary.causes[entry["cause"]] += entry["count"]
        if row["time_to_stable_ms"] is not None:
            summary.time_to_stable_ms.append(row["time_to_stable_ms"])
        for figure in CLIENT_FIGURES:
            if row[figure] is not None:
                setattr(summary, figure, (getattr(summary, figure) or 0) + row[figure])
    return list(summaries.values())


# ----------------------------------------------------------------------------------------------------------

def render(console: Console, summaries: list[SetSummary]) -> None:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("group set", style="bold")
    for summary in summaries:
        table.add_column(summary.name, justify="right")
    lines = [
        ("groups × members", lambda s: f"{s.groups:,} × {s.members}"),
        ("rebalances", lambda s: f"{s.rebalances:,}"),
        ("  by cause", lambda s: "\n".join(f"{cause} {n:,}" for cause, n in sorted(
            s.causes.items(), key=lambda item: (-item[1], item[0]))) or "-"),
        ("rebalance p50/p99/max", lambda s: _spread(s.rebalance_ms)),
        ("to first Stable p50/p99/max", lambda s: _spread(s.time_to_stable_ms)),
        ("unowned partition-seconds", lambda s: _count(s.unowned_partition_ms, scale=1000)),
        ("partitions moved", lambda s: _count(s.partitions_moved)),
        ("duplicate records", lambda s: _count(s.duplicate_records)),
        ("skipped records", lambda s: _count(s.skipped_records)),
        ("failed commits", lambda s: _count(s.failed_commits)),
        ("end states", lambda s: "\n".join(f"{state} {n:,}" for state, n in sorted(s.end_states.items()))),
    ]
    for label, value in lines:
        table.add_row(label, *(value(s) for s in summaries))
    console.print(table)


def _spread(values: list[int]) -> str:
    """p50 / p99 / max in seconds."""
    if not values:
        return "-"
    return " / ".join(f"{percentile(values, p) / 1000:.2f}" for p in (50, 99, 100)) + " s"


def _count(value: int | None, scale: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value / scale:,.1f}" if scale != 1 else f"{value:,}"
