"""Local engine vs Spark engine on the same synthetic events: wall time, events/s, cost per group call.

Workload, per group (10 events): three dynamic consumers join (KIP-394: MEMBER_ID_REQUIRED, then the join
with the id), the leader syncs the assignment and the followers sync, the leader heartbeats once; after the
last event every session expires during the drain. Groups start 7 ms apart, so event time spans
G * 7 ms + 13 s; the input is 8 time-ordered JSONL files, all read in one micro-batch.

Each measurement is end to end in a fresh process, as a user runs it: `coordsim replay` with
`--engine local` (read, run, write the tables), and `python -m streaming.engine` (JVM start included). The
Spark runs' tables are checked against the local run's, byte for byte.

    .venv/bin/python benchmarks/engine.py --groups 100 1000 10000 --modes local spark-groups spark-buckets
    .venv/bin/python benchmarks/engine.py --groups 100000 --modes local spark-buckets

Results are appended to benchmarks/results/engine.jsonl and printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from state.runtime.member_ids import MemberIds  # noqa: E402
from benchmarks.recording import record  # noqa: E402

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
FILES = 8
MEMBERS = 3
MODES = {
    "local": [],
    "spark-groups": ["--spark-set", "streaming.state.buckets=0"],
    "spark-buckets": ["--spark-set", "streaming.state.buckets={buckets}"],
}


def group_rows(g: int) -> list[dict]:
    group_id = f"group-{g:06d}"
    t0 = T0 + g * 7
    # The ids the coordinator hands out, in join order (it derives them from the group id and a counter).
    probe = MemberIds(group_id)
    ids = [probe.member_id(f"client-{m}") for m in range(MEMBERS)]
    join = dict(group_id=group_id, type="JOIN_GROUP", protocol_type="consumer",
                protocols=[{"name": "range", "topics": ["orders"]}], session_timeout_ms=45_000,
                rebalance_timeout_ms=300_000)
    rows = [dict(join, ts=t0 + m, member_id="", client_id=f"client-{m}") for m in range(MEMBERS)]
    rows += [dict(join, ts=t0 + 10 + m, member_id=ids[m], client_id=f"client-{m}") for m in range(MEMBERS)]
    assignment = [{"member_id": ids[m], "partitions": [{"topic": "orders", "partitions": [m]}]} for m in range(MEMBERS)]
    rows += [dict(group_id=group_id, type="SYNC_GROUP", ts=t0 + 10_000 + m, member_id=ids[m], generation_id=1,
                  client_id=f"client-{m}", assignments=assignment if m == 0 else []) for m in range(MEMBERS)]
    rows.append(dict(group_id=group_id, type="HEARTBEAT", ts=t0 + 13_000, member_id=ids[0], generation_id=1,
                     client_id="client-0"))
    return rows


def write_input(folder: Path, groups: int) -> int:
    """The workload as FILES time-ordered JSONL files (reused when already there); returns the event count."""
    done = folder / "_done"
    if done.exists():
        return int(done.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows = sorted((row for g in range(groups) for row in group_rows(g)), key=lambda r: r["ts"])
    size = -(-len(rows) // FILES)
    for index in range(FILES):
        chunk = rows[index * size:(index + 1) * size]
        (folder / f"events-{index}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in chunk))
    done.write_text(str(len(rows)))
    return len(rows)


def run(mode: str, events: Path, out: Path, buckets: int) -> float:
    shutil.rmtree(out, ignore_errors=True)
    if mode == "local":
        command = [str(REPO / ".venv" / "bin" / "coordsim"), "replay", str(events), "--out", str(out),
                   "--engine", "local"]
    else:
        command = [sys.executable, "-m", "streaming.engine", str(events), "--out", str(out), "--quiet"]
        command += [arg.format(buckets=buckets) for arg in MODES[mode]]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-4000:]}")
    return wall


def same_tables(a: Path, b: Path) -> bool:
    from state.tables import TABLES

    return all((a / t / "part-00000.parquet").read_bytes() == (b / t / "part-00000.parquet").read_bytes()
               for t in TABLES)


def spark_facts(out: Path) -> dict:
    """From a Spark run's record: its own wall time (session start excluded), phases, and how many times
    the step ran a group (committed `engine_meta` rows; with group keys, one per key call)."""
    from streaming import sink
    from streaming.step import META_TABLE

    run_record = json.loads((out / "_run.json").read_text())
    batch_ms = [r["duration_ms"] for r in sink.read_progress(out / "_batches").values()]
    group_calls = sum(part.num_rows for _, part in sink.read_committed(out / "_batches", META_TABLE))
    return {"run_s": run_record["wall_s"], "phases_s": run_record["phases_s"], "batches": run_record["batches"],
            "batch_s_sum": round(sum(batch_ms) / 1000, 1), "group_calls": group_calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--buckets", type=int, default=256)
    parser.add_argument("--work", type=Path, default=Path("/tmp/coordsim-bench"))
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "engine.jsonl")
    args = parser.parse_args()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for groups in args.groups:
        events_dir = args.work / f"g{groups}" / "events"
        n_events = write_input(events_dir, groups)
        local_out = args.work / f"g{groups}" / "out-local"
        local_s = None
        for mode in args.modes:
            out = args.work / f"g{groups}" / f"out-{mode}"
            load_before = os.getloadavg()[0]
            wall = run(mode, events_dir, out, args.buckets)
            row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "groups": groups,
                   "events": n_events, "mode": mode, "wall_s": round(wall, 1),
                   "events_per_s": round(n_events / wall), "buckets": args.buckets if mode == "spark-buckets" else 0,
                   # The machine is shared: the 1-minute load average around the run says how quiet it was.
                   "load_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)]}
            if mode == "local":
                local_s = wall
            else:
                facts = spark_facts(out)
                row.update(facts)
                row["ms_per_group_call"] = round(1000 * facts["run_s"] / facts["group_calls"], 2)
                if local_s is not None:
                    row["spark_over_local"] = round(wall / local_s, 1)
                    row["same_tables_as_local"] = same_tables(local_out, out)
            rows.append(row)
            record(args.results, row)
    print("\n| groups | events | mode | wall (s) | events/s | Spark run (s) | group calls | ms/group call "
          "| Spark/local | same tables |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['groups']:,} | {r['events']:,} | {r['mode']} | {r['wall_s']} | {r['events_per_s']:,} "
              f"| {r.get('run_s', '-')} | {r.get('group_calls', '-')} | {r.get('ms_per_group_call', '-')} "
              f"| {r.get('spark_over_local', '-')} | {r.get('same_tables_as_local', '-')} |")


if __name__ == "__main__":
    main()
