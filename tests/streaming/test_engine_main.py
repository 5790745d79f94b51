"""`python -m streaming.engine`: user mistakes end with a message and exit status 2, before Spark starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streaming.engine import main
from tests.streaming.conftest import REPO
from tests.streaming.test_restart import environment

SAMPLE = str(Path(__file__).resolve().parents[2] / "simulations" / "samples" / "sample-trace.jsonl")


@pytest.mark.parametrize("args, message", [
    (["/nonexistent", "--out", "{out}"], "/nonexistent: no such file or folder"),
    ([SAMPLE, "--out", "{out}", "--until", "yesterday"],
     "field '--until' must be epoch milliseconds or ISO-8601 with a zone, got 'yesterday'"),
    ([SAMPLE, "--out", "{out}", "--spark-set", "streaming.state.buckets=abc"],
     "setting streaming.state.buckets must be an integer, got 'abc'"),
    ([SAMPLE, "--out", "{out}", "--set", "session.timeout"], "--set expects name=value"),
    ([SAMPLE, "--out", "{out}", "--captured", "/nonexistent.captured.ndjson"], "/nonexistent.captured.ndjson"),
    ([SAMPLE, "--out", "{out}", "--slice", "0"], "--slice: must be longer than 0, got '0'"),
    ([SAMPLE, "--out", "{out}", "--slice", "a minute"], "--slice: must be a duration such as 500ms"),
    ([SAMPLE, "--out", "{out}", "--slice", "1m", "--speed=-60x"], "--speed: must be more than 0x"),
    ([SAMPLE, "--out", "{out}", "--speed", "60x"], "--speed: holds slices to the wall clock; give --slice as well"),
])
def test_user_mistakes_end_with_their_message_and_status_2(tmp_path, capsys, args, message):
    assert main([a.format(out=tmp_path / "out") for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert "Traceback" not in err


def test_an_out_folder_of_another_run_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "_checkpoints").mkdir(parents=True)
    (out / "_checkpoints" / "run.json").write_text(json.dumps({"inputs": [["elsewhere", "elsewhere"]]}))
    assert main([SAMPLE, "--out", str(out)]) == 2
    assert "holds a Spark run of other inputs or settings" in capsys.readouterr().err


@pytest.mark.spark
def test_a_caller_s_spark_application_stays_up(spark, tmp_path, capsys):
    assert main(["/nonexistent", "--out", str(tmp_path / "out")]) == 2
    assert spark.range(3).count() == 3


def test_a_bucketed_run_is_not_resumed_with_other_state_partitions(tmp_path, capsys):
    from state.config import CoordinatorConfig
    from streaming.engine import _Run
    from streaming.progress import RunDisplay
    from streaming.session import resolve_settings

    out = tmp_path / "out"
    settings = resolve_settings("local", {"streaming.state.buckets": 8, "spark.sql.shuffle.partitions": 2})
    started = _Run([(str(Path(SAMPLE).absolute()), SAMPLE)], out, CoordinatorConfig(), None, settings,
                   RunDisplay(False, None), None, None, None)
    started.check_same_run()  # records the run's identity, as the first attempt did
    started.check_same_run()  # the same run again is accepted
    # Bucket labels depend on the partition count: another one would key the same groups differently.
    args = [SAMPLE, "--out", str(out), "--spark-set", "streaming.state.buckets=8", "--spark-set",
            "spark.sql.shuffle.partitions=4"]
    assert main(args) == 2
    assert "holds a Spark run of other inputs or settings" in capsys.readouterr().err


def test_a_run_record_left_in_out_is_gone_while_the_run_writes(tmp_path, monkeypatch):
    # The record tells readers the part files are complete: an earlier run's (either engine's) must not say
    # so of the files this run is about to replace.
    from streaming import engine

    out = tmp_path / "out"
    out.mkdir()
    (out / engine.RUN_FILE).write_text(json.dumps({"engine": "local"}))
    seen = []

    def stop_at_session(*args, **kwargs):
        seen.append((out / engine.RUN_FILE).exists())
        raise engine.RunMismatch("stopped before Spark starts")

    monkeypatch.setattr(engine, "get_session", stop_at_session)
    assert main([SAMPLE, "--out", str(out)]) == 2
    assert seen == [False]


def test_a_sliced_run_is_not_resumed_with_another_slice(tmp_path, capsys):
    from state.config import CoordinatorConfig
    from streaming.engine import _Run
    from streaming.progress import RunDisplay
    from streaming.session import resolve_settings

    out = tmp_path / "out"
    _Run([(str(Path(SAMPLE).absolute()), SAMPLE)], out, CoordinatorConfig(), None, resolve_settings("local"),
         RunDisplay(False, None), None, 60_000, None).check_same_run()
    # The slices are the micro-batches the checkpoint counted: another cut would read other files.
    assert main([SAMPLE, "--out", str(out), "--slice", "30s"]) == 2
    assert "holds a Spark run of other inputs or settings" in capsys.readouterr().err


@pytest.mark.spark
def test_a_python_worker_that_does_not_connect_back_in_time_ends_the_run_with_one_line(tmp_path):
    # 1 ms: no Python worker starts that fast, as none did within 15 s on a busy machine. Spark waits for a
    # worker's connection so only for a worker it starts on its own, not forked by its daemon.
    done = subprocess.run([sys.executable, "-m", "streaming.engine", SAMPLE, "--out", str(tmp_path / "out"), "--quiet",
                           "--spark-set", "spark.python.authenticate.socketTimeout=1ms",
                           "--spark-set", "spark.python.use.daemon=false"],
                          cwd=REPO, env=environment(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    # Spark's and the late worker's own reports come first; the run's last word is one line saying what to do.
    last = done.stderr.rstrip().splitlines()[-1]
    assert last.startswith("error: Python worker failed to connect back") and "same command" in last, done.stderr[-3000:]
