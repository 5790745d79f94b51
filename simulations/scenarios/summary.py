"""What `coordsim run` reports per group set: rebalances and their cost, condensed from the `metrics` table.

Every figure is the metrics table's (state/metrics.py computes them; docs/tables.md defines them), summed
over the set's groups, or spread over them (the formation). Percentiles of groups cannot be merged into the
set's, so rebalance durations and unconsumed gaps are spread over every rebalance (after its group's
formation) and every gap of the set, from the rows' distributions, with the metrics table's nearest-rank
percentile. Client-side figures that the metrics table leaves null (groups without synthetic clients) show
as "-". A legend under the lines says what the rebalance lines count, the same for either protocol.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulations.scenarios.schema import Crash, GroupSet, RollingRestart, Scenario, merged_config
from state.metrics import merged, nearest_rank

CLASSIC = "classic"  # group.protocol's default
CLIENT_FIGURES = ("unconsumed_partition_ms", "partitions_moved", "duplicate_records", "skipped_records",
                  "failed_commits", "unsent_commits")
# The metrics table's columns `Figures.add` reads.
METRICS_COLUMNS = ("end_state", "rebalance_causes", "rebalances_after_formation", "time_to_stable_ms",
                   "rebalance_durations", "unconsumed_gap_durations", *CLIENT_FIGURES)


@dataclass
class Figures:
    """The metrics table's figures over some of its rows (a group set's, a sweep variant's): counts summed,
    durations spread over every rebalance or gap of those groups (never percentiles of percentiles)."""

    end_states: Counter = field(default_factory=Counter)
    causes: Counter = field(default_factory=Counter)
    rebalances_after_formation: int = 0
    time_to_stable_ms: Counter = field(default_factory=Counter)
    rebalance_ms: Counter = field(default_factory=Counter)  # rebalances after their group's formation
    unconsumed_partition_ms: int | None = None
    unconsumed_gap_ms: Counter = field(default_factory=Counter)
    partitions_moved: int | None = None
    duplicate_records: int | None = None
    skipped_records: int | None = None
    failed_commits: int | None = None
    unsent_commits: int | None = None

    @property
    def rebalances(self) -> int:
        return sum(self.causes.values())

    def add(self, row: Mapping) -> None:
        """One group's `metrics` row."""
        self.end_states[row["end_state"] or "deleted"] += 1
        for entry in row["rebalance_causes"]:
            self.causes[entry["cause"]] += entry["count"]
        self.rebalances_after_formation += row["rebalances_after_formation"]
        if row["time_to_stable_ms"] is not None:
            self.time_to_stable_ms[row["time_to_stable_ms"]] += 1
        self.rebalance_ms += merged([row["rebalance_durations"]])
        self.unconsumed_gap_ms += merged([row["unconsumed_gap_durations"]])
        for figure in CLIENT_FIGURES:
            if row[figure] is not None:
                setattr(self, figure, (getattr(self, figure) or 0) + row[figure])


@dataclass
class SetSummary(Figures):
    name: str = ""
    protocol: str = CLASSIC
    groups: int = 0
    members: int = 0


def summarize(scenario: Scenario, groups: Mapping[str, list[str]], tables: Mapping[str, list[dict]]
              ) -> list[SetSummary]:
    set_of = {group_id: name for name, ids in groups.items() for group_id in ids}
    summaries = {s.name: SetSummary(name=s.name, protocol=protocols(scenario, s), groups=s.groups,
                                    members=s.members) for s in scenario.group_sets}
    for row in tables["metrics"]:
        name = set_of.get(row["group_id"])
        if name is not None:
            summaries[name].add(row)
    return list(summaries.values())


def protocols(scenario: Scenario, group_set: GroupSet) -> str:
    """The set's group.protocol, and the ones the timeline's restarts with a `config:` move it to in turn
    (`classic → consumer`: an upgrade)."""
    seen = [str(group_set.config.get("group.protocol", CLASSIC)).lower()]
    for action in scenario.timeline:
        if isinstance(action, (RollingRestart, Crash)) and action.config is not None \
                and group_set.name in action.targets:
            protocol = str(merged_config(group_set.config, action.config).get("group.protocol", CLASSIC)).lower()
            if protocol != seen[-1]:
                seen.append(protocol)
    return " → ".join(seen)


# ----------------------------------------------------------------------------------------------------------

# The summary's lines, label and value per set: the console table's rows and the report's (simulations/
# reports/group_sets.py) alike.
LINES = [
    ("group.protocol", lambda s: s.protocol),
    ("groups × members", lambda s: f"{s.groups:,} × {s.members}"),
    ("formation p50/p99/max", lambda s: _spread(s.time_to_stable_ms)),
    ("rebalances after formation", lambda s: f"{s.rebalances_after_formation:,}"),
    ("later rebalance p50/p99/max", lambda s: _spread(s.rebalance_ms)),
    ("rebalances", lambda s: f"{s.rebalances:,}"),
    ("  by cause", lambda s: "\n".join(f"{cause} {n:,}" for cause, n in sorted(
        s.causes.items(), key=lambda item: (-item[1], item[0]))) or "-"),
    ("unconsumed partition-seconds", lambda s: _count(s.unconsumed_partition_ms, scale=1000)),
    ("unconsumed gap p50/p99/max", lambda s: _spread(s.unconsumed_gap_ms)),
    ("partitions moved", lambda s: _count(s.partitions_moved)),
    ("duplicate records", lambda s: _count(s.duplicate_records)),
    ("skipped records", lambda s: _count(s.skipped_records)),
    ("failed commits", lambda s: _count(s.failed_commits)),
    ("unsent commits", lambda s: _count(s.unsent_commits)),
    ("end states", lambda s: "\n".join(f"{state} {n:,}" for state, n in sorted(s.end_states.items()))),
]


# What the rebalance lines count, for either protocol (docs/scenarios.md#the-summary), under the lines.
LEGEND = [
    ("formation", "a group's first event until it is Stable with its first members (those joining within "
                  "group.initial.rebalance.delay.ms of one another)"),
    ("rebalances after formation", "those started after it, alike for both protocols; later rebalance: from "
                                   "one's start until the group is Stable again"),
    ("rebalances", "every one started, the formation's included: classic, to PreparingRebalance (the first "
                   "members join in one); consumer, a group epoch bump (one per member joining; Kafka's "
                   "consumer-group-rebalance-count)"),
]


def render(console: Console, summaries: list[SetSummary]) -> None:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("group set", style="bold")
    for summary in summaries:
        table.add_column(summary.name, justify="right")
    for label, value in LINES:
        table.add_row(label, *(value(s) for s in summaries))
    console.print(table)
    for term, meaning in LEGEND:
        console.print(f"{term}: {meaning}", highlight=False)


def render_comparison(console: Console, rows: list[dict]) -> None:
    """A sweep's `comparison` rows (simulations/views/comparison.py), one line per variant, numbered: the
    names, which can be long, are listed first so the table fits 80 columns."""
    console.print("[bold]comparison[/bold]", highlight=False)
    for number, row in enumerate(rows, start=1):
        console.print(f"  {number:>2}  {escape(row['variant'])}", highlight=False, soft_wrap=True)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for header in ("", "rebalances", "later", "p99 s", "max s", "unconsumed s", "dupl.", "failed", "peak"):
        table.add_column(header, justify="right", no_wrap=True)
    for number, row in enumerate(rows, start=1):
        table.add_row(str(number), f"{row['rebalances']:,}", f"{row['rebalances_after_formation']:,}",
                      _seconds(row["rebalance_ms_p99"]), _seconds(row["rebalance_ms_max"]),
                      _count(row["unconsumed_partition_ms"], scale=1000), _count(row["duplicate_records"]),
                      _count(row["failed_commits"]), _peak(row))
    console.print(table)
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for header in ("", "moves", "groups", "no coord. max s", "group-s", "lookups", "per s", "actions peak"):
        table.add_column(header, justify="right", no_wrap=True)
    for number, row in enumerate(rows, start=1):
        table.add_row(str(number), f"{row['coordinator_moves']:,}", f"{row['groups_without_coordinator']:,}",
                      _seconds(row["without_coordinator_ms_max"]), _count(row["without_coordinator_ms"], scale=1000),
                      f"{row['find_coordinator_requests']:,}", f"{row['find_coordinator_peak_requests']:,}",
                      _peak(row, "actions_peak_"))
    console.print(table)
    console.print("later: rebalances after their group's formation (p99 and max are of their durations, to the "
                  "group Stable again); "
                  "unconsumed: partition-seconds; dupl.: duplicate records; failed: failed commits; peak: the "
                  "busiest broker and its requests in its busiest second (every API, FindCoordinator included), "
                  "actions peak: the same during the actions; moves: coordinator moves, of that many groups, "
                  "without a coordinator for at most that long and that many group-seconds in all; lookups: "
                  "FindCoordinator requests to every broker, in all and in the busiest second", highlight=False)


def _seconds(ms: int | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f}"


def _peak(row: dict, prefix: str = "peak_") -> str:
    """The busiest broker and its requests in its busiest window (a second, unless the run is weeks long)."""
    if row[f"{prefix}broker_requests"] is None:
        return "-"
    broker = "one" if row[f"{prefix}broker_id"] is None else str(row[f"{prefix}broker_id"])
    per = "" if row["window_ms"] == 1000 else f" per {row['window_ms'] / 1000:g} s"
    return f"{broker}: {row[f'{prefix}broker_requests']:,}{per}"


def _spread(counts: Counter) -> str:
    """p50 / p99 / max in seconds."""
    if not counts:
        return "-"
    return " / ".join(f"{nearest_rank(counts, p) / 1000:.2f}" for p in (50, 99, 100)) + " s"


def _count(value: int | None, scale: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value / scale:,.1f}" if scale != 1 else f"{value:,}"
