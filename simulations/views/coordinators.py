"""Which broker coordinates which group when, from the `group_states` table alone (docs/capacity.md): when
each broker coordinates at least one group, and what each coordinator move costs the group that moved.

A group is at a broker from the row that brings it into existence there (`from_state` null: created, or
loaded after a move: `coordinator_load`; the row's `coordinator_id`) until its next Dead row (unloaded by a
move or a crash, `coordinator_unload` at the old broker; or deleted). A run without a `cluster:` has no
broker ids (null `coordinator_id`): its one coordinator coordinates everything, and nothing here applies.

A coordinator move is a `coordinator_unload` row: the group has lost its coordinator. It is *without a
coordinator* from that row until its next `coordinator_load` row (the new leader of its `__consumer_offsets`
partition has loaded it and answers its requests again), or until the run's end when none loads it: for a
broker crash the controller's fencing (`broker.session.timeout.ms`) plus the new leader's load, for a
controlled move the load alone. Meanwhile its clients are answered NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE, or reach a broker that is down.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# The group_states columns read here.
STATE_COLUMNS = ["group_id", "ts", "from_state", "to_state", "cause", "coordinator_id"]
MOVE_COLUMNS = ["group_id", "ts", "from_broker", "to_broker", "loaded_ts", "without_coordinator_ms"]
UNLOAD, LOAD = "coordinator_unload", "coordinator_load"


def coordinating(states: pd.DataFrame, end_ts: int) -> dict[int, list[tuple[int, int]]]:
    """Broker id -> the time intervals [start, end) during which it coordinates at least one group, merged
    and in order; a group still there at the run's end is there at its final instant (`end_ts` included).
    `states`: group_states rows in table order (each group's in `out_seq` order)."""
    spans: dict[int, list[tuple[int, int]]] = {}
    open_at: dict[str, tuple[int, int]] = {}  # group -> (broker, since)
    # Only the rows that open or close a stay at a broker matter.
    edges = states[states["from_state"].isna() | (states["to_state"] == "Dead")]
    for group, ts, from_state, broker in zip(edges["group_id"], edges["ts"], edges["from_state"],
                                             edges["coordinator_id"]):
        if group in open_at:
            held, since = open_at.pop(group)
            spans.setdefault(held, []).append((since, int(ts)))
        if pd.isna(from_state) and not pd.isna(broker):
            open_at[group] = (int(broker), int(ts))
    for held, since in open_at.values():
        spans.setdefault(held, []).append((since, max(end_ts, since) + 1))
    return {broker: _merged(intervals) for broker, intervals in sorted(spans.items())}


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def windows_touched(intervals: list[tuple[int, int]], first: int, window_ms: int, count: int) -> np.ndarray:
    """Of `count` windows from `first`, those that overlap one of `intervals` ([start, end); an interval of
    no length touches the window holding its instant)."""
    marks = np.zeros(count + 1, dtype="int64")
    for start, end in intervals:
        i0 = (start - first) // window_ms
        i1 = (max(end - 1, start) - first) // window_ms
        i0, i1 = max(i0, 0), min(i1, count - 1)
        if i0 <= i1:
            marks[i0] += 1
            marks[i1 + 1] -= 1
    return np.cumsum(marks[:count]) > 0


def coordinator_moves(states: pd.DataFrame, end_ts: int) -> pd.DataFrame:
    """One row per coordinator move (a `coordinator_unload` row), in table order: the group, when, the broker
    it left (`from_broker`), the one that loaded it next (`to_broker`, `loaded_ts`; null: none by the end),
    and `without_coordinator_ms`, from the unload to that load (to the run's end without one)."""
    moves = states[states["cause"].isin((UNLOAD, LOAD))]
    rows: list[list] = []
    waiting: dict[str, int] = {}  # group -> its move (index in rows) that no load has ended yet
    for group, ts, cause, broker in zip(moves["group_id"], moves["ts"], moves["cause"], moves["coordinator_id"]):
        if cause == UNLOAD:
            waiting[group] = len(rows)
            rows.append([group, int(ts), _broker(broker), None, None])
        elif group in waiting:
            rows[waiting.pop(group)][3:] = [_broker(broker), int(ts)]
    frame = pd.DataFrame(rows, columns=MOVE_COLUMNS[:-1]).astype(
        {"ts": "int64", "from_broker": "Int32", "to_broker": "Int32", "loaded_ts": "Int64"})
    frame["without_coordinator_ms"] = frame["loaded_ts"].fillna(end_ts).astype("int64") - frame["ts"]
    return frame


def move_figures(moves: pd.DataFrame) -> dict:
    """What the moves cost, as the comparison table and `coordsim capacity` give it: the moves, the groups
    they concern (every group that was without a coordinator at some time), and the time without a
    coordinator summed over the moves (group-milliseconds) and at most (null without a move)."""
    gaps = moves["without_coordinator_ms"]
    return {"coordinator_moves": len(moves), "groups_without_coordinator": int(moves["group_id"].nunique()),
            "without_coordinator_ms": int(gaps.sum()), "without_coordinator_ms_max": int(gaps.max()) if len(gaps)
            else None}


def _broker(value) -> int | None:
    return None if value is None or pd.isna(value) else int(value)
