"""The source's micro-batch plan, control files, and the sink's commit log."""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

from state.events import CapturedAnswer
from streaming import sink, source
from streaming.source import (EventFileReader, FilePartition, _control_rows, end_of_run_final, read_control_final,
                              wake_at, write_control)
from streaming.step import OUTPUT_SCHEMA
from tableio import captured_answers


def plan(files: list[str], files_per_trigger: int) -> list[list[str]]:
    """The files of each micro-batch an availableNow run reads."""
    reader = EventFileReader([[f, f] for f in files], files_per_trigger)
    reader.prepareForTriggerAvailableNow()
    limit = reader.getDefaultReadLimit()
    batches, start = [], reader.initialOffset()
    while (end := reader.latestOffset(start, limit)) != start:
        batches.append([p.value for p in reader.partitions(start, end)])
        start = end
    return batches


def test_control_files_travel_alone():
    files = ["a.jsonl", "b.jsonl", "c.parquet", "1.control", "2.control", "3.control"]
    assert plan(files, 0) == [["a.jsonl", "b.jsonl", "c.parquet"], ["1.control"], ["2.control"], ["3.control"]]
    assert plan(files, 2) == [["a.jsonl", "b.jsonl"], ["c.parquet"], ["1.control"], ["2.control"], ["3.control"]]


def test_all_available_limit_and_a_longer_list_keep_earlier_offsets():
    reader = EventFileReader([["a.jsonl", "a"], ["b.jsonl", "b"]], 1)
    assert reader.latestOffset({"file": 0}, ReadAllAvailable()) == {"file": 2}
    longer = EventFileReader([["a.jsonl", "a"], ["b.jsonl", "b"], ["x.control", "x"]], 1)
    assert longer.latestOffset({"file": 2}, ReadMaxFiles(1)) == {"file": 3}


def test_events_carry_their_captured_answers_and_a_process_reads_the_file_once(tmp_path, monkeypatch):
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps({"ts": 1_000 + i, "group_id": "g", "type": "HEARTBEAT", "member_id": "0x1",
                                          "generation_id": 2, "request_id": f"r{i}"}) + "\n" for i in range(2)))
    captured = tmp_path / "events.captured.ndjson"
    captured.write_text(json.dumps({"request_id": "r0", "api": "Heartbeat", "connection": "c1", "error": "NONE",
                                    "member_id": "0x1", "generation_id": 2}) + "\n")
    reads = []
    monkeypatch.setattr(captured_answers, "captured_answers",
                        lambda path, read=captured_answers.captured_answers: reads.append(path) or read(path))
    source._captured_answers.cache_clear()
    reader = EventFileReader([[str(events), "events.jsonl"]], 0, str(captured))
    for _ in range(2):  # two partitions of the same file, as a re-executed micro-batch reads them
        batches = reader.read(FilePartition(str(events), "events.jsonl"))
        payloads = [p for batch in batches for p in batch.column("payload").to_pylist()]
        assert [pickle.loads(p).captured for p in payloads] == [CapturedAnswer("c1", "NONE", "0x1", 2), None]
    assert reads == [str(captured)]


def test_control_file_round_trip(tmp_path):
    path = tmp_path / "3.control"
    write_control(path, sentinel_ts=2_000, final=1_000, end_groups=["g1", "g2"], wake_groups=["g3"])
    rows = list(_control_rows(str(path)))
    assert rows[0] == ("sentinel", None, 2_000, b"")
    assert [(kind, key, ts, end_of_run_final(p), wake_at(p)) for kind, key, ts, p in rows[1:]] == [
        ("wake", "g3", 2_000, None, 1_000), ("end", "g1", 2_000, 1_000, None), ("end", "g2", 2_000, 1_000, None)]
    assert end_of_run_final(pickle.dumps({"a": 1})) is None
    assert read_control_final(path) == 1_000


@pytest.mark.spark
def test_only_committed_batches_are_read_and_a_re_executed_batch_keeps_its_rows(spark, tmp_path):
    def batch(rows):
        return spark.createDataFrame(rows, OUTPUT_SCHEMA)

    sink.BatchSink(tmp_path)(batch([("responses", "g", 0, b"r0"), ("engine_meta", "g", -1, b"m")]), 0)
    # Spark re-executes batch 0 (it had not committed it itself): the first complete copy stands.
    sink.BatchSink(tmp_path)(batch([("responses", "g", 0, b"r0")]), 0)
    assert sink.read_batch(tmp_path, 0, "engine_meta")["payload"].to_pylist() == [b"m"]
    # Batch 1 was killed after its files were renamed into place, before its commit line was complete.
    shutil.copytree(sink.batch_folder(tmp_path, 0), sink.batch_folder(tmp_path, 1))
    with open(tmp_path / sink.COMMITTED, "a") as handle:
        handle.write("1")
    assert sink.committed_batches(tmp_path) == [0]
    assert [(b, t["payload"].to_pylist()) for b, t in sink.read_committed(tmp_path, "responses")] == [(0, [b"r0"])]
    (tmp_path / ".batch-2-dead.tmp").mkdir()  # a write killed half-way
    # A --speed hold runs with the batch's rows in place but not committed: readers see them when it ends.
    held = []
    hold = lambda: held.append((sink.batch_folder(tmp_path, 2).exists(), sink.committed_batches(tmp_path)))  # noqa: E731
    sink.BatchSink(tmp_path, before_commit=hold)(batch([("rejects", "f.jsonl", 3, b"x")]), 2)
    assert held == [(True, [0])]
    assert sink.committed_batches(tmp_path) == [0, 2]
    assert not list(tmp_path.glob(".batch-*"))


@pytest.mark.parametrize("records", [[(3, 1), (3, 2)], [(3, 2)]])
def test_progress_keeps_the_last_report_per_batch(tmp_path, records):
    for batch_id, late in records:
        sink.record_progress(tmp_path, batch_id, {"late_rows": late})
    assert sink.read_progress(tmp_path) == {3: {"batch_id": 3, "late_rows": 2}}


def test_table_payloads_round_trip_and_committed_batches_are_concatenated(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tableio.parquet import arrow_schema

    def reject(line: int) -> dict:
        return {"raw": f"row {line}", "reason": "bad", "source": "f.jsonl", "line": line}

    payload = sink.encode_table("rejects", [reject(1), reject(2)])
    assert sink.decode_table("rejects", payload).to_pylist() == [reject(1), reject(2)]
    empty = sink.committed_table(tmp_path, "rejects")
    assert empty.num_rows == 0 and empty.schema.equals(arrow_schema("rejects"))
    for batch_id, lines in [(0, [1, 2]), (1, [3]), (2, [4])]:
        folder = sink.table_folder(tmp_path, batch_id, "rejects")
        folder.mkdir(parents=True)
        envelope = {"group_id": pa.array([None], pa.string()), "rows": pa.array([len(lines)], pa.int64()),
                    "payload": [sink.encode_table("rejects", [reject(line) for line in lines])]}
        pq.write_table(pa.table(envelope), folder / "part-0.parquet")
    (tmp_path / sink.COMMITTED).write_text("0\n1\n")  # batch 2 is not committed
    assert sink.committed_table(tmp_path, "rejects").to_pylist() == [reject(1), reject(2), reject(3)]
