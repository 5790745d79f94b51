"""The local engine on the bundled sample trace: tables, rejects, generations, the drain and --until."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from tableio import parquet as parquet_tables
from simulations.engines import local, run_local, run_local_to
from tableio.inputs import read_events
from tableio.parquet import PART_FILE, OutputError, write_tables
from simulations.samples import make_sample_trace
from state.config import CoordinatorConfig
from state.tables import TABLES

from .conftest import SAMPLE

CAPTURE_END = make_sample_trace.END  # the last moment the sample's clients send anything


@pytest.fixture(scope="module")
def sample():
    return read_events([SAMPLE])


@pytest.fixture(scope="module")
def drained(sample):
    return run_local(sample.events, CoordinatorConfig())


def generations_per_group(result) -> Counter:
    return Counter(row["group_id"] for row in result.tables["generations"])


def test_sample_has_exactly_the_two_deliberately_bad_rows(sample):
    assert [r["line"] for r in sample.rejects] == [122, 403]
    assert sample.rejects[0]["reason"].startswith("line is not valid JSON")
    assert sample.rejects[1]["reason"].startswith("unknown type 'SHARE_GROUP_HEARTBEAT'")


def test_sample_fills_every_group_table(drained, sample):
    assert drained.groups == 4
    assert drained.events_applied == len(sample.events)
    assert drained.tables["rejects"] == []  # the engine itself rejects nothing: no event arrives late
    for table in TABLES:
        # requests holds synthetic clients' requests only; the sample sets no production rates and has no
        # KIP-848 consumer groups
        if table not in ("rejects", "requests", "log_end_offsets", "consumer_group_records"):
            assert drained.tables[table], table
    assert len(drained.tables["responses"]) == len(sample.events)  # every request answered once
    # The clients that wrote the trace only ever saw these answers; anything else means the replay diverged.
    assert {r["error"] for r in drained.tables["responses"]} == {"NONE", "MEMBER_ID_REQUIRED", "REBALANCE_IN_PROGRESS"}


def test_sample_generations_up_to_the_capture_end(sample):
    result = run_local(sample.events, CoordinatorConfig(), until=CAPTURE_END)
    assert result.events_after_until == 0
    assert result.final_ts == CAPTURE_END
    # orders: initial + after the graceful leave; inventory: the static restart does not rebalance;
    # payments: initial, after the crash, after the crashed client came back.
    assert generations_per_group(result) == {"orders-processing": 2, "inventory-sync": 1, "payments-audit": 3}
    causes = [(g["group_id"], g["cause"]) for g in result.tables["generations"]]
    assert ("orders-processing", "member_leave") in causes
    assert ("payments-audit", "session_timeout") in causes
    assert all(g["stable_ts"] is not None for g in result.tables["generations"])


def test_drain_fires_the_timers_left_at_the_end(drained):
    # Without --until the run goes on to the latest pending deadline: the sessions of the clients that went
    # quiet expire and every consumer group ends Empty in one more generation.
    assert generations_per_group(drained) == {"orders-processing": 3, "inventory-sync": 2, "payments-audit": 4}
    last_states = {}
    for row in sorted(drained.tables["group_states"], key=lambda r: (r["group_id"], r["out_seq"])):
        last_states[row["group_id"]] = row["to_state"]
    assert last_states == {"orders-processing": "Empty", "inventory-sync": "Empty", "payments-audit": "Empty",
                           "billing-exporter": "Empty"}
    last_event = max(r["request_ts"] for r in drained.tables["responses"])
    assert drained.final_ts > last_event


def test_until_cuts_the_input_without_rejecting(sample):
    until = make_sample_trace.START + 60_000
    result = run_local(sample.events, CoordinatorConfig(), until=until)
    later = sum(1 for e in sample.events if e.ts > until)
    assert later > 0
    assert (result.events_applied, result.events_after_until) == (len(sample.events) - later, later)
    assert result.tables["rejects"] == []
    assert max(r["response_ts"] for r in result.tables["responses"]) <= until
    assert max(r["ts"] for r in result.tables["group_states"]) <= until


def test_input_order_does_not_matter(sample):
    shuffled = sample.events[:]
    random.Random(3).shuffle(shuffled)
    assert run_local(shuffled, CoordinatorConfig()).tables == run_local(sample.events, CoordinatorConfig()).tables


def test_no_events():
    result = run_local([], CoordinatorConfig())
    assert (result.groups, result.final_ts) == (0, None)
    assert all(rows == [] for rows in result.tables.values())


@pytest.mark.parametrize("until, stream_rows", [(None, 50_000), (None, 7), (CAPTURE_END, 1)])
def test_a_run_writing_its_tables_as_groups_finish_writes_the_same_files(sample, tmp_path, monkeypatch, until,
                                                                          stream_rows):
    monkeypatch.setattr(local, "STREAM_ROWS", stream_rows)
    monkeypatch.setattr(parquet_tables, "ROW_GROUP_ROWS", 100)
    in_memory = run_local(sample.events, CoordinatorConfig(), until)
    write_tables(tmp_path / "memory", dict(in_memory.tables, rejects=sample.rejects + in_memory.tables["rejects"]))
    streamed = run_local_to(tmp_path / "streamed", sample.events, CoordinatorConfig(), until, sample.rejects)
    assert (streamed.groups, streamed.events_applied, streamed.final_ts) == \
           (in_memory.groups, in_memory.events_applied, in_memory.final_ts)
    assert in_memory.tables["lag_status"] and len(streamed.tables["rejects"]) == 2
    for table in TABLES:
        assert streamed.tables.row_count(table) == len(streamed.tables[table])
        assert (tmp_path / "streamed" / table / PART_FILE).read_bytes() == \
               (tmp_path / "memory" / table / PART_FILE).read_bytes(), table


def test_a_run_writing_its_tables_records_what_ran(sample, tmp_path):
    result = run_local_to(tmp_path / "out", sample.events, CoordinatorConfig(), CAPTURE_END, sample.rejects,
                          inputs=["sample-trace.jsonl"])
    record = json.loads((tmp_path / "out" / "_run.json").read_text())
    assert record["engine"] == "local" and record["inputs"] == ["sample-trace.jsonl"]
    assert (record["groups"], record["events"], record["events_after_until"]) == \
           (result.groups, result.events_applied, result.events_after_until)
    assert record["rows"] == {name: result.tables.row_count(name) for name in result.tables}
    # Where the run ended, as a Spark run records it: the views end the run there, not at its last row.
    assert (record["until"], record["final_ts"]) == (CAPTURE_END, result.final_ts) == (CAPTURE_END, CAPTURE_END)


def test_a_run_into_a_file_path_is_a_clear_error(sample, tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(OutputError, match="taken is not a folder"):
        run_local_to(tmp_path / "taken" / "out", sample.events, CoordinatorConfig())
