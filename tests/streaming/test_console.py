"""What a successful `coordsim run` on Spark prints: the run's summary, once, and nothing of Spark's (no log
line, no stack trace, not the JVM's notice about its incubator module); and how the driver's JVM is given its
logging configuration."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from streaming.session import JVM_NOTICE, LOG4J_FILE, _configure_driver_jvm, conf_dir, forward_stderr
from tests.streaming.conftest import REPO

TINY = """\
name: tiny
duration: 1m
group_sets:
  - name: orders
    groups: 2
    members: 2
    topics:
      - {name: orders, partitions: 2, records_per_second: 10}
timeline:
  - {at: 10s, action: crash, members: 1, restart_after: 20s}
"""


@pytest.mark.spark
def test_a_successful_spark_run_prints_one_summary_and_nothing_of_spark(tmp_path):
    # The shipped conf folder, with the state stores' maintenance every 100 ms instead of every minute: a run
    # of it while Spark stops (a stack trace at the end of some runs) is then certain instead of rare. Its
    # warnings, and the RPC layer's, are shown: that race must be gone, not only below the log level.
    conf = Path(shutil.copytree(conf_dir(), tmp_path / "conf"))
    profile = yaml.safe_load((conf / "spark-local.yaml").read_text())
    profile["settings"]["spark.sql.streaming.stateStore.maintenanceInterval"] = "100ms"
    (conf / "spark-local.yaml").write_text(yaml.safe_dump(profile))
    with (conf / LOG4J_FILE).open("a") as log_config:
        for name in ("org.apache.spark.sql.execution.streaming.state.StateStore", "org.apache.spark.rpc"):
            key = name.rsplit(".", 1)[-1]
            log_config.write(f"logger.{key}.name = {name}\nlogger.{key}.level = warn\n")
    (tmp_path / "tiny.yaml").write_text(TINY)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, COORDSIM_CONF_DIR=str(conf))
    for name in ("SPARK_LOCAL_IP", "COORDSIM_SPARK_LOG_LEVEL"):  # as a user's shell has them: unset
        env.pop(name, None)

    # The engine's own settings reach it from `coordsim run` as from `python -m streaming.engine`.
    done = subprocess.run([Path(sys.executable).with_name("coordsim"), "run", tmp_path / "tiny.yaml", "--out",
                           tmp_path / "out", "--spark-set", "streaming.state.buckets=3"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)

    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    titles = {title: output.count(title) for title in ("coordsim on Spark", "coordsim replay", "scenario   ")}
    assert titles == {"coordsim on Spark": 0, "coordsim replay": 0, "scenario   ": 1}, output
    assert [line for line in output.splitlines() if " WARN " in line] == []
    assert "\tat " not in output and "Exception" not in output, output
    assert "validate" in done.stdout and "PASSED" in done.stdout
    assert done.stderr == "", done.stderr  # the JVM's incubator notice included
    identity = json.loads((tmp_path / "out" / "_checkpoints" / "run.json").read_text())
    assert (identity["streaming.state.buckets"], identity["slice_ms"]) == (3, 300_000)  # run's default slice


def test_the_driver_is_given_the_logging_file_before_the_profile_s_options(tmp_path, monkeypatch):
    (tmp_path / LOG4J_FILE).write_text("rootLogger.level = error\n")
    monkeypatch.setenv("COORDSIM_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    _configure_driver_jvm("local[*]", conf)
    # Last, the profile's options are what run_session recognises in the running application's.
    assert conf["spark.driver.extraJavaOptions"] == \
        f"-Dlog4j2.configurationFile={(tmp_path / LOG4J_FILE).as_uri()} -XX:TieredStopAtLevel=1"
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_user_s_logging_file_or_a_conf_folder_without_one_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("COORDSIM_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    conf = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    _configure_driver_jvm("spark://127.0.0.1:7077", conf)  # no file in the conf folder
    assert conf == {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}
    assert "SPARK_LOCAL_IP" not in os.environ  # a cluster's addresses are the user's to choose
    (tmp_path / LOG4J_FILE).write_text("rootLogger.level = error\n")
    own = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}
    _configure_driver_jvm("local[2]", own)
    assert own == {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/spark/log4j2.properties"}


def test_the_jvm_s_stderr_is_forwarded_whole_but_for_its_incubator_notice():
    source, target = os.pipe(), os.pipe()
    os.write(source[1], JVM_NOTICE + b"ERROR SparkContext: a real error\n" + b"  " + JVM_NOTICE + b"no newline")
    os.close(source[1])
    forward_stderr(source[0], target[1])
    os.close(target[1])
    with open(target[0], "rb") as forwarded:
        assert forwarded.read() == b"ERROR SparkContext: a real error\n  " + JVM_NOTICE + b"no newline"


def test_a_closed_stderr_does_not_stop_the_jvm_s_lines_from_being_read():
    source, target = os.pipe(), os.pipe()
    os.close(target[0])  # nobody reads our stderr any more: every write fails
    os.write(source[1], b"one\ntwo\n")
    os.close(source[1])
    forward_stderr(source[0], target[1])  # returns once the JVM's side ends, having read everything
    os.close(target[1])
