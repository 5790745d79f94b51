"""The end-of-run rule and the run record both engines share."""

from __future__ import annotations

from types import SimpleNamespace

from tableio.run_record import RUN_FILE, final_time, read_run_record, write_run_record


def test_a_run_ends_at_until_or_at_the_last_event_or_its_latest_pending_deadline():
    assert final_time(500, 900, [2_000]) == 500
    assert final_time(None, 900, [None, 700, 1_500]) == 1_500
    assert final_time(None, 900, [None, 700]) == 900
    assert final_time(None, None, []) is None


def test_the_record_holds_the_engine_what_ran_its_fields_and_the_common_counts(tmp_path):
    result = SimpleNamespace(events_applied=7, events_after_until=1, groups=2, final_ts=12,
                             tables=_Tables({"rejects": 0, "metrics": 1, "responses": 3}))
    write_run_record(tmp_path, "spark", result, {"offsets.topic.num.partitions": 50}, ["in.jsonl"], None, 10,
                     batches=4)
    record = read_run_record(tmp_path)
    assert list(record) == ["engine", "inputs", "captured", "until", "final_ts", "batches", "events",
                            "events_after_until", "groups", "rows", "coordinator"]
    assert (record["engine"], record["inputs"], record["until"], record["final_ts"]) == ("spark", ["in.jsonl"], 10, 12)
    # Tables in the contract's order, whatever order the engine holds them in.
    assert list(record["rows"]) == ["responses", "metrics", "rejects"]


def test_a_missing_or_unreadable_record_reads_as_none(tmp_path):
    assert read_run_record(tmp_path) is None
    (tmp_path / RUN_FILE).write_text("{not json")
    assert read_run_record(tmp_path) is None


class _Tables(dict):
    def row_count(self, name: str) -> int:
        return self[name]
