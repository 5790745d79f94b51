"""A Kafka version's broker (`kafka_2.13`: kafka.Kafka, kafka.tools.StorageTool) and client (`kafka-clients`)
jars with their dependencies, resolved by the Maven project in `conformance/` (`-Dkafka.version=V`) into
Maven's local repository (~/.m2, or `repo_local`). Nothing is vendored: the classpath is Maven's answer."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from simulations.conformance import ConformanceError

PROJECT = Path(__file__).resolve().parents[2] / "conformance"
POM = PROJECT / "pom.xml"
RESOLVE_TIMEOUT_S = 600
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def check_version(version: str) -> str:
    if not _VERSION.match(version):
        raise ConformanceError(f"--kafka-version {version!r}: expected a release like 4.4.0")
    if int(version.split(".")[0]) < 4:
        raise ConformanceError(f"--kafka-version {version}: the suite runs Kafka 4.x in KRaft mode (4.0.0 or newer)")
    return version


def classpath(version: str, work: Path, repo_local: str | None = None, maven_args: tuple[str, ...] = ()) -> list[str]:
    """The runtime classpath of Kafka `version`'s broker and clients; Maven resolves it the first time (and
    when a jar it named is gone), `work` keeps the answer."""
    check_version(version)
    listing = work / f"classpath-{version}.txt"
    if listing.is_file():
        jars = listing.read_text().strip().split(":")
        if jars and all(Path(j).is_file() for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ConformanceError("Maven (mvn) is not installed: scripts/setup --test installs Debian's maven")
    work.mkdir(parents=True, exist_ok=True)
    command = [mvn, "-B", "-q", "-f", str(POM), f"-Dkafka.version={version}", "dependency:build-classpath",
               f"-Dmdep.outputFile={listing}", "-Dmdep.includeScope=runtime", *maven_args]
    if repo_local:
        command.append(f"-Dmaven.repo.local={repo_local}")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ConformanceError(f"Maven did not resolve Kafka {version} in {RESOLVE_TIMEOUT_S} s") from None
    if done.returncode != 0 or not listing.is_file():
        raise ConformanceError(f"Maven could not resolve Kafka {version}: {maven_error(done.stdout + done.stderr)}")
    return listing.read_text().strip().split(":")


def maven_error(output: str) -> str:
    """The line of Maven's output that says why: the first [ERROR] line, without Maven's boilerplate."""
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("[ERROR]"):
            text = line.removeprefix("[ERROR]").strip()
            if text and not text.startswith(("-> [Help", "To see the full", "Re-run Maven", "For more information")):
                return text[:400]
    tail = [line for line in output.splitlines() if line.strip()]
    return tail[-1][:400] if tail else "no output"
