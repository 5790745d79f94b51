"""The compiled core against the Python core: one benchmark run alternately on each, in fresh processes.

The core is chosen when `state` is imported, so each run is a process of its own: the Python core with
COORDSIM_NATIVE=0, then the compiled build (`python -m state.native build` must have made it), `--rounds`
times. On a shared machine the load drifts; alternating pairs keep each ratio's two runs close in time.
The benchmark appends its own rows (each says which core ran) to its results file as usual; this script
then records, per round, the Python/compiled ratio of every CPU figure in them (benchmarks/results/native.jsonl).

    .venv/bin/python benchmarks/native.py --rounds 3 -- benchmarks/engine_cpu.py --groups 10000
    .venv/bin/python benchmarks/native.py --rounds 3 -- benchmarks/storm.py --groups 20 --engines runtime
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.recording import record  # noqa: E402
from state.native import status  # noqa: E402

CORES = {"python": {"COORDSIM_NATIVE": "0"}, "compiled": {"COORDSIM_NATIVE": "1"}}


def cpu_figures(row: dict, prefix: str = "") -> dict[str, float]:
    """Every number under a key that names CPU seconds, by its path in the row ("cpu_s/local: run")."""
    found = {}
    for key, value in row.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            found.update(cpu_figures(value, f"{path}/"))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and "cpu" in path:
            found[path] = value
    return found


def run_once(script: list[str], results: Path, core: str) -> list[dict]:
    """The rows one run of the benchmark appended to `results`, checked to come from `core`."""
    before = results.read_text(encoding="utf-8").count("\n") if results.exists() else 0
    env = dict(os.environ, **CORES[core], PYSPARK_PYTHON=sys.executable)
    done = subprocess.run([sys.executable, *script, "--results", str(results)], cwd=REPO, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(script)} failed on the {core} core (exit status {done.returncode})")
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()[before:]]
    wrong = [row.get("core") for row in rows if row.get("core") != core]
    if wrong:
        raise SystemExit(f"a run meant for the {core} core ran on {wrong[0]}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "native.jsonl")
    parser.add_argument("script", nargs="+", help="the benchmark and its arguments (after --)")
    args = parser.parse_args()
    if not status()["built"]:
        raise SystemExit("no compiled build of state/ for these sources: run `python -m state.native build` first")
    results = REPO / "benchmarks" / "results" / f"{Path(args.script[0]).stem}.jsonl"
    for round_ in range(1, args.rounds + 1):
        load = [round(x, 1) for x in os.getloadavg()]
        runs = {core: run_once(args.script, results, core) for core in CORES}
        ratios = {}
        for python_row, compiled_row in zip(runs["python"], runs["compiled"]):
            label = "/".join(str(python_row[k]) for k in ("engine", "run") if k in python_row)
            compiled = cpu_figures(compiled_row)
            for path, seconds in cpu_figures(python_row).items():
                if compiled.get(path):
                    ratios[f"{label}/{path}" if label else path] = round(seconds / compiled[path], 2)
        record(args.results, {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                              "command": " ".join(args.script), "round": round_, "load_average": load,
                              "python_over_compiled": ratios}, indent=1)


if __name__ == "__main__":
    main()
