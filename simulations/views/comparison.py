"""A sweep's `comparison` table: one row per variant, its varied values and its figures side by side
(docs/tables.md#comparison), written by `coordsim sweep` once the run's tables are.

Every figure is one a run already defines, taken over the variant's rows: the `metrics` table's, summed or
spread over the variant's groups exactly as `coordsim run`'s summary does it per group set
(`simulations.scenarios.summary.Figures`); the busiest broker-window of its `coordinator_load` rows
(requests of every API a broker received in one window, the table's own window: 1 s), over the whole run and
during the actions as `coordsim capacity` tells them (`simulations.views.capacity.during_actions`); the
FindCoordinator requests every broker together received; and what its coordinator moves cost
(`simulations.views.coordinators.move_figures`). Rows are in the sweep's order (the first axis varying
slowest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulations.scenarios.summary import METRICS_COLUMNS as SUMMARY_COLUMNS, Figures
from simulations.scenarios.sweep import Sweep
from simulations.views.capacity import during_actions, read_actions
from simulations.views.coordinators import STATE_COLUMNS, coordinator_moves, move_figures
from state.metrics import nearest_rank
from state.tables import COMPARISON, parse_type
from state.variants import VARIANT
from tableio.coordinator_load import FIND_COORDINATOR, TABLE as LOAD_TABLE
from tableio.parquet import PART_FILE, arrow_type, output_errors, read_columns
from tableio.run_record import read_run_record

TABLE = "comparison"
METRICS_COLUMNS = [VARIANT, *SUMMARY_COLUMNS]


def comparison_schema(axes: Sequence[str]) -> pa.Schema:
    return pa.schema([pa.field(VARIANT, pa.string()), *(pa.field(name, pa.string()) for name in axes),
                      *(pa.field(name, arrow_type(parse_type(spec))) for name, spec in COMPARISON)])


def write_comparison(out_dir: str | Path, sweep: Sweep) -> pa.Table:
    """Write `out_dir/comparison/part-00000.parquet` from the sweep's written tables; returns the table."""
    figures = {variant.name: Figures() for variant in sweep.variants}
    groups = dict.fromkeys(figures, 0)
    for row in read_columns(out_dir, "metrics", METRICS_COLUMNS).to_pylist():
        figures[row[VARIANT]].add(row)
        groups[row[VARIANT]] += 1
    load = read_columns(out_dir, LOAD_TABLE, [VARIANT, "broker_id", "window_start_ts", "window_ms", "measure",
                                              "name", "value"]).to_pandas()
    requests = load[load["measure"] == "requests"]
    states = read_columns(out_dir, "group_states", [VARIANT, *STATE_COLUMNS]).to_pandas()
    final = (read_run_record(Path(out_dir)) or {}).get("final_ts") or sweep.base.until_ms
    rows = []
    for variant in sweep.variants:
        shown = figures[variant.name]
        own = requests[requests[VARIANT] == variant.name]
        window, cluster = _window(own), bool(own["broker_id"].notna().any())
        during = own[during_actions(own["window_start_ts"].to_numpy(), window,
                                    read_actions(Path(out_dir), variant.name)[0])] if window else own
        rows.append({VARIANT: variant.name, **variant.values, "groups": groups[variant.name],
                     **_rebalances(shown), "unconsumed_partition_ms": shown.unconsumed_partition_ms,
                     "duplicate_records": shown.duplicate_records, "failed_commits": shown.failed_commits,
                     **_peak(own, "peak_", cluster), "window_ms": window,
                     **_peak(during, "actions_peak_", cluster),
                     **_lookups(own),
                     **move_figures(coordinator_moves(states[states[VARIANT] == variant.name], final))})
    table = pa.Table.from_pylist(rows, schema=comparison_schema([axis.name for axis in sweep.axes]))
    path = Path(out_dir) / TABLE / PART_FILE
    with output_errors(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, compression="zstd")
    return table


def _rebalances(figures: Figures) -> dict:
    """The summary's rebalance figures: every rebalance (a classic group's transition to PreparingRebalance, a
    consumer group's group epoch bump) by cause, those after their group's formation, and the durations of
    those until the group was Stable again (the metrics table's rebalance_ms_*)."""
    durations = figures.rebalance_ms
    return {"rebalances": figures.rebalances,
            "rebalance_causes": [{"cause": cause, "count": count} for cause, count in sorted(figures.causes.items())],
            "rebalances_after_formation": figures.rebalances_after_formation,
            "rebalance_ms_p99": nearest_rank(durations, 99), "rebalance_ms_max": nearest_rank(durations, 100)}


def _peak(requests: pd.DataFrame, prefix: str, cluster: bool) -> dict:
    """The busiest (broker, window) of `requests` (coordinator_load rows), by requests of every API, a
    FindCoordinator at the broker its client sent it to: `PREFIXbroker_id`, `PREFIXbroker_requests`,
    `PREFIXwindow_start_ts`. Brokers with an id when the run has a `cluster` (a null broker beside them is a
    FindCoordinator to a broker the input does not name, no one broker's), the one coordinator (a null id)
    when it has none. Ties go to the lower broker id, then the earlier window."""
    if cluster:
        requests = requests[requests["broker_id"].notna()]
    if requests.empty:
        return {f"{prefix}broker_id": None, f"{prefix}broker_requests": None, f"{prefix}window_start_ts": None}
    per_window = (requests.assign(broker=requests["broker_id"].astype("float64").fillna(-1))
                  .groupby(["broker", "window_start_ts"], as_index=False)["value"].sum()
                  .sort_values(["value", "broker", "window_start_ts"], ascending=[False, True, True]))
    top = per_window.iloc[0]
    return {f"{prefix}broker_id": None if top["broker"] == -1 else int(top["broker"]),
            f"{prefix}broker_requests": int(top["value"]), f"{prefix}window_start_ts": int(top["window_start_ts"])}


def _window(requests: pd.DataFrame) -> int | None:
    """The windows' length (the coordinator_load table's one), null without a request."""
    return int(requests["window_ms"].iloc[0]) if len(requests) else None


def _lookups(requests: pd.DataFrame) -> dict:
    """FindCoordinator requests, whichever broker received them (a null broker: any): in all, and in the
    busiest window for every broker together."""
    lookups = requests[requests["name"] == FIND_COORDINATOR]
    per_window = lookups.groupby("window_start_ts")["value"].sum()
    return {"find_coordinator_requests": int(lookups["value"].sum()),
            "find_coordinator_peak_requests": int(per_window.max()) if len(per_window) else 0}


def read_comparison(run_dir: str | Path) -> pd.DataFrame | None:
    """The comparison table of the sweep in `run_dir`, None when it has none."""
    path = Path(run_dir) / TABLE / PART_FILE
    return pq.read_table(path).to_pandas() if path.is_file() else None
