"""A record as Kafka 4.x's console-consumer formatters print it (simulations.views.record_json), ported from
Kafka's OffsetMessageFormatterTest and GroupMetadataMessageFormatterTest (tools): each value at every version
of its schema, and tombstones. Their cases that need bytes coordsim never writes (a null key, an unknown
record type, a LegacyOffsetCommitKey of type 0) have no counterpart; which records each formatter prints is
in test_offsets_log.py."""

from __future__ import annotations

import re

import pytest

from simulations.views.record_json import group_metadata_json, offset_commit_json
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord

OFFSET_COMMIT_VALUE = {"offset": 100, "leader_epoch": 10, "metadata": "metadata", "commit_ts": 1234,
                       "expire_ts": 5678, "topic_id": "MKXx1fIkQy2J9jXHhK8m1w"}
MEMBER_METADATA = {"member_id": "member-1", "client_id": "client-1", "client_host": "host-1",
                   "rebalance_timeout_ms": 1000, "session_timeout_ms": 1500, "group_instance_id": "group-instance-1",
                   "subscription": bytes([0, 1]), "assignment": bytes([1, 2])}
GROUP_METADATA_VALUE = {"protocol_type": "consumer", "generation_id": 1, "protocol_name": "range",
                        "leader_id": "leader", "members": [MEMBER_METADATA], "current_state_ts": 1234}


def compact(expected: str) -> str:
    """Kafka's tests write the expected JSON over several lines and compare it without whitespace."""
    return re.sub(r"\s+", "", expected)


OFFSET_COMMIT_KEY = '{"key":{"type":1,"data":{"group":"group-id","topic":"foo","partition":1}},'


@pytest.mark.parametrize("version, value", [
    (0, '{"version":0,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234}}'),
    (1, '{"version":1,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234,"expireTimestamp":5678}}'),
    (2, '{"version":2,"data":{"offset":100,"metadata":"metadata","commitTimestamp":1234}}'),
    (3, '{"version":3,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}}'),
    (4, '{"version":4,"data":{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234,'
        '"topicId":"MKXx1fIkQy2J9jXHhK8m1w"}}'),
])
def test_offset_message_formatter(version, value):
    # OffsetMessageFormatterTest.testMessageFormatter: the value at each version of OffsetCommitValue.json.
    record = OffsetCommitRecord("foo", 1, OFFSET_COMMIT_VALUE)
    assert offset_commit_json(record, "group-id", version) == compact(OFFSET_COMMIT_KEY + '"value":' + value + "}")


def test_offset_message_formatter_prints_a_tombstone_with_a_null_value():
    assert offset_commit_json(OffsetCommitRecord("foo", 1, None), "group-id") == compact(
        '{"key":{"type":1,"data":{"group":"group-id","topic":"foo","partition":1}},"value":null}')


def test_offset_commit_value_at_the_version_written():
    # Trunk writes v4 with the topic id, v1 with an expire timestamp; 4.0 wrote v3 (state.records.record_bytes).
    trunk = dict(OFFSET_COMMIT_VALUE, expire_ts=None)
    assert offset_commit_json(OffsetCommitRecord("foo", 1, trunk), "group-id") == offset_commit_json(
        OffsetCommitRecord("foo", 1, trunk), "group-id", 4)
    assert '"version":1,' in offset_commit_json(OffsetCommitRecord("foo", 1, OFFSET_COMMIT_VALUE), "group-id")
    kafka_4_0 = dict(trunk, topic_id=None, leader_epoch=None)
    assert offset_commit_json(OffsetCommitRecord("foo", 1, kafka_4_0), "group-id") == compact(
        OFFSET_COMMIT_KEY + '"value":{"version":3,"data":{"offset":100,"leaderEpoch":-1,"metadata":"metadata",'
                            '"commitTimestamp":1234}}}')


GROUP_METADATA_KEY = '{"key":{"type":2,"data":{"group":"group-id"}},'
MEMBER_V0 = '"memberId":"member-1","clientId":"client-1","clientHost":"host-1",'
MEMBER_TAIL = '"sessionTimeout":1500,"subscription":"AAE=","assignment":"AQI="}]}}}'


@pytest.mark.parametrize("version, value", [
    (0, '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader",'
        '"members":[{' + MEMBER_V0 + MEMBER_TAIL),
    (1, '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader",'
        '"members":[{' + MEMBER_V0 + '"rebalanceTimeout":1000,' + MEMBER_TAIL),
    (2, '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader","currentStateTimestamp":1234,'
        '"members":[{' + MEMBER_V0 + '"rebalanceTimeout":1000,' + MEMBER_TAIL),
    *((version, '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader",'
                '"currentStateTimestamp":1234,"members":[{"memberId":"member-1","groupInstanceId":"group-instance-1",'
                '"clientId":"client-1","clientHost":"host-1","rebalanceTimeout":1000,' + MEMBER_TAIL)
      for version in (3, 4)),
])
def test_group_metadata_message_formatter(version, value):
    # GroupMetadataMessageFormatterTest.testMessageFormatter: the value at each version of GroupMetadataValue.json.
    record = GroupMetadataRecord(GROUP_METADATA_VALUE)
    assert group_metadata_json(record, "group-id", version) == compact(
        GROUP_METADATA_KEY + f'"value":{{"version":{version},"data":{{' + value)


def test_group_metadata_message_formatter_prints_a_tombstone_with_a_null_value():
    assert group_metadata_json(GroupMetadataRecord(None), "group-id") == compact(
        '{"key":{"type":2,"data":{"group":"group-id"}},"value":null}')


def test_an_empty_group_prints_its_null_protocol_and_leader():
    # newEmptyGroupMetadataRecord, written at v3: protocol and leader null, no members.
    empty = {"protocol_type": "", "generation_id": 0, "protocol_name": None, "leader_id": None,
             "current_state_ts": 1234, "members": []}
    assert group_metadata_json(GroupMetadataRecord(empty), "g") == (
        '{"key":{"type":2,"data":{"group":"g"}},"value":{"version":3,"data":{"protocolType":"","generation":0,'
        '"protocol":null,"leader":null,"currentStateTimestamp":1234,"members":[]}}}')


def test_strings_are_escaped_as_jackson_escapes_them():
    # Jackson's standard escapes: quote, backslash, the short forms of \b \t \n \f \r, other control characters
    # as \u00XX in upper-case hex; everything else, / and non-ASCII included, as it is.
    value = dict(OFFSET_COMMIT_VALUE, metadata='a"b\\c\nd\te\x01f\x1fg/é\u2028')
    printed = offset_commit_json(OffsetCommitRecord("foo", 1, value), "group-id", 3)
    assert '"metadata":"a\\"b\\\\c\\nd\\te\\u0001f\\u001Fg/é\u2028"' in printed
