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
    """(line, absolute module name) of every import in the file at `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                yield node.lineno, ".".join([*base, *([node.module] if node.module else [])])
            else:
                yield node.lineno, node.module
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
