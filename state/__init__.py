"""coordsim's protocol core: Kafka's classic group coordinator for one group, as pure deterministic Python.

No Spark, no I/O, no clock reads: time is an argument and every deadline lives in the group state
(`state.runtime.GroupRuntime`). The Spark engine (`streaming/`) and the local engine (`simulations/`) both
drive this package and must produce identical tables.

This file also decides which build of the core runs (`CORE`): the modules as compiled by `python -m
state.native build` when a build of exactly these sources exists, else the Python sources. A build lives
outside the source tree, in a folder named by the fingerprint of the sources it was compiled from, so an
edited module can never run an old build: its fingerprint names a folder that does not exist yet. It stays
uncompiled itself, and so does `state.native`, the build step.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# Never compiled: this file (it chooses the build) and the build step.
NOT_COMPILED = ("__init__.py", "native.py")
# Cython's directives for the build, part of the fingerprint. annotation_typing=False keeps Python's semantics:
# Cython would otherwise turn annotations such as `float` into C conversions and type checks.
DIRECTIVES = {"language_level": 3, "annotation_typing": False}
# Cython builds a dict display of more than 8 items with CPython's _PyDict_NewPresized, which in 3.11 makes a
# dict with general keys even when all keys are str: bigger, slower to look up, and 1.7x slower for
# pyarrow's from_pylist over the output rows. PyDict_New keeps the str-keys layout, as the interpreter does.
C_MACROS = (("_PyDict_NewPresized(n)", "PyDict_New()"),)
BUILD_ROOT_ENV = "COORDSIM_NATIVE_DIR"
SWITCH_ENV = "COORDSIM_NATIVE"
EXTENSION_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]  # e.g. .cpython-311-x86_64-linux-gnu.so


def compiled_sources(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """The modules a build compiles, as paths relative to the folder that holds the package
    (`state/runtime.py`, `state/assignors/__init__.py`, ...), sorted."""
    found = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if (Path(folder, d, "__init__.py")).is_file())
        relative = Path(folder).relative_to(package_dir.parent)
        top = Path(folder) == package_dir
        found += [(relative / name).as_posix() for name in files
                  if name.endswith(".py") and not (top and name in NOT_COMPILED)]
    return sorted(found)


def cython_version() -> str | None:
    """The installed Cython's version, read from its distribution folder's name: importing Cython or
    `importlib.metadata` would cost milliseconds in every Spark Python worker. None without Cython."""
    spec = importlib.util.find_spec("Cython")
    if spec is None or spec.origin is None:
        return None
    site = Path(spec.origin).parent.parent
    for entry in os.scandir(site):
        name = entry.name.lower()
        if name.startswith("cython-") and name.endswith(".dist-info"):
            return entry.name[len("cython-"):-len(".dist-info")]
    return None


def fingerprint(package_dir: Path = PACKAGE_DIR, sources: list[str] | None = None,
                cython: str | None = None) -> str | None:
    """The name of the build folder for the sources as they are now: a hash of every compiled module's
    relative path and bytes, the Cython version, directives and C macros, and the interpreter's extension ABI.
    None when Cython is not installed (no build can be matched)."""
    cython = cython or cython_version()
    if cython is None:
        return None
    digest = hashlib.sha256(f"cython {cython} {sorted(DIRECTIVES.items())} {C_MACROS}\nabi {EXTENSION_SUFFIX}\n"
                            .encode())
    for relative in compiled_sources(package_dir) if sources is None else sources:
        digest.update(f"{relative}\n".encode())
        digest.update((package_dir.parent / relative).read_bytes())
    return digest.hexdigest()[:24]


def build_root() -> Path:
    """Where builds live: $COORDSIM_NATIVE_DIR, else coordsim-native/ under the virtualenv (sys.prefix)."""
    return Path(os.environ.get(BUILD_ROOT_ENV) or Path(sys.prefix, "coordsim-native"))


def extension_path(build: Path, relative: str) -> Path:
    """The compiled module of source `relative` (state/x.py or state/pkg/__init__.py) in `build`."""
    return build / (relative[: -len(".py")] + EXTENSION_SUFFIX)


def module_name(relative: str) -> str:
    parts = relative[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class CompiledCore:
    """A `sys.meta_path` finder that loads the compiled modules of one complete build, and nothing else."""

    def __init__(self, build: Path, package_dir: Path, sources: list[str]) -> None:
        self.modules = {module_name(s): (extension_path(build, s), s.endswith("/__init__.py")) for s in sources}
        self.package_dir = package_dir

    def find_spec(self, fullname, path=None, target=None):
        found = self.modules.get(fullname)
        if found is None:
            return None
        binary, is_package = found
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(binary))
        # A compiled package still finds its submodules beside its sources.
        locations = [str(self.package_dir.parent / fullname.replace(".", "/"))] if is_package else None
        return importlib.util.spec_from_file_location(fullname, binary, loader=loader,
                                                      submodule_search_locations=locations)


def _choose_core() -> str:
    """Install the finder for this fingerprint's build if it is there and complete: "compiled", else
    "python". A build folder only ever appears complete (it is renamed into place), and every module is
    checked anyway, so a half-deleted build runs none of its modules."""
    if os.environ.get(SWITCH_ENV, "") == "0":
        return "python"
    sources = compiled_sources()
    name = fingerprint(PACKAGE_DIR, sources)
    if name is None:
        return "python"
    build = build_root() / name
    if not all(extension_path(build, s).is_file() for s in sources):
        return "python"
    if not any(isinstance(f, CompiledCore) for f in sys.meta_path):
        sys.meta_path.insert(0, CompiledCore(build, PACKAGE_DIR, sources))
    return "compiled"


# Which core runs in this process: "compiled" or "python". Run records and benchmark rows carry it.
CORE = _choose_core()
