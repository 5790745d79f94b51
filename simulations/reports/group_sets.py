"""The report's "Group sets side by side" panel: `coordsim run`'s summary of a scenario with several group
sets (the lines of `simulations.scenarios.summary`, from the same `metrics` rows), so two sets that differ in
one setting (protocol-comparison: group.protocol) read side by side in the report as in the terminal.

The sets and their groups come from the scenario the run kept in RUN_DIR/scenario/; a run without one (a
replay of events or captures) or with a single group set has no such panel.
"""

from __future__ import annotations

from html import escape


from simulations.reports.panel import Panel, note
from simulations.scenarios.document import ScenarioError
from simulations.scenarios.generator import group_ids
from simulations.scenarios.schema import load_scenario
from simulations.scenarios.summary import LEGEND, LINES, METRICS_COLUMNS as SUMMARY_COLUMNS, summarize
from simulations.views.run_tables import RunTables
from simulations.views.variants import SCENARIO_DIR

SCENARIO_FILE = "scenario.yaml"
METRICS_COLUMNS = ("group_id", *SUMMARY_COLUMNS)
TITLE = "Group sets side by side"
GUIDE = ("The run summary's figures per group set (metrics table; docs/reports.md says how each reads for the "
         "classic and the consumer protocol).")


def group_sets_panel(run: RunTables) -> Panel | None:
    path = run.run_dir / SCENARIO_DIR / SCENARIO_FILE
    if not path.is_file():
        return None
    try:
        scenario = load_scenario(path)
    except ScenarioError as error:
        return Panel("group_sets", TITLE, GUIDE, note(f"The run's scenario no longer reads: {error}"))
    if len(scenario.group_sets) < 2:
        return None
    metrics = run["metrics"]
    # Nulls as None, as the summary reads the table's rows (Arrow's to_pylist).
    rows = metrics.astype(object).where(metrics.notna(), None).to_dict("records")
    summaries = summarize(scenario, {s.name: group_ids(s) for s in scenario.group_sets}, {"metrics": rows})
    head = "<tr><th></th>" + "".join(f"<th>{escape(s.name)}</th>" for s in summaries) + "</tr>"
    body = "".join("<tr><th style=\"text-align:left\">" + escape(label) + "</th>"
                   + "".join(f"<td>{_cell(value(s))}</td>" for s in summaries) + "</tr>" for label, value in LINES)
    legend = "".join(f'<p class="guide"><b>{escape(term)}</b>: {escape(meaning)}</p>' for term, meaning in LEGEND)
    return Panel("group_sets", TITLE, GUIDE, f"<table>{head}{body}</table>{legend}")


def _cell(text: str) -> str:
    return "<br>".join(escape(line) for line in text.split("\n"))


__all__ = ["METRICS_COLUMNS", "group_sets_panel"]
