"""A run's tables exactly as written, for validation: no cast to the contract's schema on the way in (that
would hide a wrong type), integer and boolean columns with their nulls, nested columns as Python lists.
A run too large for memory is read one range of groups at a time (`simulations.group_ranges`); rows still in
memory (a test's) are read the same way.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulations.group_ranges import GroupRange, read_rows
from tableio.parquet import PART_FILE, arrow_schema
from simulations.views.run_tables import NULLABLE
from state.tables import TABLES


def read_range(run_dir: Path, groups: GroupRange) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The rows of `groups` of every table (a table without ranges: whole in the first range, empty in the
    others), and {table: why not} for the tables that cannot be read."""
    tables, problems = {}, {}
    for name in TABLES:
        path = run_dir / name / PART_FILE
        if not path.is_file():
            problems[name] = f"missing: no {name}/{PART_FILE}"
            continue
        try:
            data = read_rows(path, groups)
        except (OSError, pa.ArrowException) as error:
            problems[name] = f"unreadable: {error}"
            continue
        tables[name] = _pandas(data)
    return tables, problems


def read_file(path: Path) -> pd.DataFrame:
    """A whole table file exactly as written (a sweep's `comparison` table, outside the ranges)."""
    return _pandas(pq.read_table(path))


def rows_frame(table: str, rows: list[dict]) -> pd.DataFrame:
    """Row dicts of `table`, as the engines write them, read back as a range of the run would be."""
    return _pandas(pa.Table.from_pylist(rows, schema=arrow_schema(table)))


def _pandas(data: pa.Table) -> pd.DataFrame:
    frame = data.to_pandas(types_mapper=NULLABLE.get)
    for index, column in enumerate(data.schema):
        if pa.types.is_list(column.type):
            # Arrow lists become numpy arrays in pandas; a plain list is what a type check can name.
            frame[column.name] = pd.Series(data.column(index).to_pylist(), index=frame.index, dtype=object)
    return frame
