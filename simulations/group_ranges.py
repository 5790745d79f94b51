"""A run's tables one range of groups at a time, for readers whose memory must not grow with the run.

Every table except `rejects` is written sorted by group_id in row groups (`tableio.parquet`), so
the rows of a range of groups are a few row groups of each file, found from the row groups' group_id
statistics. `group_ranges` cuts the groups into ranges of about ROWS_PER_RANGE rows of the run's largest
table; `read_rows` reads one range of a file. A table without a string group_id column (`rejects`, or a
table written wrong) has no ranges: it is read whole with the first range, and has no rows in the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tableio.parquet import PART_FILE
from state.tables import TABLES

GROUP = "group_id"
# Rows of the run's largest table per range of groups. A range's tables in pandas (every table's rows of
# those groups, nested columns as Python objects) take about 1.5 GB at this size (docs/benchmarks.md).
ROWS_PER_RANGE = 250_000
# Rows read from a file at a time before the rows outside the range are dropped.
BATCH_ROWS = 65_536


@dataclass(frozen=True)
class GroupRange:
    """The groups with lo <= group_id < hi (None: unbounded). The first range (lo None) also holds the rows
    without a group_id, so that every row of a table is in exactly one range."""
    lo: str | None
    hi: str | None

    @property
    def first(self) -> bool:
        return self.lo is None

    def holds(self, group_id: str | None) -> bool:
        if group_id is None:
            return self.first
        return (self.lo is None or group_id >= self.lo) and (self.hi is None or group_id < self.hi)


WHOLE = GroupRange(None, None)


def group_ranges(run_dir: Path, rows_per_range: int | None = None) -> list[GroupRange]:
    """Ranges of groups covering every group id, each with about `rows_per_range` rows (default
    ROWS_PER_RANGE) of the run's largest table (more when one group alone has more)."""
    rows_per_range = rows_per_range or ROWS_PER_RANGE
    largest, most = None, 0
    for name in TABLES:
        try:
            file = pq.ParquetFile(run_dir / name / PART_FILE)
        except (OSError, pa.ArrowException):
            continue
        if _ranged(file.schema_arrow) and file.metadata.num_rows > most:
            largest, most = file, file.metadata.num_rows
    if largest is None or most <= rows_per_range:
        return [WHOLE]
    cuts, seen = set(), 0
    for index in range(largest.num_row_groups):
        ids = largest.read_row_group(index, columns=[GROUP])[GROUP]
        # The group at every rows_per_range-th row starts a range (the rows of a group stay together).
        positions = range(-seen % rows_per_range if seen else rows_per_range, len(ids), rows_per_range)
        cuts.update(value for value in ids.take(pa.array(positions, pa.int64())).to_pylist() if value is not None)
        seen += len(ids)
    bounds = [None, *sorted(cuts), None]
    return [GroupRange(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


def _ranged(schema: pa.Schema) -> bool:
    index = schema.get_field_index(GROUP)
    return index >= 0 and pa.types.is_string(schema.field(index).type)


def read_rows(path: Path, groups: GroupRange, columns: list[str] | None = None) -> pa.Table:
    """The rows of `groups` in the Parquet file at `path` (only `columns`, when given)."""
    if groups == WHOLE:
        return pq.read_table(path, columns=columns)
    file = pq.ParquetFile(path)
    if not _ranged(file.schema_arrow):
        return pq.read_table(path, columns=columns) if groups.first else _empty(file.schema_arrow, columns)
    leaf = next(i for i in range(file.metadata.num_columns) if file.metadata.schema.column(i).path == GROUP)
    chosen = [index for index in range(file.num_row_groups)
              if _may_hold(file.metadata.row_group(index).column(leaf).statistics, groups)]
    wanted = None if columns is None else list(dict.fromkeys([*columns, GROUP]))
    # Row groups are large (a million rows): they are read a batch at a time, each batch cut to the range.
    pieces = [_inside(batch, groups) for batch in file.iter_batches(BATCH_ROWS, chosen, wanted)] if chosen else []
    schema = _empty(file.schema_arrow, wanted).schema
    data = pa.Table.from_batches(pieces, schema).combine_chunks() if pieces else schema.empty_table()
    return data if columns is None else data.select(columns)


def _inside(batch: pa.RecordBatch, groups: GroupRange) -> pa.RecordBatch:
    ids = batch.column(GROUP)
    inside = [compare(ids, pa.scalar(bound)) for bound, compare in ((groups.lo, pc.greater_equal),
                                                                   (groups.hi, pc.less)) if bound is not None]
    keep = pc.fill_null(inside[0] if len(inside) == 1 else pc.and_(*inside), False)
    if groups.first:
        keep = pc.or_(keep, pc.is_null(ids))
    return batch.filter(keep)


def _empty(schema: pa.Schema, columns: list[str] | None) -> pa.Table:
    return schema.empty_table() if columns is None else schema.empty_table().select(columns)


def _may_hold(statistics, groups: GroupRange) -> bool:
    """Whether a row group may have rows of `groups`, from its group_id statistics (yes when it has none)."""
    if statistics is None or not statistics.has_min_max:
        return True
    if groups.first and statistics.null_count:
        return True
    return ((groups.hi is None or statistics.min < groups.hi)
            and (groups.lo is None or statistics.max >= groups.lo))
