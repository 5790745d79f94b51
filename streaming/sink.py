"""Exactly-once micro-batch output: `OUT/_batches/`, written by the query's `foreachBatch` and read back only
through its commit log.

Layout:
    _batches/batch-<id>/table=<table>/part-*.parquet   envelope rows (group_id, rows, payload) of a batch
    _batches/batch-<id>/_horizon.json                   the simulated time the batch ran every group to
    _batches/_committed                                 one batch id per line, appended once the batch exists
    _batches/_progress.jsonl                            per batch id, the facts only Spark's progress reports

The executors write a batch's rows themselves (Spark's Parquet writer, partitioned by table) into a temporary
folder; the driver renames it to `batch-<id>`, then appends the id to `_committed`. Nothing flows through the
driver, whose memory would otherwise have to hold a whole micro-batch of output (millions of rows when a
drain advances 100k groups at once). Spark re-executes a batch it had not committed itself with the same
input, state and watermark, so the step produces the same rows: if `batch-<id>` is already there, the new
copy is dropped. Readers take only committed ids: a batch killed half-way is never read.

An output table's envelope row carries many rows at once (`rows` of them): its payload is Arrow record
batches of the table's schema in IPC format (`encode_table`), so the executors, not the driver, turn row
dicts into columns. `committed_table` reads a table back from every committed batch.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from tableio.parquet import arrow_schema, rows_to_arrow

COMMITTED = "_committed"
PROGRESS = "_progress.jsonl"
HORIZON = "_horizon.json"
ENVELOPE_COLUMNS = ["group_id", "rows", "payload"]
# The layout of the batches; part of a run's identity, so a run is never resumed across layouts. 3: each
# batch keeps its horizon, and the groups' live snapshots.
FORMAT = 3


def batch_folder(root: Path, batch_id: int) -> Path:
    return Path(root) / f"batch-{batch_id}"


def table_folder(root: Path, batch_id: int, table: str) -> Path:
    return batch_folder(root, batch_id) / f"table={table}"


class BatchSink:
    """The `foreachBatch` function. `horizon(batch_id)`: the simulated time the batch runs every group to
    (None: none yet), kept in the batch's folder. `before_commit()` runs on the driver once the batch's rows
    are written and before they are committed (readers see them from then on); `on_batch(batch_id)` once
    they are."""

    def __init__(self, root: Path, horizon: Callable[[int], int | None], on_batch: Callable[[int], None] | None = None,
                 before_commit: Callable[[], None] | None = None) -> None:
        self.root = Path(root)
        self.horizon = horizon
        self.on_batch = on_batch
        self.before_commit = before_commit
        for leftover in self.root.glob(".batch-*.tmp"):  # written by an attempt that was killed
            shutil.rmtree(leftover)

    def __call__(self, batch_df, batch_id: int) -> None:
        final = batch_folder(self.root, batch_id)
        temp = self.root / f".batch-{batch_id}-{uuid.uuid4().hex}.tmp"
        # Always executed, even when the batch already exists: running it is what advances the state store.
        batch_df.write.partitionBy("table").parquet(str(temp))
        # In the folder before it is renamed: a batch's rows and its time appear together.
        (temp / HORIZON).write_text(json.dumps({"horizon": self.horizon(batch_id)}), encoding="utf-8")
        if final.exists():
            shutil.rmtree(temp)
        else:
            os.replace(temp, final)
        if self.before_commit is not None:
            self.before_commit()
        _append_line(self.root / COMMITTED, str(batch_id))
        if self.on_batch is not None:
            self.on_batch(batch_id)


def _append_line(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        handle.seek(0)
        text = handle.read()
        if text and not text.endswith(b"\n"):
            # A line cut short by a kill: drop it, or the new line would complete it into another number.
            handle.truncate(text.rfind(b"\n") + 1)
        handle.write(line.encode("utf-8") + b"\n")
        handle.flush()
        os.fsync(handle.fileno())


def _complete_lines(path: Path) -> list[str]:
    """Lines ended by a newline: a line cut short by a kill is not there yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return text.split("\n")[:-1]


def committed_batches(root: Path) -> list[int]:
    return sorted({int(line) for line in _complete_lines(Path(root) / COMMITTED)})


def batch_horizon(root: Path, batch_id: int) -> int | None:
    """The simulated time a written batch ran every group to (None: it ran none)."""
    return json.loads((batch_folder(root, batch_id) / HORIZON).read_text(encoding="utf-8"))["horizon"]


def committed_horizon(root: Path) -> int | None:
    """The simulated time the latest committed batch ran every group to: what readers see of the run is
    exact at it. None before any batch ran a group."""
    for batch_id in reversed(committed_batches(root)):
        horizon = batch_horizon(root, batch_id)
        if horizon is not None:
            return horizon
    return None


def read_batch(root: Path, batch_id: int, table: str, columns: list[str] = ENVELOPE_COLUMNS) -> pa.Table | None:
    """The envelope rows of `table` in one batch (those `columns` of them, in the same order whichever), or
    None if it has none."""
    folder = table_folder(root, batch_id, table)
    if not folder.exists():
        return None
    return pq.read_table(folder, columns=columns, partitioning=None)


def read_committed(root: Path, table: str) -> Iterator[tuple[int, pa.Table]]:
    """(batch id, envelope rows) of every committed batch that has rows of `table`, in batch order."""
    for batch_id in committed_batches(root):
        part = read_batch(root, batch_id, table)
        if part is not None:
            yield batch_id, part


def encode_table(table: str, rows: list[dict], sweep: bool = False) -> bytes:
    """Rows of an output table as one envelope payload: Arrow IPC record-batch messages of
    `arrow_schema(table, sweep)`, without the schema (every reader knows it, and most calls emit only a few
    rows)."""
    return b"".join(batch.serialize().to_pybytes() for batch in rows_to_arrow(table, rows, sweep).to_batches())


def decode_table(table: str, payload: bytes, sweep: bool = False) -> pa.Table:
    schema = arrow_schema(table, sweep)
    return pa.Table.from_batches([pa.ipc.read_record_batch(message, schema)
                                  for message in pa.ipc.MessageReader.open_stream(payload)], schema)


def committed_table(root: Path, table: str, sweep: bool = False) -> pa.Table:
    """Every committed row of an output table under the sink folder `root`, in no particular order."""
    # Payloads are whole IPC messages: joined, they read as one stream (one key per group makes many small ones).
    return decode_table(table, b"".join(payload for _, part in read_committed(root, table)
                                        for payload in part["payload"].to_pylist()), sweep)


def record_progress(root: Path, batch_id: int, facts: dict) -> None:
    _append_line(Path(root) / PROGRESS, json.dumps({"batch_id": batch_id, **facts}))


def read_progress(root: Path) -> dict[int, dict]:
    """The last progress record of each batch id (a re-executed batch reports again)."""
    records = {}
    for line in _complete_lines(Path(root) / PROGRESS):
        record = json.loads(line)
        records[record["batch_id"]] = record
    return records
