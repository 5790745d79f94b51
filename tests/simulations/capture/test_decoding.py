"""The group APIs' declarations against hand-encoded messages, including the flexible versions (compact
strings and arrays, tagged fields) that the librdkafka captures do not exercise: newer Java clients send
JoinGroup v9, SyncGroup v5, Heartbeat v4, LeaveGroup v5, OffsetCommit v8-v9 and OffsetFetch v8-v9."""

from __future__ import annotations

import pytest

from simulations.capture.contract import Part, Request, captured_response_fields, event_row, parts
from simulations.capture.messages import (FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, OFFSET_COMMIT,
                                          OFFSET_FETCH, SYNC_GROUP, decode_request, decode_response,
                                          read_request_header)
from simulations.capture.wire import WireError
from state.events import parse_event

from .kafka_bytes import W, assignment, request_frame, response_frame, subscription


def roundtrip(api, version, body: bytes, correlation_id=7, client_id="app-1"):
    frame = request_frame(api.key, version, correlation_id, client_id, body, api.flexible(version))[4:]
    header = read_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == \
        (api.key, version, correlation_id, client_id)
    return decode_request(api, version, frame, header.body_offset)


def answer(api, version, body: bytes):
    return decode_response(api, version, response_frame(7, body, api.flexible(version))[4:])


def as_event(api, version, body: dict, index=0) -> dict:
    request = Request(api, version, "app-1", "/10.0.0.7", body)
    row = event_row(request, parts(request)[index])
    return {"ts": 1, **row}


@pytest.mark.parametrize("version", [0, 1, 4, 5, 6, 8, 9])
def test_join_group_request_every_layout(version):
    flexible = version >= 6
    sub = subscription(["orders"])
    w = W(flexible).string("g").i32(10_000)
    if version >= 1:
        w.i32(300_000)
    w.string("m-1")
    if version >= 5:
        w.string("instance-1")
    w.string("consumer").array([("range", sub)], lambda w, p: w.string(p[0]).bytes_(p[1]).tags())
    if version >= 8:
        w.string("rebalance needed")
    w.tags((5, b"\x01\x02"))  # an unknown tagged field must be skipped
    body = roundtrip(JOIN_GROUP, version, w.done())
    assert body["group_id"] == "g" and body["session_timeout_ms"] == 10_000 and body["member_id"] == "m-1"
    assert body["rebalance_timeout_ms"] == (300_000 if version >= 1 else -1)
    assert body["group_instance_id"] == ("instance-1" if version >= 5 else None)
    assert body["reason"] == ("rebalance needed" if version >= 8 else None)
    assert body["protocols"] == [{"name": "range", "metadata": sub}]
    event = parse_event(as_event(JOIN_GROUP, version, body))
    assert event.protocols[0].topics == ("orders",)
    assert event.rebalance_timeout_ms == (300_000 if version >= 1 else 10_000)  # v0: the session timeout


@pytest.mark.parametrize("version", [0, 2, 5, 7, 9])
def test_join_group_response_every_layout(version):
    flexible = version >= 6
    w = W(flexible)
    if version >= 2:
        w.i32(0)
    w.i16(0).i32(4)
    if version >= 7:
        w.string("consumer")
    w.string("range").string("m-1")
    if version >= 9:
        w.boolean(False)
    w.string("m-1")

    def member(w, m):
        w.string(m[0])
        if version >= 5:
            w.string(m[1])
        w.bytes_(subscription(["orders"])).tags()

    w.array([("m-1", None), ("m-2", "instance-2")], member).tags()
    body = answer(JOIN_GROUP, version, w.done())
    request = Request(JOIN_GROUP, version, "app-1", "/h", {"group_id": "g"})
    row = captured_response_fields(request, Part("g", 0, 1), body)
    assert row["error"] == "NONE" and row["generation_id"] == 4 and row["leader_id"] == "m-1"
    assert row["protocol_type"] == ("consumer" if version >= 7 else None)
    assert row["members"] == [{"member_id": "m-1", "group_instance_id": None},
                              {"member_id": "m-2", "group_instance_id": "instance-2" if version >= 5 else None}]


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_sync_group_both_ways(version):
    flexible = version >= 4
    plan = assignment([("orders", 0), ("orders", 1)])
    w = W(flexible).string("g").i32(3).string("m-1")
    if version >= 3:
        w.string(None)
    if version >= 5:
        w.string("consumer").string("range")
    w.array([("m-1", plan)], lambda w, a: w.string(a[0]).bytes_(a[1]).tags()).tags()
    body = roundtrip(SYNC_GROUP, version, w.done())
    assert body["assignments"] == [{"member_id": "m-1", "assignment": plan}]
    event = parse_event(as_event(SYNC_GROUP, version, body))
    assert event.assignments[0].partitions[0].partitions == (0, 1)

    r = W(flexible)
    if version >= 1:
        r.i32(0)
    r.i16(27)
    if version >= 5:
        r.string("consumer").string("range")
    r.bytes_(b"").tags()
    reply = answer(SYNC_GROUP, version, r.done())
    row = captured_response_fields(Request(SYNC_GROUP, version, "", "", body), Part("g", 0, 1), reply)
    assert row["error"] == "REBALANCE_IN_PROGRESS" and row["assignment"] == []


@pytest.mark.parametrize("version", [0, 3, 4])
def test_heartbeat(version):
    w = W(version >= 4).string("g").i32(2).string("m-1")
    if version >= 3:
        w.string("instance-1")
    body = roundtrip(HEARTBEAT, version, w.tags().done())
    assert (body["generation_id"], body["member_id"]) == (2, "m-1")
    assert body["group_instance_id"] == ("instance-1" if version >= 3 else None)
    r = W(version >= 4)
    if version >= 1:
        r.i32(0)
    assert answer(HEARTBEAT, version, r.i16(25).tags().done())["error_code"] == 25


@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_leave_group(version):
    flexible = version >= 4
    w = W(flexible).string("g")
    if version < 3:
        w.string("m-1")
    else:
        def identity(w, m):
            w.string(m[0]).string(m[1])
            if version >= 5:
                w.string("shutdown")
            w.tags()
        w.array([("m-1", None), ("", "instance-2")], identity)
    body = roundtrip(LEAVE_GROUP, version, w.tags().done())
    event = parse_event(as_event(LEAVE_GROUP, version, body))
    assert [m.member_id for m in event.members] == (["m-1"] if version < 3 else ["m-1", ""])
    r = W(flexible).i32(0).i16(0)
    if version >= 3:
        r.array([("m-1", None, 0), ("", "instance-2", 25)],
                lambda w, m: w.string(m[0]).string(m[1]).i16(m[2]).tags())
    reply = answer(LEAVE_GROUP, version, r.tags().done())
    row = captured_response_fields(Request(LEAVE_GROUP, version, "", "", body), Part("g", 0, 1), reply)
    assert row["error"] == "NONE"
    if version >= 3:
        assert [x["error"] for x in row["results"]] == ["NONE", "UNKNOWN_MEMBER_ID"]


@pytest.mark.parametrize("version", [0, 1, 2, 6, 7, 8, 9])
def test_offset_commit(version):
    flexible = version >= 8
    w = W(flexible).string("g")
    if version >= 1:
        w.i32(5).string("m-1")
    if version >= 7:
        w.string(None)
    if 2 <= version <= 4:
        w.i64(-1)

    def partition(w, p):
        w.i32(p).i64(100 + p)
        if version >= 6:
            w.i32(9)
        if version == 1:
            w.i64(1234)
        w.string("meta").tags()

    w.array([("orders", [0, 3])], lambda w, t: w.string(t[0]).array(t[1], partition).tags()).tags()
    body = roundtrip(OFFSET_COMMIT, version, w.done())
    event = parse_event(as_event(OFFSET_COMMIT, version, body))
    assert [(o.partition, o.offset) for o in event.offsets] == [(0, 100), (3, 103)]
    assert event.generation_id == (5 if version >= 1 else -1)
    assert [o.leader_epoch for o in event.offsets] == ([9, 9] if version >= 6 else [-1, -1])
    r = W(flexible)
    if version >= 3:
        r.i32(0)
    r.array([("orders", [(0, 0), (3, 22)])],
            lambda w, t: w.string(t[0]).array(t[1], lambda w, p: w.i32(p[0]).i16(p[1]).tags()).tags()).tags()
    reply = answer(OFFSET_COMMIT, version, r.done())
    row = captured_response_fields(Request(OFFSET_COMMIT, version, "", "", body), Part("g", 0, 1), reply)
    assert row["error"] == "NONE"  # partitions differ: no request-wide error
    assert [(x["partition"], x["error"], x["offset"]) for x in row["results"]] == \
        [(0, "NONE", 100), (3, "ILLEGAL_GENERATION", 103)]


@pytest.mark.parametrize("version", [1, 2, 6, 7])
def test_offset_fetch_single_group(version):
    flexible = version >= 6
    w = W(flexible).string("g")
    w.array(None if version >= 2 else [("orders", [0])],
            lambda w, t: w.string(t[0]).array(t[1], lambda w, p: w.i32(p)).tags())
    if version >= 7:
        w.boolean(True)
    body = roundtrip(OFFSET_FETCH, version, w.tags().done())
    event = parse_event(as_event(OFFSET_FETCH, version, body))
    assert event.partitions is None if version >= 2 else event.partitions[0].partitions == (0,)
    r = W(flexible)
    if version >= 3:
        r.i32(0)

    def partition(w, p):
        w.i32(p).i64(42)
        if version >= 5:
            w.i32(-1)
        w.string("").i16(0).tags()

    r.array([("orders", [0])], lambda w, t: w.string(t[0]).array(t[1], partition).tags())
    if version >= 2:
        r.i16(0)
    reply = answer(OFFSET_FETCH, version, r.tags().done())
    row = captured_response_fields(Request(OFFSET_FETCH, version, "", "", body), Part("g", 0, 1), reply)
    assert [(x["partition"], x["offset"]) for x in row["results"]] == [(0, 42)]


@pytest.mark.parametrize("version", [8, 9])
def test_offset_fetch_several_groups_become_one_event_each(version):
    def group(w, g):
        w.string(g[0])
        if version >= 9:
            w.string("m-1").i32(3)
        w.array(g[1], lambda w, t: w.string(t[0]).array(t[1], lambda w, p: w.i32(p)).tags()).tags()

    body = roundtrip(OFFSET_FETCH, version, W(True).array([("a", [("orders", [1])]), ("b", None)], group)
                     .boolean(False).tags().done())
    request = Request(OFFSET_FETCH, version, "", "", body)
    assert [p.group_id for p in parts(request)] == ["a", "b"]
    assert parse_event(as_event(OFFSET_FETCH, version, body, 0)).partitions[0].topic == "orders"
    assert parse_event(as_event(OFFSET_FETCH, version, body, 1)).partitions is None
    # v9's member id and epoch (KIP-848) reach the event, for the coordinator to check.
    member = ("m-1", 3) if version >= 9 else (None, -1)
    assert all((e.member_id, e.member_epoch) == member for e in (
        parse_event(as_event(OFFSET_FETCH, version, body, i)) for i in (0, 1)))

    def answer_group(w, g):
        w.string(g).array([("orders", [1])], lambda w, t: w.string(t[0]).array(
            t[1], lambda w, p: w.i32(p).i64(7).i32(-1).string(None).i16(0).tags()).tags()).i16(0).tags()

    reply = answer(OFFSET_FETCH, version, W(True).i32(0).array(["a", "b"], answer_group).tags().done())
    assert captured_response_fields(request, parts(request)[1], reply)["results"][0]["offset"] == 7


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_find_coordinator(version):
    w = W(version >= 3)
    if version <= 3:
        w.string("g")
    if version >= 1:
        w.i8(0)
    if version >= 4:
        w.array(["g", "h"], lambda w, k: w.string(k))
    body = roundtrip(FIND_COORDINATOR, version, w.tags().done())
    request = Request(FIND_COORDINATOR, version, "", "", body)
    assert [p.group_id for p in parts(request)] == (["g", "h"] if version >= 4 else ["g"])
    assert event_row(request, parts(request)[0]) is None  # not a request the simulator answers
    r = W(version >= 3)
    if version >= 1:
        r.i32(0)
    if version <= 3:
        r.i16(0)
        if version >= 1:
            r.string(None)
        r.i32(2).string("broker-2").i32(9092)
    else:
        r.array(["g", "h"], lambda w, k: w.string(k).i32(2).string("broker-2").i32(9092).i16(0).string(None).tags())
    reply = answer(FIND_COORDINATOR, version, r.tags().done())
    assert captured_response_fields(request, parts(request)[-1], reply)["coordinator"] == "node 2 at broker-2:9092"


def test_a_transaction_coordinator_lookup_is_not_a_group_request():
    body = roundtrip(FIND_COORDINATOR, 2, W().string("tx-1").i8(1).done())
    assert parts(Request(FIND_COORDINATOR, 2, "", "", body)) == []


@pytest.mark.parametrize("damage", ["truncated", "leftover", "null member id"])
def test_damaged_bodies_raise_wire_errors(damage):
    good = W().string("g").i32(2).string("m-1").string(None).done()
    body = {"truncated": good[:-3], "leftover": good + b"\x00", "null member id":
            W().string("g").i32(2).string(None).string(None).done()}[damage]
    with pytest.raises(WireError):
        roundtrip(HEARTBEAT, 3, body)


def test_a_broker_that_sends_null_where_kafka_never_does_is_read_as_null():
    # librdkafka's mock answers a raced SyncGroup with a null assignment (non-nullable in the spec)
    reply = answer(SYNC_GROUP, 3, W().i32(0).i16(42).bytes_(None).done())
    assert reply["error_code"] == 42 and reply["assignment"] is None
