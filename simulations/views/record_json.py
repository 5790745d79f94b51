"""A `__consumer_offsets` record as Kafka 4.x's console-consumer formatters print it (tools module,
CoordinatorRecordMessageFormatter and its OffsetsMessageFormatter and GroupMetadataMessageFormatter):

    {"key":{"type":TYPE,"data":KEY},"value":{"version":VERSION,"data":VALUE}}     "value":null for a tombstone

The key's type is the record type (CoordinatorRecordType: OffsetCommit 1, GroupMetadata 2); the value's version
is the one the record was written at (state.records.record_bytes decides it). `data` is the generated JsonConverter's
output for the message at that version (OffsetCommitValue.json, GroupMetadataValue.json): the fields in the
schema's order, only those of that version, a tagged field only when it is not its default (the topic id of
an OffsetCommitValue v4), a null string as null, bytes in base64 with padding, a Uuid in Kafka's base64url
without padding. Jackson writes it compact, strings escaped as it escapes them: `"` and `\\`, `\\b \\t \\n \\f
\\r` and the other control characters as `\\u00XX` (upper-case hex); everything else as it is, in UTF-8.
"""

from __future__ import annotations

import base64
import numbers

from state.records.record_bytes import (GROUP_METADATA, GROUP_METADATA_VALUE_VERSION, NO_PARTITION_LEADER_EPOCH,
                                NO_TIMESTAMP, OFFSET_COMMIT, offset_commit_value_version)
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord

# (JSON name, the value's key, first version, last version or None) in the schema's order.
OFFSET_COMMIT_VALUE = (("offset", "offset", 0, None), ("leaderEpoch", "leader_epoch", 3, None),
                       ("metadata", "metadata", 0, None), ("commitTimestamp", "commit_ts", 0, None),
                       ("expireTimestamp", "expire_ts", 1, 1))
OFFSET_COMMIT_TAGGED_SINCE = 4  # topicId, tag 0
GROUP_METADATA_VALUE = (("protocolType", "protocol_type", 0, None), ("generation", "generation_id", 0, None),
                        ("protocol", "protocol_name", 0, None), ("leader", "leader_id", 0, None),
                        ("currentStateTimestamp", "current_state_ts", 2, None))
MEMBER_METADATA = (("memberId", "member_id", 0, None), ("groupInstanceId", "group_instance_id", 3, None),
                   ("clientId", "client_id", 0, None), ("clientHost", "client_host", 0, None),
                   ("rebalanceTimeout", "rebalance_timeout_ms", 1, None),
                   ("sessionTimeout", "session_timeout_ms", 0, None), ("subscription", "subscription", 0, None),
                   ("assignment", "assignment", 0, None))
# The defaults a record's value stands for with None (the other nullable fields print null).
DEFAULTS = {"leader_epoch": NO_PARTITION_LEADER_EPOCH, "current_state_ts": NO_TIMESTAMP}


def offset_commit_json(record: OffsetCommitRecord, group_id: str, version: int | None = None) -> str:
    """What OffsetsMessageFormatter prints for the record (its value at `version`, default the written one)."""
    key = {"group": group_id, "topic": record.topic, "partition": record.partition}
    value = record.value
    if value is None:
        return _record(OFFSET_COMMIT, key, None, None)
    version = offset_commit_value_version(value) if version is None else version
    data = _fields(OFFSET_COMMIT_VALUE, value, version)
    if version >= OFFSET_COMMIT_TAGGED_SINCE and value["topic_id"] is not None:
        data["topicId"] = value["topic_id"]
    return _record(OFFSET_COMMIT, key, version, data)


def group_metadata_json(record: GroupMetadataRecord, group_id: str, version: int = GROUP_METADATA_VALUE_VERSION
                        ) -> str:
    """What GroupMetadataMessageFormatter prints for the record (its value at `version`, the written one by
    default)."""
    value = record.value
    if value is None:
        return _record(GROUP_METADATA, {"group": group_id}, None, None)
    data = _fields(GROUP_METADATA_VALUE, value, version)
    data["members"] = [_fields(MEMBER_METADATA, member, version) for member in value["members"]]
    return _record(GROUP_METADATA, {"group": group_id}, version, data)


def _fields(schema: tuple, value: dict, version: int) -> dict:
    return {name: _or_default(key, value[key]) for name, key, first, last in schema
            if first <= version and (last is None or version <= last)}


def _or_default(key: str, value):
    return DEFAULTS.get(key) if value is None else value


def _record(record_type: int, key: dict, version: int | None, data: dict | None) -> str:
    value = None if data is None else {"version": version, "data": data}
    return _json({"key": {"type": record_type, "data": key}, "value": value})


def _json(value) -> str:
    """Jackson's compact JSON of `value`: a dict, a sequence, a str, bytes, an integer or None."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bytes):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ",".join(f"{_string(k)}:{_json(v)}" for k, v in value.items()) + "}"
    return "[" + ",".join(_json(v) for v in value) + "]"


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    return '"' + "".join(_SHORT_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c < " " else c) for c in text) + '"'
