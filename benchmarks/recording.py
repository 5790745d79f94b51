"""What every benchmark does with a result: append it as one JSON line to its file under benchmarks/results/
(the rows docs/benchmarks.md quotes) and print it."""

from __future__ import annotations

import json
from pathlib import Path


def record(path: Path, row: dict, indent: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=indent), flush=True)
