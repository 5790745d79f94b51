"""The output tables as Parquet: `OUT/<table>/part-00000.parquet`, one file per table, always all of them.

The Arrow schema of each table is derived from `state.tables`, the single declaration both engines share.
Files are byte-identical for identical rows: rows are sorted by `state.tables.SORT_KEYS` before writing and
nothing that varies between runs (wall-clock time, host, pandas metadata) goes into the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from state.tables import SORT_KEYS, TABLES, columns, parse_type

PART_FILE = "part-00000.parquet"

_SCALARS = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
}


class OutputError(Exception):
    """The output folder cannot be created or written."""


def arrow_type(spec) -> pa.DataType:
    """Arrow type of a parsed `state.tables` type (see `parse_type`)."""
    kind = spec[0]
    if kind == "list":
        return pa.list_(arrow_type(spec[1]))
    if kind == "struct":
        return pa.struct([pa.field(name, arrow_type(sub)) for name, sub in spec[1]])
    return _SCALARS[kind]


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(parse_type(spec))) for name, spec in TABLES[table]])


def sorted_rows(table: str, rows: list[dict]) -> list[dict]:
    keys = SORT_KEYS[table]
    # None sorts first, so a null key cannot make the order depend on the rows' arrival order.
    return sorted(rows, key=lambda row: tuple((row[k] is not None, row[k]) for k in keys))


def to_arrow(table: str, rows: list[dict]) -> pa.Table:
    expected = set(columns(table))
    seen = set().union(*rows) if rows else expected
    if seen != expected:
        # A core row with a column the contract lacks (or without one it has) is a bug, not user input.
        raise ValueError(f"{table} rows do not match state.tables: extra {sorted(seen - expected)}, "
                         f"missing {sorted(expected - seen)}")
    return pa.Table.from_pylist(sorted_rows(table, rows), schema=arrow_schema(table))


def write_tables(out_dir: str | os.PathLike, tables: Mapping[str, list[dict]]) -> Path:
    """Write every table of `state.tables.TABLES` (missing ones empty) under `out_dir`; returns the folder.

    A table folder's other Parquet files are removed first, so a reader of the folder never mixes in parts
    of an earlier run."""
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"not output tables: {sorted(unknown)}")
    out = Path(out_dir)
    arrow_tables = {name: to_arrow(name, list(tables.get(name, ()))) for name in TABLES}
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, data in arrow_tables.items():
            folder = out / name
            folder.mkdir(exist_ok=True)
            for stale in folder.glob("*.parquet"):
                if stale.name != PART_FILE:
                    stale.unlink()
            pq.write_table(data, folder / PART_FILE, compression="zstd")
    except FileExistsError as error:
        raise OutputError(f"cannot write the output folder {out}: {error.filename} is not a folder") from None
    except NotADirectoryError:
        raise OutputError(f"cannot write the output folder {out}: part of the path is a file, not a folder") from None
    except OSError as error:
        raise OutputError(f"cannot write the output folder {out}: {error.strerror or error}") from None
    return out


def read_table(out_dir: str | os.PathLike, table: str):
    """One table as a pandas DataFrame; integer and boolean columns keep their nulls (nullable dtypes)."""
    import pandas as pd  # only readers of results need pandas; the CLI's replay path does not

    nullable = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    data = pq.read_table(Path(out_dir) / table, schema=arrow_schema(table))
    return data.to_pandas(types_mapper=nullable.get)
