"""The source's files (their order, control files, captured answers), and the sink's commit log."""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pyarrow.parquet as pq
import pytest

from state.events import CapturedAnswer
from streaming import sink, source
from streaming.source import (SCHEMA, end_of_run_final, input_rows, read_control_final, source_file, wake_at,
                              write_control, write_rows)
from streaming.step import OUTPUT_SCHEMA
from tableio import captured_answers


@pytest.mark.spark
def test_spark_reads_one_file_per_micro_batch_in_the_order_of_their_places(spark, tmp_path):
    # Written last to first, and named against their order: only the places (modification times) count.
    folder = tmp_path / "source"
    folder.mkdir()
    for index in (2, 1, 0):
        write_rows(folder / f"{9 - index}.parquet", index, [("event", f"g{index}", 1_000 * index, b"x")])
    batches: list[list[str]] = []
    query = (spark.readStream.format("parquet").schema(SCHEMA).option("maxFilesPerTrigger", 1).load(str(folder))
             .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
             .foreachBatch(lambda df, _: batches.append([r.key for r in df.collect()]))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert batches == [["g0"], ["g1"], ["g2"]]


def test_events_carry_their_captured_answers_and_the_file_is_read_once(tmp_path, monkeypatch):
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
    for _ in range(2):  # two input files answered by the same captured file
        rows = list(input_rows(str(events), "events.jsonl", str(captured)))
        assert [pickle.loads(p).captured for _, _, _, p in rows] == [CapturedAnswer("c1", "NONE", "0x1", 2), None]
    assert reads == [str(captured)]


def test_control_file_round_trip(tmp_path):
    path = source_file(tmp_path, 3, "end-of-run")
    write_control(path, 3, sentinel_ts=2_000, final=1_000, end_groups=["g1", "g2"], wake_groups=["g3"])
    table = pq.read_table(path)
    times = [None if t is None else t // 1000 for t in table["event_time"].cast("int64").to_pylist()]
    rows = list(zip(table["kind"].to_pylist(), table["key"].to_pylist(), times, table["payload"].to_pylist()))
    assert rows[0] == ("sentinel", None, 2_000, b"")
    assert [(kind, key, ts, end_of_run_final(p), wake_at(p)) for kind, key, ts, p in rows[1:]] == [
        ("wake", "g3", 2_000, None, 1_000), ("end", "g1", 2_000, 1_000, None), ("end", "g2", 2_000, 1_000, None)]
    assert end_of_run_final(pickle.dumps({"a": 1})) is None
    assert read_control_final(path) == 1_000
    assert os.stat(path).st_mtime_ns == source.ORIGIN_NS + 3 * 10**9
    assert not list(tmp_path.glob(".*"))


@pytest.mark.spark
def test_only_committed_batches_are_read_and_a_re_executed_batch_keeps_its_rows(spark, tmp_path):
    def batch(rows):
        return spark.createDataFrame(rows, OUTPUT_SCHEMA)

    horizons = {0: None, 1: 5_000, 2: 6_000}.get  # batch 0 runs no group yet
    sink.BatchSink(tmp_path, horizons)(batch([("responses", "g", 0, b"r0"), ("engine_meta", "g", -1, b"m")]), 0)
    # Spark re-executes batch 0 (it had not committed it itself): the first complete copy stands.
    sink.BatchSink(tmp_path, horizons)(batch([("responses", "g", 0, b"r0")]), 0)
    assert sink.read_batch(tmp_path, 0, "engine_meta")["payload"].to_pylist() == [b"m"]
    assert sink.committed_horizon(tmp_path) is None
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
    sink.BatchSink(tmp_path, horizons, before_commit=hold)(batch([("rejects", "f.jsonl", 3, b"x")]), 2)
    assert held == [(True, [0])]
    assert sink.committed_batches(tmp_path) == [0, 2]
    assert sink.committed_horizon(tmp_path) == 6_000  # batch 1's (5,000) was never committed
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
