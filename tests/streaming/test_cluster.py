"""The same job on real executor processes: `local-cluster[2,1,1024]` (two executor JVMs with their own
Python workers), in a process of its own since a JVM runs one SparkContext."""

from __future__ import annotations

import subprocess

import pytest

from state.config import CoordinatorConfig
from tests.streaming.conftest import REPO, assert_same_tables, local_run
from tests.streaming.inputs import write_layouts
from tests.streaming.test_restart import command, environment

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_local_cluster_gives_the_local_tables(tmp_path):
    events = write_layouts(tmp_path / "in")["ordered"]
    out = tmp_path / "out"
    # All files in one micro-batch: batching is covered by test_parity, and each batch costs more here.
    run = subprocess.run(command(events, out) + ["--spark-set", "streaming.files.per.trigger=0",
                                                 "--profile", "cluster", "--master", "local-cluster[2,1,1024]",
                                                 "--spark-set", "spark.driver.host=127.0.0.1"],
                         cwd=REPO, env=environment(), capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    expected_dir, _ = local_run(events, tmp_path / "local", CoordinatorConfig())
    assert_same_tables(expected_dir, out)
