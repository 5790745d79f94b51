"""The coordinator_load table on a small cluster computed by hand: two groups on brokers 1 and 2 (one moves from
2 to 1), request counts per window with quiet runs, parked JoinGroups, groups per state and members at window
ends, and the bytes of each record kind (docs/records.md's worked example: a lone commit is 137 bytes, 118 as Kafka
4.0 wrote it); where a FindCoordinator and a client's failed connection count."""

from __future__ import annotations

import pyarrow as pa
import pytest

from state.records.record_bytes import RECORD_BATCH_OVERHEAD, batch_size
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord
from tableio.coordinator_load import INPUT_COLUMNS as TABLES_READ
from tableio.coordinator_load import LoadError, coordinator_load, input_frames, run_window_ms
from tableio.parquet import arrow_schema

A, B = "orders-000", "orders-001"  # A on broker 1; B on broker 2, moved to 1 at 4.5 s
START, FINAL = 10, 41_000


def frame(table: str, rows: list[dict]) -> pa.Table:
    schema = arrow_schema(table)
    if "coordinator_id" not in schema.names:  # the column the cluster adds
        schema = schema.append(pa.field("coordinator_id", pa.int32()))
    return pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)


def response(api, request_ts, response_ts=None, error="NONE", broker=1, count=1, interval=None):
    return {"api": api, "request_ts": request_ts, "response_ts": response_ts or request_ts + 2, "error": error,
            "coordinator_id": broker, "repeat_count": count, "repeat_interval_ms": interval}


TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"


def commit(partition, write_ts, count=1, interval=None, seq=0, group=A, offset=12345, member="m1",
           topic_id=TOPIC_ID):
    """A commit as trunk writes it (its value holds the topic id); `topic_id=None`: as Kafka 4.0 wrote it."""
    return {"group_id": group, "topic": "orders", "partition": partition, "offset": offset, "metadata": "",
            "leader_epoch": None, "commit_ts": write_ts, "expire_ts": None, "topic_id": topic_id,
            "write_ts": write_ts, "member_id": member, "coordinator_id": 1, "repeat_count": count,
            "repeat_interval_ms": interval, "out_seq": seq}


MEMBER = {"member_id": "m1", "group_instance_id": None, "client_id": "c1", "client_host": "/10.0.0.1",
          "rebalance_timeout_ms": 300_000, "session_timeout_ms": 45_000, "subscription": b"\x01",
          "assignment": b"\x02"}
METADATA = {"protocol_type": "consumer", "generation_id": 1, "protocol_name": "range", "leader_id": "m1",
            "current_state_ts": 3200, "members": [MEMBER]}


def state(group, ts, to_state, members, broker, seq):
    return {"group_id": group, "ts": ts, "to_state": to_state, "member_count": members, "coordinator_id": broker,
            "out_seq": seq}


TABLES = input_frames({
    "responses": frame("responses", [
        response("JoinGroup", 100, 3100),                      # parked at the ends 1000, 2000, 3000
        response("JoinGroup", 2000, 3100),                     # parked at 2000 (request_ts <= end) and 3000
        response("Heartbeat", 3500, count=10, interval=3000),  # 3500, 6500, ... 30500
        response("Heartbeat", 9500, count=3, interval=3000),   # the same lattice: 9500, 12500, 15500
        response("Heartbeat", 3100, count=5, interval=400),    # 3100, 3500, 3900 | 4300, 4700
        response("SyncGroup", 1500, error="REBALANCE_IN_PROGRESS", broker=2),
        response("FindCoordinator", 4550, broker=None),         # no coordinator named
        response("FindCoordinator", 5550, broker=2),            # names broker 2, went to any broker
        # Intervals that do not divide the window: 3050, 3750 | 4450 | 5150, 5850 and 3099, 3799 | 4499 | ...
        response("OffsetCommit", 3050, broker=2, count=5, interval=700),
        response("OffsetCommit", 3099, broker=2, count=5, interval=700),
        response("OffsetCommit", 3001, broker=2, count=3, interval=1001),  # 3001 | 4002 | 5003
    ]),
    "offsets": frame("offsets", [
        commit(0, 3300, seq=10), commit(1, 3300, seq=11),        # one request: a batch of 2
        # A quiet run of 2-partition commits, 5000, 10000, 15000, 20000, as Kafka 4.0 wrote them (no topic id).
        commit(0, 5000, count=4, interval=5000, seq=20, topic_id=None),
        commit(1, 5000, count=4, interval=5000, seq=21, topic_id=None),
        commit(3, 40_000, group=B, offset=None, member=None, seq=30),  # the sweep: a tombstone, with B's below
    ]),
    "group_metadata": frame("group_metadata", [
        {"group_id": A, "write_ts": 3200, "tombstone": False, **METADATA, "coordinator_id": 1, "out_seq": 9},
        {"group_id": B, "write_ts": 40_000, "tombstone": True, "coordinator_id": 1, "out_seq": 31},
    ]),
    # A consumer group's heartbeat at 6200 on broker 2: one batch of two records, bytes as measured.
    "consumer_group_records": frame("consumer_group_records", [
        {"group_id": "cg", "write_ts": 6200, "record_type": "ConsumerGroupMemberMetadata", "batch_bytes": 168,
         "coordinator_id": 2, "out_seq": 1},
        {"group_id": "cg", "write_ts": 6200, "record_type": "ConsumerGroupMetadata", "batch_bytes": 36,
         "coordinator_id": 2, "out_seq": 2},
    ]),
    "group_states": frame("group_states", [
        state(A, 10, "Empty", 0, 1, 0), state(A, 100, "PreparingRebalance", 1, 1, 1),
        state(A, 3100, "CompletingRebalance", 2, 1, 5), state(A, 3200, "Stable", 2, 1, 8),
        state(B, 500, "Empty", 0, 2, 0), state(B, 600, "PreparingRebalance", 1, 2, 1),
        state(B, 4500, "Dead", 0, 2, 5), state(B, 4600, "Stable", 1, 1, 6),
    ]),
    "members": frame("members", [
        {"group_id": A, "ts": 100, "member_count": 1, "coordinator_id": 1, "out_seq": 2},
        {"group_id": A, "ts": 2000, "member_count": 2, "coordinator_id": 1, "out_seq": 3},
    ]),
})


@pytest.fixture(scope="module")
def load() -> dict[tuple, int]:
    rows = coordinator_load([TABLES], START, FINAL).to_pylist()
    assert {row["window_ms"] for row in rows} == {1000}
    return {(r["broker_id"], r["window_start_ts"] // 1000, r["measure"], r["name"]): r["value"] for r in rows}


def series(load, broker, measure, name) -> dict[int, int]:
    return {w: v for (b, w, m, n), v in load.items() if (b, m, n) == (broker, measure, name)}


def test_requests_per_window_count_every_request_of_a_quiet_run(load):
    heartbeats = series(load, 1, "requests", "Heartbeat")
    assert heartbeats == {3: 1 + 3, 4: 2, **{w: 1 for w in range(6, 31, 3)}, 9: 2, 12: 2, 15: 2}
    assert sum(heartbeats.values()) == 10 + 3 + 5
    assert series(load, 1, "requests", "JoinGroup") == {0: 1, 2: 1}
    assert series(load, 2, "requests", "SyncGroup") == {1: 1}
    assert series(load, 2, "requests", "OffsetCommit") == {3: 2 + 2 + 1, 4: 1 + 1 + 1, 5: 2 + 2 + 1}
    assert series(load, None, "requests", "FindCoordinator") == {4: 1, 5: 1}
    assert series(load, 2, "requests", "FindCoordinator") == {}


def test_responses_by_error_at_their_response_times(load):
    # The two JoinGroups answered at 3100, heartbeats at 3102, 3502 (two) and 3902.
    assert series(load, 1, "responses", "NONE")[3] == 2 + 4
    assert series(load, 2, "responses", "REBALANCE_IN_PROGRESS") == {1: 1}


def test_parked_join_groups_at_window_ends(load):
    assert series(load, 1, "parked", "JoinGroup") == {0: 1, 1: 2, 2: 2}


def test_groups_per_state_and_members_at_window_ends(load):
    assert series(load, 1, "groups", "PreparingRebalance") == {0: 1, 1: 1, 2: 1}
    assert series(load, 2, "groups", "PreparingRebalance") == {0: 1, 1: 1, 2: 1, 3: 1}
    assert series(load, 2, "groups", "rebalancing") == series(load, 2, "groups", "PreparingRebalance")
    # B moves at 4.5 s: from the end of window 4 on both groups are Stable on broker 1, until the run's end.
    assert series(load, 1, "groups", "Stable") == {3: 1, **{w: 2 for w in range(4, 42)}}
    assert series(load, 1, "groups", "hosted") == {w: 1 for w in range(0, 4)} | {w: 2 for w in range(4, 42)}
    assert series(load, 2, "groups", "hosted") == {w: 1 for w in range(0, 4)}
    assert series(load, 1, "members", "hosted") == {0: 1, 1: 2, 2: 2, 3: 2, **{w: 3 for w in range(4, 42)}}
    assert series(load, 1, "groups", "Empty") == {} and series(load, 2, "groups", "Dead") == {}


def test_bytes_of_each_record_kind(load):
    pair = RECORD_BATCH_OVERHEAD + 76 + 76  # two commits of docs/records.md's example in one batch
    pair_4_0 = RECORD_BATCH_OVERHEAD + 57 + 57  # the same as Kafka 4.0 wrote them
    for topic_id, size in ((TOPIC_ID, pair), (None, pair_4_0)):
        assert size == batch_size([OffsetCommitRecord("orders", p, {
            "offset": 12345, "metadata": "", "commit_ts": 0, "expire_ts": None, "leader_epoch": None,
            "topic_id": topic_id}) for p in (0, 1)], A)
    metadata = batch_size([GroupMetadataRecord(METADATA)], A)
    # Value: version 2, protocol type 10, generation 4, protocol 7, leader 4, state time 8, member count 4, the
    # member 4 + 2 + 4 + 11 + 4 + 4 + 5 + 5: 78 bytes. Record: length (2), attributes, timestamp and offset
    # deltas, key length, key 14, value length (2), value, headers.
    assert metadata == RECORD_BATCH_OVERHEAD + 2 + 1 + 1 + 1 + 1 + 14 + 2 + 78 + 1 == 162
    assert series(load, 1, "bytes", "OffsetCommit") == {3: pair, 5: pair_4_0, 10: pair_4_0, 15: pair_4_0,
                                                       20: pair_4_0, 40: RECORD_BATCH_OVERHEAD + 33}
    # The sweep's group tombstone shares the offset tombstone's batch: its 21 bytes, no header.
    assert series(load, 1, "bytes", "GroupMetadata") == {3: metadata, 40: 21}
    assert series(load, 1, "records", "OffsetCommit") == {3: 2, 5: 2, 10: 2, 15: 2, 20: 2, 40: 1}
    assert series(load, 1, "records", "GroupMetadata") == {3: 1, 40: 1}


def test_consumer_group_records_count_by_type_with_the_bytes_they_carry(load):
    assert series(load, 2, "records", "ConsumerGroupMemberMetadata") == {6: 1}
    assert series(load, 2, "bytes", "ConsumerGroupMemberMetadata") == {6: 168}
    assert series(load, 2, "bytes", "ConsumerGroupMetadata") == {6: 36}


def test_a_request_counts_at_the_broker_it_went_to_and_a_failed_connection_at_none():
    # Broker 3 leads the group and fails at 1.7 s: a lookup naming it went to broker 2 (its node); a heartbeat
    # sent to it while down reached no broker; a JoinGroup parked there until it failed was never answered.
    tables = input_frames({name: frame(name, []) for name in TABLES_READ} | {"responses": frame("responses", [
        response("FindCoordinator", 1500, broker=3) | {"node_id": 2},
        response("Heartbeat", 2600, 2600, error="NETWORK_EXCEPTION", broker=3) | {"node_id": 3},
        response("JoinGroup", 100, 1700, error="NETWORK_EXCEPTION", broker=3) | {"node_id": 3},
    ])})
    rows = coordinator_load([tables], 0, 3_000).to_pylist()
    assert {(r["broker_id"], r["window_start_ts"], r["measure"], r["name"], r["value"]) for r in rows} == {
        (2, 1000, "requests", "FindCoordinator", 1), (2, 1000, "responses", "NONE", 1),
        (3, 0, "parked", "JoinGroup", 1)}


def test_other_windows_and_an_impossible_one():
    rows = coordinator_load([TABLES], START, FINAL, window_ms=10_000).to_pylist()
    heartbeats = {r["window_start_ts"]: r["value"] for r in rows
                  if (r["measure"], r["name"]) == ("requests", "Heartbeat")}
    assert heartbeats == {0: 3 + 1 + 5, 10_000: 3 + 2, 20_000: 3, 30_000: 1}
    assert coordinator_load([TABLES], START, None).num_rows == 0
    with pytest.raises(LoadError):
        coordinator_load([TABLES], START, FINAL, window_ms=0)


def test_a_run_too_long_for_1_s_windows_gets_the_first_window_that_fits():
    assert run_window_ms(0, 600_000) == 1_000
    assert run_window_ms(0, 7 * 86_400_000) == 1_000             # a week fits 1 s windows
    assert run_window_ms(0, 30 * 86_400_000) == 10_000
    assert run_window_ms(1_700_000_000_000, 1_780_000_000_000) == 600_000   # two and a half years
    assert run_window_ms(None, None) == 1_000
