"""Exactly-once across a crash: SIGKILL the whole driver (Python, JVM, Python workers) once it has
committed a micro-batch (a file, or a slice of simulated time), run the same command again, and get the
tables of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from state.config import CoordinatorConfig
from streaming.sink import COMMITTED
from tests.streaming.conftest import REPO, assert_same_tables, local_run
from simulations.scenarios import generate, parse_scenario, to_jsonl
from tests.streaming.inputs import BAD_ROWS, DELAY_MS, SCENARIO, write_layouts

pytestmark = pytest.mark.spark


def command(events: list[str], out, *more: str) -> list[str]:
    return [sys.executable, "-m", "streaming.engine", *events, "--out", str(out), "--quiet",
            "--spark-set", f"streaming.watermark.delay.ms={DELAY_MS}", "--spark-set", "streaming.files.per.trigger=1",
            *more]


def environment() -> dict:
    return dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")


def sliced_input(folder) -> list[str]:
    """One era of synthetic clients (slicing the layouts' eras, years apart, would be millions of slices)."""
    folder.mkdir(parents=True)
    events = folder / "events.jsonl"
    rows = to_jsonl(generate(parse_scenario(SCENARIO)).rows)
    events.write_text("".join(line + "\n" for line in BAD_ROWS) + rows, encoding="utf-8")
    return [str(events)]


# (more arguments, micro-batches committed before the kill). A micro-batch costs seconds of fixed work
# whatever its rows, so the sliced run cuts its 45 s of events into 3 slices of 20 s (not 5 of 10 s), and is
# killed after 2: the rerun must start from the second (Spark may run it again), not from the first.
RUNS = {"files": ((), 1), "slices": (("--slice", "20s"), 2)}


@pytest.mark.parametrize("run", RUNS)
def test_sigkill_then_rerun_gives_the_uninterrupted_tables(tmp_path, run):
    more, before_kill = RUNS[run]
    events = sliced_input(tmp_path / "in") if more else write_layouts(tmp_path / "in")["ordered"]
    out = tmp_path / "out"
    committed = out / "_batches" / COMMITTED
    driver = subprocess.Popen(command(events, out, *more), cwd=REPO, env=environment(), start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not (committed.exists() and len(committed.read_text().split()) >= before_kill):
            assert driver.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no micro-batch committed within 240 s"
            time.sleep(0.05)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # its own process group: the driver, its JVM, the workers
        driver.wait()
    assert not (out / "responses").exists(), "killed after the end: nothing was interrupted"
    before = [int(b) for b in committed.read_text().split()]

    rerun = subprocess.run(command(events, out, *more), cwd=REPO, env=environment(), capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    expected_dir, _ = local_run(events, tmp_path / "local", CoordinatorConfig())
    assert_same_tables(expected_dir, out)
    # It resumed from the last committed micro-batch (which Spark may run again), not from the start.
    again = [int(b) for b in committed.read_text().split()][len(before):]
    assert again and min(again) >= max(before)
