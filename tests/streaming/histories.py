"""Input histories for the engine tests: raw event rows, made by driving `tests.state.harness` contexts (so
member ids and generations are the ones the coordinator hands out) and recording every row they send.

Each scenario is one group; `combined_history` puts them side by side on one timeline. Rows carry an
explicit, globally unique `seq`, so their order (and the tables) does not depend on file layout or arrival
order, only on the rows themselves.
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path

from tests.state import harness

START_MS = 1_700_000_000_000


@contextlib.contextmanager
def recording():
    """Record the raw row of every request any harness context sends meanwhile."""
    rows: list[dict] = []
    original = harness.parse_event

    def record(raw, source="", line=0):
        rows.append(dict(raw))
        return original(raw, source, line)

    harness.parse_event = record
    try:
        yield rows
    finally:
        harness.parse_event = original


def static_members(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    a = ctx.join(instance_id="a")
    b = ctx.join(instance_id="b")
    while ctx.state == "PreparingRebalance":
        ctx.sleep(1_000)
    ctx.sync(b.member_id, b.generation_id, instance_id="b")
    ctx.sync(a.member_id, a.generation_id, instance_id="a",
             assignments={a.member_id: [("foo", [0])], b.member_id: [("foo", [1])]})
    ctx.sleep(2_000)
    ctx.heartbeat(a.member_id, a.generation_id, instance_id="a")
    # b restarts: a new join with its instance id replaces the old member without a rebalance.
    b2 = ctx.join(instance_id="b")
    ctx.heartbeat(b.member_id, b.generation_id, instance_id="b")  # the old member is fenced
    ctx.sleep(4_000)
    ctx.heartbeat(b2.member_id, b2.generation_id, instance_id="b")
    ctx.heartbeat(a.member_id, a.generation_id, instance_id="a")


def session_expiry(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    members = ctx.stable_group(3)
    generation = ctx.group.generation_id
    for _ in range(3):  # the third member goes silent and expires
        ctx.sleep(3_000)
        for m in members[:2]:
            ctx.heartbeat(m, generation)
    ctx.sleep(6_000)
    ctx.heartbeat(members[0], generation)  # REBALANCE_IN_PROGRESS: its session is still running at the end


def write_failure(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    members = ctx.stable_group(2)
    generation = ctx.group.generation_id
    ctx.fault(fault="write_failure", count=2, error="NOT_ENOUGH_REPLICAS")
    ctx.commit({("foo", 0): 10}, member_id=members[0], generation_id=generation)
    ctx.join(member_id=members[1])  # a rebalance whose group metadata write then fails
    ctx.sleep(1_000)
    ctx.commit({("foo", 0): 11}, member_id=members[0], generation_id=generation)


def coordinator_move(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    members = ctx.stable_group(2)
    generation = ctx.group.generation_id
    ctx.commit({("foo", 0): 5, ("foo", 1): 7}, member_id=members[0], generation_id=generation)
    ctx.fault(fault="move", load_delay_ms=2_000)
    ctx.sleep(500)
    ctx.heartbeat(members[0], generation)
    ctx.fetch({"foo": [0, 1]})
    ctx.sleep(2_000)
    ctx.heartbeat(members[1], generation)
    ctx.fetch()


def broker_failure(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    ctx.fault(fault="move", coordinator_id=2)  # broker 2 leads the group's partition
    members = ctx.stable_group(2)
    generation = ctx.group.generation_id
    ctx.commit({("foo", 0): 3}, member_id=members[0], generation_id=generation)
    ctx.fault(fault="crash")
    ctx.sleep(300)
    ctx.heartbeat(members[0], generation)  # COORDINATOR_NOT_AVAILABLE: no live broker leads the partition
    ctx.sleep(900)
    ctx.fault(fault="move", coordinator_id=3, load_delay_ms=400)
    ctx.sleep(500)
    ctx.heartbeat(members[1], generation)
    ctx.fetch()


def offset_commits(group_id: str, start: int) -> None:
    ctx = harness.GroupContext(group_id, start_ms=start)
    ctx.commit({("bar", 0): 1, ("bar", 1): 2}, metadata="standalone")
    ctx.sleep(1_000)
    member = ctx.stable_group(1)[0]
    generation = ctx.group.generation_id
    for offset in range(3):
        ctx.sleep(1_000)
        ctx.commit({("foo", 0): 100 + offset}, member_id=member, generation_id=generation)
    ctx.commit({("foo", 0): 1}, member_id=member, generation_id=generation + 1)  # ILLEGAL_GENERATION
    ctx.fetch()
    ctx.leave(member)


SCENARIOS = {
    "static": static_members,
    "expiry": session_expiry,
    "fault": write_failure,
    "move": coordinator_move,
    "broker": broker_failure,
    "commits": offset_commits,
}


def combined_history(offset_ms: int = 1_700) -> list[dict]:
    """Every scenario as its own group, each starting `offset_ms` after the previous; rows in time order."""
    rows: list[dict] = []
    for index, (name, scenario) in enumerate(SCENARIOS.items()):
        with recording() as recorded:
            scenario(f"{name}-group", START_MS + index * offset_ms)
        rows.extend(recorded)
    rows.sort(key=lambda r: r["ts"])  # stable: each group's own order is kept
    return [dict(row, seq=seq) for seq, row in enumerate(rows)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def split_files(folder: Path, rows: list[dict], files: int) -> Path:
    """`rows` cut into `files` consecutive JSONL files in one folder (read in name order)."""
    size = -(-len(rows) // files)
    for index in range(files):
        write_jsonl(folder / f"part-{index:03d}.jsonl", rows[index * size:(index + 1) * size])
    return folder


def shuffled_within(rows: list[dict], lateness_ms: int, seed: int = 7) -> list[dict]:
    """`rows` reordered so that no row comes after one more than `lateness_ms / 2` later than itself: each
    row moves by a random key in [ts, ts + lateness/2)."""
    rng = random.Random(seed)
    return sorted(rows, key=lambda r: r["ts"] + rng.random() * lateness_ms / 2)
