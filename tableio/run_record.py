"""A run's record, `OUT/_run.json` (docs/tables.md), and the rule both engines follow for where a run ends.

The record is written last: a run folder without it is not finished (the views read it to know so).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from state.tables import TABLES
from tableio.inputs import event_files

RUN_FILE = "_run.json"


def final_time(until: int | None, last_event_ts: int | None, pending_deadlines: Iterable[int | None]) -> int | None:
    """Where a run ends: at `until` when one is given; otherwise at the last event, or later at the latest
    protocol deadline still pending once every group has reached the last event, so every session expiry,
    rebalance timeout and pending-sync expiry that was due fires. None for a run without events."""
    if until is not None:
        return until
    if last_event_ts is None:
        return None
    return max([last_event_ts, *(d for d in pending_deadlines if d is not None)])


def write_run_record(out: Path, engine: str, result: Any, coordinator: Mapping[str, Any], inputs: Sequence[str],
                     captured: str | None, until: int | None, **engine_fields: Any) -> None:
    """Write `out/_run.json`: the engine, what every engine records of what it ran (the event files as given,
    the captured-responses file's absolute path, `until`, the final time), the engine's own fields, then
    what every engine records of the run (its event, group and row counts, tables in contract order, and the
    coordinator settings). `result` is the engine's run result. The same run on either engine records the
    same facts but the engine's own (tests/streaming/test_run_record.py)."""
    record = {
        "engine": engine,
        "inputs": list(inputs),
        "captured": captured,
        "until": until,
        "final_ts": result.final_ts,
        **engine_fields,
        "events": result.events_applied,
        "events_after_until": result.events_after_until,
        "groups": result.groups,
        "rows": {name: result.tables.row_count(name) for name in TABLES if name in result.tables},
        "coordinator": dict(coordinator),
    }
    (out / RUN_FILE).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")


def input_names(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The event files a run reads from its arguments, as the record names them: each as given (a folder's
    files under the folder's name), as the tables' `source` columns name them."""
    return [str(path) for path in event_files(paths)]


def read_run_record(root: Path) -> dict | None:
    """The run record of the run folder `root`, or None when there is none (yet) or it is unreadable."""
    try:
        return json.loads((root / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def variant_settings(variants: Mapping[str, Any] | None) -> dict:
    """A sweep's record field: each variant's coordinator settings (nothing outside a sweep)."""
    return {} if variants is None else {"variants": {name: variants[name].to_kafka() for name in sorted(variants)}}
