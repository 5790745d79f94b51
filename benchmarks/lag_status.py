"""Cost of Burrow's lag status: deriving the `lag_status` table at the end of a run (both engines do it once,
from the offsets rows in memory) and the report's lag panel (every committed partition of the top groups
evaluated at each of up to 60 time slices).

The run is the shipped `default` scenario (300 groups × 5 members, 20 partitions, 6 minutes: about 126k
offsets rows standing for 430k commits) or a resized copy, simulated in-process with the local engine; only the lag work is timed.

    .venv/bin/python benchmarks/lag_status.py                 # the default scenario
    .venv/bin/python benchmarks/lag_status.py --groups 30     # a tenth of it

Results are appended to benchmarks/results/lag_status.jsonl and printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from simulations import scenarios  # noqa: E402
from simulations.engines import run_local  # noqa: E402
from simulations.reports import figures  # noqa: E402
from simulations.reports.panels import TOP_GROUPS  # noqa: E402
from tableio.coordinator_settings import load_config  # noqa: E402
from tableio.lag_status import LagHistory, lag_status  # noqa: E402
from state.events import parse_event  # noqa: E402
from benchmarks.recording import record  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "lag_status.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, help="groups of the default scenario's group set (default: as shipped)")
    args = parser.parse_args()
    document = yaml.safe_load(scenarios.shipped()["default"].read_text())
    if args.groups:
        document["group_sets"][0]["groups"] = args.groups
    scenario = scenarios.parse_scenario(yaml.safe_dump(document), "default.yaml", "default")
    generated = scenarios.generate(scenario)
    events = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows, start=1)]
    started = time.perf_counter()
    result = run_local(events, load_config(scenario=scenario.broker), generated.until_ms)
    run_s = time.perf_counter() - started

    started = time.perf_counter()
    history = LagHistory.from_tables(result.tables)
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    rows = lag_status(history, result.final_ts)
    table_s = time.perf_counter() - started
    start = min(r["write_ts"] for r in result.tables["offsets"])
    bins = figures.Bins.over(start, result.final_ts)
    started = time.perf_counter()
    for group in history.groups[:TOP_GROUPS]:
        figures.lag_statuses(history, group, bins, result.final_ts)
    panel_s = time.perf_counter() - started

    row = {
        "when": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, {os.uname().machine}",
        "groups": result.groups,
        "offsets_rows": len(result.tables["offsets"]),
        "lag_status_rows": len(rows),
        "run_local_s": round(run_s, 2),
        "history_s": round(build_s, 2),
        "table_at_end_s": round(table_s, 2),
        "panel_s": round(panel_s, 2),
        "panel_evaluations": min(TOP_GROUPS, len(history.groups)) * bins.count,
    }
    record(RESULTS, row, indent=1)


if __name__ == "__main__":
    main()
