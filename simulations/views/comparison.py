"""A sweep's `comparison` table: one row per variant, its varied values and its figures side by side
(docs/tables.md#comparison), written by `coordsim sweep` once the run's tables are.

Every figure is one a run already defines, taken over the variant's rows: the `metrics` table's, summed or
spread over the variant's groups exactly as `coordsim run`'s summary does it per group set
(`simulations.scenarios.summary.Figures`); and the busiest broker-window of its `coordinator_load` rows
(requests of every API in one window, the table's own window: 1 s), the peak a broker's coordinator must
take. Rows are in the sweep's order (the first axis varying slowest).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulations.scenarios.summary import METRICS_COLUMNS as SUMMARY_COLUMNS, Figures
from simulations.scenarios.sweep import Sweep
from state.metrics import nearest_rank
from state.tables import COMPARISON, parse_type
from state.variants import VARIANT
from tableio.coordinator_load import TABLE as LOAD_TABLE
from tableio.parquet import PART_FILE, arrow_type, output_errors, read_columns

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
                                              "value"]).to_pandas()
    rows = []
    for variant in sweep.variants:
        shown = figures[variant.name]
        rows.append({VARIANT: variant.name, **variant.values, "groups": groups[variant.name],
                     **_rebalances(shown), "unconsumed_partition_ms": shown.unconsumed_partition_ms,
                     "duplicate_records": shown.duplicate_records, "failed_commits": shown.failed_commits,
                     **_peak(load[load[VARIANT] == variant.name])})
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


def _peak(load: pd.DataFrame) -> dict:
    """The busiest (broker, window) by requests of every API, as `coordsim capacity` counts them: brokers
    with an id when the run has a cluster (FindCoordinator, which any broker answers, is not one broker's),
    the one coordinator (a null id) when it has none. Ties go to the lower broker id, then the earlier window."""
    requests = load[load["measure"] == "requests"]
    if requests["broker_id"].notna().any():
        requests = requests[requests["broker_id"].notna()]
    if requests.empty:
        return {"peak_broker_id": None, "peak_broker_requests": None, "peak_window_start_ts": None,
                "window_ms": None}
    per_window = (requests.assign(broker=requests["broker_id"].astype("float64").fillna(-1))
                  .groupby(["broker", "window_start_ts", "window_ms"], as_index=False)["value"].sum()
                  .sort_values(["value", "broker", "window_start_ts"], ascending=[False, True, True]))
    top = per_window.iloc[0]
    return {"peak_broker_id": None if top["broker"] == -1 else int(top["broker"]),
            "peak_broker_requests": int(top["value"]), "peak_window_start_ts": int(top["window_start_ts"]),
            "window_ms": int(top["window_ms"])}


def read_comparison(run_dir: str | Path) -> pd.DataFrame | None:
    """The comparison table of the sweep in `run_dir`, None when it has none."""
    path = Path(run_dir) / TABLE / PART_FILE
    return pq.read_table(path).to_pandas() if path.is_file() else None
