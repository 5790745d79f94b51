"""Fixtures of the Spark engine tests: the local engine's tables as the oracle (the SparkSession they share is
tests/conftest.py's)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from simulations.engines.local import run_local
from tableio.inputs import read_events
from tableio.parquet import PART_FILE, write_tables
from state.config import CoordinatorConfig
from state.tables import TABLES

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "simulations" / "samples" / "sample-trace.jsonl"


def local_run(paths, out_dir: Path, config: CoordinatorConfig, until: int | None = None):
    """What `coordsim replay --engine local` writes for `paths` (the folder), and its RunResult."""
    rows = read_events(paths)
    result = run_local(rows.events, config, until)
    write_tables(out_dir, dict(result.tables, rejects=rows.rejects + result.tables["rejects"]))
    return out_dir, result


def assert_same_counts(spark_result, local_result) -> None:
    for name in ("groups", "events_applied", "events_after_until", "final_ts"):
        assert getattr(spark_result, name) == getattr(local_result, name), name


def assert_same_tables(expected_dir: Path, actual_dir: Path, tables=tuple(TABLES)) -> None:
    """Row for row first (a readable failure), then byte for byte."""
    for table in tables:
        expected, actual = expected_dir / table / PART_FILE, actual_dir / table / PART_FILE
        assert pq.read_table(actual).to_pylist() == pq.read_table(expected).to_pylist(), f"table {table}"
        assert actual.read_bytes() == expected.read_bytes(), f"{table}: same rows, different bytes"
