"""The bytes of a consumer group's records as a Kafka 4.x (trunk) coordinator writes them
(state.records.record_bytes): keys with their type id, values at version 0 (flexible: compact strings and arrays,
tagged fields). Expected bytes are written out field by field so they can be checked by hand against the
schemas in group-coordinator/src/main/resources/common/message/."""

from __future__ import annotations

import pytest

from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.records import (
    AssignmentMetadata,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupEpoch,
    MemberSubscription,
)
from state.consumer_group.topic_id import TopicId
from state.records.record_bytes import key_bytes, record_size, value_bytes

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

GROUP = "g1"
TOPIC = TopicId(1, 2)
TOPIC_BYTES = "0000000000000001" "0000000000000002"


def h(*fields: str) -> bytes:
    return bytes.fromhex("".join(fields))


def test_keys():
    assert key_bytes(ConsumerGroupMetadata(None), GROUP) == h("0003", "0002", b"g1".hex())
    assert key_bytes(ConsumerGroupMemberMetadata("m", None), GROUP) == h("0005", "0002", b"g1".hex(), "0001", b"m".hex())
    assert key_bytes(ConsumerGroupCurrentMemberAssignment("m", None), GROUP)[:2] == h("0008")


def test_group_metadata_value_with_and_without_its_tagged_hash():
    assert value_bytes(ConsumerGroupMetadata(GroupEpoch(5, 0))) == h("0000", "00000005", "00")
    assert value_bytes(ConsumerGroupMetadata(GroupEpoch(5, -1))) == h(
        "0000", "00000005",
        "01", "00", "08", "ffffffffffffffff")  # one tagged field: tag 0, 8 bytes


def test_target_assignment_metadata_value():
    assert value_bytes(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(3, 0))) == h("0000", "00000003", "00")
    assert value_bytes(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(3, 1000))) == h(
        "0000", "00000003", "01", "00", "08", "00000000000003e8")


def test_target_assignment_member_value():
    assert value_bytes(ConsumerGroupTargetAssignmentMember("m", ((TOPIC, (0, 1)),))) == h(
        "0000",
        "02",  # one topic
        TOPIC_BYTES, "03", "00000000", "00000001", "00",  # its id, two partitions, no tagged fields
        "00")


def test_current_member_assignment_value_carries_the_assignment_epochs():
    value = CurrentAssignment(MemberState.UNREVOKED_PARTITIONS, 11, 10, {TOPIC: {0: 7}}, {})
    assert value_bytes(ConsumerGroupCurrentMemberAssignment("m", value)) == h(
        "0000", "0000000b", "0000000a", "01",
        "02", TOPIC_BYTES, "02", "00000000",  # assigned: one topic, partition 0
        "01", "00", "05", "02", "00000007",  # tagged AssignmentEpochs: tag 0, 5 bytes, [7]
        "01",  # nothing pending revocation
        "00")


def test_kafka_4_0_values_have_no_metadata_hash_assignment_timestamp_or_assignment_epochs():
    """Kafka 4.0.0's schemas (kafka-group-coordinator 4.0.0: ConsumerGroupMetadataValue has Epoch only,
    ConsumerGroupTargetAssignmentMetadataValue AssignmentEpoch only, CurrentMemberAssignmentValue's
    TopicPartitions TopicId and Partitions only): the tagged fields 4.1+ added are not written, each
    structure ends with an empty tagged-field section."""
    assert value_bytes(ConsumerGroupMetadata(GroupEpoch(5, -1)), kafka_4_0=True) == h("0000", "00000005", "00")
    assert value_bytes(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(3, 1000)), kafka_4_0=True) == h(
        "0000", "00000003", "00")
    value = CurrentAssignment(MemberState.UNREVOKED_PARTITIONS, 11, 10, {TOPIC: {0: 7}}, {TOPIC: {1: 6}})
    record = ConsumerGroupCurrentMemberAssignment("m", value)
    assert value_bytes(record, kafka_4_0=True) == h(
        "0000", "0000000b", "0000000a", "01",
        "02", TOPIC_BYTES, "02", "00000000", "00",  # assigned: one topic, partition 0, no tagged fields
        "02", TOPIC_BYTES, "02", "00000001", "00",  # pending revocation: one topic, partition 1
        "00")
    # Each AssignmentEpochs section (tag count, tag, size, a compact array of one int32: 8 bytes) is 7 more
    # than an empty one.
    assert len(value_bytes(record, kafka_4_0=True)) == len(value_bytes(record)) - 2 * 7


# The two vectors below are what Kafka's own generated ConsumerGroupMemberMetadataValue writes (4.0.0 and 4.4.0
# alike: MessageUtil.toVersionPrefixedByteBuffer of the value GroupCoordinatorRecordHelpers builds).

def test_member_metadata_value_writes_the_null_classic_member_metadata():
    """A member using the consumer protocol: ClassicMemberMetadata (tagged field 0, a nullable struct whose
    default is null) is null, and the generated writer still writes it: tag 0, size 1, the null byte."""
    value = MemberSubscription(None, "r", "c", "h", ("bar", "foo"), "", "range", 5000)
    assert value_bytes(ConsumerGroupMemberMetadata("m", value)) == h(
        "0000",
        "00",  # no instance id
        "02", b"r".hex(), "02", b"c".hex(), "02", b"h".hex(),
        "03", "04", b"bar".hex(), "04", b"foo".hex(),
        "01",  # regex ""
        "00001388",
        "06", b"range".hex(),
        "01", "00", "01", "00")  # one tagged field: tag 0, 1 byte, null


def test_member_metadata_value_of_a_member_using_the_classic_protocol():
    """ClassicMemberMetadata is the value's tagged field 0: the presence byte, SessionTimeoutMs, then
    SupportedProtocols."""
    value = MemberSubscription(None, None, "c", "h", ("foo",), "", None, 5000,
                               ClassicMemberMetadata(10_000, (ClassicProtocol("range", b"\x00\x01"),)))
    assert value_bytes(ConsumerGroupMemberMetadata("m", value)) == h(
        "0000", "00", "00", "02", b"c".hex(), "02", b"h".hex(), "02", "04", b"foo".hex(), "01", "00001388", "00",
        "01", "00", "11",  # one tagged field: tag 0, 17 bytes
        "01", "00002710", "02", "06", b"range".hex(), "03", "0001", "00", "00")


def test_tombstone_record_size():
    # DefaultRecord: length, attributes, timestamp and offset deltas, key, value -1, no headers
    key = key_bytes(ConsumerGroupMetadata(None), GROUP)
    assert record_size(ConsumerGroupMetadata(None), GROUP) == 1 + 1 + 1 + 1 + 1 + len(key) + 1 + 1


def test_regular_expression_key_and_value():
    # ConsumerGroupRegularExpressionKey (type 16: GroupId, RegularExpression, not flexible) and Value v0
    # (flexible: Topics as a compact array of compact strings, Version int64, Timestamp int64, tagged fields).
    from state.consumer_group.records import ConsumerGroupRegularExpression, ResolvedRegularExpression
    record = ConsumerGroupRegularExpression("f.*", ResolvedRegularExpression(("foo",), 7, 1000))
    assert key_bytes(record, GROUP) == h("0010", "0002", b"g1".hex(), "0003", b"f.*".hex())
    assert value_bytes(record) == h("0000", "02", "04", b"foo".hex(), "0000000000000007", "00000000000003e8", "00")
    assert value_bytes(ConsumerGroupRegularExpression("f.*", None)) is None
    # length, attributes, timestamp delta, offset delta, key length, value length, header count: 1 byte each
    assert record_size(record, GROUP) == len(key_bytes(record, GROUP)) + len(value_bytes(record)) + 7
