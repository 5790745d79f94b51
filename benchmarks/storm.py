"""Rebalance storm vs quiet hour: N groups x M synthetic members for one simulated hour.

- storm: every member of every group is restarted once (rolling restart from minute 5: 20 s down, 30 s gap,
  up to 5 s jitter), dynamic members with eager range assignment and Kafka's default consumer settings;
- quiet: the same groups for the same hour with nothing happening to them.

Each run is end to end in a fresh process, as a user runs it: `coordsim run SCENARIO --engine local`, and for
Spark `coordsim generate` then `python -m streaming.engine EVENTS --until END` with state buckets (JVM start
included). Reported per run: wall time, simulated-time speed-up (one hour / wall time), peak memory, and the
work behind it: directive events in, requests the synthetic clients sent (each one an event the coordinator
processed; a quiet run of heartbeats or auto-commits is one row of the `requests` table), rows written per
table. The quiet hour is reported as a fraction of the storm. The load average is recorded with each run (the
machine may be shared).

    .venv/bin/python benchmarks/storm.py --groups 25 --members 10 --engines local spark
    .venv/bin/python benchmarks/storm.py                      # the target size: 10,000 x 10
    .venv/bin/python benchmarks/storm.py --groups 3 --engines runtime   # work per group-hour, both modes
    .venv/bin/python benchmarks/storm.py --groups 200 --engines spark --runs storm --slice 1m   # in slices
    .venv/bin/python benchmarks/storm.py --groups 100 --engines local --protocol consumer   # KIP-848 fleet

`--slice` runs the Spark engine in slices of simulated time (docs/spark.md, "Slices"); a Spark row then
also has the run's micro-batches and its wall time per phase (`OUT/_run.json`). `visits` counts, in this
process, what slicing adds per group: the visits (a group's runtime decoded, advanced, encoded) a run makes
at each slice size, against an unsliced run's, and the encoding and decoding time of a storm group, and the
time and size of its live snapshot (taken at every visit, state/runtime/snapshot.py):

    .venv/bin/python benchmarks/storm.py --groups 5 --engines visits --runs storm

`runtime` runs the groups in this process through `GroupRuntime` directly, with periodic elision off
(explicit) and on (elided), and reports per group-hour the steps applied (`GroupRuntime.steps`) and the CPU
seconds: the simulation's own work, without event generation, I/O, report or JVM.

Results are appended to benchmarks/results/storm.jsonl and printed as a Markdown table.
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

import pyarrow.parquet as pq  # noqa: E402

from simulations.views.quiet_runs import count_requests  # noqa: E402
from state.tables import TABLES  # noqa: E402
from benchmarks.recording import record  # noqa: E402

HOUR_S = 3_600
UNTIL = "2026-01-01T01:00:00Z"  # the scenarios' default start plus one hour
TIME = "/usr/bin/time"


def scenario(groups: int, members: int, storm: bool, protocol: str = "classic") -> str:
    # The consumer protocol's fleet: the same groups, the coordinator's range assignor in place of the clients'.
    assignment = ("config: {group.protocol: consumer, group.remote.assignor: range}" if protocol == "consumer"
                  else "assignors: [range]")
    text = f"""\
name: {"storm" if storm else "quiet"}
duration: 1h
seed: 1
group_sets:
  - name: fleet
    groups: {groups}
    members: {members}
    topics: [{{name: orders, partitions: {2 * members}, records_per_second: 100}}]
    {assignment}
"""
    if storm:
        text += "timeline:\n  - {at: 5m, action: rolling_restart, downtime: 20s, gap: 30s, jitter: 5s}\n"
    return text


def timed(command: list[str], env: dict) -> tuple[float, int | None]:
    """Wall seconds and peak resident memory (MB, when /usr/bin/time is there) of a command."""
    report = None
    if Path(TIME).exists():
        report = Path(f"/tmp/coordsim-storm-time-{os.getpid()}")
        command = [TIME, "-f", "%M", "-o", str(report), *command]
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    peak = None if report is None else round(int(report.read_text().split()[-1]) / 1024)
    return wall, peak


def run(engine: str, scenario_file: Path, out: Path, buckets: int, spark_sets: list[str], slice_text: str | None
        ) -> tuple[float, int | None]:
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    coordsim = str(REPO / ".venv" / "bin" / "coordsim")
    if engine == "local":
        return timed([coordsim, "run", str(scenario_file), "--out", str(out), "--engine", "local"], env)
    events = out.parent / f"{out.name}-events.jsonl"
    generate_s, _ = timed([coordsim, "generate", str(scenario_file), "--out", str(events)], env)
    wall, peak = timed([sys.executable, "-m", "streaming.engine", str(events), "--out", str(out), "--until", UNTIL,
                        "--spark-set", f"streaming.state.buckets={buckets}", "--quiet",
                        *(arg for setting in spark_sets for arg in ("--spark-set", setting)),
                        *(("--slice", slice_text) if slice_text else ())], env)
    return generate_s + wall, peak


def spark_run(out: Path, slice_text: str | None) -> dict:
    record = json.loads((out / "_run.json").read_text())
    return {"slice": slice_text, "batches": record["batches"], "phases_s": record["phases_s"]}


def work(out: Path) -> dict:
    """What the run had to do: directives in, client requests (a quiet run's `requests` row counts its
    repeats) and the rows that hold them, rows written per table."""
    rows = {t: pq.read_metadata(out / t / "part-00000.parquet").num_rows for t in TABLES}
    requests = pq.read_table(out / "requests" / "part-00000.parquet", columns=["repeat_count"]).to_pandas()
    events = out / "scenario" / "events.jsonl"
    if not events.exists():
        events = out.parent / f"{out.name}-events.jsonl"
    directives = sum(1 for _ in events.open())
    return {"directives": directives, "requests": count_requests(requests),
            "request_rows": rows["requests"], "rows_written": sum(rows.values()), "rows": rows}


def scenario_events(scenario_file: Path) -> tuple[dict[str, list], int, object]:
    """The scenario's events by group, its end and its broker settings, for running the core alone."""
    from simulations import scenarios
    from tableio.coordinator_settings import load_config
    from state.events import parse_event

    loaded = scenarios.load_scenario(scenario_file)
    generated = scenarios.generate(loaded)
    by_group: dict[str, list] = {}
    for line, row in enumerate(generated.rows, start=1):
        by_group.setdefault(row["group_id"], []).append(parse_event(row, "scenario", line))
    return by_group, generated.until_ms, load_config(scenario=loaded.broker)


def run_groups(by_group: dict[str, list], config, until_ms: int) -> int:
    """Each group's events through its own GroupRuntime to the end; the steps taken."""
    from state.runtime.group_runtime import GroupRuntime

    steps = 0
    for group_id, events in by_group.items():
        runtime = GroupRuntime(group_id, config)
        runtime.offer(events)
        runtime.advance_to(until_ms)
        runtime.finish()
        steps += runtime.steps
    return steps


def runtime_work(scenario_file: Path) -> dict:
    """Steps and CPU seconds per group-hour with elision off and on (same tables either way)."""
    import dataclasses

    by_group, until_ms, config = scenario_events(scenario_file)
    found = {}
    for name, elision in (("explicit", 0), ("elided", 1)):
        started = time.process_time()
        steps = run_groups(by_group, dataclasses.replace(config, coordsim_periodic_elision=elision), until_ms)
        found[name] = {"steps_per_group": steps // len(by_group),
                       "cpu_s_per_group": round((time.process_time() - started) / len(by_group), 3)}
    return found


def slice_visits(scenario_file: Path, delay_ms: int = 30_000) -> dict:
    """Per group: visits unsliced (horizons as the engine's phases set them) and per slice size, each
    group's runtime run to every horizon at which something is due for it; and the mean encode and decode
    time of a group runtime during the storm (minutes 5 to 14)."""
    from simulations import scenarios
    from tableio.coordinator_settings import load_config
    from state.events import parse_event
    from state.runtime.group_runtime import GroupRuntime

    loaded = scenarios.load_scenario(scenario_file)
    generated = scenarios.generate(loaded)
    config = load_config(scenario=loaded.broker)
    by_group: dict[str, list] = {}
    for line, row in enumerate(generated.rows, start=1):
        by_group.setdefault(row["group_id"], []).append(parse_event(row, "scenario", line))
    start, until = generated.start_ms, generated.until_ms
    last = max(row["ts"] for row in generated.rows)
    codec = {"encode": [], "decode": [], "snapshot": []}
    snapshot_bytes = []

    def visits(horizons: list[int]) -> float:
        total = 0
        for group_id, events in by_group.items():
            runtime, pending = None, sorted(events, key=lambda e: e.ts)
            for horizon in horizons:
                due = [e for e in pending if e.ts <= horizon]
                wakeup = None if runtime is None else runtime.next_wakeup()
                if not due and (wakeup is None or wakeup > horizon):
                    continue
                runtime = runtime or GroupRuntime(group_id, config)
                runtime.offer(due)
                pending = pending[len(due):]
                runtime.advance_to(horizon)
                runtime.take_output()
                total += 1
                if start + 5 * 60_000 <= horizon <= start + 14 * 60_000:
                    began = time.perf_counter()
                    blob = runtime.encode()
                    encoded = time.perf_counter()
                    runtime = GroupRuntime.decode(blob, config)
                    decoded = time.perf_counter()
                    snapshot_bytes.append(len(runtime.live_snapshot()))
                    codec["encode"].append(encoded - began)
                    codec["decode"].append(decoded - encoded)
                    codec["snapshot"].append(time.perf_counter() - decoded)
        return round(total / len(by_group), 1)

    found = {"unsliced": visits([-1, last - delay_ms - 1, until])}
    for minutes in (1, 2, 5, 10, 15):
        step = minutes * 60_000
        found[f"{minutes}m"] = visits([*range(start, until, step), until])
    found["encode_ms"], found["decode_ms"], found["snapshot_ms"] = (round(1000 * sum(v) / len(v), 2)
                                                                    for v in codec.values())
    found["snapshot_bytes"] = round(sum(snapshot_bytes) / len(snapshot_bytes))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--engines", nargs="+", choices=["local", "spark", "runtime", "visits"],
                        default=["local", "spark"])
    parser.add_argument("--buckets", type=int, default=64, help="Spark: streaming.state.buckets")
    parser.add_argument("--spark-set", action="append", default=[], metavar="NAME=VALUE",
                        help="Spark: another engine or spark.* setting, e.g. spark.driver.memory=12g")
    parser.add_argument("--slice", metavar="DURATION", help="Spark: simulated time per micro-batch (--slice)")
    parser.add_argument("--runs", nargs="+", choices=["storm", "quiet"], default=["storm", "quiet"])
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic",
                        help="group.protocol of the fleet (consumer: KIP-848, the coordinator's range assignor)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/coordsim-storm"))
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "storm.jsonl")
    args = parser.parse_args()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    folder = args.work / f"g{args.groups}-m{args.members}{'-consumer' if args.protocol == 'consumer' else ''}"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for engine in args.engines:
        walls = {}
        for kind in args.runs:
            scenario_file = folder / f"{kind}.yaml"
            scenario_file.write_text(scenario(args.groups, args.members, kind == "storm", args.protocol))
            if engine in ("runtime", "visits"):
                measure = runtime_work if engine == "runtime" else slice_visits
                row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "engine": engine,
                       "run": kind, "protocol": args.protocol, "groups": args.groups, "members": args.members,
                       "load_average": [round(x, 1) for x in os.getloadavg()], **measure(scenario_file)}
                record(args.results, row)
                continue
            out = folder / f"out-{engine}-{kind}"
            wall, peak = run(engine, scenario_file, out, args.buckets, args.spark_set, args.slice)
            walls[kind] = wall
            row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "engine": engine,
                   "run": kind, "protocol": args.protocol, "groups": args.groups, "members": args.members,
                   "buckets": args.buckets if engine == "spark" else 0,
                   "spark_settings": args.spark_set if engine == "spark" else [],
                   **(spark_run(out, args.slice) if engine == "spark" else {}), "wall_s": round(wall, 1),
                   "speed_up": round(HOUR_S / wall, 1), "peak_mb": peak,
                   "load_average": [round(x, 1) for x in os.getloadavg()], **work(out)}
            if kind == "quiet" and "storm" in walls:
                row["quiet_over_storm"] = round(wall / walls["storm"], 2)
            rows.append(row)
            record(args.results, row)
    print("\n| engine | run | protocol | groups × members | wall (s) | speed-up | peak MB | directives | client requests "
          "| rows written | quiet / storm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        label = ", ".join([*([f"{r['buckets']} buckets"] if r["buckets"] else []),
                           *([f"slice {r['slice']}"] if r.get("slice") else [])])
        print(f"| {r['engine']}{f' ({label})' if label else ''} | {r['run']} | {r['protocol']} "
              f"| {r['groups']:,} × {r['members']} | {r['wall_s']} | {r['speed_up']}× | {r['peak_mb'] or '-'} "
              f"| {r['directives']:,} | {r['requests']:,} | {r['rows_written']:,} | {r.get('quiet_over_storm', '-')} |")


if __name__ == "__main__":
    main()
