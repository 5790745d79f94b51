"""`validate` on a clean run, on runs where Kafka numbers a generation again (a group deleted and created
again, a coordinator move during CompletingRebalance), on deliberately corrupted tables, and the input-row
accounting."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from click.testing import CliRunner

from tableio.captured_answers import attach_captured
from simulations.cli import main
from simulations.engines import run_local
from tableio.inputs import read_events
from tableio.parquet import PART_FILE, read_table, write_tables
from simulations.reports import commands
from tableio.coordinator_settings import load_config
from simulations.validation import validate
from simulations.group_ranges import WHOLE
from simulations.validation.accounting import InputAccounting
from simulations.validation.invariants import Invariants
from simulations.validation.raw_tables import read_range, rows_frame
from simulations.validation.suites import SUITE_TABLES, SUITES_DIR, VALUE_SETS, expectations_for
from state.runtime.captured_ids import RETRY_SUFFIX
from state.events import CapturedAnswer
from state.tables import TABLES

from ..views.runs import TINY, replay

# A consumer moved to another coordinator while its group completes a rebalance to generation 2: the group
# reloads Stable at generation 1 and its next rebalance creates generation 2 again.
MOVE = Path(__file__).with_name("data") / "move-while-completing.jsonl"
# Offsets kept 1 minute after the group went Empty: the sweep deletes the group, its members come back later.
EXPIRY_AND_BACK = """\
name: expiry-and-back
duration: 8m
seed: 1
broker:
  offsets.retention.minutes: 1
  offsets.retention.check.interval.ms: 10000
group_sets:
  - name: orders
    groups: 1
    members: 2
    topics: [{name: orders, partitions: 4, records_per_second: 10}]
timeline:
  - {at: 1m, action: scale_in, members: all}
  - {at: 4m, action: scale_out, members: 2}
"""


def _rewrite(run_dir, table: str, change) -> None:
    path = run_dir / table / PART_FILE
    pq.write_table(change(pq.read_table(path)), path)


def _set(data: pa.Table, column: str, values) -> pa.Table:
    return data.set_column(data.schema.get_field_index(column), column, values)


def replay_tables(events, out):
    tables = run_local(events, load_config()).tables
    write_tables(out, tables)
    return out


def tables_of(run_dir):
    return read_range(run_dir, WHOLE)[0]


def account_for_input(tables, events, until):
    accounting = InputAccounting(events, until)
    accounting.add(tables)
    return accounting.check()


@pytest.fixture
def corrupted(tiny_run, tmp_path):
    run = tmp_path / "corrupted"
    shutil.copytree(tiny_run, run)
    errors = pq.read_table(run / "responses" / PART_FILE)["error"].to_pylist()
    errors[3] = "NOT_A_KAFKA_ERROR"
    _rewrite(run, "responses", lambda t: _set(t, "error", pa.array(errors)))
    # A second owner for a partition of generation 1.
    _rewrite(run, "assignments", lambda t: pa.concat_tables([t, _set(t.slice(0, 1), "member_id", pa.array(["intruder"]))]))
    commit_times = pq.read_table(run / "offsets" / PART_FILE)["commit_ts"].to_pylist()
    commit_times[0] = None  # a commit (not a tombstone) without its commit time
    _rewrite(run, "offsets", lambda t: _set(_set(t, "partition", pc.cast(t["partition"], pa.int64())),
                                            "commit_ts", pa.array(commit_times, pa.int64())))
    return run


@pytest.fixture(scope="module")
def clean(tiny_run):
    return validate(tiny_run, events=[TINY])


def test_a_clean_run_passes_with_every_input_row_accounted_for(clean, tiny_run):
    assert clean.success, clean.summary()
    assert clean.summary().splitlines() == [
        f"validate {tiny_run}: PASSED",
        f"  ok   tables: {sum(c.kind == 'suite' for c in clean.checks)} of {sum(c.kind == 'suite' for c in clean.checks)} passed",
        "  ok   invariants: 13 of 13 passed",
        "  ok   input rows: 16 = 15 answered + 1 rejected",
    ]
    schema = [c for c in clean.checks if c.name.startswith("offsets.offset: expect_column_values_to_be_in_type_list")]
    assert len(schema) == 1 and schema[0].passed


def test_a_corrupted_run_fails_with_readable_messages(corrupted, tmp_path):
    result = CliRunner().invoke(commands.validate, [str(corrupted), "--data-docs", str(tmp_path / "docs")])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"validate {corrupted}: FAILED (6 of ")
    for message in [
        "responses.error: expect_column_values_to_be_in_set: 1 of 15 rows fail, e.g. NOT_A_KAFKA_ERROR",
        "offsets.partition: expect_column_values_to_be_in_type_list: column type is int64, the contract wants Int32Dtype",
        "offsets.commit_ts: expect_column_values_to_not_be_null: 1 of 6 rows where offset is not null fail",
        "assignments.group_id,out_seq: expect_compound_columns_to_be_unique: 2 of 9 rows fail",
        "one owner per partition per generation: 1 partitions with several owners, e.g. orders generation 1 "
        "orders-2: c2-static-d2dbf2a3-07ac-439e-bcf0-23e9c83a5988, intruder",
        # coordinator_load was derived from the rows before one's error was changed
        "coordinator_load counts the rows it summarizes: 2 figures whose total disagrees with the rows, e.g. "
        "responses NONE: 15 in coordinator_load, 14 in the rows",
    ]:
        assert any(message in line for line in lines), (message, result.output)
    assert "Traceback" not in result.output and "Calculating Metrics" not in result.output
    index = tmp_path / "docs" / "index.html"
    assert lines[-1] == f"  data docs: {index}" and index.is_file()


def test_a_group_deleted_and_created_again_starts_a_new_life(tmp_path):
    (tmp_path / "back.yaml").write_text(EXPIRY_AND_BACK)
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(tmp_path / "back.yaml"), "--out", str(run), "--engine", "local",
                                       "--no-report", "--no-validate"])
    assert result.exit_code == 0, result.output
    checked = validate(run, events=[run / "scenario" / "events.jsonl"])
    assert checked.success, checked.summary()
    states = read_table(run, "group_states")
    assert list(states["cause"][states["from_state"].isna()]) == ["group_created", "group_created"]
    assert list(read_table(run, "generations")["generation_id"]) == [1, 2, 1]
    assignments = read_table(run, "assignments")
    assert assignments.groupby("partition")["member_id"].nunique().eq(2).all()  # generation 1 twice, new owners


def test_a_move_during_completing_rebalance_numbers_the_lost_generation_again(tmp_path):
    run = replay(MOVE, tmp_path / "run")
    result = validate(run, events=[MOVE])
    assert result.success, result.summary()
    states = read_table(run, "group_states")
    moves = states[states["cause"].isin(["coordinator_unload", "coordinator_load"])]
    assert [tuple(row) for row in moves[["from_state", "to_state", "generation_id"]].itertuples(index=False)] == [
        ("CompletingRebalance", "Dead", 2), (None, "Stable", 1)]
    assert list(read_table(run, "generations")["generation_id"]) == [1, 2, 2, 3]
    tables, _ = read_range(run, WHOLE)
    tables["group_states"].at[moves.index[1], "generation_id"] = 2
    assert _invariant_failures(tables)["generations only grow within a life of a group"] == (
        "3 generations out of order in their life, e.g. g loaded at generation 2, its last persisted generation is 1")


@pytest.mark.parametrize("table, column, row, value, check, detail", [
    ("generations", "generation_id", 2, 1, "generations only grow within a life of a group",  # 1, 2, 3 -> 1, 2, 1
     "1 generations out of order in their life, e.g. orders generation 1 after 2"),
    ("responses", "assignment", 6, [{"topic": "orders", "partitions": [0]}],
     "Stable groups hold their stored assignment",
     "1 Stable states or SyncGroup answers without their stored assignment, e.g. orders SyncGroup of "
     "c2-static-d2dbf2a3-07ac-439e-bcf0-23e9c83a5988 at 1772442006210 got orders-0, generation 1 stored "
     "orders-2, orders-3"),
    ("group_metadata", "generation_id", 2, 1, "Stable groups hold their stored assignment",
     "1 Stable states or SyncGroup answers without their stored assignment, e.g. orders Stable at generation 2 "
     "at 1772442008200 with generation 1 stored"),
    ("offsets", "generation_id", 3, -1,
     "accepted commits only from the current generation or standalone to an Empty group",
     "1 commits from another generation, member epoch or state, e.g. orders orders-0 offset 100 with generation -1 while the "
     "group was Stable at generation 1"),
    ("group_states", "to_state", 0, "PreparingRebalance", "state transitions chain and are legal",
     "1 bad transitions, e.g. exporter at 1772442001000: came into existence PreparingRebalance "
     "(group_created)"),
    ("members", "member_count", 2, 2, "member counts agree with the members table",
     "1 member rows or state rows that disagree with the members table, e.g. orders members row at "
     "1772442008000 counts 2 members, the members table 1"),
    ("group_states", "member_count", 5, 2, "member counts agree with the members table",
     "1 member rows or state rows that disagree with the members table, e.g. orders group_states row at "
     "1772442008000 counts 2 members, the members table 1"),
])
def test_an_invariant_fails_on_rows_kafka_cannot_write(tiny_run, table, column, row, value, check, detail):
    tables, _ = read_range(tiny_run, WHOLE)
    tables[table].at[row, column] = value
    assert _invariant_failures(tables)[check] == detail


def _invariant_failures(tables) -> dict[str, str]:
    invariants = Invariants()
    invariants.add(tables)
    return {c.name: c.detail for c in invariants.checks() if not c.passed}


def test_the_lag_status_suite_checks_statuses_and_windows(lagging_run, tmp_path):
    assert validate(lagging_run).success
    run = tmp_path / "lagging"
    shutil.copytree(lagging_run, run)
    _rewrite(run, "lag_status", lambda t: _set(_set(t, "status", pa.array(["LATE", "OK"])), "window_commits",
                                               pa.array([11, 10], pa.int32())))
    failed = {c.name: c.detail for c in validate(run).checks if not c.passed}
    assert failed.keys() == {"lag_status.status: expect_column_values_to_be_in_set",
                             "lag_status.window_size,window_commits: expect_column_pair_values_a_to_be_greater_than_b",
                             "a group's lag status is its partitions'"}
    assert failed["a group's lag status is its partitions'"] == "cannot check: KeyError: 'LATE'"


def test_accounting_finds_rows_the_run_never_saw(tiny_run, write_jsonl):
    tables, _ = read_range(tiny_run, WHOLE)
    extra = write_jsonl([{"ts": 1772442009500, "group_id": "orders", "type": "HEARTBEAT", "member_id": "m",
                          "generation_id": 2}, "not json"])
    check = account_for_input(tables, [TINY, extra], until=None)
    assert not check.passed
    assert "1 requests neither answered nor rejected, e.g. Heartbeat of orders at 1772442009500 (seq 1)" in check.detail
    assert "1 invalid input rows missing from rejects, e.g. line 2" in check.detail


def test_accounting_counts_events_after_until_and_parked_requests(tiny_run):
    tables, _ = read_range(tiny_run, WHOLE)
    until = 1772442009000  # as if replayed with --until: the OffsetFetch at +700 s was left out
    answered = tables["responses"]
    tables["responses"] = answered[answered["request_ts"] <= until]
    assert account_for_input(tables, [TINY], until).detail == "16 = 14 answered + 1 after --until + 1 rejected"
    tables["responses"] = answered
    states = tables["group_states"]
    tables["group_states"] = states[states["ts"] <= 1772442000000]  # as if the run ended preparing
    joins = tables["responses"]["api"] == "JoinGroup"
    first_join = tables["responses"][joins].index[0]
    tables["responses"] = tables["responses"].drop(first_join)
    assert "1 parked at the end" in account_for_input(tables, [TINY], until=None).detail


def test_a_late_reject_accounts_for_its_event(tiny_run):
    tables, _ = read_range(tiny_run, WHOLE)
    heartbeat = tables["responses"][tables["responses"]["api"] == "Heartbeat"].iloc[0]
    tables["responses"] = tables["responses"].drop(heartbeat.name)
    # A coordinator's reject holds the event as JSON, naming its own source and line.
    late = {"ts": int(heartbeat.request_ts), "group_id": "orders", "type": "HEARTBEAT",
            "seq": int(heartbeat.request_seq), "source": "x", "line": 9}
    tables["rejects"].loc[len(tables["rejects"])] = [json.dumps(late), "arrived late", "x", 9]
    check = account_for_input(tables, [TINY], until=None)
    assert check.passed and "1 rejected by the coordinator" in check.detail


def test_a_directive_the_coordinator_rejects_is_counted_once_as_the_replay_counts_it(tmp_path, write_jsonl):
    start = {"ts": 1000, "group_id": "g", "type": "CLIENT_START", "client_id": "c1", "topics": ["t"]}
    events = write_jsonl([
        {"ts": 1000, "group_id": "g", "type": "TOPIC_METADATA", "topics": [{"topic": "t", "partitions": 2}]},
        start, dict(start, ts=2000),  # already running: the coordinator rejects it
        {"ts": 30000, "group_id": "g", "type": "CLIENT_STOP", "client_id": "c1"},
        "not json", {"ts": 3000, "type": "HEARTBEAT"}])
    result = CliRunner().invoke(main, ["replay", "--engine", "local", str(events), "--out", str(tmp_path / "run")])
    assert "events applied  3\n" in result.output and "rejected rows   3," in result.output
    tables, _ = read_range(tmp_path / "run", WHOLE)
    assert account_for_input(tables, [events], until=None).detail.startswith(
        "6 = 3 directives and faults applied + 1 rejected by the coordinator + 2 rejected;")


def test_the_member_id_round_a_captured_replay_adds_is_accounted_for(tmp_path, write_jsonl):
    join = {"ts": 1000, "group_id": "g", "type": "JOIN_GROUP", "request_id": "j1", "client_id": "c",
            "member_id": "", "protocol_type": "consumer", "session_timeout_ms": 10000,
            "rebalance_timeout_ms": 10000, "protocols": [{"name": "range", "topics": ["t"]}]}
    events = write_jsonl([join])
    # The captured broker answered at once; the simulator asks for MEMBER_ID_REQUIRED, then retries itself.
    skipped = {"j1": CapturedAnswer(connection="c1", error="NONE", member_id="0x1", generation_id=2)}
    run = replay_tables(attach_captured(read_events([events]).events, skipped), tmp_path / "run")
    responses = tables_of(run)["responses"]
    assert responses["request_id"].tolist() == ["j1", "j1" + RETRY_SUFFIX]
    check = account_for_input(tables_of(run), [events], until=None)
    assert check.passed, check.detail
    assert check.detail == ("1 = 1 answered; 1 JoinGroup retries the replay sent for MEMBER_ID_REQUIRED rounds the "
                            "capture skipped")
    # A retry whose JoinGroup was not asked for the round answers nothing in the input.
    tables = tables_of(run)
    tables["responses"].loc[tables["responses"]["request_id"] == "j1", "error"] = "NONE"
    check = account_for_input(tables, [events], until=None)
    assert not check.passed and "1 responses to no input or synthetic request, e.g. JoinGroup of g" in check.detail


def test_suites_name_contract_tables_and_known_value_sets():
    assert {p.stem for p in SUITES_DIR.glob("*.yaml")} <= set(SUITE_TABLES)
    for table in SUITE_TABLES:
        for kind, kwargs in expectations_for(table, spec=None if table in TABLES else []):
            assert kind.startswith("expect_")
            assert not any(isinstance(v, str) and v.startswith("$") for v in kwargs.values())
    assert "REBALANCE_IN_PROGRESS" in VALUE_SETS["kafka_errors"]


def test_validation_runs_under_python_c():
    # pyspark.sql.connect, which great-expectations imports, exits 0 under a main module without a file.
    code = "from simulations.validation.suites import Suites; Suites(); print('reached')"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "reached"), done.stderr[-2000:]


def test_validation_logs_nothing_to_a_console_with_a_root_handler():
    # A Spark run's process has a root handler by the time it validates: great-expectations' INFO lines
    # (a logger it pins at INFO) reached the quick start's output.
    code = ("import logging; logging.basicConfig(level=logging.WARNING)\n"
            "from simulations.validation.suites import Suites; Suites(); print('reached')")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[3], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "reached"), done.stderr[-2000:]
    assert "great_expectations" not in done.stderr, done.stderr[-2000:]


def test_a_refused_request_and_another_clients_answered_one_of_the_same_time_and_seq_are_told_apart(write_jsonl):
    # Two clients of a group send their heartbeat number 41 in the same millisecond (their counters run alike):
    # one still goes to the broker that is down (refused: no requests row), the other to the new coordinator,
    # which answers it, a quiet run of 98.
    def response(client, error, repeat_count, interval):
        return {"group_id": "g", "request_ts": 1_000, "response_ts": 1_000, "api": "Heartbeat", "api_version": 4,
                "request_id": f"{client}#0/heartbeat@999", "request_seq": 41, "client_id": client, "error": error,
                "coordinator_partition": 0, "repeat_count": repeat_count, "repeat_interval_ms": interval,
                "out_seq": 1 if error == "NETWORK_EXCEPTION" else 3}
    tables = {"responses": rows_frame("responses", [response("c0", "NETWORK_EXCEPTION", 1, None),
                                                    response("c4", "NONE", 98, 3_000)]),
              "requests": rows_frame("requests", [{"group_id": "g", "ts": 1_000, "seq": 41, "type": "HEARTBEAT",
                                                   "client_id": "c4", "request_id": "c4#0/heartbeat@999",
                                                   "raw": "{}", "repeat_count": 98, "repeat_interval_ms": 3_000,
                                                   "out_seq": 2}]),
              "rejects": rows_frame("rejects", [])}
    check = account_for_input(tables, [write_jsonl([])], until=None)
    assert check.passed, check.detail
    assert check.detail == "0 input rows; 98 of 98 synthetic requests answered; 1 sent to a broker that was down"
