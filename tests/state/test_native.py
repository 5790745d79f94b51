"""The compiled build of the core: only a build of exactly the sources present is ever loaded, COORDSIM_NATIVE=0
turns it off, and the build computes what the Python sources compute (same tables, byte for byte).

The stale-build checks use a copy of the package and a fake build folder, so they need no compiler. The
parity checks need the real build of this checkout (scripts/setup makes it) and are skipped without one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import state
from simulations.parquet_tables import PART_FILE
from state import native
from state.tables import TABLES

REPO = Path(__file__).resolve().parents[2]
COORDSIM = Path(sys.executable).with_name("coordsim")
PROBE = ("import json, state, state.java_compat as j; "
         "print(json.dumps({'core': state.CORE, 'file': j.__file__}))")

needs_build = pytest.mark.skipif(
    not native.status()["built"],
    reason="no compiled build of state/ for these sources (scripts/setup makes it; it needs a C compiler)")


def env(**values: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in (state.SWITCH_ENV, state.BUILD_ROOT_ENV)}
    return {**base, **values}


def probe(cwd: Path, **values: str) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=env(**values), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def copy(tmp_path) -> Path:
    """A copy of the package in tmp_path/pkg (a subprocess started there imports it) and a fake build of it
    under tmp_path/builds whose modules are not loadable: if the finder ever picks one, the import fails."""
    pytest.importorskip("Cython", reason="builds are matched by Cython version: without Cython none is loaded")
    package = tmp_path / "pkg" / "state"
    shutil.copytree(state.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    build = tmp_path / "builds" / state.fingerprint(package)
    for relative in state.compiled_sources(package):
        target = state.extension_path(build, relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"not a shared object")
    return package


def test_the_build_of_the_sources_present_is_the_one_loaded(copy, tmp_path):
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=copy.parent, capture_output=True, text=True,
                          env=env(COORDSIM_NATIVE_DIR=str(tmp_path / "builds")))
    # The finder chose the fake build, so loading its first module fails: proof that it is the one used.
    assert done.returncode != 0
    assert "state/java_compat" in done.stderr and str(tmp_path / "builds") in done.stderr


def test_a_build_of_other_sources_is_never_loaded(copy, tmp_path):
    source = copy / "assignors" / "range.py"
    source.write_bytes(source.read_bytes() + b"\n")
    found = probe(copy.parent, COORDSIM_NATIVE_DIR=str(tmp_path / "builds"))
    assert found == {"core": "python", "file": str(copy / "java_compat.py")}


def test_a_build_missing_a_module_is_not_loaded(copy, tmp_path):
    build = tmp_path / "builds" / state.fingerprint(copy)
    state.extension_path(build, "state/timers.py").unlink()
    found = probe(copy.parent, COORDSIM_NATIVE_DIR=str(tmp_path / "builds"))
    assert found["core"] == "python"


def test_coordsim_native_0_runs_the_python_sources(copy, tmp_path):
    found = probe(copy.parent, COORDSIM_NATIVE_DIR=str(tmp_path / "builds"), COORDSIM_NATIVE="0")
    assert found == {"core": "python", "file": str(copy / "java_compat.py")}


def test_the_fingerprint_covers_every_compiled_module_and_only_those(copy):
    sources = state.compiled_sources(copy)
    assert "state/__init__.py" not in sources and "state/native.py" not in sources
    assert {"state/runtime.py", "state/assignors/__init__.py", "state/assignors/sticky.py"} <= set(sources)
    before = state.fingerprint(copy)
    (copy / "__init__.py").write_text((copy / "__init__.py").read_text() + "\n")
    assert state.fingerprint(copy) == before
    assert state.fingerprint(copy, cython="0.0.0") != before
    (copy / "timers.py").rename(copy / "clock.py")
    assert state.fingerprint(copy) != before


def test_without_a_c_compiler_the_build_says_the_core_runs_as_python(tmp_path, monkeypatch, capsys):
    pytest.importorskip("Cython", reason="the build step needs Cython (pip install 'coordsim[native]')")
    monkeypatch.setenv("CC", "no-such-cc -pthread")
    monkeypatch.setenv(state.BUILD_ROOT_ENV, str(tmp_path / "builds"))
    assert native.main(["build"]) == 1
    assert capsys.readouterr().err == "native: no C compiler (no-such-cc not found); the core runs as Python\n"
    assert not (tmp_path / "builds").exists()


@needs_build
def test_the_compiled_core_loads_compiled_modules_and_keeps_python_semantics():
    compiled = probe(REPO)
    assert compiled["core"] == "compiled"
    assert compiled["file"].endswith(state.EXTENSION_SUFFIX)
    assert compiled["file"].startswith(native.status()["build"])
    # Built with annotation_typing=False: `kafka_abs(n: int)` takes a float as Python does, where typed
    # annotations would raise TypeError.
    code = "import state.java_compat as j; print(repr(j.kafka_abs(-2.5)))"
    assert run_both(code) == "2.5\n"
    # A response row (a dict display of 23 str keys) has the interpreter's compact str-keys layout (C_MACROS).
    code = ("import sys; from state.events import parse_event; from state.output import Output; "
            "e = parse_event({'ts': 1, 'group_id': 'g', 'type': 'HEARTBEAT', 'member_id': 'm', 'generation_id': 1},"
            " 'test', 1); print(sys.getsizeof(Output('g').response(e, 1, 'NONE', 0)))")
    assert int(run_both(code)) > 0


def run_both(code: str) -> str:
    """What `code` prints on the Python core, checked to be what it prints on the compiled core."""
    printed = {}
    for flag in ("0", "1"):
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env(COORDSIM_NATIVE=flag),
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        printed[flag] = done.stdout
    assert printed["0"] == printed["1"]
    return printed["0"]


@needs_build
@pytest.mark.parametrize("scenario", ["gc-pause", "rolling-restart-cooperative"])
def test_both_cores_write_the_same_tables(tmp_path, scenario):
    outs = {}
    for core, flag in (("python", "0"), ("compiled", "1")):
        out = tmp_path / core
        done = subprocess.run([str(COORDSIM), "run", scenario, "--engine", "local", "--out", str(out),
                               "--no-report", "--no-validate"], cwd=REPO, env=env(COORDSIM_NATIVE=flag),
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert json.loads((out / "_run.json").read_text())["core"] == core
        outs[core] = out
    for table in TABLES:
        python, compiled = ((outs[core] / table / PART_FILE).read_bytes() for core in ("python", "compiled"))
        assert python == compiled, table
