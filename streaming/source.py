"""The engine's streaming source: the run's rows in Parquet files of one folder, `OUT/_source/`, which Spark's
own file source reads one file per micro-batch, in the order the engine wrote them.

Before a query starts, the driver writes what it will read: the input files' rows, read with the local
engine's own reader (`tableio.inputs.read_events`, so every row is validated and numbered exactly as
`coordsim replay --engine local` does it) into one file (or one per `streaming.files.per.trigger` input
files), or a sliced run's slice files (streaming/slices.py: one slice of simulated time each, and a
sentinel); then, phase by phase, the engine's control files (`write_control`: the sentinel, wake and
end-of-run rows that drain a finite run). A file is one micro-batch, so the watermark a control or slice file
moves is in force before the next one is read.

Spark's file source takes new files in the order of their modification times: each file's is set from its
place in the list (`ORIGIN` + index seconds), so the order depends on neither the clock nor the file system's
listing. A query restarted from its checkpoint reads the micro-batches its log recorded, then the files added
since; the engine only ever adds files. (A Python data source did this before, at the cost of four Python
planner processes started one after the other at every query start: about 10 s per query on 2 cores.)

With a captured-responses file (`captured`, `coordsim replay --compare-captured`), each event gets the
captured broker's answer to it attached, as the local engine's replay does (tableio/captured_answers.py).

Rows: `kind` ('event' | 'reject' | 'sentinel' | 'wake' | 'end'), `key` (the group id, or in a sweep the
group key of state/variants.py; null for rejects and sentinels), `event_time` (null for rejects),
`payload` (a pickled Event or reject row dict, or a wake or end-of-run marker).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import pickle
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

SOURCE_DIR = "_source"
SCHEMA = "kind string, key string, event_time timestamp, payload binary"
ROW_SCHEMA = pa.schema([("kind", pa.string()), ("key", pa.string()),
                        ("event_time", pa.timestamp("us", tz="UTC")), ("payload", pa.binary())])
# Rows per Arrow batch (and Parquet row group): bounds the driver's memory on large inputs, and lets Spark
# split a large file between tasks.
ROWS_PER_BATCH = 20_000
# The modification time of file 0 (2020-01-01T00:00:00Z, in ns); file i's is i seconds later.
ORIGIN_NS = 1_577_836_800 * 10**9
# Where a control file keeps the final time it was written for.
FINAL_KEY = b"coordsim.final"

# Payload of an end-of-run row; a pickled event never starts like this (pickles start with b"\x80").
END_OF_RUN = b"coordsim-end-of-run:"


def end_of_run_payload(final: int) -> bytes:
    """The run ends at `final` for the row's group (the step calls `end_run_at(final)`)."""
    return END_OF_RUN + str(final).encode("ascii")


def end_of_run_final(payload: bytes) -> int | None:
    return int(payload[len(END_OF_RUN):]) if payload.startswith(END_OF_RUN) else None


# Payload of a wake row: the group is brought to the given time though nothing else is due for it, so the
# deadlines it reports are as of that time (an elided client's session deadline moves on with the clock).
WAKE = b"coordsim-wake:"


def wake_payload(at: int) -> bytes:
    return WAKE + str(at).encode("ascii")


def wake_at(payload: bytes) -> int | None:
    return int(payload[len(WAKE):]) if payload.startswith(WAKE) else None


def source_file(folder: Path, index: int, label: str) -> Path:
    """The path of the folder's file number `index` (`label` says what it holds, for a reader)."""
    return folder / f"{index:06d}-{label}.parquet"


def write_rows(path: Path, index: int, rows: Iterable[tuple], sentinel_ts: int | None = None,
               final: int | None = None) -> None:
    """Write file number `index` atomically: `rows` (as `input_rows` yields them), then a sentinel row at
    `sentinel_ts` if given; `final`, if given, is kept in the file's metadata (`read_control_final`). Its
    modification time, set before it appears, is its place in the list."""
    if sentinel_ts is not None:
        rows = itertools.chain(rows, [("sentinel", None, sentinel_ts, b"")])
    schema = ROW_SCHEMA if final is None else ROW_SCHEMA.with_metadata({FINAL_KEY: str(final).encode("ascii")})
    temp = path.with_name(f".{path.name}.tmp")  # hidden from Spark's listing until renamed
    with pq.ParquetWriter(str(temp), schema) as writer:
        wrote = False
        for batch in _arrow_batches(rows):
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))
            wrote = True
        if not wrote:
            writer.write_table(schema.empty_table())
    with open(temp, "rb+") as handle:
        os.fsync(handle.fileno())
    mtime = ORIGIN_NS + index * 10**9
    os.utime(temp, ns=(mtime, mtime))
    os.replace(temp, path)


def write_control(path: Path, index: int, sentinel_ts: int, final: int, end_groups: Iterable[str] = (),
                  wake_groups: Iterable[str] = ()) -> None:
    """Write control file number `index`: a sentinel row at `sentinel_ts` (it moves the watermark), one wake
    row per group of `wake_groups` and one end-of-run row per group of `end_groups`, both for `final`.
    `final` is kept in the file either way, so a resumed run reads the decision back instead of recomputing
    it from state that has moved on since."""
    rows = [("sentinel", None, sentinel_ts, b"")]
    rows += [("wake", g, sentinel_ts, wake_payload(final)) for g in wake_groups]
    rows += [("end", g, sentinel_ts, end_of_run_payload(final)) for g in end_groups]
    write_rows(path, index, rows, final=final)


def read_control_final(path: Path) -> int:
    return int(pq.read_schema(str(path)).metadata[FINAL_KEY])


def input_rows(path: str, name: str, captured: str | None, variants: list[str] | None = None) -> Iterator[tuple]:
    """The rows of input file `path` (named `name` in them): (kind, key, event time in ms, payload). The key
    is the event's group key (`state.variants.group_key`); `variants`: a sweep's, which every row names."""
    from tableio.captured_answers import attach_captured
    from tableio.inputs import read_events
    from state.pickling import ValuesPickler
    from state.variants import VARIANT, group_key

    rows = read_events([path], variants)
    events = rows.events
    if captured is not None:
        events = attach_captured(events, _captured_answers(captured, os.stat(captured).st_mtime_ns))
    dumps = ValuesPickler.dumper()
    for event in events:
        if event.source != name:
            event = dataclasses.replace(event, source=name)
        yield "event", group_key(event.variant, event.group_id), event.ts, dumps(event)
    # An input row that is not a valid event belongs to no variant (its `variant` is null in a sweep).
    unknown = {} if variants is None else {VARIANT: None}
    for reject in rows.rejects:
        yield "reject", None, None, pickle.dumps(dict(reject, source=name, **unknown), protocol=5)


@functools.lru_cache(maxsize=2)
def _captured_answers(path: str, mtime_ns: int) -> dict:
    """The file's answers by request id, read once for all the input files (`mtime_ns`: a file rewritten
    since is read again)."""
    from tableio.captured_answers import captured_answers

    return captured_answers(path)


def _arrow_batches(rows: Iterable[tuple]) -> Iterator:
    columns: tuple[list, ...] = ([], [], [], [])
    for kind, key, ts_ms, payload in rows:
        columns[0].append(kind)
        columns[1].append(key)
        columns[2].append(None if ts_ms is None else ts_ms * 1000)
        columns[3].append(payload)
        if len(columns[0]) >= ROWS_PER_BATCH:
            yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(columns, ROW_SCHEMA.types)],
                                         schema=ROW_SCHEMA)
            for column in columns:
                column.clear()
    if columns[0]:
        yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(columns, ROW_SCHEMA.types)],
                                         schema=ROW_SCHEMA)
