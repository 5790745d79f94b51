"""Import -> replay -> report on each committed capture (local engine; the Spark engine's tables and report are
the same, tests/streaming/test_captures.py): the coordinator's invariants hold on
the replayed run, and the report shows the differences between Kafka's coordinator and librdkafka's mock
that any recording of these scenarios has (the mock numbers generations from 2, skips the MEMBER_ID_REQUIRED
round, rebalances when a static member restarts, expires sessions late)."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import pyarrow.parquet as pq
from rich.console import Console

from simulations.capture.compare import KINDS, print_divergence_summary, write_divergences
from tableio.captured_answers import attach_captured
from tableio.inputs import read_events
from tableio.parquet import write_tables
from state.runtime.captured_ids import RETRY_SUFFIX
from state.events import CapturedAnswer
from state.tables import GROUP_TABLES

from ..conftest import SAMPLE
from .conftest import needs_tshark

pytestmark = needs_tshark


def group_rows(result):
    """Every row of every table of each group, in the order the coordinator produced them."""
    rows = defaultdict(list)
    for table in GROUP_TABLES:
        for row in result.tables[table]:
            rows[row["group_id"]].append((row["out_seq"], table, row))
    return {group: [(table, row) for _, table, row in sorted(found, key=lambda x: x[0])]
            for group, found in rows.items()}


def test_no_partition_is_owned_twice_in_a_generation(run):
    owners = Counter((r["group_id"], r["generation_id"], r["topic"], r["partition"])
                     for r in run.result.tables["assignments"])
    assert owners and max(owners.values()) == 1
    captured = Counter()
    for c in run.imported.captured:
        if c["api"] == "SyncGroup" and c["error"] == "NONE":
            for entry in c["assignment"]:
                captured.update((c["generation_id"], entry["topic"], p) for p in entry["partitions"])
    assert captured and max(captured.values()) == 1


def test_accepted_commits_carry_the_current_generation_and_a_known_member(run):
    # Kafka checks the generation and that the member is in the group (a member that joined during a
    # rebalance may commit before the next generation forms), so that is the invariant.
    for group, rows in group_rows(run.result).items():
        generation, handed_out = 0, set()
        for table, row in rows:
            if table == "group_states":
                generation = row["generation_id"]
            elif table == "responses" and row["api"] == "JoinGroup" and row["member_id"]:
                handed_out.add(row["member_id"])
            elif table == "offsets" and row["offset"] is not None and row["generation_id"] >= 0:
                assert row["generation_id"] == generation
                assert row["member_id"] in handed_out
            elif table == "responses" and row["api"] == "OffsetCommit" and row["error"] == "NONE":
                assert row["generation_id"] in (generation, -1)
    fenced = {r["error"] for r in run.result.tables["responses"] if r["api"] == "OffsetCommit"} - {"NONE"}
    assert fenced <= {"ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID"}


def test_final_offsets_agree_where_both_accepted_the_last_commit(run):
    same = run.offsets[run.offsets["same_last_commit"]]
    assert len(same) >= 1
    assert (same["captured_offset"] == same["simulated_offset"]).all()


def test_the_report_has_one_row_per_replayed_request(run):
    report = run.divergences
    requests = [c for c in run.imported.captured if c["api"] != "FindCoordinator"]
    assert list(report["request_id"]) == [c["request_id"] for c in requests]
    assert set(report["divergence"]) <= {kind for kind, _ in KINDS}
    assert (report["divergence"] == "not_captured").sum() == run.imported.unanswered
    assert "not_replayed" not in set(report["divergence"])  # the run drains: every request is answered


def test_mock_generations_start_at_2(run):
    joins = run.divergences[(run.divergences["api"] == "JoinGroup") & (run.divergences["captured_error"] == "NONE")
                            & (run.divergences["simulated_error"] == "NONE")]
    first = joins.iloc[0]
    assert (first["captured_generation"], first["simulated_generation"]) == (2, 1)


def test_the_mock_skips_the_member_id_required_round(run):
    new_dynamic = [e for e in run.events if e.type == "JOIN_GROUP" and e.member_id == "" and e.group_instance_id is None]
    retries = [r for r in run.result.tables["responses"] if r["request_id"].endswith(RETRY_SUFFIX)]
    assert len(retries) == len(new_dynamic)
    assert all(r["error"] in ("NONE", "UNKNOWN_MEMBER_ID") for r in retries)
    report = run.divergences.set_index("request_id")
    assert all("MEMBER_ID_REQUIRED round" in report.loc[e.request_id, "details"] for e in new_dynamic)


def test_captured_ids_are_translated_into_the_simulators(run):
    for r in run.result.tables["responses"]:
        if r["api"] == "JoinGroup" and r["error"] == "NONE":
            assert r["member_id"].startswith(r["client_id"] + "-") or r["group_instance_id"]
    broker_ids = {c["member_id"] for c in run.imported.captured if c["member_id"]}
    simulated_ids = {r["member_id"] for r in run.result.tables["responses"]
                     if r["api"] in ("SyncGroup", "Heartbeat", "OffsetCommit") and r["error"] == "NONE"}
    assert simulated_ids and not simulated_ids & broker_ids


def test_range_close_rebalances_on_the_graceful_leave(replayed):
    run = replayed["range-close"]
    causes = Counter(g["cause"] for g in run.result.tables["generations"])
    assert causes["member_leave"] >= 1 and causes["member_join"] >= 2
    left = [r for r in run.result.tables["responses"] if r["api"] == "LeaveGroup"]
    assert left and all(r["error"] == "NONE" for r in left)


def test_cooperative_kill_expires_the_killed_member_and_the_mock_is_late(replayed):
    run = replayed["cooperative-kill"]
    expiry = [g for g in run.result.tables["generations"] if g["cause"] == "session_timeout"]
    assert len(expiry) == 1
    kill_at = next(s["at"] for s in run.manifest["timeline"] if s["action"] == "kill")
    # the sim expires the member one session timeout after its last heartbeat; the mock takes longer, so
    # the others' heartbeats are told REBALANCE_IN_PROGRESS only in the simulation
    late = run.divergences[(run.divergences["api"] == "Heartbeat") & (run.divergences["captured_error"] == "NONE")
                           & (run.divergences["simulated_error"] == "REBALANCE_IN_PROGRESS")]
    assert len(late) >= 1 and late["request_ts"].min() >= expiry[0]["rebalance_start_ts"]
    assert expiry[0]["rebalance_start_ts"] - run.events[0].ts >= (kill_at - 1) * 1000
    assert {r["cause"] for r in run.result.tables["generations"]} >= {"member_join"}


def test_static_restart_replaces_the_member_without_a_rebalance_unlike_the_mock(replayed):
    run = replayed["static-restart"]
    restart = [e for e in run.events if e.type == "JOIN_GROUP" and e.group_instance_id == "instance-2"][1]
    row = run.divergences.set_index("request_id").loc[restart.request_id]
    assert row["simulated_error"] == "NONE" and row["simulated_generation"] == 1  # Kafka: same generation
    assert row["captured_generation"] == 3  # the mock rebalanced
    assert row["divergence"] == "generation"
    assert not any(s["cause"] == "member_join" and s["ts"] == restart.ts for s in run.result.tables["group_states"])


def test_divergences_table_and_summary(run, tmp_path):
    folder = write_divergences(tmp_path, run.divergences)
    back = pq.read_table(folder).to_pandas()
    assert len(back) == len(run.divergences)
    console = Console(record=True, width=200)
    print_divergence_summary(console, run.divergences, run.offsets)
    text = console.export_text()
    assert "by kind" in text and "generation shift" in text and "final offsets" in text
    write_tables(tmp_path, run.result.tables)  # the replay's tables fit the output contract


def test_answers_are_attached_by_request_id_and_other_events_pass_unchanged():
    events = read_events([SAMPLE]).events
    answer = CapturedAnswer(connection="c1", error="NONE", member_id="0x1", generation_id=2)
    attached = list(attach_captured(events, {events[3].request_id: answer, "not-in-the-events": answer}))
    assert [e.captured for e in attached] == [answer if i == 3 else None for i in range(len(events))]
    assert [dataclasses.replace(e, captured=None) for e in attached] == events
