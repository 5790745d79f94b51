"""The conformance suite's bad states end with one clear line (ConformanceError; exit code 2 for the command)
and leave no process behind: a port in use, Maven unreachable, a broker that does not start, a version that
is not a Kafka 4.x release. Those that need Maven or a real broker carry the `conformance` marker."""

from __future__ import annotations

import shutil
import socket

import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.conformance import ConformanceError
from simulations.conformance.cluster import HOST, Cluster
from simulations.conformance.driver import compile_driver
from simulations.conformance.maven import classpath
from simulations.conformance.processes import Processes
from simulations.conformance.runner import kafka_cache

NEWEST = "4.4.0"


def test_a_port_in_use_is_one_line_before_anything_starts(tmp_path):
    with socket.socket() as held, Processes() as processes:
        held.bind((HOST, 0))
        taken = held.getsockname()[1]
        cluster = Cluster(["unused.jar"], tmp_path, processes, ports=[taken, taken + 1])
        with pytest.raises(ConformanceError, match=f"port {HOST}:{taken} is in use"):
            cluster.start()
        assert not processes._started


@pytest.mark.parametrize("version, says", [("3.9.0", "Kafka 4.x"), ("latest", "a release like 4.4.0")])
def test_a_version_that_is_not_a_kafka_4_release_is_exit_code_2(version, says):
    result = CliRunner().invoke(main, ["conformance", "--kafka-version", version])
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


@pytest.mark.conformance
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_maven_unreachable_is_one_line(tmp_path):
    settings = tmp_path / "settings.xml"
    # Every repository through a port nothing listens on: what an unreachable Maven Central looks like.
    settings.write_text("<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
                        "<url>http://127.0.0.1:9/</url></mirror></mirrors></settings>")
    with pytest.raises(ConformanceError, match=f"^Maven could not resolve Kafka {NEWEST}: .+") as error:
        classpath(NEWEST, tmp_path / "work", repo_local=str(tmp_path / "m2"), maven_args=("-s", str(settings)))
    assert "\n" not in str(error.value)


@pytest.mark.conformance
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_a_broker_that_does_not_start_shows_its_last_log_lines_and_is_stopped(tmp_path):
    jars = classpath(NEWEST, kafka_cache(NEWEST))
    with Processes() as processes:
        # A setting Kafka refuses at start-up: the broker exits with its error in its log.
        cluster = Cluster(jars, tmp_path, processes, settings={"group.min.session.timeout.ms": "-1x"})
        with pytest.raises(ConformanceError, match=r"^(formatting node 1's storage failed|broker 1 did not start).*"
                                                   r"group\.min\.session\.timeout\.ms"):
            cluster.start()
        assert all(p.poll() is not None for p in processes._started)


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")
def test_the_driver_is_compiled_again_when_its_source_changes(tmp_path):
    source = tmp_path / "ConformanceDriver.java"
    source.write_text("public final class ConformanceDriver { }\n")
    classes = compile_driver([], tmp_path / "cache", source)
    first = (classes / "ConformanceDriver.class").read_bytes()
    assert compile_driver([], tmp_path / "cache", source) == classes
    source.write_text("public final class ConformanceDriver { static int changed; }\n")
    assert (compile_driver([], tmp_path / "cache", source) / "ConformanceDriver.class").read_bytes() != first
