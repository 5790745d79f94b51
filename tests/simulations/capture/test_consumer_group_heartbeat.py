"""ConsumerGroupHeartbeat (API 68) v0-v1 and Metadata v1-v13 against hand-encoded messages (kafka_bytes.py,
written from the protocol guide: flexible versions, a nullable struct's presence byte, Uuids), and the topic ids
they carry named from the Metadata responses (simulations/capture/topics.py). The librdkafka capture
(test_consumer_protocol_capture.py) only sends v1."""

from __future__ import annotations

import pytest

from simulations.capture.contract import Part, Request, captured_request_fields, captured_response_fields, event_row
from simulations.capture.importer import ImportResult
from simulations.capture.messages import CONSUMER_GROUP_HEARTBEAT, METADATA, OFFSET_COMMIT, OFFSET_FETCH, decode_response
from simulations.capture.topics import TopicCatalog, resolve_topics
from simulations.capture.wire import WireError
from state.events import parse_event

from .kafka_bytes import W, response_frame
from .test_decoding import answer, roundtrip

# Uuid(0, 1) and Uuid(0, 2): Kafka prints them (Uuid.toString) as these.
ORDERS_ID, ORDERS_TEXT = bytes(15) + b"\x01", "AAAAAAAAAAAAAAAAAAAAAQ"
PAYMENTS_ID, PAYMENTS_TEXT = bytes(15) + b"\x02", "AAAAAAAAAAAAAAAAAAAAAg"


def owned(w, entry):
    w.uuid(entry[0]).array(entry[1], lambda w, p: w.i32(p)).tags()


@pytest.mark.parametrize("version", [0, 1])
def test_a_full_heartbeat_every_version(version):
    w = W(True).string("g").string("m-1").i32(0).string("instance-1").string(None).i32(300_000)
    w.array(["orders"], lambda w, t: w.string(t))
    if version >= 1:
        w.string("")
    w.string("uniform").array([(ORDERS_ID, [2, 0])], owned)
    body = roundtrip(CONSUMER_GROUP_HEARTBEAT, version, w.tags((3, b"\x07")).done())  # an unknown tag skipped
    assert body == {"group_id": "g", "member_id": "m-1", "member_epoch": 0, "instance_id": "instance-1",
                    "rack_id": None, "rebalance_timeout_ms": 300_000, "subscribed_topic_names": ["orders"],
                    "subscribed_topic_regex": "" if version >= 1 else None, "server_assignor": "uniform",
                    "topic_partitions": [{"topic_id": ORDERS_TEXT, "partitions": [2, 0]}]}
    request = Request(CONSUMER_GROUP_HEARTBEAT, version, "app-1", "/10.0.0.7", body)
    row = event_row(request, Part("g", 0, 1))
    assert row["topic_partitions"] == [{"topic_id": ORDERS_TEXT, "partitions": [2, 0]}]
    assert ("subscribed_topic_regex" in row) == (version >= 1)
    row["topic_partitions"][0]["topic"] = "orders"  # as topics.py names it
    event = parse_event({"ts": 1, **row})
    assert (event.member_id, event.member_epoch, event.instance_id, event.client_host) == (
        "m-1", 0, "instance-1", "/10.0.0.7")
    assert event.topic_partitions[0].partitions == (2, 0)
    assert captured_request_fields(request, Part("g", 0, 1))["group_instance_id"] == "instance-1"


def test_a_plain_heartbeat_sends_nulls_for_what_did_not_change():
    w = W(True).string("g").string("m-1").i32(7).string(None).string(None).i32(-1).array(None, None)
    body = roundtrip(CONSUMER_GROUP_HEARTBEAT, 1, w.string(None).string(None).array(None, None).tags().done())
    event = parse_event({"ts": 1, **event_row(Request(CONSUMER_GROUP_HEARTBEAT, 1, "app-1", "/h", body),
                                              Part("g", 0, 1))})
    assert (event.member_epoch, event.subscribed_topic_names, event.topic_partitions) == (7, None, None)


def _response(error=0, member_id="m-1", epoch=5, assignment=None, message=None) -> bytes:
    w = W(True).i32(0).i16(error).string(message).string(member_id).i32(epoch).i32(3000)
    if assignment is None:
        w.i8(-1)
    else:
        w.i8(1).array(assignment, owned).tags()
    return w.tags().done()


@pytest.mark.parametrize("version", [0, 1])
def test_answers_with_an_assignment_without_one_and_with_an_error(version):
    request = Request(CONSUMER_GROUP_HEARTBEAT, version, "app-1", "/h", {"member_id": "m-1"})
    given = answer(CONSUMER_GROUP_HEARTBEAT, version, _response(assignment=[(PAYMENTS_ID, [1]), (ORDERS_ID, [3, 0])]))
    assert given["assignment"] == {"topic_partitions": [{"topic_id": PAYMENTS_TEXT, "partitions": [1]},
                                                        {"topic_id": ORDERS_TEXT, "partitions": [3, 0]}]}
    row = captured_response_fields(request, Part("g", 0, 1), given)
    assert (row["error"], row["member_id"], row["generation_id"], row["heartbeat_interval_ms"]) == (
        "NONE", "m-1", 5, 3000)
    assert row["assignment"] == [{"topic_id": PAYMENTS_TEXT, "partitions": [1]},
                                 {"topic_id": ORDERS_TEXT, "partitions": [3, 0]}]
    unchanged = captured_response_fields(request, Part("g", 0, 1), answer(CONSUMER_GROUP_HEARTBEAT, version,
                                                                           _response()))
    assert unchanged["assignment"] is None and unchanged["generation_id"] == 5
    fenced = captured_response_fields(request, Part("g", 0, 1), answer(
        CONSUMER_GROUP_HEARTBEAT, version, _response(110, None, 0, message="The member epoch is fenced")))
    assert fenced == {"error": "FENCED_MEMBER_EPOCH"}  # the member id stays the request's; no epoch


def _metadata(version: int, topics) -> bytes:
    """A Metadata response: one broker, then `topics` as (error, name, id bytes, partition count)."""
    flexible = version >= 9
    w = W(flexible)
    if version >= 3:
        w.i32(0)

    def broker(w, node):
        w.i32(node).string("broker-1").i32(9092)
        if version >= 1:
            w.string(None)  # rack
        w.tags()

    w.array([1], broker)
    if version >= 2:
        w.string("cluster-1")
    if version >= 1:
        w.i32(1)

    def partition(w, index):
        w.i16(0).i32(index).i32(1)
        if version >= 7:
            w.i32(0)
        w.array([1], lambda w, n: w.i32(n)).array([1], lambda w, n: w.i32(n))
        if version >= 5:
            w.array([], None)
        w.tags()

    def topic(w, t):
        w.i16(t[0]).string(t[1])
        if version >= 10:
            w.uuid(t[2])
        if version >= 1:
            w.boolean(False)
        w.array(list(range(t[3])), partition)
        if version >= 8:
            w.i32(-2147483648)
        w.tags()

    w.array(topics, topic)
    if 8 <= version <= 10:
        w.i32(-2147483648)
    if version >= 13:
        w.i16(0)
    return w.tags().done()


@pytest.mark.parametrize("version", [1, 7, 9, 10, 12, 13])
def test_metadata_responses_describe_topics_by_id_from_v10(version):
    body = decode_response(METADATA, version, response_frame(
        9, _metadata(version, [(0, "orders", ORDERS_ID, 4), (3, "gone", bytes(16), 0)]), version >= 9)[4:])
    assert [(t["name"], len(t["partitions"])) for t in body["topics"]] == [("orders", 4), ("gone", 0)]
    catalog = TopicCatalog()
    catalog.note(100, body)
    # A topic with an error (UNKNOWN_TOPIC_OR_PARTITION) is not one; before v10 no topic has an id.
    assert catalog.names() == ({ORDERS_TEXT: "orders"} if version >= 10 else {})


def test_a_second_empty_tagged_field_section_closing_a_response_is_tolerated():
    # librdkafka's mock closes its Metadata v13 responses so; anything more is still a damaged frame.
    good = _metadata(13, [(0, "orders", ORDERS_ID, 1)])
    assert decode_response(METADATA, 13, response_frame(9, good + b"\x00", True)[4:])["topics"][0]["name"] == "orders"
    with pytest.raises(WireError):
        decode_response(METADATA, 13, response_frame(9, good + b"\x00\x00", True)[4:])


def test_topic_ids_are_named_and_each_consumer_group_gets_the_topics_before_its_first_heartbeat():
    result = ImportResult("capture.pcapng", "pcap")
    heartbeat = {"group_id": "g", "type": "CONSUMER_GROUP_HEARTBEAT", "client_id": "app-1", "member_epoch": 1}
    result.events = [
        {"ts": 10, "seq": 1, "request_id": "c/1", **heartbeat, "topic_partitions": []},
        {"ts": 20, "seq": 2, "request_id": "c/2", **heartbeat,
         "topic_partitions": [{"topic_id": ORDERS_TEXT, "partitions": [0]},
                              {"topic_id": PAYMENTS_TEXT, "partitions": [1]}]},
        {"ts": 40, "seq": 3, "request_id": "c/3", **heartbeat, "topic_partitions": None},
    ]
    result.captured = [{"request_id": f"c/{i}", "request_frame": 10 * i, "api": "ConsumerGroupHeartbeat",
                        "assignment": None} for i in (1, 2, 3)]
    result.captured[0]["assignment"] = [{"topic_id": ORDERS_TEXT, "partitions": [3, 0]}]
    catalog = TopicCatalog()
    for ts, partitions in ((15, 4), (30, 4), (35, 6)):  # described after the first heartbeat, then grown
        catalog.note(ts, {"topics": [{"error_code": 0, "name": "orders", "topic_id": ORDERS_TEXT,
                                      "partitions": [{}] * partitions}]})
    resolve_topics(result, catalog)
    assert [(e["ts"], e["seq"], e["type"]) for e in result.events] == [
        (10, 0, "TOPIC_METADATA"), (10, 1, "CONSUMER_GROUP_HEARTBEAT"), (20, 2, "CONSUMER_GROUP_HEARTBEAT"),
        (35, 0, "TOPIC_METADATA"), (40, 3, "CONSUMER_GROUP_HEARTBEAT")]
    assert [e["topics"] for e in result.events if e["type"] == "TOPIC_METADATA"] == [
        [{"topic": "orders", "partitions": 4, "topic_id": ORDERS_TEXT}],
        [{"topic": "orders", "partitions": 6, "topic_id": ORDERS_TEXT}]]
    assert result.events[2]["topic_partitions"] == [
        {"topic": "orders", "topic_id": ORDERS_TEXT, "partitions": [0]},
        {"topic": PAYMENTS_TEXT, "topic_id": PAYMENTS_TEXT, "partitions": [1]}]
    assert result.captured[0]["assignment"] == [{"topic": "orders", "partitions": [0, 3]}]
    [reject] = result.rejects
    assert reject["line"] == 20 and reject["reason"].startswith(f"unknown topic id: {PAYMENTS_TEXT} (")
    assert all(parse_event(e) for e in result.events)


def test_offset_commit_and_fetch_v10_name_topics_by_id():
    # Kafka 4.1+ clients of a consumer group send OffsetCommit v10 and OffsetFetch v10, which carry the topic's
    # id where v9 had its name (OffsetCommitRequest.json / OffsetFetchRequest.json, "TopicId" 10+); the
    # conformance suite's 4.4.0 consumers do. The import names them as it names a heartbeat's.
    def committed(w, t):
        w.uuid(t[0]).array(t[1], lambda w, p: w.i32(p).i64(40).i32(-1).string(None).tags()).tags()

    commit = roundtrip(OFFSET_COMMIT, 10, W(True).string("g").i32(3).string("m-1").string(None)
                       .array([(ORDERS_ID, [0, 2])], committed).tags().done())
    fetch = roundtrip(OFFSET_FETCH, 10, W(True).array([("g", [(ORDERS_ID, [0])])], lambda w, g: w.string(g[0])
                      .string("m-1").i32(3).array(g[1], lambda w, t: w.uuid(t[0]).array(t[1], lambda w, p: w.i32(p))
                                                  .tags()).tags()).boolean(False).tags().done())
    commit_reply = answer(OFFSET_COMMIT, 10, W(True).i32(0).array([(ORDERS_ID, [0, 2])], lambda w, t: w.uuid(t[0])
                          .array(t[1], lambda w, p: w.i32(p).i16(0).tags()).tags()).tags().done())
    fetch_reply = answer(OFFSET_FETCH, 10, W(True).i32(0).array(["g"], lambda w, g: w.string(g).array(
        [(ORDERS_ID, [0])], lambda w, t: w.uuid(t[0]).array(
            t[1], lambda w, p: w.i32(p).i64(40).i32(-1).string(None).i16(0).tags()).tags()).i16(0).tags()).tags().done())
    result = ImportResult("capture.pcapng", "pcap")
    for n, (api, body, reply) in enumerate(((OFFSET_COMMIT, commit, commit_reply), (OFFSET_FETCH, fetch, fetch_reply))):
        request = Request(api, 10, "app-1", "/10.0.0.7", body)
        result.events.append({"ts": 10 + n, "seq": n + 1, "request_id": f"c/{n}", **event_row(request, Part("g", 0, 1))})
        result.captured.append({"request_id": f"c/{n}", "request_frame": n, "api": api.name, "api_version": 10,
                                "assignment": None, **captured_response_fields(request, Part("g", 0, 1), reply)})
    catalog = TopicCatalog()
    catalog.note(5, {"topics": [{"error_code": 0, "name": "orders", "topic_id": ORDERS_TEXT, "partitions": [{}] * 4}]})
    resolve_topics(result, catalog)
    commit_event, fetch_event = (parse_event(e) for e in result.events)
    assert [(o.topic, o.partition, o.offset) for o in commit_event.offsets] == [("orders", 0, 40), ("orders", 2, 40)]
    assert [(p.topic, p.partitions) for p in fetch_event.partitions] == [("orders", (0,))]
    assert [(r["topic"], r["partition"], r["offset"]) for row in result.captured for r in row["results"]] == [
        ("orders", 0, 40), ("orders", 2, 40), ("orders", 0, 40)]
    assert not result.rejects
