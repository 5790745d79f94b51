"""The layering of the packages (README, "How the code is laid out"): `state/` is the protocol core and imports
no other package of the project; `tableio/` is the table and file code below both engines and imports only
`state`; `streaming/` (the Spark engine) imports only those two, never `simulations/`, which drives both
engines. Every import counts, at module level or inside a function (a lazy import is an import all the same),
as does `importlib.import_module` of a literal name. The standard library and third-party packages are free.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Which of the project's packages each layer may import (itself included).
ALLOWED = {
    "state": {"state"},
    "tableio": {"state", "tableio"},
    "streaming": {"state", "tableio", "streaming"},
}


def project_names() -> set[str]:
    """The project's top-level importable names: its folders of Python code and its top-level modules."""
    names = {p.stem for p in ROOT.glob("*.py")}
    names |= {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".") and any(p.rglob("*.py"))}
    return names


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file at `path` (a from-import's names each appended to
    its module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module
            # each name is counted as module.name: `from state.classic import manager` imports the manager
            for alias in node.names:
                yield node.lineno, f"{module}.{alias.name}"
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (getattr(node.func, "attr", None) == "import_module" or getattr(node.func, "id", None)
                   in ("import_module", "__import__"))):
            yield node.lineno, node.args[0].value


def violations(layer: str) -> list[str]:
    forbidden = project_names() - ALLOWED[layer]
    found = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for line, module in imported_modules(path):
            if module.split(".")[0] in forbidden:
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    return found


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_the_layers_below_it(layer):
    found = violations(layer)
    assert not found, (f"{layer}/ may import only {', '.join(sorted(ALLOWED[layer]))} of the project's packages:\n"
                       + "\n".join(found))


def test_the_rule_sees_every_package_of_the_project():
    assert set(ALLOWED) | {"simulations", "tests", "benchmarks", "scripts"} <= project_names()


# Inside the core, as in Kafka's group-coordinator: the coordinator side (the classic group, the consumer group,
# the offsets, their records) never reaches the client side, and the client side reaches the coordinator only
# through requests and answers (the messages a ConsumerGroupHeartbeat carries, topic ids) — only the runtime,
# which interleaves them, imports both (docs/architecture.md).
COORDINATOR = ("state.classic", "state.consumer_group", "state.offsets", "state.records")
# What a client may read of the coordinator's packages: the wire's shapes, not the coordinator's state.
WIRE = ("state.classic.consumer_protocol", "state.classic.group_state", "state.consumer_group.messages",
        "state.consumer_group.topic_id", "state.offsets.production")


def _imports_of(folder: str) -> Iterator[tuple[str, int, str]]:
    for path in sorted((ROOT / folder).rglob("*.py")):
        for line, module in imported_modules(path):
            yield str(path.relative_to(ROOT)), line, module


def test_the_coordinator_side_never_imports_the_client_side():
    found = [f"{path}:{line}: imports {module}" for folder in ("state/classic", "state/consumer_group",
                                                               "state/offsets", "state/records")
             for path, line, module in _imports_of(folder) if module.startswith("state.clients")]
    assert not found, "\n".join(found)


def test_the_client_side_reads_only_the_wire_of_the_coordinator_side():
    found = [f"{path}:{line}: imports {module}" for path, line, module in _imports_of("state/clients")
             if module.startswith(COORDINATOR) and not module.startswith(WIRE)]
    assert not found, "\n".join(found)


def test_only_the_tests_and_benchmarks_import_the_native_engine():
    # coordsim_native (native/, docs/native.md) is driven only by the parity tests and measured by the
    # benchmarks until the runtime is ported and a core setting chooses it.
    found = [f"{path.relative_to(ROOT)}:{line}: imports {module}"
             for name in sorted(project_names() - {"tests", "benchmarks"}) for path in sorted(_python_files(name))
             for line, module in imported_modules(path) if module.split(".")[0] == "coordsim_native"]
    assert not found, "only tests/ and benchmarks/ may import coordsim_native:\n" + "\n".join(found)


def _python_files(name: str) -> list[Path]:
    path = ROOT / name
    return list(path.rglob("*.py")) if path.is_dir() else [ROOT / f"{name}.py"]
