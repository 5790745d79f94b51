"""The report of a sweep: its variants side by side, from the `comparison` table (simulations/views/
comparison.py). A table of every variant's figures, and bar charts of the figures a capacity question
compares: rebalances after formation and their p99, unconsumed partition time, and the busiest broker's
busiest second. Each variant's own report is `coordsim report RUN --variant V`."""

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
    ("rebalances_after_formation", "Rebalances after formation", "rebalances", 1),
    ("rebalance_ms_p99", "Rebalance duration p99 (after formation)", "s", 1000),
    ("unconsumed_partition_ms", "Unconsumed partition time", "partition-s", 1000),
    ("peak_broker_requests", "Busiest broker's busiest window", "requests", 1),
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
    numbers = [str(i) for i in range(1, len(rows) + 1)]
    panels = [Panel("variants", "Variants side by side",
                    "One row per variant (the comparison table): what each varied value does to rebalances, "
                    "unconsumed partitions and the busiest broker. Numbers label the charts below.",
                    _table(rows, axes))]
    for index, (column, title, unit, scale) in enumerate(CHARTS):
        values = rows[column]
        if values.isna().all():
            body = note("no variant has this figure")
        else:
            titles = [f"{n}. {v}: " + ("-" if pd.isna(x) else f"{x / scale:,.2f} {unit}")
                      for n, v, x in zip(numbers, rows[VARIANT], values)]
            body = bars(numbers, [0.0 if pd.isna(x) else x / scale for x in values], color(index), unit,
                        titles=titles)
        panels.append(Panel(column, title, "Per variant, numbered as in the table above.", body))
    return header, panels


def _table(rows: pd.DataFrame, axes: list[str]) -> str:
    heads = ["#", *axes, "groups", "rebalances", "after formation", "p99 s", "max s", "unconsumed partition-s",
             "duplicates", "failed commits", "busiest broker: requests"]
    lines = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in heads) + "</tr>"]
    for number, row in enumerate(rows.to_dict("records"), start=1):
        broker = "-" if pd.isna(row["peak_broker_requests"]) else (
            f"{'one coordinator' if pd.isna(row['peak_broker_id']) else int(row['peak_broker_id'])}: "
            f"{int(row['peak_broker_requests']):,}")
        cells = [str(number), *(row[axis] for axis in axes), f"{row['groups']:,}", f"{row['rebalances']:,}",
                 f"{row['rebalances_after_formation']:,}", _scaled(row["rebalance_ms_p99"], 1000),
                 _scaled(row["rebalance_ms_max"], 1000), _scaled(row["unconsumed_partition_ms"], 1000),
                 _scaled(row["duplicate_records"], 1), _scaled(row["failed_commits"], 1), broker]
        lines.append(f'<tr title="{escape(row[VARIANT])}">' + "".join(f"<td>{escape(c)}</td>" for c in cells)
                     + "</tr>")
    return "".join(lines) + "</table>"


def _scaled(value, scale: int) -> str:
    if pd.isna(value):
        return "-"
    return f"{value / scale:,.2f}" if scale != 1 else f"{int(value):,}"
