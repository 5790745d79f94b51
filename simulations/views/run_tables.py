"""A run folder's output tables as pandas DataFrames, whether the run has finished or is still writing.

A finished run (either engine) has `OUT/<table>/part-00000.parquet` for every table. A Spark run that is
still going has only its sink's committed micro-batches under `OUT/_batches/` (see `streaming.sink`); they
are read through the sink's commit log, so files of a batch that a kill cut short are never seen, with what
the groups' live snapshots say is still open at the time the batches reached (`live_rows`): the tables as
the run's history will read at that time, which is the run's end for every view. The run record
`OUT/_run.json`, written after compaction, says the part files are complete and wins over the batches.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from simulations.group_ranges import WHOLE, GroupRange, group_ranges, read_rows
from tableio.parquet import PART_FILE, arrow_schema, read_table, sort_table, to_arrow, variant_rows
from simulations.views.quiet_runs import last_repeat
from state.tables import TABLES
from state.variants import VARIANT
from tableio.run_record import RUN_FILE, read_run_record

BATCHES = "_batches"
# What a Spark run is (its inputs and settings, a sweep's variants), written when it starts.
SPARK_IDENTITY = Path("_checkpoints") / "run.json"

# Every column that holds a time of the simulated clock, per table: what "the end of the run" is made of.
TIME_COLUMNS = {
    "responses": ("request_ts", "response_ts"),
    "generations": ("rebalance_start_ts", "join_complete_ts", "stable_ts"),
    "assignments": ("assign_ts",),
    "offsets": ("write_ts",),
    "group_metadata": ("write_ts",),
    "group_states": ("ts",),
    "members": ("ts",),
}


# Arrow -> pandas types that keep the nulls of integer and boolean columns (as read_table does).
NULLABLE = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}


class RunError(Exception):
    """RUN_DIR is not a readable run folder; the message names what is missing."""


@dataclass
class RunTables:
    run_dir: Path
    tables: dict[str, pd.DataFrame]
    # True when the tables come from an unfinished Spark run's committed micro-batches.
    live: bool
    # The run's final time when its run record has one (Spark runs); None otherwise.
    recorded_final_ts: int | None = None
    # Of a live run: the simulated time its committed micro-batches reached (None before any ran a group).
    reached_ts: int | None = None
    # The sweep variant the tables are of (their variant column dropped); None for a run that is not a sweep.
    variant: str | None = None
    _by_group: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict, repr=False)

    def __getitem__(self, table: str) -> pd.DataFrame:
        return self.tables[table]

    def group(self, table: str, group_id: str) -> pd.DataFrame:
        """The group's rows of `table`, in table order (split once per table: runs have many groups)."""
        if table not in self._by_group:
            self._by_group[table] = dict(iter(self.tables[table].groupby("group_id", sort=False)))
        return self._by_group[table].get(group_id, self.tables[table].iloc[0:0])

    def ranges(self, columns: Mapping[str, Sequence[str]]) -> Iterator["RunTables"]:
        """The run one range of groups at a time (`simulations.group_ranges`), with only `columns` of those
        tables: for figures over every group's rows of a run too large to hold whole. A live run, held
        whole, is one range."""
        if self.live:
            yield RunTables(self.run_dir, {name: self.tables[name][list(names)] for name, names in columns.items()},
                            live=True, reached_ts=self.reached_ts)
            return
        for groups in group_ranges(self.run_dir):
            yield RunTables(self.run_dir, {name: _read_columns(self.run_dir, name, names, groups, self.variant)
                                           for name, names in columns.items()},
                            live=False, recorded_final_ts=self.recorded_final_ts, variant=self.variant)

    @property
    def groups(self) -> list[str]:
        seen: set[str] = set()
        for table in TIME_COLUMNS:
            seen.update(self.tables[table]["group_id"].dropna().unique())
        return sorted(seen)

    @property
    def start_ts(self) -> int | None:
        return _extreme(self.tables, min)

    @property
    def end_ts(self) -> int | None:
        """The run's final time if recorded, the time a live run reached, else the latest time in any table:
        after it nothing changes (or, live, nothing is known yet)."""
        if self.recorded_final_ts is not None:
            return self.recorded_final_ts
        if self.live:
            return self.reached_ts
        return _extreme(self.tables, max)


def _extreme(tables: dict[str, pd.DataFrame], pick) -> int | None:
    columns = [last_repeat(tables[table], name).dropna() if pick is max else tables[table][name].dropna()
               for table, names in TIME_COLUMNS.items() for name in names]
    values = [pick(column) for column in columns if len(column)]
    return int(pick(values)) if values else None


def load_run(run_dir: str | os.PathLike, columns: Mapping[str, Sequence[str]] | None = None,
             variant: str | None = None) -> RunTables:
    """Every table of the run in `run_dir`, sorted by (group_id, out_seq) as written; with `columns`, only
    those tables and columns of a finished run (a live run is always read whole). A sweep is read one
    `variant` at a time: its rows of every table, as the variant's run alone would have written them."""
    root = Path(run_dir)
    if not root.is_dir():
        raise RunError(f"{run_dir}: no such run folder")
    record = read_run_record(root)
    require_variant(run_dir, variant, record)
    batches = root / BATCHES
    if (batches / "_committed").is_file() and record is None:
        if variant is not None:
            raise RunError(f"{run_dir}: a sweep still running on Spark; its variants can be read once it ends")
        return _live_run(root, batches)
    present = [name for name in TABLES if (root / name / PART_FILE).is_file()]
    if not present:
        raise RunError(f"{run_dir}: not a run folder (no output tables; expected e.g. {run_dir}/responses/{PART_FILE})")
    wanted = columns or {name: None for name in TABLES}
    try:
        # A table the run predates (the contract grew since) reads as empty; `validate` reports it missing.
        tables = {name: _read_columns(root, name, names, WHOLE, variant) for name, names in wanted.items()}
    except (OSError, pa.ArrowException) as error:
        raise RunError(f"{run_dir}: cannot read the tables ({error})") from None
    final = record.get("final_ts") if record else None
    return RunTables(root, tables, live=False, recorded_final_ts=final, variant=variant)


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def sweep_variants(run_dir: str | os.PathLike, record: Mapping | None = None) -> list[str] | None:
    """The variants of the sweep in `run_dir` (from its run record, or while it runs on Spark its identity),
    sorted; None for a run that is not a sweep."""
    record = read_run_record(Path(run_dir)) if record is None else record
    variants = (record or _json(Path(run_dir) / SPARK_IDENTITY)).get("variants")
    return None if variants is None else sorted(variants)


def require_variant(run_dir: str | os.PathLike, variant: str | None, record: Mapping | None = None) -> None:
    """A view of one run reads a sweep one variant at a time, named with --variant; any other run has none."""
    variants = sweep_variants(run_dir, record)
    if variants is None:
        if variant is not None:
            raise RunError(f"--variant {variant}: {run_dir} is not a sweep")
        return
    if variant is None:
        raise RunError(f"{run_dir} is a sweep of {len(variants)} variants: give --variant, one of "
                       f"{', '.join(variants)}")
    if variant not in variants:
        raise RunError(f"--variant {variant}: not a variant of {run_dir} (its variants: {', '.join(variants)})")


# Columns a run from before quiet runs lacks: it wrote a row per request, which a null `repeat_count` counts
# as. A run lacking any other column of the contract is refused, naming it: what its rows meant cannot be
# told from the rows (`group_type` came after the first consumer groups, for one).
NULL_IN_OLDER_RUNS = ("repeat_count", "repeat_interval_ms")


def _read_columns(root: Path, table: str, names: Sequence[str] | None, groups: GroupRange = WHOLE,
                  variant: str | None = None) -> pd.DataFrame:
    """A table, or only `names` of it (of the range `groups`), cast to the contract's types; of a sweep, the
    rows of `variant`, without their variant column."""
    path = root / table / PART_FILE
    if not path.is_file():
        empty = _frame(table, [])
        return empty if names is None else empty[list(names)]
    contract = arrow_schema(table)
    present = set(pq.read_schema(path).names)
    absent = [name for name in (contract.names if names is None else names) if name not in present]
    unknown = [name for name in absent if name not in NULL_IN_OLDER_RUNS]
    if unknown:
        raise RunError(f"{root}: written by an older coordsim, its {table} table lacks {', '.join(unknown)}; run it "
                       f"again to read it with this version (`coordsim validate {root}` lists every difference)")
    if names is None:
        if variant is None and not absent:
            return read_table(root, table)
        names = contract.names
    read = [name for name in names if name in present]
    data = variant_rows(read_rows(path, groups, read + ([] if variant is None else [VARIANT])), variant)
    for name in absent:
        field = contract.field(name)
        data = data.append_column(field, pa.nulls(data.num_rows, field.type))
    data = data.select(list(names))
    return data.cast(pa.schema([contract.field(name) for name in names])).to_pandas(types_mapper=NULLABLE.get)


def _live_run(root: Path, batches: Path) -> RunTables:
    # streaming pulls in nothing heavy, but only live reads need it.
    from simulations.views.live_rows import open_rows
    from streaming.sink import committed_horizon, committed_table

    reached = committed_horizon(batches)
    still_open = {} if reached is None else open_rows(batches, reached)
    tables = {}
    for name in TABLES:
        rows = committed_table(batches, name)
        if still_open.get(name):
            rows = pa.concat_tables([rows, to_arrow(name, still_open[name])])
        tables[name] = sort_table(name, rows).to_pandas(types_mapper=NULLABLE.get)
    return RunTables(root, tables, live=True, reached_ts=reached)


def _frame(table: str, rows: list[dict]) -> pd.DataFrame:
    return to_arrow(table, rows).to_pandas(types_mapper=NULLABLE.get)


def signature(run_dir: str | os.PathLike) -> tuple:
    """Changes whenever a table, a committed batch or the run record changes: a cheap "reload?" test."""
    root = Path(run_dir)
    stamps = []
    # Progress reports land just after their batch's commit: they move the run's clock (views.run_clock).
    for path in [root / RUN_FILE, root / BATCHES / "_committed", root / BATCHES / "_progress.jsonl",
                 *(root / name / PART_FILE for name in TABLES)]:
        try:
            stat = path.stat()
            stamps.append((str(path), stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append((str(path), None, None))
    return tuple(stamps)
