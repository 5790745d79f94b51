"""A run's tables exactly as written, for validation: no cast to the contract's schema on the way in (that
would hide a wrong type), integer and boolean columns with their nulls, nested columns as Python lists."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulations.parquet_tables import PART_FILE
from simulations.views.run_tables import NULLABLE
from state.tables import TABLES


def read_raw(run_dir: Path) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """(tables that could be read, {table: why not} for the others)."""
    tables, problems = {}, {}
    for name in TABLES:
        path = run_dir / name / PART_FILE
        if not path.is_file():
            problems[name] = f"missing: no {name}/{PART_FILE}"
            continue
        try:
            data = pq.read_table(path)
        except (OSError, pa.ArrowException) as error:
            problems[name] = f"unreadable: {error}"
            continue
        frame = data.to_pandas(types_mapper=NULLABLE.get)
        for index, column in enumerate(data.schema):
            if pa.types.is_list(column.type):
                # Arrow lists become numpy arrays in pandas; a plain list is what a type check can name.
                frame[column.name] = pd.Series(data.column(index).to_pylist(), index=frame.index, dtype=object)
        tables[name] = frame
    return tables, problems
