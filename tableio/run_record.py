"""A run's record, `OUT/_run.json` (docs/tables.md), and the rule both engines follow for where a run ends.

The record is written last: a run folder without it is not finished (the views read it to know so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

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


def write_run_record(out: Path, engine: str, result: Any, coordinator: Mapping[str, Any],
                     **engine_fields: Any) -> None:
    """Write `out/_run.json`: the engine, its own fields, then what every engine records of a run (its
    event, group and row counts and the coordinator settings). `result` is the engine's run result."""
    record = {
        "engine": engine,
        **engine_fields,
        "events": result.events_applied,
        "events_after_until": result.events_after_until,
        "groups": result.groups,
        "rows": {name: result.tables.row_count(name) for name in result.tables},
        "coordinator": dict(coordinator),
    }
    (out / RUN_FILE).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")


def read_run_record(root: Path) -> dict | None:
    """The run record of the run folder `root`, or None when there is none (yet) or it is unreadable."""
    try:
        return json.loads((root / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def variant_settings(variants: Mapping[str, Any] | None) -> dict:
    """A sweep's record field: each variant's coordinator settings (nothing outside a sweep)."""
    return {} if variants is None else {"variants": {name: variants[name].to_kafka() for name in sorted(variants)}}
