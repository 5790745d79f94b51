"""CPU time and peak memory of a command's processes, by kind: the JVM, the Python workers it starts, and the
other processes (the driver's Python, the benchmark's own).

Samples `/proc` every `--every` seconds while the command runs: for each kind, the CPU seconds of its
processes (user + system, as last seen alive: a process that ends between two samples loses its last
interval) and the largest sum of their resident memory. A process is a worker when a JVM is among its
ancestors.

    .venv/bin/python benchmarks/process_usage.py -- .venv/bin/python -m streaming.engine EVENTS --out DIR \\
        --quiet --spark-set streaming.state.buckets=256

Results are appended to benchmarks/results/process_usage.jsonl and printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.recording import record  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def descendants(root: int) -> dict[int, tuple[str, int, float]]:
    """pid -> (kind, CPU ticks, resident MB) of every process under `root`."""
    children, info = defaultdict(list), {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            resident = int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * PAGE_MB
        except OSError:
            continue  # ended while we looked
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        children[int(fields[1])].append(int(entry))
        info[int(entry)] = (comm, int(fields[11]) + int(fields[12]), resident)
    found, stack = {}, [(root, False)]
    while stack:
        pid, under_jvm = stack.pop()
        for child in children.get(pid, ()):
            comm, ticks, resident = info[child]
            kind = "jvm" if comm == "java" else ("worker" if under_jvm else "other")
            found[child] = (kind, ticks, resident)
            stack.append((child, under_jvm or comm == "java"))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "process_usage.jsonl")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    ticks: dict[int, tuple[str, int]] = {}
    peak_mb: Counter = Counter()
    while process.poll() is None:
        resident: Counter = Counter()
        for pid, (kind, cpu, mb) in descendants(os.getpid()).items():
            ticks[pid] = (kind, cpu)
            resident[kind] += mb
        for kind, mb in resident.items():
            peak_mb[kind] = max(peak_mb[kind], mb)
        time.sleep(args.every)
    cpu_s: Counter = Counter()
    for kind, cpu in ticks.values():
        cpu_s[kind] += cpu / TICK
    row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "command": command,
           "exit": process.returncode, "wall_s": round(time.monotonic() - started, 1),
           "cpu_s": {k: round(v, 1) for k, v in sorted(cpu_s.items())},
           "peak_mb": {k: round(v) for k, v in sorted(peak_mb.items())},
           "load_1m": round(os.getloadavg()[0], 1)}
    record(args.results, row)


if __name__ == "__main__":
    main()
