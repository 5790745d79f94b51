"""`coordsim replay` end to end: output tables, the summary, and user errors without tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simulations.cli import main
from tableio.parquet import PART_FILE, read_table
from state.tables import TABLES

from .conftest import REPO, SAMPLE
from .views.runs import tiny_run  # noqa: F401 (fixture)

SCRIPT = Path(sys.executable).with_name("coordsim")

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


@pytest.mark.parametrize("args, message", [
    (["--engine", "local", "--spark-set", "streaming.state.buckets=4"],
     "--spark-set: only the spark engine takes Spark settings (--engine local was given)"),
    (["--engine", "local", "--profile", "cluster", "--master", "spark://h:7077"],
     "--profile, --master: only the spark engine takes Spark settings"),
    (["--engine", "spark", "--spark-set", "buckets"], "--spark-set expects name=value"),
])
def test_spark_settings_are_checked_before_any_engine_starts(tmp_path, args, message):
    for command in (["replay", str(SAMPLE)], ["run", "crash"]):
        result = CliRunner().invoke(main, [*command, "--out", str(tmp_path / "out"), *args])
        assert_user_error(result, message)


@pytest.mark.parametrize("args, message", [
    (["--engine", "local", "--slice", "1m"], "--slice, --speed: only the spark engine runs in slices"),
    (["--engine", "local", "--speed", "60x"], "--slice, --speed: only the spark engine runs in slices"),
    (["--slice", "0s"], "--slice: must be longer than 0, got '0s'"),
    (["--slice", "-1m"], "--slice: must be a duration such as 500ms"),
    (["--slice", "soon"], "--slice: must be a duration such as 500ms"),
    (["--speed", "0x"], "--speed: must be more than 0x, got '0x'"),
    (["--speed", "-2x"], "--speed: must be more than 0x"),
    (["--speed", "fast"], "--speed: must be max, or a multiple of real time such as 60x, got 'fast'"),
])
def test_slices_are_checked_before_any_engine_starts(tmp_path, args, message):
    result = CliRunner().invoke(main, ["run", "crash", "--out", str(tmp_path / "out"), *args])
    assert_user_error(result, message)
    assert not (tmp_path / "out").exists()


def test_missing_input_and_unwritable_output(tmp_path):
    assert_user_error(replay(tmp_path / "nope.jsonl", "--out", tmp_path / "out"), "nope.jsonl: no such file or folder")
    assert not (tmp_path / "out").exists()  # refused before anything is written
    on_spark = CliRunner().invoke(main, ["replay", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "out")])
    assert_user_error(on_spark, "nope.jsonl: no such file or folder")
    assert not (tmp_path / "out").exists()
    assert_user_error(CliRunner().invoke(main, ["run", "nope", "--engine", "local", "--out", str(tmp_path / "out")]),
                      "nope: no such file, and no shipped scenario of that name")
    assert not (tmp_path / "out").exists()
    (tmp_path / "taken").write_text("")
    assert_user_error(replay(SAMPLE, "--out", tmp_path / "taken"), "taken is not a folder")


@pytest.mark.parametrize("args, message", [
    (["describe", "{run}", "--group", "orders", "--at", "yesterday"], "Invalid value for '--at'"),
    (["replay", SAMPLE, "--out", "{out}", "--engine", "sprak"], "Invalid value for '--engine': 'sprak' is not one of"),
    (["dashboard", "{run}", "--port", "99999"], "Invalid value for '--port': 99999 is not in the range 0<=x<=65535"),
    (["capacity", "{run}", "--broker", "three"], "Invalid value for '--broker': 'three' is not a valid integer"),
    (["lag", "{run}", "--intervals", "0"], "Invalid value for '--intervals': 0 is not in the range x>=1"),
    (["report", "{file}"], "Invalid value for 'RUN_DIR': Directory"),
])
def test_a_bad_option_value_is_one_line_without_the_usage(args, message, tiny_run, tmp_path):
    (tmp_path / "file").write_text("")
    paths = {"run": tiny_run, "out": tmp_path / "out", "file": tmp_path / "file"}
    result = CliRunner().invoke(main, [str(a).format(**paths) for a in args])
    assert_user_error(result, message)
    assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("coordsim, version ")


def test_installed_console_script(tmp_path):
    done = subprocess.run([SCRIPT, "replay", "simulations/samples/sample-trace.jsonl", "--engine", "local", "--out", tmp_path / "out"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "rejected rows   2" in done.stdout
    assert "generations     9" in done.stdout
    bad = subprocess.run([SCRIPT, "replay", "simulations/samples/sample-trace.jsonl", "--engine", "local", "--out",
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


def test_rejected_rows_are_shown_by_reason_with_the_first_ones(tmp_path, write_jsonl):
    events = write_jsonl([HEARTBEAT, "not json", {"ts": 1, "type": "HEARTBEAT"}, {"ts": 2, "type": "HEARTBEAT"}])
    lines = replay(events, "--out", tmp_path / "out").output.splitlines()
    at = lines.index("rejected rows   3, all in the rejects table; by reason:")
    assert lines[at + 1:at + 6] == [
        "                     2  missing required field 'group_id'",
        "                     1  line is not valid JSON: Expecting value at column 1",
        f"first rejected  {events}:2  line is not valid JSON: Expecting value at column 1",
        f"                {events}:3  missing required field 'group_id'",
        f"                {events}:4  missing required field 'group_id'",
    ]


@pytest.mark.parametrize("args", [
    ["replay", "--engine", "local", SAMPLE, "--out", "{file}/run"],
    ["replay", SAMPLE, "--out", "{file}/run"],  # refused before Spark starts
    ["run", "crash", "--engine", "local", "--out", "{file}/run"],
    ["generate", "crash", "--out", "{file}/events.jsonl"],
    ["capture", "import", SAMPLE, "--out", "{file}/events.jsonl"],
    ["report", "{run}", "--out", "{file}/report.html"],
    ["validate", "{run}", "--data-docs", "{file}/docs"],
])
def test_an_out_path_under_a_file_names_the_file_in_the_way(args, tiny_run, tmp_path):
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(main, [str(a).format(file=tmp_path / "file", run=tiny_run) for a in args])
    assert_user_error(result, f"{tmp_path / 'file'} is not a folder")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [
    ["offsets", "{run}"],
    ["describe", "{run}", "--group", "exporter"],
    ["lag", "{run}"],
    ["replay", "--engine", "local", SAMPLE, "--out", "{out}"],
])
def test_a_reader_that_goes_away_ends_the_command_quietly_as_sigpipe_would(args, tiny_run, tmp_path):
    read, write = os.pipe()
    os.close(read)  # as `| head` once it has its lines: every write fails from then on
    try:
        done = subprocess.run([SCRIPT, *(str(a).format(run=tiny_run, out=tmp_path / "out") for a in args)],
                              stdout=write, stderr=subprocess.PIPE, cwd=REPO, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141
    assert not any(word in done.stderr.decode() for word in ("Error", "Traceback", "Exception")), done.stderr


def test_a_rerun_removes_what_the_earlier_run_wrote_beside_its_tables(tmp_path):
    out = tmp_path / "out"
    for earlier in ("report.html", "divergences/part-00000.parquet", "scenario/events.jsonl"):
        (out / earlier).parent.mkdir(parents=True, exist_ok=True)
        (out / earlier).write_text("an earlier run's")
    assert replay(SAMPLE, "--out", out).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*TABLES, "_run.json"])
    # A Spark run's checkpoint names the events under scenario/: they stay, or it could not be resumed.
    (out / "_checkpoints").mkdir()
    (out / "scenario").mkdir()
    assert replay(SAMPLE, "--out", out).exit_code == 0
    assert (out / "scenario").is_dir()
