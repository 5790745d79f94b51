"""The optional compiled build of the core: `python -m state.native build` compiles every module of `state/`
with Cython, unchanged, into `<build root>/<fingerprint>/` (see `state/__init__.py`, which loads it).

    python -m state.native build     # compile the sources as they are now (quick when already built)
    python -m state.native status    # which core this interpreter runs, and the build it would load
    python -m state.native check     # exit status 0 when the sources as they are now have a build

The build root is $COORDSIM_NATIVE_DIR, else `coordsim-native/` in the virtualenv; $COORDSIM_NATIVE=0 makes
every process run the Python sources. The sources are copied first and the copy is fingerprinted and
compiled, so an edit during the build cannot end up under the wrong fingerprint; the result appears under
its final name only once complete (a rename), so an interrupted build is never loaded. A successful build
removes the other fingerprints' builds: they belong to sources that no longer exist.

The directives and C macros (`state.DIRECTIVES`, `state.C_MACROS`) keep Python's semantics and its dict
layout. This module is never compiled itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import state

FINGERPRINT = re.compile(r"^[0-9a-f]{24}$")
TEMPORARY = re.compile(r"^\.tmp-[0-9a-f]{24}-(\d+)-")
CORE = state.CORE


class BuildError(Exception):
    """The build cannot run here (no Cython, no C compiler, ...): the core runs as Python."""


def build(root: Path | None = None, jobs: int | None = None, log=print) -> Path:
    """Compile the sources as they are now into `root/<fingerprint>` (root: `state.build_root()`) unless that
    build exists already; its path."""
    try:
        import Cython
        from Cython.Build import cythonize
        from setuptools import Distribution
    except ImportError as error:
        raise BuildError(f"{error.name} is not installed (pip install 'coordsim[native]')") from None
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]  # as setuptools picks it
    if shutil.which(compiler) is None:
        raise BuildError(f"no C compiler ({compiler} not found)")
    version = state.cython_version()
    if version != Cython.__version__:
        raise BuildError(f"Cython {Cython.__version__} is imported but the installed distribution says {version}")
    root = root or state.build_root()
    sources = state.compiled_sources()
    target = root / state.fingerprint(state.PACKAGE_DIR, sources, version)
    if target.is_dir():
        log(f"native: up to date ({target})")
        return target
    root.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-{os.getpid()}-", dir=root))
    try:
        copy = work / "src" / state.PACKAGE_DIR.name
        for relative in [*sources, *(f"{copy.name}/{name}" for name in state.NOT_COMPILED)]:
            (work / "src" / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(state.PACKAGE_DIR.parent / relative, work / "src" / relative)
        name = state.fingerprint(copy, sources, version)
        target = root / name
        log(f"native: compiling {len(sources)} modules with Cython {version} into {target} ({jobs} jobs)")
        extensions = cythonize([str(work / "src" / s) for s in sources], compiler_directives=state.DIRECTIVES,
                               nthreads=jobs, build_dir=str(work / "c"), quiet=True)
        for extension in extensions:
            extension.define_macros += list(state.C_MACROS)
        command = Distribution({"name": "coordsim-native", "ext_modules": extensions}).get_command_obj("build_ext")
        command.build_lib = str(work / "out")
        command.build_temp = str(work / "obj")
        command.parallel = jobs
        command.ensure_finalized()
        command.run()
        out = work / "out"
        missing = [s for s in sources if not state.extension_path(out, s).is_file()]
        if missing:
            raise BuildError(f"the compiler produced no module for {', '.join(missing)}")
        facts = {"fingerprint": name, "cython": version, "directives": state.DIRECTIVES, "c_macros": state.C_MACROS,
                 "python": sys.version, "modules": sources, "seconds": round(time.monotonic() - started, 1)}
        (out / "build.json").write_text(json.dumps(facts, indent=1) + "\n")
        try:
            out.rename(target)
        except OSError:
            if not target.is_dir():
                raise
            # Another build of the same sources finished first: its result is the same.
    except (Exception, SystemExit) as error:
        # setuptools reports a compiler failure as SystemExit or a distutils error: both mean "no build".
        if isinstance(error, BuildError):
            raise
        raise BuildError(f"compilation failed: {error}") from error
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _remove_others(root, target.name)
    log(f"native: built in {time.monotonic() - started:.0f} s ({target})")
    return target


def _remove_others(root: Path, keep: str) -> None:
    """Builds of other fingerprints, and work folders of builds that were killed (their process is gone)."""
    for entry in root.iterdir():
        temporary = TEMPORARY.match(entry.name)
        if FINGERPRINT.match(entry.name) and entry.name != keep or temporary and not _alive(int(temporary[1])):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def status() -> dict:
    """Which core this process runs, and the build that these sources would load."""
    name = state.fingerprint()
    build = state.build_root() / name if name else None
    return {"core": CORE, "cython": state.cython_version(), "fingerprint": name,
            "build": str(build) if build else None, "built": bool(build and build.is_dir()),
            "disabled": os.environ.get(state.SWITCH_ENV, "") == "0"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m state.native", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="compile state/ (nothing to do if this build exists)")
    build_command.add_argument("--jobs", type=int, default=None, help="parallel compile jobs (default: all cores)")
    commands.add_parser("status", help="print which core runs and which build the sources need, as JSON")
    commands.add_parser("check", help="exit status 0 when the sources as they are now have a build, else 1")
    args = parser.parse_args(argv)
    if args.command == "status":
        print(json.dumps(status(), indent=1))
        return 0
    if args.command == "check":
        return 0 if status()["built"] else 1
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        build(jobs=args.jobs)
    except BuildError as error:
        print(f"native: {error}; the core runs as Python", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
