"""The bytes a Kafka 4.x group coordinator appends to `__consumer_offsets` for a classic group's records, and
their sizes: the record key and value as GroupCoordinatorRecordSerde writes them, each record as the v2
record format (DefaultRecord) holds it, and the record batch (DefaultRecordBatch) around one operation's
records.

Key: the record type as int16 (CoordinatorRecordType: OffsetCommit 1, GroupMetadata 2), then the key message,
not flexible. Value: the value version as int16, then the value message at that version; a tombstone has a
null value. The versions are GroupCoordinatorRecordHelpers': GroupMetadataValue v3, and OffsetCommitValue
(`offset_commit_value_version`) v1 when the commit set an expire timestamp (a v1 value has no leader epoch),
else v4 from Kafka 4.1 (KAFKA-19141: the committed topic's id as tagged field 0) and v3 in 4.0. Versions 1
to 3 are not flexible: strings are int16-length-prefixed UTF-8 (-1 for null), bytes int32-length-prefixed,
arrays int32-count-prefixed, and there are no tagged fields. Version 4 and the consumer group values below
are flexible.

The coordinator runtime writes uncompressed batches (`offsets.topic.compression.codec` defaults to none)
with no producer id outside transactions, and every record of one append carries the append's time, so
within a batch of one operation the timestamp delta is 0 and the offset delta counts the records.

A consumer group's records (state.consumer_group.records) are written the same way, their key type being
the key schema's id (3 to 8, 16 for ConsumerGroupRegularExpression) and every value at version 0, which is a flexible version: strings and arrays
are compact (unsigned varint length + 1, 0 for null), a topic id is its 16 bytes, and each structure ends
with its tagged fields, of which a 4.x broker writes ConsumerGroupMetadataValue.MetadataHash (4.1+) and
ConsumerGroupTargetAssignmentMetadataValue.AssignmentTimestamp (4.3+) when not 0 and each partition list's
AssignmentEpochs in ConsumerGroupCurrentMemberAssignmentValue (4.3+). Kafka 4.0's schemas have none of the
three (`kafka_4_0`: the values are written without them); 4.0 also wrote a ConsumerGroupPartitionMetadata
record, not modelled.
"""

from __future__ import annotations

import struct
from typing import Iterable

from state.consumer_group import records as cg
from state.consumer_group.reconciliation import PartitionEpochs
from state.consumer_group.topic_id import TopicId
from state.records.group_log import OffsetCommitRecord, Record

# CoordinatorRecordType ids: the key's int16 prefix.
OFFSET_COMMIT = 1
GROUP_METADATA = 2

OFFSET_COMMIT_VALUE_VERSION = 4  # Kafka 4.1+
OFFSET_COMMIT_VALUE_VERSION_4_0 = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP = 1
OFFSET_COMMIT_TOPIC_ID_TAG = 0
GROUP_METADATA_VALUE_VERSION = 3

# DefaultRecordBatch.RECORD_BATCH_OVERHEAD: base offset 8, batch length 4, partition leader epoch 4, magic 1,
# crc 4, attributes 2, last offset delta 4, base timestamp 8, max timestamp 8, producer id 8, producer epoch 2,
# base sequence 4, record count 4.
RECORD_BATCH_OVERHEAD = 61

NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1


def varint(n: int) -> bytes:
    """ByteUtils.writeVarint: zigzag, then 7 bits a byte, low bits first."""
    return _unsigned_varint(((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def varlong(n: int) -> bytes:
    """ByteUtils.writeVarlong: as `varint`, over 64 bits."""
    return _unsigned_varint(((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _unsigned_varint(u: int) -> bytes:
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _int16(n: int) -> bytes:
    return struct.pack(">h", n)


def _int32(n: int) -> bytes:
    return struct.pack(">i", n)


def _int64(n: int) -> bytes:
    return struct.pack(">q", n)


def _string(s: str | None) -> bytes:
    if s is None:
        return _int16(-1)
    data = s.encode("utf-8")
    return _int16(len(data)) + data


def _bytes(b: bytes) -> bytes:
    return _int32(len(b)) + b


# Flexible versions' encodings.

def _uvarint_len(n: int) -> bytes:
    """A compact length: n + 1 as an unsigned varint (0 stands for null)."""
    return _unsigned_varint(n + 1)


def _compact_string(s: str | None) -> bytes:
    if s is None:
        return _unsigned_varint(0)
    data = s.encode("utf-8")
    return _uvarint_len(len(data)) + data


def _compact_int32s(values) -> bytes:
    values = list(values)
    return _uvarint_len(len(values)) + b"".join(_int32(v) for v in values)


def _uuid(topic_id) -> bytes:
    return _int64(topic_id.msb) + _int64(topic_id.lsb)


def _tagged(fields: dict[int, bytes]) -> bytes:
    """The tagged fields section: how many, then each as tag, size and data, tags ascending."""
    return _unsigned_varint(len(fields)) + b"".join(
        _unsigned_varint(tag) + _unsigned_varint(len(data)) + data for tag, data in sorted(fields.items()))


def key_bytes(record: Record | cg.ConsumerGroupRecord, group_id: str) -> bytes:
    """The record's key, type-prefixed: OffsetCommitKey(group, topic, partition), GroupMetadataKey(group),
    or a consumer group record's key (group, and member id for a member's records)."""
    if isinstance(record, OffsetCommitRecord):
        return _int16(OFFSET_COMMIT) + _string(group_id) + _string(record.topic) + _int32(record.partition)
    if isinstance(record, _CONSUMER_GROUP_RECORDS):
        # The member id, or a ConsumerGroupRegularExpressionKey's RegularExpression, follows the group id.
        record_type, *member_id = record.key
        return _int16(record_type) + _string(group_id) + b"".join(_string(m) for m in member_id)
    return _int16(GROUP_METADATA) + _string(group_id)


def value_bytes(record: Record | cg.ConsumerGroupRecord, kafka_4_0: bool = False) -> bytes | None:
    """The record's value, version-prefixed, or None for a tombstone; `kafka_4_0`: a consumer group's value as
    Kafka 4.0's schemas write it (without the tagged fields 4.1+ added)."""
    if record.value is None:
        return None
    if isinstance(record, OffsetCommitRecord):
        return _offset_commit_value(record.value)
    if isinstance(record, _CONSUMER_GROUP_RECORDS):
        return _int16(CONSUMER_GROUP_VALUE_VERSION) + _consumer_group_value(record, kafka_4_0)
    return _group_metadata_value(record.value)


def offset_commit_value_version(value: dict) -> int:
    """The OffsetCommitValue version `value` is written at (GroupCoordinatorRecordHelpers.
    offsetCommitValueVersion): 1 when the commit has an expire timestamp; otherwise 4 when the value carries
    the committed topic's id (`topic_id`: Kafka 4.1+, whose KafkaApis resolves the id of every committed
    topic), 3 when it does not (Kafka 4.0)."""
    if value["expire_ts"] is not None:
        return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP
    return OFFSET_COMMIT_VALUE_VERSION_4_0 if value["topic_id"] is None else OFFSET_COMMIT_VALUE_VERSION


def _offset_commit_value(v: dict) -> bytes:
    version = offset_commit_value_version(v)
    offset, commit_ts = _int64(v["offset"]), _int64(v["commit_ts"])
    if version == OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP:
        return _int16(version) + offset + _string(v["metadata"]) + commit_ts + _int64(v["expire_ts"])
    epoch = _int32(NO_PARTITION_LEADER_EPOCH if v["leader_epoch"] is None else v["leader_epoch"])
    if version == OFFSET_COMMIT_VALUE_VERSION_4_0:
        return _int16(version) + offset + epoch + _string(v["metadata"]) + commit_ts
    # Flexible: the metadata a compact string, the topic id a tagged field (written when not ZERO_UUID).
    return (_int16(version) + offset + epoch + _compact_string(v["metadata"]) + commit_ts
            + _tagged({OFFSET_COMMIT_TOPIC_ID_TAG: _uuid(TopicId.from_string(v["topic_id"]))}))


def _group_metadata_value(v: dict) -> bytes:
    state_ts = NO_TIMESTAMP if v["current_state_ts"] is None else v["current_state_ts"]
    out = [_int16(GROUP_METADATA_VALUE_VERSION), _string(v["protocol_type"]), _int32(v["generation_id"]),
           _string(v["protocol_name"]), _string(v["leader_id"]), _int64(state_ts), _int32(len(v["members"]))]
    for m in v["members"]:
        out += [_string(m["member_id"]), _string(m["group_instance_id"]), _string(m["client_id"]),
                _string(m["client_host"]), _int32(m["rebalance_timeout_ms"]), _int32(m["session_timeout_ms"]),
                _bytes(m["subscription"]), _bytes(m["assignment"])]
    return b"".join(out)


# ----------------------------------------------------------------------------------------------------------
# Consumer group records: flexible version 0 values.

CONSUMER_GROUP_VALUE_VERSION = 0
_CONSUMER_GROUP_RECORDS = (cg.ConsumerGroupMetadata, cg.ConsumerGroupPartitionMetadata, cg.ConsumerGroupMemberMetadata,
                           cg.ConsumerGroupTargetAssignmentMetadata, cg.ConsumerGroupTargetAssignmentMember,
                           cg.ConsumerGroupCurrentMemberAssignment, cg.ConsumerGroupRegularExpression)


def _if_set(tag: int, value: int) -> dict[int, bytes]:
    """An int64 tagged field with default 0, written only when set."""
    return {tag: _int64(value)} if value else {}


def _partition_epochs(assignment: PartitionEpochs, kafka_4_0: bool) -> bytes:
    """[]TopicPartitions of ConsumerGroupCurrentMemberAssignmentValue: each topic's partitions and, tagged,
    the assignment epoch of each (GroupCoordinatorRecordHelpers always sets them; Kafka 4.0's TopicPartitions
    has no AssignmentEpochs)."""
    topics = [_uuid(topic_id) + _compact_int32s(epochs)
              + _tagged({} if kafka_4_0 else {0: _compact_int32s(epochs.values())})
              for topic_id, epochs in assignment.items()]
    return _uvarint_len(len(topics)) + b"".join(topics)


def _consumer_group_value(record, kafka_4_0: bool) -> bytes:
    v = record.value
    # Kafka 4.0's ConsumerGroupMetadataValue has no MetadataHash, its TargetAssignmentMetadataValue no
    # AssignmentTimestamp.
    if isinstance(record, cg.ConsumerGroupMetadata):
        return _int32(v.epoch) + _tagged({} if kafka_4_0 else _if_set(0, v.metadata_hash))
    if isinstance(record, cg.ConsumerGroupTargetAssignmentMetadata):
        return _int32(v.assignment_epoch) + _tagged({} if kafka_4_0 else _if_set(0, v.assignment_timestamp_ms))
    if isinstance(record, cg.ConsumerGroupTargetAssignmentMember):
        topics = [_uuid(topic_id) + _compact_int32s(partitions) + _tagged({}) for topic_id, partitions in v]
        return _uvarint_len(len(topics)) + b"".join(topics) + _tagged({})
    if isinstance(record, cg.ConsumerGroupRegularExpression):
        # ConsumerGroupRegularExpressionValue: Topics (compact array of compact strings), Version, Timestamp.
        topics = _uvarint_len(len(v.topics)) + b"".join(map(_compact_string, v.topics))
        return topics + _int64(v.version) + _int64(v.timestamp) + _tagged({})
    if isinstance(record, cg.ConsumerGroupCurrentMemberAssignment):
        return (_int32(v.member_epoch) + _int32(v.previous_member_epoch) + struct.pack(">b", v.state)
                + _partition_epochs(v.assigned_partitions, kafka_4_0)
                + _partition_epochs(v.partitions_pending_revocation, kafka_4_0)
                + _tagged({}))
    # ConsumerGroupMemberMetadata (a PartitionMetadata record is a tombstone, whose value is never written)
    names = _uvarint_len(len(v.subscribed_topic_names)) + b"".join(map(_compact_string, v.subscribed_topic_names))
    return (_compact_string(v.instance_id) + _compact_string(v.rack_id) + _compact_string(v.client_id)
            + _compact_string(v.client_host) + names + _compact_string(v.subscribed_topic_regex)
            + _int32(v.rebalance_timeout_ms) + _compact_string(v.server_assignor)
            + _tagged({0: _classic_member_metadata(v.classic_member_metadata)}))


def _classic_member_metadata(v) -> bytes:
    """ClassicMemberMetadata, the member metadata's tagged field 0: a nullable struct, so a presence byte (0
    null, 1 present), then SessionTimeoutMs and SupportedProtocols (each a name and compact bytes). Kafka's
    generated ConsumerGroupMemberMetadataValue.write writes the field when it is null too (its default, null,
    is compared with an empty struct), and GroupCoordinatorRecordHelpers sets null for a member using the
    consumer protocol: every member's value has it."""
    if v is None:
        return b"\x00"
    protocols = [_compact_string(p.name) + _uvarint_len(len(p.metadata)) + p.metadata + _tagged({})
                 for p in v.supported_protocols]
    return b"\x01" + _int32(v.session_timeout_ms) + _uvarint_len(len(protocols)) + b"".join(protocols) + _tagged({})


def record_bytes(record: Record | cg.ConsumerGroupRecord, group_id: str, offset_delta: int = 0,
                 timestamp_delta: int = 0, kafka_4_0: bool = False) -> bytes:
    """The record as DefaultRecord.writeTo writes it in a v2 batch: its length (varint), then attributes (0),
    timestamp delta (varlong), offset delta (varint), key length and key, value length (-1 for a tombstone)
    and value, and the header count (0: coordinator records have no headers)."""
    key, value = key_bytes(record, group_id), value_bytes(record, kafka_4_0)
    body = (b"\x00" + varlong(timestamp_delta) + varint(offset_delta) + varint(len(key)) + key
            + (varint(-1) if value is None else varint(len(value)) + value) + varint(0))
    return varint(len(body)) + body


def record_size(record: Record | cg.ConsumerGroupRecord, group_id: str, offset_delta: int = 0,
                timestamp_delta: int = 0, kafka_4_0: bool = False) -> int:
    return len(record_bytes(record, group_id, offset_delta, timestamp_delta, kafka_4_0))


def batch_size(records: Iterable[Record | cg.ConsumerGroupRecord], group_id: str, kafka_4_0: bool = False) -> int:
    """The bytes of one operation's records written as one uncompressed batch: the batch header, then each
    record at its offset delta, all at the append's timestamp."""
    return RECORD_BATCH_OVERHEAD + sum(record_size(r, group_id, offset_delta=i, kafka_4_0=kafka_4_0)
                                       for i, r in enumerate(records))

