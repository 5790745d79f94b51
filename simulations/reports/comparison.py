"""The report of a sweep: its variants side by side on one page, from the `comparison` table
(simulations/views/comparison.py), so that it answers a capacity question such as "3 or 6 brokers?" on its own.
A table of every variant's figures, then a bar chart per figure: the busiest broker's busiest second (every
API, FindCoordinator included) over the run and during the actions, the FindCoordinator lookups of every
broker together, what the coordinator moves cost (moves, groups without a coordinator, the longest time
without one and the time in all), failed commits, and the rebalance and consumption figures. A variant
without a figure is labelled "none" on its bar; a figure no variant has is a line saying so, not an empty
chart. Each variant's own report is `coordsim report RUN --variant V`."""

from __future__ import annotations

from html import escape
from pathlib import Path

import pandas as pd

from simulations.reports.panel import Panel, note
from simulations.reports.svg import bars, color
from simulations.views.comparison import read_comparison
from simulations.views.run_tables import RunError
from state.tables import COMPARISON
from state.variants import VARIANT

# (column, chart title, unit, scale the column is divided by)
CHARTS = [
    ("peak_broker_requests", "Busiest broker's busiest second (every API, FindCoordinator included)", "requests", 1),
    ("actions_peak_broker_requests", "Busiest broker's busiest second during the actions", "requests", 1),
    ("find_coordinator_peak_requests", "FindCoordinator requests in the busiest second, every broker together",
     "requests", 1),
    ("groups_without_coordinator", "Groups without a coordinator at some time", "groups", 1),
    ("without_coordinator_ms_max", "Longest time a group was without a coordinator", "s", 1000),
    ("without_coordinator_ms", "Time without a coordinator, every group's summed", "group-s", 1000),
    ("coordinator_moves", "Coordinator moves", "moves", 1),
    ("failed_commits", "Failed commits", "commits", 1),
    ("rebalances_after_formation", "Rebalances after formation", "rebalances", 1),
    ("rebalance_ms_p99", "Rebalance duration p99 (after formation)", "s", 1000),
    ("unconsumed_partition_ms", "Unconsumed partition time", "partition-s", 1000),
]
FIGURES = [name for name, _ in COMPARISON]


def comparison_panels(run_dir: str | Path) -> tuple[str, list[Panel]]:
    """The header's facts (HTML) and the panels of the sweep in `run_dir`."""
    rows = read_comparison(run_dir)
    if rows is None:
        raise RunError(f"{run_dir}: a sweep without its comparison table (coordsim sweep writes it)")
    axes = [name for name in rows.columns if name not in FIGURES and name != VARIANT]
    facts = [("sweep", str(run_dir)), ("variants", str(len(rows))), ("varied", ", ".join(axes))]
    header = "<dl>" + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts) + "</dl>"
    panels = [Panel("variants", "Variants side by side",
                    "One row per variant (the comparison table): what each varied value does to the brokers' "
                    "peak load, to the groups when a coordinator moves, to rebalances and to consumption. "
                    "Numbers label the charts below; `-`: the variant has none.", _table(rows, axes))]
    for index, (column, title, unit, scale) in enumerate(CHARTS):
        panels.append(Panel(column, title, "Per variant, numbered as in the table above.",
                            _chart(rows, column, unit, scale, color(index))))
    return header, panels


def _chart(rows: pd.DataFrame, column: str, unit: str, scale: int, fill: str) -> str:
    """One bar per variant; a variant without the figure (null or zero) is labelled `none`."""
    values = [None if pd.isna(x) or not x else x / scale for x in rows[column]]
    if all(value is None for value in values):
        return note("None in any variant.")
    numbers = [str(i) for i in range(1, len(rows) + 1)]
    labels = [n if value is not None else f"{n}: none" for n, value in zip(numbers, values)]
    titles = [f"{n}. {v}: " + ("none" if value is None else f"{value:,.2f} {unit}")
              for n, v, value in zip(numbers, rows[VARIANT], values)]
    return bars(labels, [value or 0.0 for value in values], fill, unit, titles=titles)


def _table(rows: pd.DataFrame, axes: list[str]) -> str:
    heads = ["#", *axes, "groups", "busiest broker: requests", "during actions", "FindCoordinator peak",
             "coordinator moves", "groups without coordinator", "without coordinator max s", "group-s",
             "failed commits", "rebalances", "after formation", "p99 s", "max s", "unconsumed partition-s",
             "duplicates"]
    lines = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in heads) + "</tr>"]
    for number, row in enumerate(rows.to_dict("records"), start=1):
        cells = [str(number), *(row[axis] for axis in axes), f"{row['groups']:,}", _broker(row, "peak_"),
                 _broker(row, "actions_peak_"), _scaled(row["find_coordinator_peak_requests"], 1),
                 _scaled(row["coordinator_moves"], 1), _scaled(row["groups_without_coordinator"], 1),
                 _scaled(row["without_coordinator_ms_max"], 1000), _scaled(row["without_coordinator_ms"], 1000),
                 _scaled(row["failed_commits"], 1), f"{row['rebalances']:,}",
                 f"{row['rebalances_after_formation']:,}", _scaled(row["rebalance_ms_p99"], 1000),
                 _scaled(row["rebalance_ms_max"], 1000), _scaled(row["unconsumed_partition_ms"], 1000),
                 _scaled(row["duplicate_records"], 1)]
        lines.append(f'<tr title="{escape(row[VARIANT])}">' + "".join(f"<td>{escape(c)}</td>" for c in cells)
                     + "</tr>")
    return "".join(lines) + "</table>"


def _broker(row: dict, prefix: str) -> str:
    """`broker: requests` of a busiest broker-window."""
    if pd.isna(row[f"{prefix}broker_requests"]):
        return "-"
    broker = "one coordinator" if pd.isna(row[f"{prefix}broker_id"]) else int(row[f"{prefix}broker_id"])
    return f"{broker}: {int(row[f'{prefix}broker_requests']):,}"


def _scaled(value, scale: int) -> str:
    if pd.isna(value):
        return "-"
    return f"{value / scale:,.2f}" if scale != 1 else f"{int(value):,}"
