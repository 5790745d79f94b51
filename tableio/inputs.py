"""Event files in, validated events and reject rows out.

Reads the EVENTS arguments of the command line: files or folders of JSONL (`*.jsonl`, `*.json`) and Parquet
(`*.parquet`). Every input row ends up either as an `Event` or as a row of the `rejects` table, so nothing is
lost silently; only a path that cannot be read at all stops the run, with an `InputError` naming it.
Validation itself is `state.events.parse_event`, shared with the Spark engine so both reject the same rows
for the same reasons. `coordinator_reject` tells the rejects a coordinator wrote from the reader's.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from tableio.heap import long_lived_heap
from state.events import Event, EventError, parse_event

JSONL_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)


class InputError(Exception):
    """An EVENTS path that cannot be read as a whole (missing, unreadable, not an events file)."""


@dataclass
class InputRows:
    events: list[Event] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)


@long_lived_heap()
def read_events(paths: Iterable[str | os.PathLike], variants: Collection[str] | None = None) -> InputRows:
    """Validate every row of every file under `paths`, in argument order, folders in sorted order.
    `variants`: a sweep's, each row naming one of them (`state.events.parse_event`)."""
    rows = InputRows()
    for path in event_files(paths):
        reader = _read_parquet if path.suffix.lower() in PARQUET_SUFFIXES else _read_jsonl
        for raw, line, text in reader(path):
            _validate(rows, raw, str(path), line, text, variants)
    return rows


def event_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files the arguments name: each file as given, each folder's event files recursively in sorted
    order (hidden and `_`-prefixed entries skipped, like Spark's own readers). A file reached twice is read
    once, so a folder and a file inside it do not replay the same requests twice."""
    files: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(
                (p for p in path.rglob("*") if p.is_file() and _is_event_file(p)
                 and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)),
                key=lambda p: p.relative_to(path).as_posix(),
            )
            if not found:
                raise InputError(f"{given}: folder has no event files (*.jsonl, *.json, *.parquet)")
        elif path.is_file():
            if not _is_event_file(path):
                raise InputError(f"{given}: not an event file; expected *.jsonl, *.json or *.parquet")
            found = [path]
        elif path.exists():
            raise InputError(f"{given}: not a regular file or folder")
        else:
            raise InputError(f"{given}: no such file or folder")
        for p in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                files.append(p)
    return files


def _is_event_file(path: Path) -> bool:
    return path.suffix.lower() in JSONL_SUFFIXES + PARQUET_SUFFIXES


def _validate(rows: InputRows, raw: Any, source: str, line: int, text: str, variants: Collection[str] | None
              ) -> None:
    if isinstance(raw, _Undecodable):
        rows.rejects.append(reject_row(text, raw.reason, source, line))
        return
    try:
        rows.events.append(parse_event(raw, source, line, variants=variants))
    except EventError as error:
        rows.rejects.append(reject_row(text, str(error), source, line))


def reject_row(raw: str, reason: str, source: str, line: int) -> dict:
    return {"raw": raw, "reason": reason, "source": source, "line": line}


def coordinator_reject(row: Mapping[str, Any]) -> dict | None:
    """The event of a `rejects` row a coordinator wrote, or None for the reader's reject of an input row.

    A coordinator rejects a valid event it was handed but cannot apply (one that arrives after its group's
    clock has passed it, a directive for a client that is not running). Its reject's `raw` is the parsed
    event as JSON (state.runtime.output.event_json), which names the row's own `source` and `line`; a reader's
    reject keeps the input row's text. This is the one definition behind the run summaries' "events
    applied" (events handed to the coordinators, less these) and `coordsim validate`'s input accounting."""
    raw = row["raw"]
    if not raw.startswith("{"):
        return None
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if isinstance(event, dict) and event.get("source") == row["source"] and event.get("line") == row["line"]:
        return event
    return None


@dataclass(frozen=True)
class _Undecodable:
    """Stands in for a line that is not JSON text, so it is rejected with `reason`."""

    reason: str


def _read_jsonl(path: Path) -> Iterator[tuple[Any, int, str]]:
    try:
        with path.open("rb") as handle:
            for number, data in enumerate(handle, start=1):
                if number == 1:
                    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM some editors add
                try:
                    text = data.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    text = data.decode("utf-8", "replace").rstrip("\r\n")
                    yield _Undecodable("line is not valid UTF-8"), number, text
                    continue
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as error:
                    value = _Undecodable(f"line is not valid JSON: {_where(error)}")
                except RecursionError:
                    value = _Undecodable("line is not valid JSON: nested too deeply")
                yield value, number, text
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None


def _read_parquet(path: Path) -> Iterator[tuple[Any, int, str]]:
    try:
        with pq.ParquetFile(path) as parquet:
            number = 0
            for batch in parquet.iter_batches():
                for row in batch.to_pylist():
                    number += 1
                    yield row, number, json.dumps(row, default=_json_value, ensure_ascii=False)
    except OSError as error:
        raise InputError(f"{path}: cannot read ({error.strerror or error})") from None
    except (pa.ArrowException, ValueError) as error:
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None


def _where(error: json.JSONDecodeError) -> str:
    """The decoder's message with its column; some of its messages end in "at" already ("Unterminated string
    starting at", "Invalid control character at")."""
    return f"{error.msg.removesuffix(' at')} at column {error.colno}"


def _json_value(value: Any) -> Any:
    """JSON for the Arrow values `json` cannot encode, so a rejected Parquet row still reads as text."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    return str(value)  # Decimal, timedelta and the rarer Arrow types: readable text is enough for a reject
