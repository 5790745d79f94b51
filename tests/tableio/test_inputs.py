"""Readers: every input row becomes an event or a reject with a reason; unreadable paths are InputErrors."""

from __future__ import annotations

import base64
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tableio.inputs import InputError, read_events
from state.classic.consumer_protocol import Subscription, encode_subscription

HEARTBEAT = {"ts": 1_000, "group_id": "g", "type": "HEARTBEAT", "member_id": "m", "generation_id": 1}


def join(**overrides) -> dict:
    row = {"ts": 1_000, "group_id": "g", "type": "JOIN_GROUP", "member_id": "", "protocol_type": "consumer",
           "session_timeout_ms": 10_000, "protocols": [{"name": "range", "topics": ["t"]}]}
    row.update(overrides)
    return row


def test_good_jsonl_rows_become_events_in_file_order(write_jsonl):
    path = write_jsonl([join(), "", "   ", dict(HEARTBEAT, ts="1970-01-01T00:00:02Z")])
    rows = read_events([path])
    assert rows.rejects == []
    assert [(e.type, e.ts, e.line, e.seq, e.source) for e in rows.events] == [
        ("JOIN_GROUP", 1_000, 1, 1, str(path)),
        ("HEARTBEAT", 2_000, 4, 4, str(path)),  # blank lines are skipped but still counted
    ]


@pytest.mark.parametrize("line, reason", [
    ("{not json", "line is not valid JSON"),
    ('{"ts": "1', "line is not valid JSON: Unterminated string starting at column 8"),  # Python's "... at" once
    ('[1, 2]', "a row must be a JSON object, got list"),
    ('"text"', "a row must be a JSON object, got str"),
    (json.dumps({"group_id": "g", "type": "HEARTBEAT"}), "missing required field 'ts'"),
    (json.dumps(dict(HEARTBEAT, ts="soon")), "field 'ts' must be epoch milliseconds or ISO-8601"),
    (json.dumps(dict(HEARTBEAT, ts="2026-03-02T09:00:00")), "has no time zone"),
    (json.dumps(dict(HEARTBEAT, ts=True)), "field 'ts' must be an integer"),
    (json.dumps({"ts": 1, "type": "HEARTBEAT"}), "missing required field 'group_id'"),
    (json.dumps(dict(HEARTBEAT, group_id=7)), "field 'group_id' must be a string"),
    (json.dumps({"ts": 1, "group_id": "g"}), "missing required field 'type'"),
    (json.dumps(dict(HEARTBEAT, type="HEARTBEET")), "unknown type 'HEARTBEET'"),
    (json.dumps(dict(HEARTBEAT, generation_id="one")), "field 'generation_id' must be an integer"),
    (json.dumps(join(session_timeout_ms=1.5)), "field 'session_timeout_ms' must be an integer"),
    (json.dumps(join(protocols="range")), "field 'protocols' must be a list"),
    (json.dumps(join(protocols=[{"name": "range", "topics": ["x" * 40_000]}])), "longer than 32767"),
    (json.dumps(dict(HEARTBEAT, api_version=99)), "field 'api_version' = 99 is out of range"),
    (json.dumps(dict(HEARTBEAT, generation_id=2**31)), "field 'generation_id' = 2147483648 is out of range"),
    (json.dumps(join(protocols=[{"name": "range", "topics": ["t"],
                                 "owned_partitions": [{"topic": "t", "partitions": [-1]}]}])),
     "field 'protocols.owned_partitions.partitions' = -1 is out of range"),
])
def test_each_kind_of_bad_row_is_rejected_with_its_reason(write_jsonl, line, reason):
    path = write_jsonl([HEARTBEAT, line])
    rows = read_events([path])
    assert len(rows.events) == 1
    [reject] = rows.rejects
    assert (reject["raw"], reject["source"], reject["line"]) == (line, str(path), 2)
    assert reason in reject["reason"]


def test_invalid_utf8_and_bom(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(HEARTBEAT).encode() + b"\r\n" + b'{"ts": "\xff"}\n')
    rows = read_events([path])
    assert [e.line for e in rows.events] == [1]
    assert rows.rejects[0]["reason"] == "line is not valid UTF-8"
    assert rows.rejects[0]["line"] == 2


def test_nothing_is_lost(write_jsonl):
    lines = [HEARTBEAT, "{oops", join(), dict(HEARTBEAT, type="NOPE"), "", join(session_timeout_ms="x")]
    rows = read_events([write_jsonl(lines)])
    assert sorted([e.line for e in rows.events] + [r["line"] for r in rows.rejects]) == [1, 2, 3, 4, 6]


def test_parquet_rows_with_bytes_and_a_bad_row(tmp_path):
    metadata = encode_subscription(Subscription(topics=("t",)))
    table = pa.table({
        "ts": pa.array([1_000, 2_000, None], pa.int64()),
        "group_id": ["g", "g", "g"],
        "type": ["JOIN_GROUP", "HEARTBEAT", "HEARTBEAT"],
        "member_id": ["", "m", "m"],
        "protocol_type": ["consumer", None, None],
        "session_timeout_ms": pa.array([10_000, None, None], pa.int32()),
        "generation_id": pa.array([None, 1, 1], pa.int32()),
        "protocols": pa.array([[{"name": "range", "metadata": metadata}], None, None],
                              pa.list_(pa.struct([("name", pa.string()), ("metadata", pa.binary())]))),
    })
    path = tmp_path / "events.parquet"
    pq.write_table(table, path)
    rows = read_events([path])
    assert [(e.type, e.line) for e in rows.events] == [("JOIN_GROUP", 1), ("HEARTBEAT", 2)]
    assert rows.events[0].protocols[0].topics == ("t",)
    [reject] = rows.rejects
    assert (reject["line"], reject["reason"]) == (3, "missing required field 'ts'")
    assert json.loads(reject["raw"])["type"] == "HEARTBEAT"
    bad_bytes = pa.table({"ts": [1], "group_id": ["g"], "type": ["X"], "blob": pa.array([b"\x00\xff"])})
    pq.write_table(bad_bytes, path)
    assert json.loads(read_events([path]).rejects[0]["raw"])["blob"] == base64.b64encode(b"\x00\xff").decode()


def test_folders_are_read_recursively_in_sorted_order(tmp_path, write_jsonl):
    write_jsonl([dict(HEARTBEAT, group_id="b")], "in/b/2.jsonl")
    write_jsonl([dict(HEARTBEAT, group_id="a")], "in/a.json")
    write_jsonl([dict(HEARTBEAT, group_id="c")], "in/b/1.jsonl")
    write_jsonl([dict(HEARTBEAT, group_id="hidden")], "in/.tmp/x.jsonl")
    write_jsonl([dict(HEARTBEAT, group_id="meta")], "in/_spark_metadata/0.jsonl")
    (tmp_path / "in" / "notes.txt").write_text("not events")
    rows = read_events([tmp_path / "in", tmp_path / "in" / "a.json"])  # a file reached twice is read once
    assert [e.group_id for e in rows.events] == ["a", "c", "b"]
    assert rows.events[1].source == str(tmp_path / "in" / "b" / "1.jsonl")


def test_unreadable_paths_are_input_errors(tmp_path, write_jsonl):
    with pytest.raises(InputError, match="missing.jsonl: no such file or folder"):
        read_events([tmp_path / "missing.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="folder has no event files"):
        read_events([tmp_path / "empty"])
    (tmp_path / "events.csv").write_text("ts,group_id\n")
    with pytest.raises(InputError, match="not an event file"):
        read_events([tmp_path / "events.csv"])
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 but not really")
    with pytest.raises(InputError, match="broken.parquet: not a readable Parquet file"):
        read_events([tmp_path / "broken.parquet"])
