"""What `coordsim run` reports per group set: rebalances and their cost, condensed from the `metrics` table.

Every figure is the metrics table's (state/metrics.py computes them; docs/tables.md defines them), summed
over the set's groups, or spread over them (time to first Stable). Percentiles of groups cannot be merged
into the set's, so rebalance durations and unconsumed gaps are spread over every rebalance (after its
group's formation) and every gap of the set, from the rows' distributions, with the metrics table's
nearest-rank percentile. Client-side figures that the metrics table leaves null (groups without synthetic
clients) show as "-".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from rich.console import Console
from rich.table import Table

from simulations.scenarios.schema import Scenario
from state.metrics import merged, nearest_rank

CLIENT_FIGURES = ("unconsumed_partition_ms", "partitions_moved", "duplicate_records", "skipped_records",
                  "failed_commits")


@dataclass
class SetSummary:
    name: str
    groups: int
    members: int
    end_states: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    time_to_stable_ms: Counter = field(default_factory=Counter)
    rebalance_ms: Counter = field(default_factory=Counter)  # rebalances after their group's formation
    unconsumed_partition_ms: int | None = None
    unconsumed_gap_ms: Counter = field(default_factory=Counter)
    partitions_moved: int | None = None
    duplicate_records: int | None = None
    skipped_records: int | None = None
    failed_commits: int | None = None

    @property
    def rebalances(self) -> int:
        return sum(self.causes.values())


def summarize(scenario: Scenario, groups: Mapping[str, list[str]], tables: Mapping[str, list[dict]]
              ) -> list[SetSummary]:
    set_of = {group_id: name for name, ids in groups.items() for group_id in ids}
    summaries = {s.name: SetSummary(s.name, s.groups, s.members) for s in scenario.group_sets}
    for row in tables["metrics"]:
        name = set_of.get(row["group_id"])
        if name is None:
            continue
        summary = summaries[name]
        summary.end_states[row["end_state"] or "deleted"] += 1
        for entry in row["rebalance_causes"]:
            summary.causes[entry["cause"]] += entry["count"]
        if row["time_to_stable_ms"] is not None:
            summary.time_to_stable_ms[row["time_to_stable_ms"]] += 1
        summary.rebalance_ms += merged([row["rebalance_durations"]])
        summary.unconsumed_gap_ms += merged([row["unconsumed_gap_durations"]])
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
        ("to first Stable p50/p99/max", lambda s: _spread(s.time_to_stable_ms)),
        ("later rebalance p50/p99/max", lambda s: _spread(s.rebalance_ms)),
        ("unconsumed partition-seconds", lambda s: _count(s.unconsumed_partition_ms, scale=1000)),
        ("unconsumed gap p50/p99/max", lambda s: _spread(s.unconsumed_gap_ms)),
        ("partitions moved", lambda s: _count(s.partitions_moved)),
        ("duplicate records", lambda s: _count(s.duplicate_records)),
        ("skipped records", lambda s: _count(s.skipped_records)),
        ("failed commits", lambda s: _count(s.failed_commits)),
        ("end states", lambda s: "\n".join(f"{state} {n:,}" for state, n in sorted(s.end_states.items()))),
    ]
    for label, value in lines:
        table.add_row(label, *(value(s) for s in summaries))
    console.print(table)


def _spread(counts: Counter) -> str:
    """p50 / p99 / max in seconds."""
    if not counts:
        return "-"
    return " / ".join(f"{nearest_rank(counts, p) / 1000:.2f}" for p in (50, 99, 100)) + " s"


def _count(value: int | None, scale: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value / scale:,.1f}" if scale != 1 else f"{value:,}"
