"""The captured-responses table: what the captured broker answered to each imported request, one row per
request (per group for the multi-group OffsetFetch v8+ and FindCoordinator v4+), keyed by the event's
`request_id` and shaped like the simulator's `responses` table so a replay can be compared with it.

Written next to the events as JSON lines (`<events>.captured.ndjson`): a suffix the event readers do not
pick up, so a folder of imports replays without these rows turning into rejects.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Union

import pyarrow as pa

from tableio.parquet import arrow_type
from state.tables import PARTITIONS, RESULT, parse_type

CAPTURED_COLUMNS: list[tuple[str, str]] = [
    ("request_id", "string"),
    ("seq", "int64"),
    ("group_id", "string"),
    ("api", "string"),
    ("api_version", "int32"),
    ("client_id", "string"),
    ("connection", "string"),
    ("request_frame", "int64"),
    ("response_frame", "int64"),
    ("request_ts", "int64"),
    ("response_ts", "int64"),
    ("error", "string"),
    ("member_id", "string"),
    ("group_instance_id", "string"),
    ("generation_id", "int32"),
    ("protocol_type", "string"),
    ("protocol_name", "string"),
    ("leader_id", "string"),
    ("skip_assignment", "bool"),
    ("members", "list<struct<member_id:string,group_instance_id:string>>"),
    ("assignment", PARTITIONS),
    ("results", f"list<{RESULT}>"),
    ("coordinator", "string"),
    ("heartbeat_interval_ms", "int32"),
]

CAPTURED_SUFFIX = ".captured.ndjson"
REJECTS_SUFFIX = ".rejects.ndjson"

if TYPE_CHECKING:
    import pandas as pd

CapturedInput = Union[str, os.PathLike, "pd.DataFrame", Iterable[dict]]


def captured_schema() -> pa.Schema:
    return pa.schema([pa.field(name, arrow_type(parse_type(spec))) for name, spec in CAPTURED_COLUMNS])


def empty_row() -> dict:
    return dict.fromkeys(name for name, _ in CAPTURED_COLUMNS)


def sidecar(events_path: str | os.PathLike, suffix: str) -> Path:
    """`fleet.jsonl` -> `fleet.captured.ndjson` (or `.rejects.ndjson`)."""
    path = Path(events_path)
    return path.with_name(path.stem + suffix)


def write_json_lines(path: Path, rows: Iterable[dict]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def read_captured(path: str | os.PathLike):
    """The table as a pandas DataFrame with nullable integer columns, like `tableio.parquet.read_table`."""
    import pandas as pd

    table = pa.Table.from_pylist(captured_records(path), schema=captured_schema())
    nullable = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return table.to_pandas(types_mapper=nullable.get)


def captured_records(captured: CapturedInput) -> list[dict]:
    """Rows as plain dicts (None for nulls) from a file path, a DataFrame of the table, or rows."""
    if isinstance(captured, (str, os.PathLike)):
        path = Path(captured)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise CapturedError(f"{path}: cannot read the captured responses ({error.strerror or error})") from None
        try:
            rows = [json.loads(line) for line in lines if line.strip()]
        except ValueError as error:
            raise CapturedError(f"{path}: not a captured-responses file ({error})") from None
        return [_complete(row, path) for row in rows]
    if hasattr(captured, "to_dict") and hasattr(captured, "columns"):
        return pa.Table.from_pandas(captured, schema=captured_schema(), preserve_index=False).to_pylist()
    return [_complete(dict(row), "rows") for row in captured]


def _complete(row: dict, where) -> dict:
    # An events file has request ids too: the API name is what only captured responses carry.
    if not isinstance(row, dict) or "request_id" not in row or "api" not in row:
        raise CapturedError(f"{where}: not a captured-responses file (rows need a request_id and an api)")
    return {**empty_row(), **{k: v for k, v in row.items() if k in dict(CAPTURED_COLUMNS)}}


class CapturedError(Exception):
    """A captured-responses file that cannot be read."""
