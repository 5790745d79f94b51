"""The output tables as Parquet: `OUT/<table>/part-00000.parquet`, one file per table, always all of them.

The Arrow schema of each table is derived from `state.tables`, the single declaration both engines share.
Files are byte-identical for identical rows: rows are sorted by `state.tables.SORT_KEYS` before writing and
nothing that varies between runs (wall-clock time, host, pandas metadata) goes into the file. Every file
is written by one `PartFileWriter`, fed sorted rows in pieces of any size: `write_tables` (row dicts, the
local engine) and `write_arrow_tables` (Arrow tables in any row order and chunking) give it a whole table at
once; the Spark engine's out-of-core compaction (`streaming.compaction`) gives it one range of groups at a
time.
"""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tableio.heap import long_lived_heap
from state.tables import SORT_KEYS, TABLES, columns, parse_type, table_spec
from state.variants import VARIANT

PART_FILE = "part-00000.parquet"
# Rows per row group: pyarrow's own default, so files keep the bytes they had when written in one call.
ROW_GROUP_ROWS = 1 << 20

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


# Built once per table: the Spark engine's executors convert every step call's rows with it. `sweep`: the
# table of a sweep, with its `variant` column first (state.tables.table_spec).
@functools.lru_cache(maxsize=None)
def arrow_schema(table: str, sweep: bool = False) -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(parse_type(spec))) for name, spec in table_spec(table, sweep)])


def rows_to_arrow(table: str, rows: list[dict], sweep: bool = False) -> pa.Table:
    """`rows` as an Arrow table of `table`'s schema, in the given order."""
    expected = set(columns(table, sweep))
    seen = set().union(*rows) if rows else expected
    if seen != expected:
        # A core row with a column the contract lacks (or without one it has) is a bug, not user input.
        raise ValueError(f"{table} rows do not match state.tables: extra {sorted(seen - expected)}, "
                         f"missing {sorted(expected - seen)}")
    return pa.Table.from_pylist(rows, schema=arrow_schema(table, sweep))


def sort_table(table: str, data: pa.Table) -> pa.Table:
    """`data` sorted by the table's SORT_KEYS (a sweep's by variant first), in one chunk per column: the same
    file whatever order and chunking the rows came in."""
    keys = ((VARIANT,) if VARIANT in data.schema.names else ()) + SORT_KEYS[table]
    # Nulls first, so a null key cannot make the order depend on the rows' arrival order; the sort is stable.
    order = pc.sort_indices(data, sort_keys=[(key, "ascending", "at_start") for key in keys])
    return data.take(order).combine_chunks()


def to_arrow(table: str, rows: list[dict], sweep: bool = False) -> pa.Table:
    return sort_table(table, rows_to_arrow(table, rows, sweep))


@long_lived_heap()
def write_tables(out_dir: str | os.PathLike, tables: Mapping[str, list[dict]]) -> Path:
    """Write every table of `state.tables.TABLES` (missing ones empty) under `out_dir`; returns the folder.

    A table folder's other Parquet files are removed first, so a reader of the folder never mixes in parts
    of an earlier run."""
    _check_names(tables)
    return write_arrow_tables(out_dir, {name: rows_to_arrow(name, list(tables.get(name, ()))) for name in TABLES})


def write_arrow_tables(out_dir: str | os.PathLike, tables: Mapping[str, pa.Table]) -> Path:
    """`write_tables` for Arrow tables of `arrow_schema(name)`, rows in any order: the same bytes for the
    same rows."""
    _check_names(tables)
    out = Path(out_dir)
    arrow_tables = {}
    for name in TABLES:
        data = tables[name] if name in tables else arrow_schema(name).empty_table()
        if not data.schema.equals(arrow_schema(name)):
            raise ValueError(f"{name}: Arrow schema differs from state.tables: {data.schema}")
        arrow_tables[name] = sort_table(name, data)
    with output_errors(out):
        out.mkdir(parents=True, exist_ok=True)
        for name, data in arrow_tables.items():
            with PartFileWriter(out, name) as writer:
                writer.write(data)
    return out


class PartFileWriter:
    """`OUT/<table>/part-00000.parquet` from the table's rows in table order, handed over in sorted pieces
    of any size and chunking (a piece follows the previous one in the order). Row groups hold exactly
    ROW_GROUP_ROWS rows (the last one fewer) and are written from one contiguous chunk, so the file's bytes
    depend on its rows alone; the writer holds at most one row group. The folder's other Parquet files are
    removed first, so a reader of the folder never mixes in parts of an earlier run."""

    def __init__(self, out_dir: Path, table: str, sweep: bool = False) -> None:
        self.schema = arrow_schema(table, sweep)
        folder = out_dir / table
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.parquet"):
            if stale.name != PART_FILE:
                stale.unlink()
        self._file = pq.ParquetWriter(folder / PART_FILE, self.schema, compression="zstd")
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self.rows = 0  # rows in the file so far

    def write(self, piece: pa.Table) -> None:
        self._pending.append(piece)
        self._pending_rows += piece.num_rows
        while self._pending_rows >= ROW_GROUP_ROWS:
            pending = pa.concat_tables(self._pending)
            self._row_group(pending.slice(0, ROW_GROUP_ROWS))
            rest = pending.slice(ROW_GROUP_ROWS)
            self._pending, self._pending_rows = [rest], rest.num_rows

    def _row_group(self, rows: pa.Table) -> None:
        self._file.write_table(rows.combine_chunks(), row_group_size=ROW_GROUP_ROWS)
        self.rows += rows.num_rows

    def close(self) -> None:
        # An empty table still gets its one empty row group, as pyarrow's write_table writes it.
        if self._pending_rows or self.rows == 0:
            self._row_group(pa.concat_tables(self._pending) if self._pending else self.schema.empty_table())
        self._pending = []
        self._file.close()

    def __enter__(self) -> "PartFileWriter":
        return self

    def __exit__(self, failure, *details) -> None:
        if failure is None:
            self.close()
        else:
            self._file.close()


@contextlib.contextmanager
def output_errors(target: Path, noun: str = "the output folder") -> Iterator[None]:
    """File-system errors while writing `target` (`noun` says what it is) as OutputError, saying what is wrong
    with the path."""
    try:
        yield
    except OSError as error:
        raise OutputError(f"cannot write {noun} {target}: {path_problem(error, Path(target))}") from None


def make_folder(folder: str | os.PathLike, noun: str = "the output folder") -> Path:
    """Create `folder` (and its parents) if needed, before anything is written there; returns it."""
    folder = Path(folder)
    with output_errors(folder, noun):
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def path_problem(error: OSError, target: Path) -> str:
    """What is wrong with the path whose writing failed with `error`: the file in the way of a folder (the
    system only says "Not a directory" or "File exists"), else the system's reason."""
    failed = Path(error.filename) if error.filename else target
    for path in reversed(failed.parents):
        if path.exists() and not path.is_dir():
            return f"{path} is not a folder"
    if isinstance(error, (FileExistsError, NotADirectoryError)) and failed.exists() and not failed.is_dir():
        return f"{failed} is not a folder"
    if isinstance(error, IsADirectoryError):
        return f"{failed} is a folder"
    return error.strerror or str(error)


class WrittenTables(Mapping):
    """A run's tables as written under its output folder, each read as row dicts on first access: a run's
    summary reads a few small tables, and a storm's large ones would not fit in memory as dicts."""

    def __init__(self, out: Path | None = None, rows: Mapping[str, int] | None = None) -> None:
        self.out = out
        self.rows = dict(rows or {})
        self._read: dict[str, list[dict]] = {}

    def __getitem__(self, name: str) -> list[dict]:
        if name not in self.rows:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = pq.read_table(self.out / name / PART_FILE).to_pylist()
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def row_count(self, name: str) -> int:
        return self.rows[name]


def _check_names(tables: Mapping) -> None:
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"not output tables: {sorted(unknown)}")


def read_columns(out_dir: str | os.PathLike, table: str, names: list[str]) -> pa.Table:
    """Some columns of a written table, as Arrow: for figures over tables too large for row dicts."""
    return pq.read_table(Path(out_dir) / table / PART_FILE, columns=names)


def written_rows(out_dir: str | os.PathLike, table: str) -> int:
    return pq.read_metadata(Path(out_dir) / table / PART_FILE).num_rows


def read_table(out_dir: str | os.PathLike, table: str):
    """One table as a pandas DataFrame; integer and boolean columns keep their nulls (nullable dtypes)."""
    import pandas as pd  # only readers of results need pandas; the CLI's replay path does not

    nullable = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    data = pq.read_table(Path(out_dir) / table, schema=arrow_schema(table, is_sweep(out_dir, table)))
    return data.to_pandas(types_mapper=nullable.get)


def is_sweep(out_dir: str | os.PathLike, table: str = "responses") -> bool:
    """Whether the run under `out_dir` is a sweep: its tables have a `variant` column."""
    path = Path(out_dir) / table / PART_FILE
    return path.is_file() and VARIANT in pq.read_schema(path).names


def variant_rows(data, variant: str | None):
    """The rows of a sweep's `variant` (an Arrow table or record batch read with its variant column), without
    that column; all of them outside a sweep (`variant` None)."""
    if variant is None:
        return data
    data = data.filter(pc.equal(data[VARIANT], variant))
    return data.select([name for name in data.schema.names if name != VARIANT])
