"""A group's runtime through `GroupRuntime.encode`/`decode` (the Spark engine's state between micro-batches):
what the blob holds and refuses, and that a decoded runtime carries on exactly as the original would."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from state.config import CoordinatorConfig
from state.events import parse_event
from state.pickling import ValuesPickler, dumps
from state.runtime import STATE_FORMAT, STATE_FORMAT_VERSION, GroupRuntime
from state.timers import Timer

CONFIG = CoordinatorConfig()
SUBSCRIPTION = [{"name": "range", "topics": ["t"]}]


def join(ts: int, client: str, member_id: str = "") -> dict:
    return {"ts": ts, "group_id": "g", "type": "JOIN_GROUP", "request_id": f"{client}@{ts}", "client_id": client,
            "member_id": member_id, "protocol_type": "consumer", "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 30_000, "protocols": SUBSCRIPTION}


def events() -> list:
    rows = [join(0, "a"), join(1, "b"), {**join(5, "c"), "api_version": 3}, join(4_000, "d")]
    return [parse_event(row, "test", line) for line, row in enumerate(rows)]


def run(stops: list[int], end: int) -> tuple[dict[str, list[dict]], GroupRuntime]:
    """Every row of the group, going through encode/decode at each stop."""
    runtime, tables = GroupRuntime("g", CONFIG), {}
    runtime.offer(events())
    for stop in stops + [end]:
        runtime.advance_to(stop)
        for name, rows in runtime.take_output().tables.items():
            tables.setdefault(name, []).extend(rows)
        if stop != end:
            runtime = GroupRuntime.decode(runtime.encode(), CONFIG)
    return tables, runtime


def test_decoded_runtime_writes_the_same_rows_as_an_uninterrupted_one() -> None:
    # Stops while joins are parked, events are still held and the initial rebalance delay is pending.
    straight, _ = run([], 200_000)
    stopped, runtime = run([2, 3_000, 3_500, 4_000, 90_000], 200_000)
    assert stopped == straight
    assert straight["responses"] and straight["group_states"]
    seqs = [row["out_seq"] for rows in stopped.values() for row in rows]
    assert sorted(seqs) == list(range(len(seqs)))  # out_seq carries on across decodes


def test_blob_leaves_the_configuration_to_decode() -> None:
    runtime = GroupRuntime("g", CONFIG)
    runtime.offer(events())
    runtime.advance_to(2)
    runtime.take_output()
    blob = runtime.encode()
    assert b"CoordinatorConfig" not in blob and b"Output" not in blob
    other = dataclasses.replace(CONFIG, group_max_size=7)
    decoded = GroupRuntime.decode(blob, other)
    assert decoded.config is other
    assert decoded.out.next_seq == runtime.out.next_seq and len(decoded.out) == 0
    assert decoded.held_count() == runtime.held_count() and decoded.next_wakeup() == runtime.next_wakeup()


def test_encode_refuses_unread_rows() -> None:
    runtime = GroupRuntime("g", CONFIG)
    runtime.offer(events())
    runtime.advance_to(2)
    with pytest.raises(AssertionError, match="take_output"):
        runtime.encode()


def test_decode_refuses_other_formats_and_versions() -> None:
    runtime = GroupRuntime("g", CONFIG)
    blob = runtime.encode()
    assert blob[len(STATE_FORMAT)] == STATE_FORMAT_VERSION
    older = STATE_FORMAT + bytes([STATE_FORMAT_VERSION - 1]) + blob[len(STATE_FORMAT) + 1:]
    with pytest.raises(ValueError, match=f"group state format v{STATE_FORMAT_VERSION - 1} is not readable by "
                                         f"this release \\(reads v{STATE_FORMAT_VERSION}\\)"):
        GroupRuntime.decode(older, CONFIG)
    with pytest.raises(ValueError, match="not a coordsim group state"):
        GroupRuntime.decode(b"something else", CONFIG)


def test_events_pickle_as_their_constructor_call() -> None:
    event = events()[2]
    data = dumps(event)
    assert pickle.loads(data) == event
    assert b"_dataclass_setstate" not in data and b"dataclasses" not in data
    # One pickler reused for many objects: each result stands alone.
    reused = ValuesPickler.dumper()
    assert [pickle.loads(reused(e)) for e in events()] == events()
    timer = Timer(("heartbeat", "m"), 10, (0, 1, ()), "heartbeat", ("m",), 1)
    assert pickle.loads(dumps(timer)) == timer
