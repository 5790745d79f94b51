"""A group's runtime through `GroupRuntime.encode`/`decode` (the Spark engine's state between micro-batches):
what the blob holds and refuses, and that a decoded runtime carries on exactly as the original would."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from state.config import CoordinatorConfig
from state.clients.consumer_group.member_state import ClientMemberState
from state.events import parse_event
from state.pickling import ValuesPickler, dumps
from state.runtime import encoding
from state.classic.group_state import GroupState
from state.runtime.group_runtime import GroupRuntime
from state.runtime.timers import Timer

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


def test_decode_refuses_other_formats_and_schemas() -> None:
    blob = GroupRuntime("g", CONFIG).encode()
    assert blob.startswith(encoding.STATE_FORMAT + encoding.SCHEMA_ID + b"\n")
    other = encoding.STATE_FORMAT + b"0123456789ab" + blob[len(encoding.STATE_FORMAT) + len(encoding.SCHEMA_ID):]
    with pytest.raises(encoding.StateError, match=f"group state schema 0123456789ab is not this release's "
                                                  f"\\({encoding.SCHEMA_ID.decode()}\\)"):
        GroupRuntime.decode(other, CONFIG)
    with pytest.raises(encoding.StateError, match="not a coordsim group state"):
        GroupRuntime.decode(b"something else", CONFIG)


def test_the_schema_id_follows_the_stored_fields(monkeypatch) -> None:
    # A field added to a stored class, to the input contract, or an enum value changes the id.
    base = encoding.SCHEMA_ID
    timer_queue = "state.runtime.timers.TimerQueue"
    monkeypatch.setitem(encoding.STORED, timer_queue, encoding.STORED[timer_queue] + ("x",))
    assert _schema_id(encoding._schema()) != base
    monkeypatch.undo()
    assert _schema_id(encoding._schema()) == base
    assert encoding.SCHEMA["state.events.JoinGroup"][:3] == ("ts", "group_id", "type")
    assert encoding.SCHEMA["state.classic.group_state.GroupState"] == tuple(s.value for s in GroupState)


def _schema_id(schema) -> bytes:
    return encoding.hashlib.sha256(repr(sorted(schema.items())).encode()).hexdigest()[:12].encode()


def test_an_attribute_the_schema_does_not_list_is_refused() -> None:
    runtime = GroupRuntime("g", CONFIG)
    runtime.fleet.unlisted = 1
    with pytest.raises(encoding.StateError, match="ConsumerFleet has attributes the stored schema does not list: "
                                                  "unlisted"):
        runtime.encode()


def test_an_object_of_a_class_outside_the_schema_is_refused() -> None:
    runtime = GroupRuntime("g", CONFIG)
    runtime.image.production["t"] = CoordinatorConfig()
    with pytest.raises(encoding.StateError, match="state.config.CoordinatorConfig is not in the stored schema"):
        runtime.encode()


@pytest.mark.parametrize("scenario", ["rolling-restart-cooperative", "rolling-restart-consumer-protocol"])
def test_a_rolling_restart_goes_through_the_schema_at_every_stop(scenario: str) -> None:
    # Every class a running group holds (clients, quiet runs, elided chains, the log, parked joins; with the
    # consumer protocol the clients' memberships, mid-reconciliation with continuations pending) is listed,
    # and the decoded group carries on as the uninterrupted one.
    from simulations import scenarios
    from tableio.coordinator_settings import load_config

    loaded = scenarios.load_scenario(scenarios.resolve(scenario))
    generated = scenarios.generate(loaded)
    group = generated.rows[0]["group_id"]
    rows = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows) if row["group_id"] == group]
    config = load_config(scenario=loaded.broker)
    tables, stored = [], set()  # (membership state, pending action's class) seen at the stops
    for stops in ([], list(range(rows[0].ts, generated.until_ms, 7_001))):
        runtime, found = GroupRuntime(group, config), {}
        runtime.offer(rows)
        for stop in stops + [generated.until_ms]:
            runtime.advance_to(stop)
            for name, out in runtime.take_output().tables.items():
                found.setdefault(name, []).extend(out)
            stored |= {(c.membership.state, type(a).__name__) for c in runtime.fleet.clients.values()
                       if c.membership for a in [None, *c.membership.pending_actions()]}
            runtime = GroupRuntime.decode(runtime.encode(), config)
        tables.append(found)
    assert tables[0] == tables[1] and tables[0]["assignments"]
    if scenario == "rolling-restart-consumer-protocol":
        assert {(ClientMemberState.RECONCILING, "OnPartitionsAssigned"),
                (ClientMemberState.JOINING, "NoneType")} <= stored


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
