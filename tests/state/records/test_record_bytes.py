"""The bytes of a classic group's `__consumer_offsets` records as a Kafka 4.x coordinator writes them
(state.records.record_bytes): keys, values at the versions written (trunk's and 4.0's OffsetCommitValue), the v2
record around them and the batch around one operation's records. Expected bytes are written out field by
field so they can be checked by hand."""

from __future__ import annotations

import pytest

from state.records.record_bytes import (RECORD_BATCH_OVERHEAD, batch_size, key_bytes, record_bytes, record_size,
                                value_bytes, varint, varlong)
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

GROUP = "orders-000"
COMMIT_TS = 1_700_000_000_000  # 0x0000018BCFE56800
# OffsetMessageFormatterTest's topic id; its 16 bytes, base64url-decoded by hand.
TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"
TOPIC_ID_BYTES = "30a5f1d5f224432d89f635c784af26d7"


def commit(partition=3, offset=12345, leader_epoch=None, metadata="", expire_ts=None,
           topic_id=TOPIC_ID) -> OffsetCommitRecord:
    """A commit as trunk's coordinator writes it (with its topic id); `topic_id=None`: as Kafka 4.0's."""
    return OffsetCommitRecord("orders", partition, {"offset": offset, "leader_epoch": leader_epoch,
                                                    "metadata": metadata, "commit_ts": COMMIT_TS,
                                                    "expire_ts": expire_ts, "topic_id": topic_id})


def h(*fields: str) -> bytes:
    return bytes.fromhex("".join(fields))


OFFSET_COMMIT_KEY = h("0001",                         # record type: OffsetCommit
                      "000a", b"orders-000".hex(),    # group
                      "0006", b"orders".hex(),        # topic
                      "00000003")                     # partition


# ByteUtilsTest.testVarintSerde / testVarlongSerde (apache/kafka clients), ported.
VARINTS = [
    (0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"), (8191, "fe7f"),
    (-8192, "ff7f"), (8192, "808001"), (-8193, "818001"), (1048575, "feff7f"), (-1048576, "ffff7f"),
    (1048576, "80808001"), (-1048577, "81808001"), (134217727, "feffff7f"), (-134217728, "ffffff7f"),
    (134217728, "8080808001"), (-134217729, "8180808001"), (2**31 - 1, "feffffff0f"), (-2**31, "ffffffff0f"),
]
VARLONGS = VARINTS + [
    (17179869183, "feffffff7f"), (-17179869184, "ffffffff7f"), (17179869184, "808080808001"),
    (-17179869185, "818080808001"), (2199023255551, "feffffffff7f"), (-2199023255552, "ffffffffff7f"),
    (2199023255552, "80808080808001"), (-2199023255553, "81808080808001"), (281474976710655, "feffffffffff7f"),
    (-281474976710656, "ffffffffffff7f"), (281474976710656, "8080808080808001"),
    (-281474976710657, "8180808080808001"), (36028797018963967, "feffffffffffff7f"),
    (-36028797018963968, "ffffffffffffff7f"), (36028797018963968, "808080808080808001"),
    (-36028797018963969, "818080808080808001"), (4611686018427387903, "feffffffffffffff7f"),
    (-4611686018427387904, "ffffffffffffffff7f"), (4611686018427387904, "80808080808080808001"),
    (2**63 - 1, "feffffffffffffffff01"), (-2**63, "ffffffffffffffffff01"),
]


@pytest.mark.parametrize("n, expected", VARINTS)
def test_varint_matches_kafka(n, expected):
    assert varint(n) == bytes.fromhex(expected)


@pytest.mark.parametrize("n, expected", VARLONGS)
def test_varlong_matches_kafka(n, expected):
    assert varlong(n) == bytes.fromhex(expected)


def test_offset_commit_key():
    assert key_bytes(commit(), GROUP) == OFFSET_COMMIT_KEY
    assert len(OFFSET_COMMIT_KEY) == 26


def test_offset_commit_value_is_v4_with_the_topic_id_as_a_tagged_field():
    """KAFKA-19141 (Kafka 4.1+): OffsetCommitValue v4 is flexible; the topic id is tagged field 0."""
    assert value_bytes(commit()) == h("0004",              # value version 4
                                      "0000000000003039",  # offset 12345
                                      "ffffffff",          # leader epoch: none (-1)
                                      "01",                # metadata "": compact, length + 1
                                      "0000018bcfe56800",  # commit timestamp
                                      "01",                # tagged fields: 1
                                      "00", "10",          # tag 0 (topicId), 16 bytes
                                      TOPIC_ID_BYTES)
    assert len(value_bytes(commit())) == 42
    assert value_bytes(commit(leader_epoch=7, metadata="ab")) == h(
        "0004", "0000000000003039", "00000007", "03", b"ab".hex(), "0000018bcfe56800", "01", "00", "10",
        TOPIC_ID_BYTES)


def test_offset_commit_value_without_topic_id_is_v3_as_kafka_4_0_wrote_it():
    assert value_bytes(commit(topic_id=None)) == h("0003",              # value version 3
                                                   "0000000000003039",  # offset 12345
                                                   "ffffffff",          # leader epoch: none (-1)
                                                   "0000",              # metadata ""
                                                   "0000018bcfe56800")  # commit timestamp
    assert value_bytes(commit(leader_epoch=7, metadata="ab", topic_id=None)) == h(
        "0003", "0000000000003039", "00000007", "0002", b"ab".hex(), "0000018bcfe56800")


def test_offset_commit_value_with_expire_timestamp_is_v1_without_leader_epoch_or_topic_id():
    expected = h("0001",              # value version 1
                 "0000000000003039",  # offset
                 "0000",              # metadata ""
                 "0000018bcfe56800",  # commit timestamp
                 "0000018bcfe65260")  # expire timestamp 1_700_000_060_000
    assert value_bytes(commit(leader_epoch=7, expire_ts=COMMIT_TS + 60_000, topic_id=None)) == expected


def test_metadata_length_counts_utf8_bytes():
    assert value_bytes(commit(metadata="é"))[14:17] == h("03", "c3a9")
    assert value_bytes(commit(metadata="é", topic_id=None))[14:18] == h("0002", "c3a9")


def test_offset_commit_record_in_a_batch_of_one():
    assert record_bytes(commit(), GROUP) == h(
        "9401",     # length 74 (zigzag varint: 148, two bytes)
        "00",       # attributes
        "00",       # timestamp delta 0
        "00",       # offset delta 0
        "34",       # key length 26
        OFFSET_COMMIT_KEY.hex(),
        "54",       # value length 42
        value_bytes(commit()).hex(),
        "00")       # headers: 0
    assert record_size(commit(), GROUP) == 76
    assert batch_size([commit()], GROUP) == RECORD_BATCH_OVERHEAD + 76 == 137


def test_kafka_4_0_offset_commit_record_in_a_batch_of_one():
    assert record_bytes(commit(topic_id=None), GROUP) == h(
        "70",       # length 56 (zigzag varint)
        "00", "00", "00",
        "34",       # key length 26
        OFFSET_COMMIT_KEY.hex(),
        "30",       # value length 24
        value_bytes(commit(topic_id=None)).hex(),
        "00")
    assert record_size(commit(topic_id=None), GROUP) == 57
    assert batch_size([commit(topic_id=None)], GROUP) == RECORD_BATCH_OVERHEAD + 57 == 118


def test_record_sizes():
    assert record_size(commit(expire_ts=COMMIT_TS + 1, topic_id=None), GROUP) == 61  # v1: no epoch, expire ts
    assert record_size(commit(metadata="x" * 100), GROUP) == 177  # value length 142 takes two varint bytes
    assert record_size(commit(metadata="x" * 127), GROUP) == 205  # compact metadata length 128: two bytes
    assert record_size(commit(metadata="x" * 7, topic_id=None), GROUP) == 64  # length 63: one varint byte
    assert record_size(commit(metadata="x" * 8, topic_id=None), GROUP) == 66  # length 64: two
    assert record_size(commit(metadata="x" * 100, topic_id=None), GROUP) == 159  # and value length 124: two


def test_offset_commit_tombstone():
    tombstone = OffsetCommitRecord("orders", 3, None)
    assert value_bytes(tombstone) is None
    assert record_bytes(tombstone, GROUP) == h("40", "00", "00", "00", "34", OFFSET_COMMIT_KEY.hex(),
                                               "01",  # value length -1: null
                                               "00")
    assert record_size(tombstone, GROUP) == 33


def test_group_metadata_tombstone():
    tombstone = GroupMetadataRecord(None)
    assert key_bytes(tombstone, GROUP) == h("0002", "000a", b"orders-000".hex())
    assert record_bytes(tombstone, GROUP) == h("28", "00", "00", "00", "1c", key_bytes(tombstone, GROUP).hex(),
                                               "01", "00")
    assert record_size(tombstone, GROUP) == 21


def member(member_id, instance_id, subscription, assignment) -> dict:
    return {"member_id": member_id, "group_instance_id": instance_id, "client_id": "app", "client_host": "/10.0.0.1",
            "rebalance_timeout_ms": 300_000, "session_timeout_ms": 45_000, "subscription": subscription,
            "assignment": assignment}


def test_group_metadata_with_two_members_is_v3():
    record = GroupMetadataRecord({
        "protocol_type": "consumer", "generation_id": 5, "protocol_name": "range", "leader_id": "m-1",
        "current_state_ts": COMMIT_TS,
        "members": [member("m-1", None, b"\x01\x02", b"\x03"), member("m-2", "static-2", b"", b"\x04\x05")],
    })
    common = h("0003", b"app".hex(), "0009", b"/10.0.0.1".hex(), "000493e0", "0000afc8")
    expected = h(
        "0003",                             # value version 3
        "0008", b"consumer".hex(),          # protocol type
        "00000005",                         # generation
        "0005", b"range".hex(),             # protocol
        "0003", b"m-1".hex(),               # leader
        "0000018bcfe56800",                 # current state timestamp
        "00000002",                         # members: 2
        "0003", b"m-1".hex(), "ffff",       # member id, group instance id null
        common.hex(),                       # client id, client host, rebalance timeout 300000, session 45000
        "00000002", "0102", "00000001", "03",   # subscription, assignment
        "0003", b"m-2".hex(), "0008", b"static-2".hex(),
        common.hex(),
        "00000000", "00000002", "0405")
    assert value_bytes(record) == expected
    assert len(expected) == 2 + 10 + 4 + 7 + 5 + 8 + 4 + (5 + 2 + 24 + 6 + 5) + (5 + 10 + 24 + 4 + 6)
    # length 152 and value length 131 take two varint bytes each (64 and more)
    assert record_size(record, GROUP) == 2 + 1 + 1 + 1 + 1 + 14 + 2 + 131 + 1 == 154


def test_batch_counts_offset_deltas_and_the_header_once():
    records = [commit(partition=p) for p in range(200)]
    assert batch_size(records, GROUP) == RECORD_BATCH_OVERHEAD + 64 * 76 + 136 * 77  # offset delta 64+ takes 2 bytes
    assert batch_size([], GROUP) == RECORD_BATCH_OVERHEAD
