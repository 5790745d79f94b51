"""The records the real broker wrote to `__consumer_offsets` (read back by the driver's consumer of that topic,
key and value bytes as stored) against coordsim's `offsets`, `group_metadata` and `consumer_group_records`
tables, record by record: each key's records in write order on both sides, paired in turn.

A classic group's records are compared bytes and all: coordsim's own encoder (state/records/record_bytes.py) writes
the simulated row's record, and the two values must be the same bytes, or the same size with the fields that differ
named (a timestamp is the brokers' clocks, not a behaviour). The member ids are the same on both sides: the
replay hands out the ids the captured broker did (docs/captures.md), and a consumer group's are the clients'.
A consumer group's records are compared by key (type, group, member
id) and by the fields a user reads of them: the group epoch, the assignment epoch, each member's target, and its
epochs and state; the table keeps their values as JSON (docs/tables.md#consumer_group_records), and their size
as `batch_bytes`.

Sizes (`real_size`, `simulated_size`) are each record's bytes in its batch (DefaultRecord; an offset delta
under 64, as every group write's, takes one byte, so it does not change them): the real record's from its key
and value, a classic group's simulated record's from coordsim's encoder, a consumer group's from the row's
`batch_bytes`, less the 61-byte batch header where the row is its batch's first (`batch_bytes` is then the
real size plus 61: a row's size is taken as equal when either holds).

Under Kafka 4.0 (`kafka_4_0`), a consumer group's record has no metadata hash, assignment timestamp or
assignment epochs (Kafka 4.1 added them; coordsim writes none under coordsim.kafka.version 4.0, which the
sizes check): the simulated fields are compared as 4.0 writes them.
"""

from __future__ import annotations

import base64
import json
import struct
from collections import defaultdict

import pandas as pd

from state.consumer_group import records as cg
from state.quiet_run import expand_rows
from state.records.record_bytes import (GROUP_METADATA, OFFSET_COMMIT, RECORD_BATCH_OVERHEAD, key_bytes, value_bytes,
                                        varint)
from tableio.record_rows import group_metadata_record, offset_record

# The fields whose difference is the clocks of two brokers (the real one's, and coordsim's request times).
TIMESTAMPS = {"commit_ts", "current_state_ts", "assignment_timestamp_ms"}
# coordsim's metadata hash is its own (state/consumer_group/topics.py), not Kafka's XXH3 of the topics.
OWN_HASH = {"metadata_hash"}
# A classic group's replay has no TOPIC_METADATA (the import gives them to consumer groups only): coordsim
# derives the id an OffsetCommit value carries from the topic's name (docs/records.md), not the cluster's.
DERIVED_TOPIC_ID = {"topic_id"}
CONSUMER_GROUP_TYPES = {cg.CONSUMER_GROUP_METADATA: "ConsumerGroupMetadata",
                        cg.CONSUMER_GROUP_PARTITION_METADATA: "ConsumerGroupPartitionMetadata",
                        cg.CONSUMER_GROUP_MEMBER_METADATA: "ConsumerGroupMemberMetadata",
                        cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: "ConsumerGroupTargetAssignmentMetadata",
                        cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: "ConsumerGroupTargetAssignmentMember",
                        cg.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ConsumerGroupCurrentMemberAssignment",
                        cg.CONSUMER_GROUP_REGULAR_EXPRESSION: "ConsumerGroupRegularExpression"}
RECORD_KINDS = {
    "equal": "the same bytes (a consumer group's: the same key and fields)",
    "timing": "only timestamps differ: the real broker's clock against the captured request times",
    "own_hash": "only coordsim's own metadata hash differs (and timestamps)",
    "topic_id": "only the topic id coordsim derives from the topic's name differs (and timestamps)",
    "partition_metadata": "a ConsumerGroupPartitionMetadata record, which Kafka 4.0 writes and coordsim does not",
    "image_version": "a resolved regex's metadata image version differs (and its timestamp)",
    "after_capture": "a record coordsim wrote after the broker's records were read back",
    "value": "other fields differ",
    "size": "the fields compared agree, but the record's size differs (bytes coordsim counts that Kafka does not write)",
    "real_only": "a record only the real broker wrote",
    "simulated_only": "a record only coordsim wrote",
}
RECORD_COLUMNS = ["group_id", "record_type", "key", "index", "kind", "bytes_equal", "real_size", "simulated_size",
                  "differences", "real_ts", "simulated_ts"]


def compare_records(dump: list[dict], tables: dict[str, list[dict]], kafka_4_0: bool = False,
                    until: int | None = None) -> pd.DataFrame:
    """One row per record of either side, `kind` one of RECORD_KINDS; `differences` names the fields; `real_ts`
    and `simulated_ts` are when each side wrote it (the real record's timestamp, the row's `write_ts`). A
    simulated record written after `until` (when the broker's records were read back) is `after_capture`:
    the replay's timers run on past the capture's end, the real cluster was stopped."""
    real = defaultdict(list)
    for line in dump:
        key = base64.b64decode(line["key"])
        value = None if line["value"] is None else base64.b64decode(line["value"])
        real[key].append((value, record_size(key, value), line.get("timestamp")))
    simulated, late = _simulated(tables, kafka_4_0, until)
    rows = [_late(key, index, size, ts) for key, index, size, ts in late]
    for key in list(real) + [k for k in simulated if k not in real]:
        ours, theirs = simulated.get(key, []), real.get(key, [])
        for index in range(max(len(ours), len(theirs))):
            rows.append(_pair(key, index, theirs[index] if index < len(theirs) else _MISSING,
                              ours[index] if index < len(ours) else _MISSING))
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


_MISSING = object()


def group_deletions(dump: list[dict]) -> list[int]:
    """When the broker deleted a classic group: the timestamps of its GroupMetadata tombstones."""
    return [line["timestamp"] for line in dump
            if line["value"] is None and _key_view(base64.b64decode(line["key"]))[0] == "GroupMetadata"]


def record_size(key: bytes, value: bytes | None) -> int:
    """The record's bytes in a batch (DefaultRecord at offset and timestamp delta 0: state.records.record_bytes)."""
    body = (b"\x00\x00\x00" + varint(len(key)) + key + (varint(-1) if value is None else varint(len(value)) + value)
            + varint(0))
    return len(varint(len(body))) + len(body)


def _simulated(tables: dict[str, list[dict]], kafka_4_0: bool, until: int | None) -> tuple[dict[bytes, list], list]:
    """Each key's simulated (value, size, write_ts), in write order: the value as bytes for a classic group's
    records, as the compared fields for a consumer group's, with the row's `batch_bytes` as its size; and the
    records written after `until` (key, index, size, write_ts)."""
    written = []
    for row in expand_rows("offsets", tables["offsets"]):
        record = offset_record(row)
        written.append((row, key_bytes(record, row["group_id"]), value_bytes(record), None))
    for row in tables["group_metadata"]:
        record = group_metadata_record(row, row.get("members"))
        written.append((row, key_bytes(record, row["group_id"]), value_bytes(record), None))
    types = {name: number for number, name in CONSUMER_GROUP_TYPES.items()}
    for row in tables["consumer_group_records"]:
        key = struct.pack(">h", types[row["record_type"]]) + _string(row["group_id"])
        if row["member_id"] is not None or row["regex"] is not None:
            key += _string(row["member_id"] if row["member_id"] is not None else row["regex"])
        value = None if row["tombstone"] else _json_fields(types[row["record_type"]], json.loads(row["value"]),
                                                             kafka_4_0)
        written.append((row, key, value, row["batch_bytes"]))
    by_key, late = defaultdict(list), []
    for row, key, value, batch_bytes in sorted(written, key=lambda w: (w[0]["write_ts"], w[0]["out_seq"])):
        size = record_size(key, value) if batch_bytes is None else batch_bytes
        if until is not None and row["write_ts"] > until:
            late.append((key, len(by_key[key]) + sum(k == key for k, _, _, _ in late), size, row["write_ts"]))
        else:
            by_key[key].append((value, size, row["write_ts"]))
    return by_key, late


def _late(key: bytes, index: int, size: int, ts: int) -> dict:
    record_type, group, name = _key_view(key)
    return {"group_id": group, "record_type": record_type, "key": name, "index": index, "kind": "after_capture",
            "bytes_equal": None, "real_size": None, "simulated_size": size, "differences": None, "real_ts": None,
            "simulated_ts": ts}


def _pair(key: bytes, index: int, real_written, simulated_written) -> dict:
    record_type, group, name = _key_view(key)
    real, real_size, real_ts = real_written if real_written is not _MISSING else (_MISSING, None, None)
    simulated, simulated_size, simulated_ts = (simulated_written if simulated_written is not _MISSING
                                               else (_MISSING, None, None))
    if (real_size is not None and simulated_size is not None and record_type not in ("OffsetCommit", "GroupMetadata")
            and simulated_size == real_size + RECORD_BATCH_OVERHEAD):
        simulated_size = real_size  # the batch's first record: batch_bytes counts the header with it
    row = {"group_id": group, "record_type": record_type, "key": name, "index": index, "bytes_equal": None,
           "real_size": real_size, "simulated_size": simulated_size, "differences": None, "real_ts": real_ts,
           "simulated_ts": simulated_ts}
    if real is _MISSING or simulated is _MISSING:
        if record_type == "ConsumerGroupPartitionMetadata" and simulated is _MISSING:
            return row | {"kind": "partition_metadata"}
        return row | {"kind": "real_only" if simulated is _MISSING else "simulated_only"}
    if record_type in ("OffsetCommit", "GroupMetadata"):
        row["bytes_equal"] = real == simulated
        fields_real = None if real is None else _classic_fields(record_type, real)
        fields_simulated = None if simulated is None else _classic_fields(record_type, simulated)
    else:
        fields_real = None if real is None else _consumer_group_fields(struct.unpack(">h", key[:2])[0], real)
        fields_simulated = simulated
    differences = _differences(fields_real, fields_simulated)
    row["differences"] = ", ".join(differences) or None
    kind = _kind(set(differences), row["bytes_equal"], record_type)
    if kind != "value" and real_size is not None and simulated_size is not None and real_size != simulated_size:
        kind = "size"  # the fields compared agree, the bytes coordsim counts do not
    return row | {"kind": kind}


def _kind(differences: set[str], bytes_equal: bool | None, record_type: str) -> str:
    """The first cause that covers every difference (RECORD_KINDS)."""
    if bytes_equal or (bytes_equal is None and not differences):
        return "equal"
    if record_type == "ConsumerGroupRegularExpression":
        # Its `timestamp` is when the broker resolved the regex, its `version` the metadata image's.
        if differences <= {"timestamp", "version"}:
            return "timing" if differences == {"timestamp"} else "image_version"
        return "value"
    for kind, fields in (("timing", TIMESTAMPS), ("own_hash", TIMESTAMPS | OWN_HASH),
                         ("topic_id", TIMESTAMPS | DERIVED_TOPIC_ID)):
        if differences <= fields:
            return kind
    return "value"


def _differences(real: dict | None, simulated: dict | None) -> list[str]:
    if real is None or simulated is None:
        return [] if real is simulated else ["tombstone"]
    return sorted(k for k in real.keys() | simulated.keys() if real.get(k) != simulated.get(k))


def _key_view(key: bytes) -> tuple[str, str, str]:
    r = _Reader(key)
    record_type = r.int16()
    group = r.string()
    if record_type in (0, OFFSET_COMMIT):
        return "OffsetCommit", group, f"{r.string()}-{r.int32()}"
    if record_type == GROUP_METADATA:
        return "GroupMetadata", group, ""
    return CONSUMER_GROUP_TYPES.get(record_type, f"type {record_type}"), group, r.string() if r.left() else ""


def _classic_fields(record_type: str, value: bytes) -> dict:
    r = _Reader(value)
    version = r.int16()
    if record_type == "OffsetCommit":
        fields = {"version": version, "offset": r.int64()}
        if version >= 3:
            fields["leader_epoch"] = r.int32()
        fields["metadata"] = r.compact_string() if version >= 4 else r.string()
        fields["commit_ts"] = r.int64()
        if version == 1:
            fields["expire_ts"] = r.int64()
        if version >= 4:
            topic_id = r.tagged().get(0)
            fields["topic_id"] = None if topic_id is None else base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode()
        return fields
    fields = {"version": version, "protocol_type": r.string(), "generation_id": r.int32(),
              "protocol_name": r.string(), "leader_id": r.string(),
              "current_state_ts": r.int64()}
    order = []
    for _ in range(r.int32()):
        member_id = r.string()
        order.append(member_id)
        fields[f"member {member_id}"] = (r.string(), r.string(), r.string(), r.int32(), r.int32(), r.bytes_().hex(),
                                         r.bytes_().hex())
    # The order is Java's HashMap order of the member ids (ClassicGroup.members).
    fields["member_order"] = order
    return fields


def _consumer_group_fields(record_type: int, value: bytes) -> dict:
    """The fields compared of a consumer group's record value (flexible version 0), named as the
    consumer_group_records table's JSON names them (a classic member's protocols as name and metadata hex)."""
    r = _Reader(value)
    r.int16()
    if record_type == cg.CONSUMER_GROUP_METADATA:
        epoch = r.int32()
        return {"epoch": epoch, **_tagged_int64(r, "metadata_hash")}
    if record_type == cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        epoch = r.int32()
        return {"assignment_epoch": epoch, **_tagged_int64(r, "assignment_timestamp_ms")}
    if record_type == cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        return {"target": sorted(_topic_partitions(r, epochs=False))}
    if record_type == cg.CONSUMER_GROUP_MEMBER_METADATA:
        fields = {name: r.compact_string() for name in ("instance_id", "rack_id", "client_id", "client_host")}
        fields["subscribed_topic_names"] = sorted(r.compact_string() for _ in range(r.uvarint() - 1))
        fields |= {"subscribed_topic_regex": r.compact_string(), "rebalance_timeout_ms": r.int32(),
                   "server_assignor": r.compact_string()}
        classic = _Reader(r.tagged().get(0, b"\x00"))
        if classic.int8():
            session, protocols = classic.int32(), []
            for _ in range(classic.uvarint() - 1):
                protocols.append((classic.compact_string(), classic.take(classic.uvarint() - 1).hex()))
                classic.tagged()
            fields["classic_member_metadata"] = (session, protocols)
        else:
            fields["classic_member_metadata"] = None
        return fields
    if record_type == cg.CONSUMER_GROUP_REGULAR_EXPRESSION:
        return {"topics": sorted(r.compact_string() for _ in range(r.uvarint() - 1)), "version": r.int64(),
                "timestamp": r.int64()}
    if record_type == cg.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member_epoch, previous, state = r.int32(), r.int32(), r.int8()
        return {"member_epoch": member_epoch, "previous_member_epoch": previous, "state": state,
                **_with_epochs("assigned_partitions", _topic_partitions(r, epochs=True)),
                **_with_epochs("partitions_pending_revocation", _topic_partitions(r, epochs=True))}
    return {}


def _json_fields(record_type: int, value, kafka_4_0: bool) -> dict:
    """The same fields of a consumer_group_records row's JSON value, as the Kafka version writes them (4.0:
    no metadata hash, assignment timestamp or assignment epochs, which read as 0 and None)."""
    if record_type == cg.CONSUMER_GROUP_METADATA:
        return {"epoch": value["epoch"], "metadata_hash": 0 if kafka_4_0 else value["metadata_hash"]}
    if record_type == cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        return {"assignment_epoch": value["assignment_epoch"],
                "assignment_timestamp_ms": 0 if kafka_4_0 else value["assignment_timestamp_ms"]}
    if record_type == cg.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        return {"target": sorted((t, p) for t, parts in value for p in parts)}
    if record_type == cg.CONSUMER_GROUP_MEMBER_METADATA:
        fields = {k: value[k] for k in ("instance_id", "rack_id", "client_id", "client_host", "subscribed_topic_regex",
                                        "rebalance_timeout_ms", "server_assignor")}
        classic = value["classic_member_metadata"]
        return fields | {"subscribed_topic_names": sorted(value["subscribed_topic_names"]),
                         "classic_member_metadata": None if classic is None else (
                             classic["session_timeout_ms"],
                             [(p["name"], base64.b64decode(p["metadata"]).hex()) for p in classic["supported_protocols"]])}
    if record_type == cg.CONSUMER_GROUP_REGULAR_EXPRESSION:
        return {"topics": sorted(value["topics"]), "version": value["version"], "timestamp": value["timestamp"]}
    if record_type == cg.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        def flat(assigned):
            return [(t, int(p), None if kafka_4_0 else e) for t, parts in assigned.items() for p, e in parts.items()]
        return {"member_epoch": value["member_epoch"], "previous_member_epoch": value["previous_member_epoch"],
                "state": value["state"], **_with_epochs("assigned_partitions", flat(value["assigned_partitions"])),
                **_with_epochs("partitions_pending_revocation", flat(value["partitions_pending_revocation"]))}
    return {}


def _with_epochs(name: str, partitions: list[tuple]) -> dict:
    """The partitions, and apart their assignment epochs (a tagged field Kafka 4.0 did not write: None)."""
    ordered = sorted(partitions)
    return {name: [(t, p) for t, p, _ in ordered], f"{name}_epochs": [e for _, _, e in ordered]}


def _topic_partitions(r: "_Reader", epochs: bool) -> list[tuple]:
    out = []
    for _ in range(r.uvarint() - 1):
        topic = base64.urlsafe_b64encode(r.take(16)).rstrip(b"=").decode()
        partitions = [r.int32() for _ in range(r.uvarint() - 1)]
        tags = r.tagged()
        if epochs:
            if 0 in tags:
                data = _Reader(tags[0])
                assigned = [data.int32() for _ in range(data.uvarint() - 1)]
            else:
                assigned = [None] * len(partitions)
            out += [(topic, p, e) for p, e in zip(partitions, assigned)]
        else:
            out += [(topic, p) for p in partitions]
    return out


def _tagged_int64(r: "_Reader", name: str) -> dict:
    tags = r.tagged()
    return {name: struct.unpack(">q", tags[0])[0] if 0 in tags else 0}


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def left(self) -> int:
        return len(self.data) - self.pos

    def rest(self) -> bytes:
        return self.take(self.left())

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self.take(n).decode()

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def bytes_(self) -> bytes:
        return self.take(self.int32())

    def tagged(self) -> dict[int, bytes]:
        return {self.uvarint(): self.take(self.uvarint()) for _ in range(self.uvarint())}
