"""Where the engines' Python time goes on `benchmarks/engine.py`'s workload: CPU seconds per stage, without Spark.

The wall times of `benchmarks/engine.py` depend on how busy the shared machine is; the CPU time of one process
much less. This script runs, in this process and one stage after the other:

- the local engine: `read_events` (read + validate), `run_local`, `write_tables`;
- the Spark engine's Python work: the source's reader over every input file (validate, pickle, Arrow
  batches), then the step (`streaming.step.make_step`, keyed on 256 buckets as `spark-buckets` is) called the
  way the engine's three phases call it: *main* (every event arrives and waits for the watermark), *drain*
  (the watermark passes the last event: everything is applied), *finish* (end-of-run rows at the final time),
  and the driver's compaction of the step's output, in memory (`streaming.sink.decode_table` +
  `write_arrow_tables`, then the derived `coordinator_load`: the engine's `streaming.compaction` adds spill files
  and per-range lag status).

Spark's own work (JVM, shuffle, state store, Parquet envelope files) is not in it: that is what the wall time
of `benchmarks/engine.py` adds. Both engines' tables are checked to be byte-identical.

    .venv/bin/python benchmarks/engine_cpu.py --groups 10000
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import shutil
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks.engine import write_input  # noqa: E402
from simulations.engines.local import run_local  # noqa: E402
from tableio.coordinator_load import write_coordinator_load  # noqa: E402
from tableio.inputs import event_files, read_events  # noqa: E402
from tableio.parquet import PART_FILE, arrow_schema, write_arrow_tables, write_tables  # noqa: E402
from state.config import CoordinatorConfig  # noqa: E402
from state.tables import TABLES  # noqa: E402
from streaming import sink  # noqa: E402
from streaming.source import _arrow_batches, end_of_run_payload, input_rows  # noqa: E402
from streaming.step import make_step  # noqa: E402
from benchmarks.recording import record  # noqa: E402

BUCKETS = 256


class KeyState:
    """What the step uses of Spark's GroupState for one key, kept in this process."""

    def __init__(self) -> None:
        self.value: tuple | None = None
        self.watermark = 0

    def getCurrentWatermarkMs(self) -> int:  # noqa: N802 (Spark's name)
        return self.watermark

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value

    def setTimeoutTimestamp(self, timestamp: int) -> None:  # noqa: N802 (Spark's name)
        pass  # the phases below call every key anyway


def local_stages(events: Path, out: Path) -> tuple[dict[str, float], int, int, int]:
    """CPU per stage, the event count, the last event's time and the run's final time."""
    cpu = {}
    started = time.process_time()
    rows = read_events([events])
    cpu["local: read + validate"] = time.process_time() - started
    started = time.process_time()
    result = run_local(rows.events, CoordinatorConfig())
    cpu["local: run"] = time.process_time() - started
    result.tables["rejects"] = rows.rejects + result.tables["rejects"]
    started = time.process_time()
    write_tables(out, result.tables)
    cpu["local: write tables"] = time.process_time() - started
    return cpu, len(rows.events), max(e.ts for e in rows.events), result.final_ts


def source_stage(events: Path) -> tuple[float, dict[int, list[tuple[str, int, bytes]]]]:
    """The source's rows of every input file, bucketed as the engine's `pmod(xxhash64(group), N)` would
    spread them (another hash, the same kind of spread)."""
    started = time.process_time()
    batches = [batch for path in event_files([events]) for batch in _arrow_batches(input_rows(str(path), str(path), None))]
    cpu = time.process_time() - started
    buckets: dict[int, list[tuple[str, int, bytes]]] = {}
    for batch in batches:
        times = batch.column("event_time").cast(pa.int64()).to_pylist()
        for group_id, ts_us, payload in zip(batch.column("key").to_pylist(), times, batch.column("payload").to_pylist()):
            buckets.setdefault(zlib.crc32(group_id.encode()) % BUCKETS, []).append((group_id, ts_us // 1000, payload))
    return cpu, buckets


def step_stages(buckets: dict[int, list[tuple[str, int, bytes]]], last: int, final: int, out: Path
                ) -> dict[str, float]:
    """The engine's phases: a watermark of 0 (nothing due), then last + 1 and final + 1 (horizon = watermark - 1)."""
    step = make_step(CoordinatorConfig(), None, bucketed=True)
    states = {bucket: KeyState() for bucket in buckets}
    frames: list[pd.DataFrame] = []

    def call(bucket: int, rows: list[tuple[str, int, bytes]], watermark: int) -> None:
        state = states[bucket]
        state.watermark = watermark
        chunk = pd.DataFrame({"key": [str(bucket)] * len(rows), "group_id": [r[0] for r in rows],
                              "event_time": pd.to_datetime([r[1] for r in rows], unit="ms"),
                              "payload": [r[2] for r in rows]})
        frames.extend(step((str(bucket),), iter([chunk] if rows else []), state))

    phases = {
        "spark step: main (events wait)": lambda bucket, rows: call(bucket, rows, 0),
        "spark step: drain (all applied)": lambda bucket, rows: call(bucket, [], last + 1),
        "spark step: finish": lambda bucket, rows: call(
            bucket, [(g, final + 1, end_of_run_payload(final)) for g in sorted({r[0] for r in rows})], final + 1),
    }
    cpu = {}
    for name, phase in phases.items():
        started = time.process_time()
        for bucket, rows in buckets.items():
            phase(bucket, rows)
        cpu[name] = time.process_time() - started
    started = time.process_time()
    tables = {}
    for name in TABLES:
        parts = [sink.decode_table(name, payload) for frame in frames
                 for table, payload in zip(frame["table"], frame["payload"]) if table == name]
        tables[name] = pa.concat_tables(parts) if parts else arrow_schema(name).empty_table()
    write_arrow_tables(out, tables)
    write_coordinator_load(out, final)  # derived from the written tables, as the engine's compaction does
    cpu["spark driver: compaction"] = time.process_time() - started
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/coordsim-bench"))
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "engine_cpu.jsonl")
    args = parser.parse_args()
    events = args.work / f"g{args.groups}" / "events"
    write_input(events, args.groups)
    local_out, spark_out = args.work / f"g{args.groups}" / "cpu-local", args.work / f"g{args.groups}" / "cpu-spark"
    cpu, n_events, last, final = local_stages(events, local_out)
    gc.collect()
    source_cpu, buckets = source_stage(events)
    cpu["spark source: read + validate + pickle"] = source_cpu
    # The step runs in Spark's Python workers, whose heap holds only the call at hand: keep this process's
    # inputs out of the collector's way, as they would be.
    gc.collect()
    gc.freeze()
    cpu.update(step_stages(buckets, last, final, spark_out))
    same = all((local_out / t / PART_FILE).read_bytes() == (spark_out / t / PART_FILE).read_bytes() for t in TABLES)
    row = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "groups": args.groups,
           "events": n_events, "buckets": BUCKETS, "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
           "same_tables": same, "load_1m": round(os.getloadavg()[0], 1)}
    record(args.results, row)
    print("\n| stage | CPU (s) | µs per event |\n|---|---|---|")
    for name, seconds in cpu.items():
        print(f"| {name} | {seconds:.1f} | {seconds / n_events * 1e6:.1f} |")
    shutil.rmtree(local_out)
    shutil.rmtree(spark_out)


if __name__ == "__main__":
    main()
