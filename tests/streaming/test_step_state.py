"""The step's key state (versioned, compressed, readable across releases) and its output frames."""

from __future__ import annotations

import marshal
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from tableio.inputs import read_events
from state import pickling
from state.config import CoordinatorConfig
from streaming import sink, source
from streaming import step as step_module
from streaming.step import STATE_FORMAT, STATE_FORMAT_VERSION, Slot, _decode, _encode

SAMPLE = Path(__file__).resolve().parents[2] / "simulations" / "samples" / "sample-trace.jsonl"

SLOTS = {
    "g1": Slot(b"runtime-bytes" * 50, 1_767_225_600_000, 1_767_225_645_000, ()),
    "g2": Slot(None, None, None, ((1_767_225_600_007, b"\x80\x05pickled-event"),)),
}


def test_slots_round_trip_in_the_current_format():
    blob = _encode(SLOTS)
    assert blob.startswith(STATE_FORMAT + bytes([STATE_FORMAT_VERSION]))
    assert _decode(blob) == SLOTS


def test_the_current_format_is_smaller_than_the_plain_one():
    plain = marshal.dumps({g: tuple(s) for g, s in SLOTS.items()})
    assert len(_encode(SLOTS)) < len(plain) / 3


def test_a_v1_checkpoint_state_is_still_read():
    v1 = STATE_FORMAT + bytes([1]) + marshal.dumps({g: tuple(s) for g, s in SLOTS.items()})
    assert _decode(v1) == SLOTS


@pytest.mark.parametrize("blob, message", [
    (STATE_FORMAT + bytes([99]) + b"x", "key state format v99 is not readable by this release (reads v1, v2)"),
    (b"something else", "not a coordsim key state"),
])
def test_unreadable_states_are_refused_with_their_reason(blob, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _decode(blob)


def _step_tables(events, rows_per_frame: int, monkeypatch, rows_per_envelope: int = 2_000
                 ) -> tuple[int, dict[str, list[dict]]]:
    """Every event of `events` through one bucketed step call that applies them all: the frames it yields
    and each table's rows, decoded from the frames' envelopes (checked against their `rows`)."""
    monkeypatch.setattr(step_module, "ROWS_PER_FRAME", rows_per_frame)
    monkeypatch.setattr(step_module, "ROWS_PER_ENVELOPE", rows_per_envelope)
    step = step_module.make_step(CoordinatorConfig(), None, bucketed=True)
    chunk = pd.DataFrame({
        "key": ["0"] * len(events), "group_id": [e.group_id for e in events],
        "event_time": pd.to_datetime([e.ts for e in events], unit="ms"),
        "payload": [pickling.dumps(e) for e in events]})
    state = SimpleNamespace(exists=False, get=None, getCurrentWatermarkMs=lambda: max(e.ts for e in events) + 1,
                            update=lambda value: None, setTimeoutTimestamp=lambda ts: None)
    frames = list(step(("0",), iter([chunk]), state))
    tables: dict[str, list[dict]] = {}
    for frame in frames:
        for table, count, payload in zip(frame["table"], frame["rows"], frame["payload"]):
            if table not in (step_module.META_TABLE, step_module.LIVE_TABLE):
                rows = sink.decode_table(table, payload).to_pylist()
                assert len(rows) == count <= rows_per_envelope
                tables.setdefault(table, []).extend(rows)
    return len(frames), tables


@pytest.mark.parametrize("rows_per_frame, rows_per_envelope", [(25, 2_000), (1_000_000, 7), (25, 7)])
def test_a_call_with_many_rows_yields_them_in_several_frames_and_envelopes_and_loses_none(
        monkeypatch, rows_per_frame, rows_per_envelope):
    events = read_events([SAMPLE]).events
    one_frame, whole = _step_tables(events, 1_000_000, monkeypatch)
    frames, split = _step_tables(events, rows_per_frame, monkeypatch, rows_per_envelope)
    assert one_frame == 1 and (frames > 3) == (rows_per_frame == 25)
    assert sum(map(len, whole.values())) > 100
    assert {t: sorted(map(repr, rows)) for t, rows in split.items()} == \
           {t: sorted(map(repr, rows)) for t, rows in whole.items()}


def test_a_group_whose_run_ended_keeps_no_runtime_and_no_timeout():
    events = read_events([SAMPLE]).events
    group = events[0].group_id
    events = [e for e in events if e.group_id == group]
    final = max(e.ts for e in events) + 600_000
    step = step_module.make_step(CoordinatorConfig(), None, bucketed=True)
    kept, timeouts, snapshots = [], [], []
    state = SimpleNamespace(exists=False, get=None, getCurrentWatermarkMs=lambda: max(e.ts for e in events) + 1,
                            update=kept.append, setTimeoutTimestamp=timeouts.append)

    def call(times, payloads):
        chunk = pd.DataFrame({"key": ["0"] * len(times), "group_id": [group] * len(times),
                              "event_time": pd.to_datetime(times, unit="ms"), "payload": payloads})
        timeouts.clear()
        frames = list(step(("0",), iter([chunk]), state))
        snapshots.extend(p for frame in frames for t, p in zip(frame["table"], frame["payload"])
                         if t == step_module.LIVE_TABLE)
        state.exists, state.get = True, kept[-1]
        (slot,) = _decode(kept[-1][0]).values()
        return {table for frame in frames for table in frame["table"]}, slot

    _, slot = call([e.ts for e in events], [pickling.dumps(e) for e in events])
    assert slot.runtime not in (None, step_module.ENDED) and slot.pending == () and timeouts
    assert snapshots and snapshots[-1]  # what is still open, for a reader of the run in progress
    state.getCurrentWatermarkMs = lambda: final + 1
    tables, slot = call([final + 1], [source.end_of_run_payload(final)])
    assert "metrics" in tables  # the run ended
    assert slot == Slot(step_module.ENDED, None, slot.max_pending_deadline, ()) and timeouts == []
    assert snapshots[-1] == b""  # nothing is open any more: the tables hold it all


def test_a_wake_row_brings_a_group_with_nothing_due_to_its_time():
    # Its elided clients' sessions move on with the clock: the deadline it reports is the one at the wake
    # row's time, as the local engine's group reports it there, not the one of its last visit.
    from state.events import parse_event
    from state.runtime.group_runtime import GroupRuntime

    events = [parse_event({"ts": 0, "group_id": "g", "type": "TOPIC_METADATA",
                           "topics": [{"topic": "t", "partitions": 4, "records_per_second": 10}]}, "test", 1)]
    events += [parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": f"c{i}", "topics": ["t"]},
                           "test", 2 + i) for i in range(2)]
    first, later = 60_000, 200_000
    step = step_module.make_step(CoordinatorConfig(), None, bucketed=False)
    kept = []
    state = SimpleNamespace(exists=False, get=None, getCurrentWatermarkMs=lambda: first + 1, update=kept.append,
                            setTimeoutTimestamp=lambda ts: None)

    def call(times, payloads):
        chunk = pd.DataFrame({"key": ["g"] * len(times), "event_time": pd.to_datetime(times, unit="ms"),
                              "payload": payloads})
        list(step(("g",), iter([chunk]), state))
        state.exists, state.get = True, kept[-1]
        return _decode(kept[-1][0])["g"]

    slot = call([e.ts for e in events], [pickling.dumps(e) for e in events])
    runtime = GroupRuntime("g", CoordinatorConfig())
    runtime.offer(events)
    runtime.advance_to(first)
    assert runtime.elision.elided and slot.max_pending_deadline == runtime.max_pending_deadline()
    assert slot.runtime_wakeup is None or slot.runtime_wakeup > later  # nothing of its own wakes it
    slot = call([later + 5_000], [source.wake_payload(later)])  # arrives before the watermark passes it
    state.getCurrentWatermarkMs = lambda: later + 1
    slot = call([], [])
    runtime.advance_to(later)
    assert slot.max_pending_deadline == runtime.max_pending_deadline() > first + 45_000
    assert slot.pending == ()
