"""The Java runtime scripts/setup relies on: the java Spark will run, checked, or the Debian package to install.

Spark 4 runs on Java 17 or newer. Debian 12 packages OpenJDK 17; Debian 13 has no OpenJDK 17, and its
default-jre-headless is OpenJDK 21. So setup installs openjdk-17-jre-headless where the release has it, else
the release's default-jre-headless when that is 17 or newer, and refuses otherwise.

Standard library only: setup runs this before the virtualenv exists.

    python scripts/java_runtime.py check    # prints "found" (java >= 17) or "none"; one-line error if older
    python scripts/java_runtime.py choose   # after apt-get update: prints "PACKAGE MAJOR" or a one-line error
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Callable, Mapping

MIN_MAJOR = 17
PREFERRED = "openjdk-17-jre-headless"
DEFAULT = "default-jre-headless"


class SetupError(Exception):
    """A machine setup cannot go on with; the message is the one line setup prints."""


def spark_java(environ: Mapping[str, str], which: Callable[[str], str | None]) -> str | None:
    """The java Spark's launcher runs: JAVA_HOME's when that is set, else the first on PATH."""
    if environ.get("JAVA_HOME"):
        return os.path.join(environ["JAVA_HOME"], "bin", "java")
    return which("java")


def java_major(version_output: str) -> int | None:
    """The major version in what `java -version` prints; None when it prints none."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    # Java 8 and older call themselves 1.8, 1.7, ...
    return int(match.group(2) or 0) if major == 1 else major


def check_java(path: str, version_output: str) -> None:
    """SetupError unless `java -version` of `path` says Java 17 or newer."""
    major = java_major(version_output)
    if major is None:
        first = version_output.strip().splitlines()[0] if version_output.strip() else "nothing"
        raise SetupError(f"{path} does not report a Java version (it printed: {first}); Spark 4 needs Java "
                         f"{MIN_MAJOR} or newer")
    if major < MIN_MAJOR:
        real = os.path.realpath(path)
        where = path if real == path else f"{path} ({real})"
        raise SetupError(f"{where} is Java {major}; Spark 4 needs Java {MIN_MAJOR} or newer: install one and put "
                         f"it first on PATH, or set JAVA_HOME to it")


def choose_package(policy_preferred: str, show_default: str) -> tuple[str, int]:
    """The package to install and its Java major version, from what `apt-cache policy openjdk-17-jre-headless`
    and `apt-cache show --no-all-versions default-jre-headless` print."""
    candidate = re.search(r"^\s*Candidate:\s*(\S+)", policy_preferred, re.MULTILINE)
    if candidate is not None and candidate.group(1) != "(none)":
        return PREFERRED, MIN_MAJOR
    # default-jre-headless is a metapackage: its Depends names the OpenJDK it stands for.
    runtime = re.search(r"^Depends:.*\bopenjdk-(\d+)-jre-headless\b", show_default, re.MULTILINE)
    if runtime is None:
        raise SetupError(f"this release has neither {PREFERRED} nor {DEFAULT}: install Java {MIN_MAJOR} or "
                         f"newer yourself, then run setup again")
    major = int(runtime.group(1))
    if major < MIN_MAJOR:
        raise SetupError(f"this release has no {PREFERRED}, and its {DEFAULT} is Java {major}; Spark 4 needs "
                         f"Java {MIN_MAJOR} or newer: install one yourself, then run setup again")
    return DEFAULT, major


def output(command: list[str]) -> str:
    """What `command` prints, stdout and stderr (`java -version` writes to stderr), whatever its exit status."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise SetupError(f"cannot run {command[0]}: {error.strerror or error}") from None
    return done.stdout + done.stderr


def main(argv: list[str]) -> int:
    try:
        if argv == ["check"]:
            java = spark_java(os.environ, shutil.which)
            if java is None:
                print("none")
            else:
                check_java(java, output([java, "-version"]))
                print("found")
        elif argv == ["choose"]:
            package, major = choose_package(output(["apt-cache", "policy", PREFERRED]),
                                            output(["apt-cache", "show", "--no-all-versions", DEFAULT]))
            print(package, major)
        else:
            raise SetupError("usage: java_runtime.py check|choose")
    except SetupError as error:
        print(f"setup: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
