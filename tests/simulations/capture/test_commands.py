"""`coordsim capture import` end to end, and the click-free pieces behind `replay --compare-captured`."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from simulations.capture.commands import capture, captured_report
from simulations.capture.compare import write_divergences
from tableio.captured import CapturedError, read_captured
from tableio.captured_answers import attach_captured, captured_answers
from simulations.engines.local import run_local
from tableio.inputs import read_events

from .conftest import CAPTURES, MANIFEST, MOCK_CONFIG, MOCK_PIPELINED, needs_tshark


@needs_tshark
def test_import_command_writes_events_captured_responses_and_rejects(tmp_path):
    manifest = MANIFEST["cooperative-kill"]
    ports = [arg for port in manifest["ports"] for arg in ("--port", str(port))]
    out = tmp_path / "fleet" / "events.jsonl"
    outcome = CliRunner().invoke(capture, ["import", str(CAPTURES / manifest["file"]), "--out", str(out), *ports,
                                           "--pipelined", MOCK_PIPELINED])
    assert outcome.exit_code == 0, outcome.output
    assert "group requests" in outcome.output and "JoinGroup" in outcome.output
    assert "rejects" in outcome.output
    captured = read_captured(tmp_path / "fleet" / "events.captured.ndjson")
    assert captured["request_id"].is_unique and str(captured["seq"].dtype) == "Int64"
    assert (tmp_path / "fleet" / "events.rejects.ndjson").exists()

    answers = captured_answers(tmp_path / "fleet" / "events.captured.ndjson")
    result = run_local(attach_captured(read_events([out]).events, answers), MOCK_CONFIG)
    report = captured_report(result.tables, captured)
    assert len(report.divergences) == (captured["api"] != "FindCoordinator").sum()
    assert result.groups == 1
    folder = write_divergences(tmp_path / "run", report.divergences)
    assert pq.read_table(folder).num_rows == len(report.divergences)


@needs_tshark
def test_import_holds_a_pipelined_request_until_the_broker_answered_the_one_before_unless_told_otherwise(tmp_path):
    # cooperative-kill: librdkafka's mock cluster answered commits its consumers sent behind a JoinGroup still
    # pending on the same connection; a Kafka broker reads them only once it has answered the JoinGroup.
    manifest = MANIFEST["cooperative-kill"]
    ports = [arg for port in manifest["ports"] for arg in ("--port", str(port))]
    times = {}
    for pipelined in ("held", "as-captured"):
        out = tmp_path / pipelined / "events.jsonl"
        outcome = CliRunner().invoke(capture, ["import", str(CAPTURES / manifest["file"]), "--out", str(out),
                                               *ports, "--pipelined", pipelined])
        assert outcome.exit_code == 0, outcome.output
        times[pipelined] = {e.request_id: e.ts for e in read_events([out]).events if e.request_id}
    captured = read_captured(tmp_path / "held" / "events.captured.ndjson").set_index("request_id")
    moved = {request_id for request_id, ts in times["held"].items() if ts != times["as-captured"][request_id]}
    assert len(moved) == 9
    for request_id in moved:
        row = captured.loc[request_id]
        earlier = captured[(captured["connection"] == row["connection"]) & (captured["seq"] < row["seq"])]
        assert times["held"][request_id] == earlier["response_ts"].max() > times["as-captured"][request_id]
    assert CliRunner().invoke(capture, ["import", "x.pcap", "--out", str(tmp_path / "e.jsonl"),
                                        "--pipelined", "never"]).exit_code == 2


def test_the_events_file_must_be_jsonl(tmp_path):
    outcome = CliRunner().invoke(capture, ["import", "x.pcap", "--out", str(tmp_path / "events.txt")])
    assert outcome.exit_code == 2 and "must end in .jsonl" in outcome.output


@pytest.mark.parametrize("content", [None, "not json\n", '{"no": "request id"}\n',
                                     '{"ts": 0, "group_id": "g", "type": "HEARTBEAT", "request_id": "r1"}\n'])
def test_an_unreadable_captured_responses_file_is_a_user_error(tmp_path, content):
    path = tmp_path / "x.captured.ndjson"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CapturedError):
        captured_answers(path)


def test_replay_reads_the_captured_responses_before_any_engine_starts(tmp_path, monkeypatch):
    from simulations import cli

    def no_spark(*args):
        raise AssertionError("the Spark engine must not start")

    monkeypatch.setattr(cli, "_run_spark", no_spark)
    events = tmp_path / "events.jsonl"
    events.write_text("")
    outcome = CliRunner().invoke(cli.main, ["replay", str(events), "--out", str(tmp_path / "out"),
                                            "--compare-captured", str(tmp_path / "absent.captured.ndjson")])
    assert outcome.exit_code == 2, outcome.output
    assert "absent.captured.ndjson: cannot read the captured responses" in outcome.output
