"""scripts/java_runtime.py and the Java step of scripts/setup, fed each Debian release's apt answers through
fake commands: nothing is installed."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "java_runtime.py"

_spec = importlib.util.spec_from_file_location("java_runtime", SCRIPT)
java_runtime = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(java_runtime)

# `apt-cache policy openjdk-17-jre-headless` and `apt-cache show --no-all-versions default-jre-headless`.
BOOKWORM_POLICY_17 = """openjdk-17-jre-headless:
  Installed: (none)
  Candidate: 17.0.21.1+2-1~deb12u1
  Version table:
     17.0.21.1+2-1~deb12u1 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
"""
BOOKWORM_DEFAULT = """Package: default-jre-headless
Source: java-common (0.74)
Version: 2:1.17-74
Provides: java-runtime-headless (= 17), java17-runtime-headless
Depends: openjdk-17-jre-headless, java-common
Description: Standard Java or Java compatible Runtime (headless)
"""
TRIXIE_POLICY_17 = ""  # apt-cache policy prints nothing for a package the release does not have
TRIXIE_DEFAULT = """Package: default-jre-headless
Source: java-common (0.76)
Version: 2:1.21-76
Provides: java-runtime-headless (= 21), java21-runtime-headless
Depends: openjdk-21-jre-headless, java-common
Description: Standard Java or Java compatible Runtime (headless)
"""
BULLSEYE_DEFAULT = """Package: default-jre-headless
Source: java-common (0.72)
Version: 2:1.11-72
Depends: openjdk-11-jre-headless, java-common
Description: Standard Java or Java compatible Runtime (headless)
"""
NO_CANDIDATE_POLICY_17 = """openjdk-17-jre-headless:
  Installed: (none)
  Candidate: (none)
  Version table:
"""
NO_PACKAGE_SHOW = "E: No packages found\n"

JAVA_17 = 'openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n'
JAVA_11 = 'openjdk version "11.0.20" 2023-07-18\nOpenJDK Runtime Environment (build 11.0.20+8-post-Debian-1deb11u1)\n'


# --- the choice, from the package manager's answers -------------------------------------------------------

def test_debian_12_installs_openjdk_17():
    assert java_runtime.choose_package(BOOKWORM_POLICY_17, BOOKWORM_DEFAULT) == ("openjdk-17-jre-headless", 17)


@pytest.mark.parametrize("policy_17", [TRIXIE_POLICY_17, NO_CANDIDATE_POLICY_17])
def test_debian_13_without_openjdk_17_installs_its_default_runtime_21(policy_17):
    assert java_runtime.choose_package(policy_17, TRIXIE_DEFAULT) == ("default-jre-headless", 21)


def test_a_release_whose_default_runtime_is_older_than_17_is_refused():
    with pytest.raises(java_runtime.SetupError, match="default-jre-headless is Java 11; Spark 4 needs Java 17"):
        java_runtime.choose_package("", BULLSEYE_DEFAULT)


def test_a_release_without_any_java_runtime_package_is_refused():
    with pytest.raises(java_runtime.SetupError, match="neither openjdk-17-jre-headless nor default-jre-headless"):
        java_runtime.choose_package("", NO_PACKAGE_SHOW)


# --- the java already there ----------------------------------------------------------------------------------

@pytest.mark.parametrize("printed, major", [
    (JAVA_17, 17),
    ('openjdk version "21" 2023-09-19\n', 21),
    ('Picked up JAVA_TOOL_OPTIONS: -Xss4m\nopenjdk version "25-ea" 2025-09-16\n', 25),
    (JAVA_11, 11),
    ('java version "1.8.0_381"\n', 8),
])
def test_java_major_reads_every_version_style(printed, major):
    assert java_runtime.java_major(printed) == major


def test_java_17_or_newer_passes():
    java_runtime.check_java("/usr/bin/java", JAVA_17)
    java_runtime.check_java("/usr/bin/java", 'openjdk version "21.0.8" 2025-07-15\n')


def test_java_11_is_refused_naming_its_version_and_path():
    with pytest.raises(java_runtime.SetupError, match=r"^/opt/jdk11/bin/java is Java 11; Spark 4 needs Java 17"):
        java_runtime.check_java("/opt/jdk11/bin/java", JAVA_11)


def test_a_java_without_a_version_is_refused_with_what_it_printed():
    with pytest.raises(java_runtime.SetupError, match="printed: Error: could not open"):
        java_runtime.check_java("/usr/bin/java", "Error: could not open `/usr/lib/jvm/x/lib/jvm.cfg'\n")


def test_spark_runs_java_home_s_java_before_path_s():
    which = {"java": "/usr/bin/java"}.get
    assert java_runtime.spark_java({"JAVA_HOME": "/opt/jdk21"}, which) == "/opt/jdk21/bin/java"
    assert java_runtime.spark_java({}, which) == "/usr/bin/java"
    assert java_runtime.spark_java({}, {}.get) is None


# --- the commands, with fake java and apt-cache -------------------------------------------------------------

CAT, GREP = shutil.which("cat"), shutil.which("grep")  # by path: the fakes' PATH holds only the fakes


def fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def fake_java(bin_dir: Path, printed: str) -> None:
    (bin_dir / "java.out").write_text(printed)
    fake(bin_dir, "java", f'{CAT} "{bin_dir}/java.out" >&2\n')


def fake_apt(bin_dir: Path, policy_17: str, show_default: str) -> None:
    """apt-cache answering as a release does; apt-get and sudo recording what they were asked to do."""
    (bin_dir / "policy.out").write_text(policy_17)
    (bin_dir / "show.out").write_text(show_default)
    fake(bin_dir, "apt-cache", f'case "$1" in policy) {CAT} "{bin_dir}/policy.out";; show) {CAT} "{bin_dir}/show.out"; '
                               f'{GREP} -q Package "{bin_dir}/show.out" || exit 100;; esac\n')
    fake(bin_dir, "apt-get", f'echo "apt-get $*" >> "{bin_dir}/apt.log"\n')
    fake(bin_dir, "sudo", 'exec "$@"\n')


def run_script(bin_dir: Path, *args: str, java_home: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": str(bin_dir)} | ({"JAVA_HOME": java_home} if java_home else {})
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env)


def test_choose_prints_the_package_and_its_java_version(tmp_path):
    fake_apt(tmp_path, TRIXIE_POLICY_17, TRIXIE_DEFAULT)
    done = run_script(tmp_path, "choose")
    assert (done.returncode, done.stdout, done.stderr) == (0, "default-jre-headless 21\n", "")


def test_check_says_none_without_java_and_found_with_java_17(tmp_path):
    assert run_script(tmp_path, "check").stdout == "none\n"
    fake_java(tmp_path, JAVA_17)
    assert run_script(tmp_path, "check").stdout == "found\n"


def test_check_refuses_java_11_on_one_line(tmp_path):
    fake_java(tmp_path, JAVA_11)
    done = run_script(tmp_path, "check")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"setup: {tmp_path}/java is Java 11; Spark 4 needs Java 17 or newer: install one and " \
                          f"put it first on PATH, or set JAVA_HOME to it\n"


def test_check_refuses_a_java_home_without_java_on_one_line(tmp_path):
    fake_java(tmp_path, JAVA_17)
    done = run_script(tmp_path, "check", java_home=str(tmp_path / "no-jdk"))
    assert done.returncode == 1
    assert done.stderr == f"setup: cannot run {tmp_path}/no-jdk/bin/java: No such file or directory\n"


def test_a_wrong_call_gets_its_usage_on_one_line(tmp_path):
    done = run_script(tmp_path, "install")
    assert (done.returncode, done.stderr) == (1, "setup: usage: java_runtime.py check|choose\n")


# --- scripts/setup's Java step ------------------------------------------------------------------------------

@pytest.fixture
def setup_copy(tmp_path):
    """scripts/setup in a copy of the repository whose .venv is already installed, and a PATH of fakes and
    the two commands setup needs besides them (the machine's own java stays out of reach)."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("setup", "java_runtime.py"):
        shutil.copy(REPO / "scripts" / name, repo / "scripts" / name)
    (repo / "pyproject.toml").write_text("")
    (repo / ".venv" / "bin").mkdir(parents=True)
    fake(repo / ".venv" / "bin", "python", "")
    (repo / ".venv" / ".installed").write_text("")
    os.utime(repo / "pyproject.toml", (0, 0))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "id"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    return repo, bin_dir


# What setup says where there is no cargo, as on these tests' PATH (the native step: test_setup_native.py).
NO_RUST = "setup: no Rust toolchain (cargo): the Python core runs\n"


def run_setup(repo: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/bash", str(repo / "scripts" / "setup")], capture_output=True, text=True,
                          env={"PATH": str(bin_dir), "PYTHON": sys.executable})


def apt_log(bin_dir: Path) -> list[str]:
    log = bin_dir / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("policy_17, show_default, package, major", [
    (BOOKWORM_POLICY_17, BOOKWORM_DEFAULT, "openjdk-17-jre-headless", 17),
    (TRIXIE_POLICY_17, TRIXIE_DEFAULT, "default-jre-headless", 21),
])
def test_setup_installs_the_runtime_the_release_offers_and_says_which(setup_copy, policy_17, show_default,
                                                                      package, major):
    repo, bin_dir = setup_copy
    fake_apt(bin_dir, policy_17, show_default)
    done = run_setup(repo, bin_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"setup: java not found, installing {package} (Java {major}, Debian package)\n" + NO_RUST
    assert apt_log(bin_dir) == ["apt-get update -qq", f"apt-get install -y -qq --no-install-recommends {package}"]


def test_setup_stops_on_a_release_without_java_17_or_newer(setup_copy):
    repo, bin_dir = setup_copy
    fake_apt(bin_dir, "", BULLSEYE_DEFAULT)
    done = run_setup(repo, bin_dir)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "default-jre-headless is Java 11" in done.stderr
    assert apt_log(bin_dir) == ["apt-get update -qq"]


def test_setup_installs_nothing_when_java_17_is_there(setup_copy):
    repo, bin_dir = setup_copy
    fake_apt(bin_dir, BOOKWORM_POLICY_17, BOOKWORM_DEFAULT)
    fake_java(bin_dir, JAVA_17)
    done = run_setup(repo, bin_dir)
    assert (done.returncode, done.stdout, done.stderr) == (0, NO_RUST, "")
    assert apt_log(bin_dir) == []


def test_setup_stops_on_java_11_with_one_line_naming_it(setup_copy):
    repo, bin_dir = setup_copy
    fake_apt(bin_dir, BOOKWORM_POLICY_17, BOOKWORM_DEFAULT)
    fake_java(bin_dir, JAVA_11)
    done = run_setup(repo, bin_dir)
    assert done.returncode == 1
    assert done.stderr == f"setup: {bin_dir}/java is Java 11; Spark 4 needs Java 17 or newer: install one and " \
                          f"put it first on PATH, or set JAVA_HOME to it\n"
    assert apt_log(bin_dir) == []
