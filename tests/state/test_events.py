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
