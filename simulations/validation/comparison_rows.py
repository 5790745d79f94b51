"""A sweep's `comparison` row of one variant, checked when the variant is: its suite (`conf/expectations/
comparison.yaml`, after the schema of `state/tables.py` COMPARISON), and its figures recomputed from the
variant's own tables (docs/tables.md#comparison says how each is defined):

- `groups`: the variant's `metrics` rows; `rebalances`, `rebalances_after_formation`, `failed_commits`,
  `duplicate_records` and `unconsumed_partition_ms`: their sums (null when no group has the figure);
  `rebalance_ms_p99` and `_max`: nearest rank over every group's `rebalance_durations`;
- `peak_broker_requests`: the most requests one broker received in one `coordinator_load` window (brokers with
  an id in a run with a cluster); `find_coordinator_requests`: every FindCoordinator request;
- `coordinator_moves` and `groups_without_coordinator`: the `coordinator_unload` rows of `group_states` and the
  groups they concern.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulations.validation.result import Check
from simulations.validation.suites import COMPARISON_TABLE, Suites
from simulations.validation.raw_tables import read_file
from state.metrics import merged, nearest_rank
from state.variants import VARIANT
from tableio.coordinator_load import FIND_COORDINATOR, TABLE as LOAD_TABLE
from tableio.parquet import PART_FILE, read_table

NAME = "the comparison row is its variant's figures"
SUMS = ("rebalances", "rebalances_after_formation", "failed_commits", "duplicate_records", "unconsumed_partition_ms")


def comparison_checks(run_dir: str | Path, variant: str, variant_dir: Path) -> list[Check]:
    """The checks of `variant`'s row of the comparison table of the sweep in `run_dir`; `variant_dir` holds the
    variant's tables as a run of their own."""
    path = Path(run_dir) / COMPARISON_TABLE / PART_FILE
    if not path.is_file():
        return [Check("suite", f"{COMPARISON_TABLE}: table", False,
                      f"missing: no {COMPARISON_TABLE}/{PART_FILE}")]
    table = read_file(path)
    rows = table[table[VARIANT] == variant]
    if len(rows) != 1:
        return [Check("suite", f"{COMPARISON_TABLE}: table", False, f"{len(rows)} rows of variant {variant}")]
    suites = Suites()
    suites.add({COMPARISON_TABLE: rows.reset_index(drop=True)})
    try:
        wrong = _disagreement(rows.iloc[0], variant_dir)
    except (KeyError, TypeError, ValueError) as error:
        return [*suites.checks(), Check("invariant", NAME, False, f"cannot check: {type(error).__name__}: {error}")]
    return [*suites.checks(), Check("invariant", NAME, wrong is None, wrong or "")]


def _disagreement(row: pd.Series, variant_dir: Path) -> str | None:
    metrics = read_table(variant_dir, "metrics")
    expected = {"groups": len(metrics)}
    for column in SUMS:
        present = metrics[column].dropna()
        expected[column] = int(present.sum()) if len(present) else None
    durations = merged(metrics["rebalance_durations"])
    expected["rebalance_ms_p99"], expected["rebalance_ms_max"] = nearest_rank(durations, 99), nearest_rank(durations, 100)
    load = read_table(variant_dir, LOAD_TABLE)
    requests = load[load["measure"] == "requests"]
    expected["find_coordinator_requests"] = int(requests.loc[requests["name"] == FIND_COORDINATOR, "value"].sum())
    if requests["broker_id"].notna().any():
        requests = requests[requests["broker_id"].notna()]
    per_window = requests.groupby([requests["broker_id"].astype("float64").fillna(-1), "window_start_ts"])["value"].sum()
    expected["peak_broker_requests"] = int(per_window.max()) if len(per_window) else None
    states = read_table(variant_dir, "group_states")
    unloads = states[states["cause"] == "coordinator_unload"]
    expected["coordinator_moves"], expected["groups_without_coordinator"] = len(unloads), unloads["group_id"].nunique()
    for column, value in expected.items():
        stated = None if pd.isna(row[column]) else int(row[column])
        if stated != value:
            return f"{column} {stated}, the variant's tables give {value}"
    return None
