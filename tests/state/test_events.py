"""Reading JoinGroup protocols: the plain form is built once per distinct protocol, and reads the same as the
full reader; every other form is still checked field by field."""

from __future__ import annotations

import pytest

from state import events
from state.events import EventError, parse_event

JOIN = {"ts": 0, "group_id": "g", "type": "JOIN_GROUP", "member_id": "", "protocol_type": "consumer",
        "session_timeout_ms": 10_000}


def test_a_plain_protocol_is_built_once_and_reads_as_the_full_reader_reads_it():
    raw = {"name": "range", "topics": ["b", "a", "b"]}
    first = events._protocol(raw, "consumer")
    assert first == events._read_protocol(dict(raw), "consumer")
    assert first.topics == ("a", "b")
    assert events._protocol(dict(raw), "consumer") is first
    assert events._protocol({"name": "range", "topics": ["a", "b"]}, "consumer") != first


@pytest.mark.parametrize("protocols, reason", [
    ([{"name": "range", "topics": ["t", 5]}], "field 't' must be a string, got int 5"),
    ([{"name": "range", "topics": ["t"], "version": True}], "field 'version' must be an integer, got a boolean"),
    ([{"name": 5, "topics": ["t"]}], "field 'name' must be a string, got int 5"),
    (["range"], "each entry of 'protocols' must be an object, got str 'range'"),
])
def test_other_forms_are_still_checked_after_a_plain_one_was_read(protocols, reason):
    parse_event({**JOIN, "protocols": [{"name": "range", "topics": ["t"]}]}, "test", 1)
    with pytest.raises(EventError) as raised:
        parse_event({**JOIN, "protocols": protocols}, "test", 2)
    assert str(raised.value) == reason


def test_the_plain_protocols_read_stay_bounded(monkeypatch):
    monkeypatch.setattr(events, "_PLAIN_PROTOCOLS", {})
    monkeypatch.setattr(events, "_PLAIN_PROTOCOLS_MAX", 3)
    for i in range(10):
        events._protocol({"name": "range", "topics": [f"t{i}"]}, "consumer")
        assert len(events._PLAIN_PROTOCOLS) <= 3


LONG = "t" * 250


@pytest.mark.parametrize("row, reason", [
    ({"type": "CLIENT_START", "client_id": "c", "topics": [LONG]},
     "field 'topics': topic name is illegal, it can't be longer than 249 characters (250)"),
    ({"type": "SUBSCRIBE", "client_id": "c", "topics": ["ok", "a/b"]},
     "field 'topics': topic name 'a/b' is illegal, it contains a character other than ASCII alphanumerics, '.', "
     "'_' and '-'"),
    ({"type": "TOPIC_METADATA", "topics": [{"topic": "..", "partitions": 3}]}, "field 'topic': topic name '..' is illegal"),
    ({"type": "TOPIC_METADATA", "topics": [{"topic": "", "partitions": 3}]}, "field 'topic': topic name '' is illegal"),
])
def test_a_topic_kafka_could_not_have_created_is_rejected_with_topic_validates_reason(row, reason):
    # Topic.validate: a synthetic client naming one would otherwise fail to encode its Subscription.
    with pytest.raises(EventError) as raised:
        parse_event({"ts": 0, "group_id": "g", **row}, "test", 1)
    assert str(raised.value) == reason
    assert parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": "c", "topics": ["t" * 249]},
                       "test", 2).topics == ("t" * 249,)


HEARTBEAT = {"ts": 0, "group_id": "g", "type": "CONSUMER_GROUP_HEARTBEAT", "member_id": "m", "member_epoch": 0}


def test_a_consumer_group_heartbeat_reads_kafkas_fields_with_partitions_by_topic_name():
    event = parse_event({**HEARTBEAT, "instance_id": "i", "rebalance_timeout_ms": 30_000,
                         "subscribed_topic_names": ["foo"], "server_assignor": "range",
                         "topic_partitions": [{"topic": "foo", "partitions": [1, 0]}]}, "test", 1)
    assert (event.member_epoch, event.group_instance_id, event.subscribed_topic_names, event.api_version) == (
        0, "i", ("foo",), 1)
    assert event.topic_partitions == (events.PartitionList("foo", (1, 0)),)
    # null is "unchanged since my last heartbeat", not an empty list.
    assert parse_event(HEARTBEAT, "test", 1).subscribed_topic_names is None
    # v0 has no regex field: it is not read.
    assert parse_event({**HEARTBEAT, "api_version": 0, "subscribed_topic_regex": "f.*"}).subscribed_topic_regex is None


@pytest.mark.parametrize("row, reason", [
    ({"member_epoch": None}, "missing required field 'member_epoch'"),
    ({"member_epoch": "one"}, "field 'member_epoch' must be an integer, got str 'one'"),
    ({"member_epoch": 2**31}, "field 'member_epoch' = 2147483648 is out of range [-2147483648, 2147483647]"),
    ({"subscribed_topic_names": "foo"}, "field 'subscribed_topic_names' must be a list, got str"),
    ({"topic_partitions": [{"topic": "foo", "partitions": [-1]}]},
     "field 'topic_partitions.partitions' = -1 is out of range [0, 2147483647]"),
    ({"api_version": 2}, "field 'api_version' = 2 is out of range [0, 1]"),
])
def test_a_bad_consumer_group_heartbeat_is_rejected_naming_the_field(row, reason):
    with pytest.raises(EventError) as raised:
        parse_event({**HEARTBEAT, **row}, "test", 1)
    assert str(raised.value) == reason


@pytest.mark.parametrize("topic_id, reason", [
    ("xyz", "field 'topics.topic_id' must be a Kafka topic id (22 characters of URL-safe base64, "
            "e.g. 'Xq6LK8SnRkGxz7Da8ZvqLA'), got 'xyz'"),
    ("AAAAAAAAAAAAAAAAAAAAAA", "field 'topics.topic_id' is the zero Uuid, which Kafka reserves for no topic id"),
])
def test_a_topic_metadata_topic_id_must_be_a_kafka_uuid(topic_id, reason):
    row = {"ts": 0, "group_id": "g", "type": "TOPIC_METADATA",
           "topics": [{"topic": "foo", "partitions": 1, "topic_id": topic_id}]}
    with pytest.raises(EventError) as raised:
        parse_event(row, "test", 1)
    assert str(raised.value) == reason


@pytest.mark.parametrize("version, member_id, member_epoch", [(9, "m", 5), (8, None, -1), (1, None, -1)])
def test_an_offset_fetch_reads_its_member_fields_from_version_9(version, member_id, member_epoch):
    # OffsetFetchRequest.json: MemberId (nullable, default null) and MemberEpoch (default -1) are v9+ fields.
    row = {"ts": 0, "group_id": "g", "type": "OFFSET_FETCH", "api_version": version, "member_id": "m",
           "member_epoch": 5}
    event = parse_event(row, "test", 1)
    assert (event.member_id, event.member_epoch) == (member_id, member_epoch)
    assert parse_event({**row, "member_id": None, "member_epoch": None}, "test", 2).member_epoch == -1


@pytest.mark.parametrize("field, value, reason", [
    ("member_id", 5, "field 'member_id' must be a string, got int 5"),
    ("member_epoch", 2**31, "field 'member_epoch' = 2147483648 is out of range [-2147483648, 2147483647]"),
])
def test_a_bad_offset_fetch_member_field_is_rejected_naming_it(field, value, reason):
    with pytest.raises(EventError) as raised:
        parse_event({"ts": 0, "group_id": "g", "type": "OFFSET_FETCH", field: value}, "test", 1)
    assert str(raised.value) == reason
