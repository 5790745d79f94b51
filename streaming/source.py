"""The engine's streaming source: a fixed, ordered list of files in, one row per input row out.

Input files are read with the local engine's own reader (`tableio.inputs.read_events`), so every row is
validated and numbered exactly as `coordsim replay --engine local` does it. Offsets are indexes into the
file list, so a query restarted from its checkpoint replays exactly the same micro-batches; the engine only
ever appends to the list. After the input files come the engine's control files (`*.control`, written by
`write_control`): the sentinel, wake and end-of-run rows that drain a finite run. A sliced run reads slice
files (`*.slice`, written by `write_slice`: its input rows of one slice of simulated time, already read and
validated, and a sentinel; streaming/slices.py) in place of its input files. A control or slice file always
travels alone in its micro-batch, so the watermark it moves is in force before the next one is read.

With a captured-responses file (`captured` option, `coordsim replay --compare-captured`), each event gets
the captured broker's answer to it attached, as the local engine's replay does (tableio/captured_answers.py);
every reading process loads the file once.

Rows: `kind` ('event' | 'reject' | 'sentinel' | 'wake' | 'end'), `key` (the group id, or in a sweep the
group key of state/variants.py; null for rejects and sentinels), `event_time` (null for rejects),
`payload` (a pickled Event or reject row dict, or a wake or end-of-run marker).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import os
import pickle
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, SupportsTriggerAvailableNow

SOURCE_NAME = "coordsim_events"
SCHEMA = "kind string, key string, event_time timestamp, payload binary"
CONTROL_SUFFIX = ".control"
SLICE_SUFFIX = ".slice"
ROW_SCHEMA = pa.schema([("kind", pa.string()), ("key", pa.string()),
                        ("event_time", pa.timestamp("us", tz="UTC")), ("payload", pa.binary())])
# Rows per Arrow batch handed to Spark: bounds a worker's memory on large files.
ROWS_PER_BATCH = 20_000


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


def is_control(path: str) -> bool:
    return path.endswith(CONTROL_SUFFIX)


def travels_alone(path: str) -> bool:
    return path.endswith((CONTROL_SUFFIX, SLICE_SUFFIX))


def write_control(path: Path, sentinel_ts: int, final: int, end_groups: Iterable[str] = (),
                  wake_groups: Iterable[str] = ()) -> None:
    """Write a control file atomically: a sentinel row at `sentinel_ts` (it moves the watermark), one wake
    row per group of `wake_groups` and one end-of-run row per group of `end_groups`, both for `final`.
    `final` is kept in the file either way, so a resumed run reads the decision back instead of recomputing
    it from state that has moved on since."""
    lines = [json.dumps({"kind": "sentinel", "ts": sentinel_ts, "final": final})]
    lines += [json.dumps({"kind": "wake", "ts": sentinel_ts, "final": final, "group_id": g}) for g in wake_groups]
    lines += [json.dumps({"kind": "end", "ts": sentinel_ts, "final": final, "group_id": g}) for g in end_groups]
    temp = path.with_name(path.name + ".tmp")
    with temp.open("w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def write_slice(path: Path, rows: Iterable[tuple], sentinel_ts: int) -> None:
    """Write a slice file atomically: `rows` (as `input_rows` yields them) and a sentinel row at
    `sentinel_ts`, as Arrow IPC, which `read` hands to Spark as it is."""
    temp = path.with_name(path.name + ".tmp")
    with pa.OSFile(str(temp), "wb") as sink, pa.ipc.new_file(sink, ROW_SCHEMA) as writer:
        for batch in _arrow_batches(itertools.chain(rows, [("sentinel", None, sentinel_ts, b"")])):
            writer.write_batch(batch)
    with open(temp, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temp, path)


def _slice_batches(path: str) -> Iterator:
    with pa.OSFile(path, "rb") as source:  # copies: the batches outlive the file handle
        reader = pa.ipc.open_file(source)
        for index in range(reader.num_record_batches):
            yield reader.get_batch(index)


def read_control_final(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return json.loads(handle.readline())["final"]


class EventFileSource(DataSource):
    """Options: `files` (JSON list of [path to read, name], in order), `files_per_trigger` (0 = no limit),
    `captured` (absolute path of a captured-responses file; empty or absent: none).
    The name is the path as the user gave it (relative, say): rows carry it as their `source`, as the local
    engine's do, while executors, whose working folder differs, read the absolute path."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> "EventFileReader":
        variants = self.options.get("variants")
        return EventFileReader(json.loads(self.options["files"]), int(self.options.get("files_per_trigger", 0)),
                               self.options.get("captured") or None, json.loads(variants) if variants else None)


class FilePartition(InputPartition):
    def __init__(self, path: str, name: str) -> None:
        super().__init__(path)
        self.name = name


class EventFileReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, files: list[list[str]], files_per_trigger: int, captured: str | None = None,
                 variants: list[str] | None = None) -> None:
        self.files = files
        self.files_per_trigger = files_per_trigger
        self.captured = captured
        self.variants = variants
        self.target: int | None = None

    def initialOffset(self) -> dict:
        return {"file": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = len(self.files)

    def getDefaultReadLimit(self):
        return ReadMaxFiles(self.files_per_trigger) if self.files_per_trigger else ReadAllAvailable()

    def latestOffset(self, start: dict, limit) -> dict:
        begin = start["file"]
        end = len(self.files) if self.target is None else self.target
        if isinstance(limit, ReadMaxFiles):
            end = min(end, begin + limit.max_files)
        if begin < end and travels_alone(self.files[begin][0]):
            end = begin + 1
        else:
            end = next((i for i in range(begin, end) if travels_alone(self.files[i][0])), end)
        return {"file": max(begin, end)}

    def partitions(self, start: dict, end: dict) -> list[FilePartition]:
        return [FilePartition(*self.files[i]) for i in range(start["file"], end["file"])]

    def read(self, partition: FilePartition) -> Iterator:
        path = partition.value
        if path.endswith(SLICE_SUFFIX):
            yield from _slice_batches(path)
            return
        rows = (_control_rows(path) if is_control(path)
                else input_rows(path, partition.name, self.captured, self.variants))
        yield from _arrow_batches(rows)


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
    """The file's answers by request id, kept for the process's later partitions (`mtime_ns`: a file
    rewritten since is read again)."""
    from tableio.captured_answers import captured_answers

    return captured_answers(path)


def _control_rows(path: str) -> Iterator[tuple]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["kind"] == "sentinel":
                yield "sentinel", None, row["ts"], b""
            elif row["kind"] == "wake":
                yield "wake", row["group_id"], row["ts"], wake_payload(row["final"])
            else:
                yield "end", row["group_id"], row["ts"], end_of_run_payload(row["final"])


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
