"""Compaction of a Spark run: every committed micro-batch's rows (`streaming.sink`) into one sorted Parquet
file per table, `OUT/<table>/part-00000.parquet`, byte-identical to the local engine's, in memory bounded by
about RANGE_ROWS rows of a table whatever the size of the run.

A storm hour of 10,000 groups writes about 38 million rows: held at once, then sorted, they need more memory
than the machine has. So the group tables are sorted by distribution, through spill files:
1. split: the run's group keys (group ids; in a sweep variant and group id, state/variants.py), sorted, are
   cut into ranges of equal group counts, enough ranges for the
   largest table to have about RANGE_ROWS rows per range. Each table's rows are decoded piece by piece
   (PIECE_ENVELOPES envelope rows at a time) and appended to its range's spill file, an Arrow IPC stream
   under `OUT/_compaction/`;
2. write: range after range, in group-id order, each table's spill is read back, sorted by the table's
   SORT_KEYS and handed to its `PartFileWriter`, which cuts the same row groups whatever the pieces. The
   `lag_status` rows of a range's groups are derived from the range's offsets, group_metadata and
   log_end_offsets rows (each group is judged on its own rows, so on every core: `tableio.lag_pool`).
Rejects (input rows with no group) are sorted in memory, one row per rejected input line. Last, the
`coordinator_load` table is derived from the written tables (`tableio.coordinator_load`).

On a machine with more than one core the largest tables (`requests` and `responses`, most of a run's rows)
are each split, sorted and written by a forked child of their own (`_lane`) while this process does the
other tables and the lag status: the same steps on the same rows, so the same bytes, each process still
holding about RANGE_ROWS rows of a table.
"""

from __future__ import annotations

import bisect
import math
import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tableio.parquet import PartFileWriter, arrow_schema, output_errors, sort_table, to_arrow, variant_rows
from tableio.coordinator_load import TABLE as LOAD_TABLE
from tableio.coordinator_load import write_coordinator_load
from tableio.lag_pool import lag_status_rows_on_every_core
from tableio.lag_status import INPUT_COLUMNS
from state.tables import GROUP_TABLES, TABLES
from state.variants import SEPARATOR, VARIANT, tag
from streaming import sink

SPILL_DIR = "_compaction"
# Rows of one table sorted at once. A range of the largest table is read, sorted (a copy) and written; the
# lag status holds a range of offsets rows as Python dicts, about 1 KB each.
RANGE_ROWS = 1_000_000
# Envelope rows decoded at once in the split; an envelope carries at most the step's ROWS_PER_FRAME rows.
PIECE_ENVELOPES = 16
# Tables of at least this many rows get a child process of their own, at most one per core.
LANE_ROWS = 200_000


def compact(batches: Path, out: Path, group_ids: Sequence[str], final: int | None,
            variants: Sequence[str] | None = None) -> dict[str, int]:
    """Write every table of the committed batches under `batches` to `out`; `group_ids`: the run's group keys
    (any order; rows of other groups are placed all the same); `variants`: a sweep's, sorted. Returns the
    rows written per table."""
    sweep = variants is not None
    totals = {table: _committed_rows(batches, table) for table in GROUP_TABLES}
    ranges = GroupRanges.cut(sorted(group_ids), math.ceil(max(totals.values(), default=0) / RANGE_ROWS))
    spill = out / SPILL_DIR
    cores = os.cpu_count() or 1
    lanes = [table for table in sorted(totals, key=totals.get, reverse=True)[:cores if cores > 1 else 0]
             if totals[table] >= LANE_ROWS and table not in INPUT_COLUMNS]
    here = [table for table in GROUP_TABLES if table not in lanes]
    with output_errors(out):
        shutil.rmtree(spill, ignore_errors=True)  # left by a compaction that was killed
        with ProcessPoolExecutor(len(lanes) or 1, mp_context=multiprocessing.get_context("fork")) as pool:
            children = {table: pool.submit(_lane, batches, out, table, ranges, sweep) for table in lanes}
            written = {name: PartFileWriter(out, name, sweep) for name in TABLES if name not in lanes}
            for table in here:
                _split(batches, table, ranges, spill / table, sweep)
            lag_rows = []
            for index in range(ranges.count):
                lag_inputs = {}
                for table in here:
                    part = sort_table(table, _read_spill(spill / table, index))
                    written[table].write(part)
                    if table in INPUT_COLUMNS:
                        lag_inputs[table] = part
                lag_rows += _lag_rows(lag_inputs, final, variants)
            written["lag_status"].write(to_arrow("lag_status", lag_rows, sweep))
            written["rejects"].write(sort_table("rejects", sink.committed_table(batches, "rejects", sweep)))
            for name, writer in written.items():
                if name != LOAD_TABLE:
                    writer.close()
            counts = {table: child.result() for table, child in children.items()}
        write_coordinator_load(out, final, written[LOAD_TABLE], variants)
        shutil.rmtree(spill)
    counts.update((name, writer.rows) for name, writer in written.items())
    return {name: counts[name] for name in TABLES}


def _lane(batches: Path, out: Path, table: str, ranges: "GroupRanges", sweep: bool) -> int:
    """One table split, sorted range by range and written, in a child process; returns its rows."""
    folder = out / SPILL_DIR / table
    _split(batches, table, ranges, folder, sweep)
    with PartFileWriter(out, table, sweep) as writer:
        for index in range(ranges.count):
            writer.write(sort_table(table, _read_spill(folder, index)))
    return writer.rows


class GroupRanges:
    """Consecutive ranges of group ids: range i holds the ids from bounds[i - 1] (inclusive) up to bounds[i]
    (exclusive); the first also holds a null group id, which sorts first."""

    def __init__(self, bounds: list[str]) -> None:
        self.bounds = bounds
        self.count = len(bounds) + 1

    @classmethod
    def cut(cls, sorted_ids: Sequence[str], count: int) -> "GroupRanges":
        """At most `count` ranges of about equal numbers of `sorted_ids`."""
        count = max(1, min(count, len(sorted_ids)))
        return cls([sorted_ids[i * len(sorted_ids) // count] for i in range(1, count)])

    def of(self, group_ids: pa.ChunkedArray) -> np.ndarray:
        """The range of each id (group key), from the distinct ids: a piece holds few groups."""
        encoded = pc.dictionary_encode(group_ids.combine_chunks())
        per_id = np.array([bisect.bisect_right(self.bounds, g) for g in encoded.dictionary.to_pylist()] or [0],
                          dtype=np.int64)
        indices = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
        # A null id (dictionary_encode keeps it out of the dictionary) belongs to the first range.
        return np.where(encoded.indices.is_null().to_numpy(zero_copy_only=False), 0, per_id[indices])


def _committed_rows(batches: Path, table: str) -> int:
    return sum(pq.read_table(sink.table_folder(batches, batch_id, table), columns=["rows"],
                             partitioning=None)["rows"].to_numpy().sum()
               for batch_id in sink.committed_batches(batches)
               if sink.table_folder(batches, batch_id, table).exists())


def _split(batches: Path, table: str, ranges: GroupRanges, folder: Path, sweep: bool) -> None:
    """Every committed row of `table` into the spill file of its group's range."""
    folder.mkdir(parents=True)
    schema = arrow_schema(table, sweep)
    spills = {index: pa.ipc.new_stream(str(folder / f"{index}.arrow"), schema) for index in range(ranges.count)}
    try:
        for batch_id in sink.committed_batches(batches):
            part = sink.table_folder(batches, batch_id, table)
            for path in sorted(part.glob("*.parquet")) if part.exists() else ():
                for envelopes in pq.ParquetFile(path).iter_batches(PIECE_ENVELOPES, columns=["payload"]):
                    rows = sink.decode_table(table, b"".join(envelopes.column(0).to_pylist()), sweep)
                    _spill(rows, ranges, spills)
    finally:
        for writer in spills.values():
            writer.close()


def _spill(rows: pa.Table, ranges: GroupRanges, spills: Mapping[int, pa.ipc.RecordBatchStreamWriter]) -> None:
    if ranges.count == 1:
        spills[0].write_table(rows)
        return
    of = ranges.of(_group_keys(rows))
    order = np.argsort(of, kind="stable")
    rows = rows.take(pa.array(order))
    starts = np.searchsorted(of[order], np.arange(ranges.count + 1))
    for index in range(ranges.count):
        if starts[index + 1] > starts[index]:
            spills[index].write_table(rows.slice(starts[index], starts[index + 1] - starts[index]))


def _group_keys(rows: pa.Table) -> pa.ChunkedArray:
    """The rows' group keys (`state.variants.group_key`): the group ids, in a sweep joined to the variants."""
    if VARIANT not in rows.schema.names:
        return rows["group_id"]
    return pc.binary_join_element_wise(rows[VARIANT], rows["group_id"], SEPARATOR)


def _lag_rows(tables: Mapping[str, pa.Table], final: int | None, variants: Sequence[str] | None) -> list[dict]:
    """The lag status of a range's groups, in a sweep variant by variant (a group is its variant's)."""
    if variants is None:
        return lag_status_rows_on_every_core(tables, final)
    rows = []
    for variant in variants:
        part = lag_status_rows_on_every_core({name: variant_rows(data, variant) for name, data in tables.items()},
                                            final)
        tag({"lag_status": part}, variant)
        rows += part
    return rows


def _read_spill(folder: Path, index: int) -> pa.Table:
    with pa.ipc.open_stream(str(folder / f"{index}.arrow")) as reader:
        return reader.read_all()
