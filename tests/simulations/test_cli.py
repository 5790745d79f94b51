"""`coordsim replay` end to end: output tables, the summary, and user errors without tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.parquet_tables import PART_FILE, read_table
from state.tables import TABLES

from .conftest import REPO, SAMPLE

HEARTBEAT = {"ts": 1_000, "group_id": "g", "type": "HEARTBEAT", "member_id": "m", "generation_id": 1}


def replay(*args: str):
    # The Spark engine's own tests are in tests/streaming; these check the command line around it.
    return CliRunner().invoke(main, ["replay", "--engine", "local", *map(str, args)])


def assert_user_error(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_replay_writes_every_table_and_prints_a_summary(tmp_path):
    result = replay(SAMPLE, "--out", tmp_path / "out", "--until", "2026-03-02T09:04:00Z")
    assert result.exit_code == 0, result.output
    for table in TABLES:
        assert (tmp_path / "out" / table / PART_FILE).is_file()
    for line in ("groups          4", "generations     6", "rejected rows   2", f"output          {tmp_path / 'out'}"):
        assert line in result.output
    assert len(read_table(tmp_path / "out", "rejects")) == 2


def test_settings_reach_the_coordinator(tmp_path, write_jsonl):
    events = write_jsonl([HEARTBEAT])
    conf = tmp_path / "broker.yaml"
    conf.write_text("coordinator:\n  offsets.topic.num.partitions: 10\n")
    result = replay(events, "--out", tmp_path / "out", "--conf", conf, "--set", "offsets.topic.num.partitions=1")
    assert result.exit_code == 0, result.output
    assert "settings        offsets.topic.num.partitions=1" in result.output
    assert read_table(tmp_path / "out", "responses").coordinator_partition.tolist() == [0]


def test_until_accepts_epoch_ms_and_counts_later_events(tmp_path, write_jsonl):
    events = write_jsonl([HEARTBEAT, dict(HEARTBEAT, ts=5_000)])
    result = replay(events, "--out", tmp_path / "out", "--until", "1000")
    assert result.exit_code == 0, result.output
    assert "events applied  1 (1 after --until, not applied)" in result.output


@pytest.mark.parametrize("args, message", [
    (["--set", "group.initial.rebalance.delay=0"], "unknown coordinator setting 'group.initial.rebalance.delay'"),
    (["--set", "group.max.size=many"], "setting group.max.size must be an integer"),
    (["--set", "no-equals-sign"], "--set expects name=value"),
    (["--conf", "absent.yaml"], "absent.yaml: cannot read"),
    (["--until", "2026-03-02T09:04:00"], "has no time zone"),
])
def test_user_errors_exit_2_with_a_message(tmp_path, args, message):
    assert_user_error(replay(SAMPLE, "--out", tmp_path / "out", *args), message)


def test_missing_input_and_unwritable_output(tmp_path):
    assert_user_error(replay(tmp_path / "nope.jsonl", "--out", tmp_path / "out"), "nope.jsonl: no such file or folder")
    (tmp_path / "taken").write_text("")
    assert_user_error(replay(SAMPLE, "--out", tmp_path / "taken"), "taken is not a folder")


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("coordsim, version ")


def test_installed_console_script(tmp_path):
    script = Path(sys.executable).with_name("coordsim")
    done = subprocess.run([script, "replay", "simulations/samples/sample-trace.jsonl", "--engine", "local", "--out", tmp_path / "out"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "rejected rows   2" in done.stdout
    assert "generations     9" in done.stdout
    bad = subprocess.run([script, "replay", "simulations/samples/sample-trace.jsonl", "--engine", "local", "--out",
                          tmp_path / "out",
                          "--set", "group.max.size=-1"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert "group.max.size must be >= 1" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_two_runs_write_byte_identical_tables(tmp_path):
    for out in ("a", "b"):
        assert replay(SAMPLE, "--out", tmp_path / out).exit_code == 0
    for table in TABLES:
        assert (tmp_path / "a" / table / PART_FILE).read_bytes() == (tmp_path / "b" / table / PART_FILE).read_bytes()
