"""`coordsim capture import` end to end, and the click-free pieces behind `replay --compare-captured`."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from simulations.capture.commands import capture, replay_with_capture
from simulations.capture.compare import write_divergences
from simulations.capture.captured import CapturedError, read_captured
from simulations.inputs import read_events

from .conftest import CAPTURES, MANIFEST, MOCK_CONFIG, needs_tshark


@needs_tshark
def test_import_command_writes_events_captured_responses_and_rejects(tmp_path):
    manifest = MANIFEST["cooperative-kill"]
    ports = [arg for port in manifest["ports"] for arg in ("--port", str(port))]
    out = tmp_path / "fleet" / "events.jsonl"
    outcome = CliRunner().invoke(capture, ["import", str(CAPTURES / manifest["file"]), "--out", str(out), *ports])
    assert outcome.exit_code == 0, outcome.output
    assert "group requests" in outcome.output and "JoinGroup" in outcome.output
    assert "rejects" in outcome.output
    captured = read_captured(tmp_path / "fleet" / "events.captured.ndjson")
    assert captured["request_id"].is_unique and str(captured["seq"].dtype) == "Int64"
    assert (tmp_path / "fleet" / "events.rejects.ndjson").exists()

    run = replay_with_capture(read_events([out]).events, tmp_path / "fleet" / "events.captured.ndjson", MOCK_CONFIG)
    assert len(run.divergences) == (captured["api"] != "FindCoordinator").sum()
    assert run.result.groups == 1
    folder = write_divergences(tmp_path / "run", run.divergences)
    assert pq.read_table(folder).num_rows == len(run.divergences)


def test_the_events_file_must_be_jsonl(tmp_path):
    outcome = CliRunner().invoke(capture, ["import", "x.pcap", "--out", str(tmp_path / "events.txt")])
    assert outcome.exit_code == 2 and "must end in .jsonl" in outcome.output


@pytest.mark.parametrize("content", [None, "not json\n", '{"no": "request id"}\n'])
def test_an_unreadable_captured_responses_file_is_a_user_error(tmp_path, content):
    path = tmp_path / "x.captured.ndjson"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CapturedError):
        replay_with_capture([], path, MOCK_CONFIG)
