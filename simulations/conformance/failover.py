"""How a conformance replay learns that the group's coordinator moved: COORDINATOR_FAULT rows (docs/events.md)
derived from what the suite did and what the capture shows, written beside the imported events.

- a `move` naming the broker that leads the group's `__consumer_offsets` partition when the capture starts
  (the tables' `coordinator_id`), at the capture's start;
- a `crash` when the suite killed that broker (SIGKILL, its own clock: the capture's);
- a `move` to the broker the first FindCoordinator answer after the kill names (the controller has elected a
  new leader of the partition by then), at that request's time, or just after the last `NOT_COORDINATOR`
  that broker itself answered (each broker learns of the election from the metadata log in its own time:
  another may name it before it knows), with `load_delay_ms` covering the new coordinator's
  `COORDINATOR_LOAD_IN_PROGRESS` answers, if any.
"""

from __future__ import annotations

import json
from pathlib import Path

from simulations.conformance import ConformanceError

LOADING = "COORDINATOR_LOAD_IN_PROGRESS"


def fault_rows(group: str, started_at: int, coordinator: int, kills: list[tuple[int, int]],
               captured: list[dict]) -> list[dict]:
    """The COORDINATOR_FAULT rows for a capture that began at `started_at` with `coordinator` leading the
    group's partition, while the suite killed the brokers `kills` names ((time ms, node) each)."""
    def fault(ts: int, kind: str, **fields) -> dict:
        return {"ts": ts, "group_id": group, "type": "COORDINATOR_FAULT", "fault": kind, **fields}

    rows = [fault(started_at, "move", coordinator_id=coordinator)]
    for killed_at, node in kills:
        if node != coordinator:
            continue  # another broker: the group's coordinator does not change
        rows.append(fault(killed_at, "crash"))
        named = [(r["request_ts"], *_node(r["coordinator"])) for r in captured
                 if r["api"] == "FindCoordinator" and r["error"] == "NONE" and r["request_ts"] > killed_at
                 and _node(r["coordinator"])[0] != node]
        if not named:
            raise ConformanceError(f"no FindCoordinator answer after broker {node} was killed names another broker")
        moved_at, coordinator, address = min(named)
        refused = [r["request_ts"] + 1 for r in captured if r["error"] == "NOT_COORDINATOR"
                   and r["request_ts"] > killed_at and r["connection"].endswith(">" + address)]
        moved_at = max([moved_at, *refused])
        loading = [r["request_ts"] for r in captured if r["error"] == LOADING and r["request_ts"] >= moved_at]
        rows.append(fault(moved_at, "move", coordinator_id=coordinator,
                          load_delay_ms=max(loading) - moved_at + 1 if loading else 0))
    return rows


def _node(answer: str) -> tuple[int, str]:
    """The node id and address of a FindCoordinator answer as the import writes it ("node 2 at
    127.0.0.1:9092")."""
    _, node, _, address = answer.split()
    return int(node), address


def write_faults(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
