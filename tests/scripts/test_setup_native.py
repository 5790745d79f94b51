"""scripts/setup's native step (docs/native.md): with cargo on the PATH it builds the crate into .venv with
`pip install ./native` once, again only when a source under native/ is newer than the last build, and stops
when the build fails; without cargo it says so in one line and goes on. Run in a copy of the repository with a
fake Python that records what pip is asked to do (test_java_runtime.py's setup_copy)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.scripts.test_java_runtime import BOOKWORM_DEFAULT, BOOKWORM_POLICY_17, JAVA_17, NO_RUST, fake, \
    fake_apt, fake_java, run_setup, setup_copy  # noqa: F401 (setup_copy is a fixture)

BUILD = "setup: building the native engine (native/, Rust) into .venv (log: .venv/setup.log)\n"


@pytest.fixture
def repo(setup_copy):
    """A repository with Java 17 and a native/ crate; its Python logs each call, and fails when told to."""
    repo, bin_dir = setup_copy
    fake_apt(bin_dir, BOOKWORM_POLICY_17, BOOKWORM_DEFAULT)
    fake_java(bin_dir, JAVA_17)
    for tool in ("find", "touch", "tail"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    fake(repo / ".venv" / "bin", "python", f'echo "$@" >> "{bin_dir}/python.log"\n[ ! -e "{bin_dir}/fail" ]\n')
    (repo / "native" / "src").mkdir(parents=True)
    (repo / "native" / "src" / "lib.rs").write_text("")
    (repo / "native" / "target").mkdir()
    return repo, bin_dir


def pip_calls(bin_dir: Path) -> list[str]:
    log = bin_dir / "python.log"
    return log.read_text().splitlines() if log.exists() else []


def age(path: Path, seconds: int) -> None:
    """Set the path's times `seconds` in the past, before the build's stamp (mtimes decide the rebuild)."""
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))


def test_without_cargo_setup_says_so_in_one_line_and_goes_on(repo):
    repo, bin_dir = repo
    done = run_setup(repo, bin_dir)
    assert (done.returncode, done.stdout, done.stderr) == (0, NO_RUST, "")
    assert pip_calls(bin_dir) == []


def test_with_cargo_setup_builds_once_and_again_when_a_source_changes(repo):
    repo, bin_dir = repo
    fake(bin_dir, "cargo", "")
    done = run_setup(repo, bin_dir)
    assert (done.returncode, done.stdout, done.stderr) == (0, BUILD, "")
    assert pip_calls(bin_dir) == ["-m pip install ./native"]

    for path in [repo / "native", *(repo / "native").rglob("*")]:
        age(path, 60)
    (repo / "native" / "target" / "artifact").write_text("")  # the build's own output does not count
    assert run_setup(repo, bin_dir).stdout == ""
    assert len(pip_calls(bin_dir)) == 1

    (repo / "native" / "src" / "lib.rs").write_text("// changed")
    assert run_setup(repo, bin_dir).stdout == BUILD
    assert len(pip_calls(bin_dir)) == 2


def test_a_failed_build_stops_setup_and_leaves_no_stamp(repo):
    repo, bin_dir = repo
    fake(bin_dir, "cargo", "")
    (bin_dir / "fail").write_text("")
    done = run_setup(repo, bin_dir)
    assert done.returncode == 1
    assert done.stderr.endswith("setup: building the native engine failed (full log: .venv/setup.log)\n")
    assert not (repo / ".venv" / ".installed-native").exists()
