"""The Spark engine: a replay of event files through Structured Streaming, with the local engine's tables.

One streaming query per run, checkpointed under `OUT/_checkpoints/events`, run with `availableNow` in up to
three phases; each phase is a restart of the same query over a longer file list:

1. main: every input file, its rows first written by the driver to `OUT/_source/` (streaming/source.py).
   The watermark trails the latest event by `streaming.watermark.delay.ms`. With a slice (`slice_ms`,
   `--slice`), the input's rows are split by event time into slice files there instead, read one per
   micro-batch: each micro-batch moves the horizon by one
   slice of simulated time, and `speed` holds each slice to the wall clock (streaming/slices.py).
2. drain to L (skipped with `until`): a control file whose sentinel row moves the watermark to L + 1, L
   being the last event's time, and whose wake rows bring every group to L, as the local engine's groups
   are before it picks the final time (a group with nothing due would otherwise report its deadlines as of
   its last visit, and an elided client's session deadline moves on with the clock). The driver reads the
   groups' latest pending deadlines from the committed `engine_meta` rows:
   final = max(L, the latest of them), or `until`.
3. finish at final: one control file moves the watermark past final (unless a sliced run's last slice
   already did), the next carries an end-of-run row for every group; each group applies everything up to
   final, then ends its run.

Then the committed batches are compacted into `OUT/<table>/part-00000.parquet` with the local engine's
writer, out of core (`streaming.compaction`; the executors already turned each call's rows into Arrow
record batches).
Every decision is kept in a file (the control files, the checkpoint, the sink's commit log), so running the
same command again after a kill resumes where it stopped and gives the same tables.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from tableio.captured import captured_records
from tableio.inputs import event_files
from tableio.parquet import WrittenTables
from tableio.run_record import RUN_FILE, final_time, variant_settings, write_run_record
from tableio.run_result import RunResult
from state.config import CoordinatorConfig
from streaming import compaction, slices
from streaming.buckets import bucket_labels
from streaming import sink as batches
from streaming.progress import ProgressListener, RunDisplay, print_summary, warn_late_rows
from streaming.session import get_session, resolve_settings, run_session, stop_session
from streaming.source import (SCHEMA, SOURCE_DIR, input_rows, read_control_final, source_file, write_control,
                              write_rows)
from streaming.step import (ARROW_BATCH_ENVELOPES, META_TABLE, OUTPUT_SCHEMA, STATE_SCHEMA, GroupFacts, decode_facts,
                            horizon_of, make_step, warm_worker)

# Control files, in the order the phases write them, after the main phase's files (their place in the list).
DRAIN_TO_LAST = (0, "drain-to-last-event")
ADVANCE_TO_FINAL = (1, "advance-to-final")
END_OF_RUN = (2, "end-of-run")
# Lists the main phase's files, written last (`_`: Spark's listing skips it).
MAIN_FILES = "_main.json"


class RunMismatch(Exception):
    """OUT holds the checkpoint of a different run (other inputs or settings, or an older micro-batch format)."""


class WorkerTimeout(Exception):
    """Spark gave up waiting for a Python worker to start: the machine, not the run, failed."""


# The cause Spark reports when a new Python worker did not connect back in time.
WORKER_TIMEOUT = "Python worker failed to connect back"


@dataclass
class SparkRunResult(RunResult):
    """A run's result, as the local engine's, plus what only a Spark run has. `tables` (a `WrittenTables`) reads
    every table as written under `out_dir`, input rejects included."""

    tables: WrittenTables = field(default_factory=WrittenTables)
    out_dir: str = ""
    batches: int = 0
    late_rows: int = 0
    # Committed micro-batches whose progress report was lost in a kill: their late rows are not counted.
    late_rows_unknown_batches: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)


@dataclass
class _Facts:
    """The committed `engine_meta` rows folded together: each group's latest facts and the run's totals."""

    groups: dict[str, GroupFacts] = field(default_factory=dict)
    events: int = 0
    after_until: int = 0
    max_event_ts: int | None = None

    @property
    def known(self) -> list[str]:
        return sorted(g for g, f in self.groups.items() if f.known)

    def max_pending_deadline(self) -> int | None:
        deadlines = [f.max_pending_deadline for f in self.groups.values() if f.max_pending_deadline is not None]
        return max(deadlines) if deadlines else None


def run_spark(paths: Sequence[str], out_dir: str, config: CoordinatorConfig, until: int | None = None,
              settings: Mapping[str, Any] | None = None, progress: bool = True, *, profile: str = "local",
              master: str | None = None, captured: str | os.PathLike | None = None, slice_ms: int | None = None,
              speed: float | None = None, variants: Mapping[str, CoordinatorConfig] | None = None,
              application: Future | None = None) -> SparkRunResult:
    """Replay the event files `paths` into `out_dir` on Spark; the same tables as `run_local`.

    `captured`: a captured-responses file (`coordsim capture import`); its answers are attached to the events
    they answer, as `tableio.captured_answers.attach_captured` does for `run_local` (an unreadable file
    raises CapturedError before Spark starts).

    `slice_ms`: advance simulated time by this much per micro-batch of the main phase (None: the input
    files are the micro-batches); `speed`: hold each slice to at least slice / speed of wall time (None: as
    fast as it goes). A bad value raises `slices.SliceError` before Spark starts.

    `variants`: a sweep's variants and their coordinator settings (`config` is then only recorded): every
    row names its variant, each variant's groups are keyed apart (`state.variants`) and run with its
    settings, and every table gets a variant column, as `run_local` does.

    `application`: the session `start_application` is starting (else the running one, or a new one).

    `settings`: engine (`streaming.*`) and `spark.*` settings over the profile's (`conf/spark-<profile>.yaml`).
    `progress`: a live panel on stderr while the run goes (gone at the end: the caller prints its summary,
    e.g. `streaming.progress.print_summary`), then a warning if Spark dropped late rows.
    Running the same call again on the same `out_dir` resumes an interrupted run (or re-writes a finished
    one's tables); a call with other inputs or settings on it raises RunMismatch."""
    started = time.monotonic()
    slices.check(slice_ms, speed)
    resolved = resolve_settings(profile, settings)
    # Rows name their file as given (relative paths stay relative, as with the local engine); Spark reads it
    # by its absolute path.
    inputs = [(str(Path(p).absolute()), str(p)) for p in event_files(paths)]
    if captured is not None:
        captured = str(Path(captured).absolute())
        captured_records(captured)
    run = _Run(inputs, Path(out_dir), config, until, resolved, RunDisplay(progress, until), captured, slice_ms,
               speed, variants)
    run.check_same_run()
    # The record says the part files are complete (simulations.views.run_tables): not true again until the
    # end of this run, whatever run wrote the files there.
    (Path(out_dir) / RUN_FILE).unlink(missing_ok=True)
    base = application.result() if application is not None else get_session(profile, master, resolved)
    spark = run_session(base, resolved)
    spark.streams.addListener(run.listener)
    try:
        with run.display:
            result = run.execute(spark)
    finally:
        spark.streams.removeListener(run.listener)
    result.wall_s = round(time.monotonic() - started, 3)
    run.write_run_file(result, resolved)
    if progress:
        warn_late_rows(result)
    return result


class _Run:
    def __init__(self, inputs: list[tuple[str, str]], out: Path, config: CoordinatorConfig, until: int | None,
                 settings: Mapping[str, Any], display: RunDisplay, captured: str | None, slice_ms: int | None,
                 speed: float | None, variants: Mapping[str, CoordinatorConfig] | None = None) -> None:
        self.inputs = inputs
        self.variants = variants
        self.slice_ms = slice_ms
        self.speed = speed
        self.pace: slices.Pace | None = None  # while the slices run
        self.captured = captured
        self.out = out
        self.config = config
        self.until = until
        self.settings = settings
        self.delay = settings["streaming.watermark.delay.ms"]
        self.buckets = settings["streaming.state.buckets"]
        # Spark's default; both profiles set it. Bucket labels depend on it (streaming.buckets).
        self.partitions = int(settings.get("spark.sql.shuffle.partitions", 200))
        self.source = out / SOURCE_DIR
        self.main_files = 0  # files of the main phase in `source`; the control files come after them
        self.slices = out / slices.SLICES_DIR
        self.checkpoint = out / "_checkpoints" / "events"
        self.batches = out / "_batches"
        self.display = display
        self.listener = ProgressListener(self.batches, display)
        self.phases_s: dict[str, float] = {}
        self.phase: str | None = None
        self.phase_started = 0.0

    @property
    def variant_names(self) -> list[str] | None:
        return None if self.variants is None else sorted(self.variants)

    # -- the run's identity --------------------------------------------------------------------------------
    def identity(self) -> dict:
        identity = {"inputs": [list(pair) for pair in self.inputs], "until": self.until,
                    "coordinator": self.config.to_kafka(), "streaming.watermark.delay.ms": self.delay,
                    "streaming.state.buckets": self.buckets, "batches_format": batches.FORMAT,
                    "source_format": "parquet files"}
        if self.buckets:
            identity["state_partitions"] = self.partitions  # the keys' labels depend on it
        if self.captured is not None:
            identity["captured"] = self.captured
        if self.slice_ms is not None:
            identity["slice_ms"] = self.slice_ms  # the micro-batches; the pace is free to change
        identity.update(variant_settings(self.variants))
        return identity

    def check_same_run(self) -> None:
        path = self.out / "_checkpoints" / "run.json"
        if path.exists():
            previous = json.loads(path.read_text(encoding="utf-8"))
            if previous != json.loads(json.dumps(self.identity())):
                raise RunMismatch(f"{self.out} holds a Spark run of other inputs or settings (or of an older "
                                  f"coordsim release); resuming it would mix two runs. Use another --out, or "
                                  f"delete {self.out}.")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.identity(), indent=1), encoding="utf-8")

    # -- phases --------------------------------------------------------------------------------------------
    def execute(self, spark) -> SparkRunResult:
        self.source.mkdir(parents=True, exist_ok=True)
        warming = _warm_python_workers(spark, self.partitions)
        if self.slice_ms is not None:
            self.begin("slicing the input")
            self.ensure_slices()
            self.pace = slices.Pace(self.slice_ms, self.speed)
        else:
            self.begin("reading the input")
            self.ensure_inputs()
        if warming.is_alive():
            self.begin("starting the Python workers")
            warming.join()
        self.begin("main")
        # No trailing no-data micro-batch: the next phase's first batch fires the same timeouts anyway.
        self.run_query(spark, no_data_batches=False)
        self.pace = None
        facts = self.facts()
        final = self.until
        if facts.known:
            if self.until is None:
                last = facts.max_event_ts
                self.ensure_control(DRAIN_TO_LAST, last, last, wake_groups=facts.known)
                self.begin("drain to the last event")
                self.run_query(spark)
                facts = self.facts()
                decided, pending = self.decided_final(), facts.max_pending_deadline()
                final = decided if decided is not None else final_time(None, last, [pending])
            beyond = max(final, facts.max_event_ts)
            if not self.main_passes(final):
                self.ensure_control(ADVANCE_TO_FINAL, beyond, final)
            self.ensure_control(END_OF_RUN, beyond, final, facts.known)
            self.begin("finish at the final time")
            self.run_query(spark)
        self.begin("compaction")
        result = self.compact(final)
        self.begin(None)
        result.phases_s = self.phases_s
        return result

    def main_passes(self, final: int) -> bool:
        """Whether the main phase left the watermark past `final`: a sliced run's last slice ends at `until`,
        and its sentinel moves the watermark to until + 1. The end-of-run rows then need no micro-batch
        before theirs to bring the groups to the final time: their own applies everything up to it."""
        return self.slice_ms is not None and self.until is not None and final == self.until

    def begin(self, phase: str | None) -> None:
        """End the current phase (its wall time goes to the run record) and start `phase`."""
        now = time.monotonic()
        if self.phase is not None:
            self.phases_s[self.phase] = round(now - self.phase_started, 3)
        self.phase, self.phase_started = phase, now
        if phase is not None:
            self.display.phase(phase)

    def ensure_inputs(self) -> None:
        """The input files' rows in the source folder, one file per `streaming.files.per.trigger` input files
        (0: all in one), written unless a previous attempt of this run did (the count of them, written last,
        says it finished): a resumed query must read the very files its checkpoint counted."""
        done = self.source / MAIN_FILES
        if not done.exists():
            per_file = self.settings["streaming.files.per.trigger"] or max(len(self.inputs), 1)
            groups = [self.inputs[i:i + per_file] for i in range(0, max(len(self.inputs), 1), per_file)]
            for index, group in enumerate(groups):
                rows = (row for path, name in group
                        for row in input_rows(path, name, self.captured, self.variant_names))
                write_rows(source_file(self.source, index, "input"), index, rows)
            self._write_done(done, len(groups))
        self.main_files = json.loads(done.read_text(encoding="utf-8"))

    def ensure_slices(self) -> None:
        """The slice files in the source folder, written unless a previous attempt of this run did (their
        horizons, written last, say it finished)."""
        done = self.slices / slices.HORIZONS_FILE
        if not done.exists():
            self.slices.mkdir(parents=True, exist_ok=True)
            rows = [row for path, name in self.inputs
                    for row in input_rows(path, name, self.captured, self.variant_names)]
            parts = slices.split(rows, self.slice_ms, self.until)
            for index, (horizon, part) in enumerate(parts):
                write_rows(source_file(self.source, index, "slice"), index, part, horizon + self.delay + 1)
            self._write_done(done, [horizon for horizon, _ in parts])
        horizons = json.loads(done.read_text(encoding="utf-8"))
        self.main_files = len(horizons)
        self.display.sliced(horizons)

    @staticmethod
    def _write_done(path: Path, value) -> None:
        temp = path.with_name(path.name + ".tmp")
        temp.write_text(json.dumps(value), encoding="utf-8")
        os.replace(temp, path)

    def run_query(self, spark, no_data_batches: bool = True) -> None:
        from pyspark.errors import StreamingQueryException
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", str(no_data_batches).lower())
        # What a Python worker holds before it sends its output: see streaming.step.ARROW_BATCH_ENVELOPES.
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ENVELOPES))
        # Spark runs no streaming query with adaptive execution; asked for it, it warns and turns it off.
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        # One file per micro-batch, in the order of their modification times (streaming.source).
        rows = (spark.readStream.format("parquet").schema(SCHEMA)
                .option("maxFilesPerTrigger", 1)
                .load(str(self.source))
                .withWatermark("event_time", f"{self.delay} milliseconds"))
        # Catalyst pushes a filter below the watermark unless it reads the event time: this one does, so
        # sentinel rows move the watermark before they are dropped. Rejects (null event time) stay.
        kind = F.when(F.col("event_time").isNotNull(), F.col("kind")).otherwise(F.lit("reject"))
        rows = rows.filter(kind != "sentinel")
        group = F.col("key")
        key = group
        if self.buckets:
            labels = F.array(*map(F.lit, bucket_labels(self.buckets, self.partitions)))
            bucket = F.pmod(F.xxhash64(group), F.lit(self.buckets)).cast("int")
            key = F.when(group.isNotNull(), F.element_at(labels, bucket + 1))
        columns = [key.alias("key"), "event_time", "payload"] + ([group.alias("group_id")] if self.buckets else [])
        rows = rows.select(*columns)
        step = make_step(self.config, self.until, bucketed=bool(self.buckets), variants=self.variants)
        query = (rows.groupBy("key")
                 .applyInPandasWithState(step, OUTPUT_SCHEMA, STATE_SCHEMA, "Append", GroupStateTimeout.EventTimeTimeout)
                 .writeStream
                 .foreachBatch(batches.BatchSink(self.batches, self.batch_horizon, self.on_batch, self.hold_slice))
                 .option("checkpointLocation", str(self.checkpoint))
                 .trigger(availableNow=True)
                 .start())
        try:
            query.awaitTermination()
        except StreamingQueryException as error:
            if WORKER_TIMEOUT not in str(error):
                raise
            raise WorkerTimeout(
                f"{WORKER_TIMEOUT} within spark.python.authenticate.socketTimeout (the machine was too busy); the "
                "committed micro-batches are kept: run the same command again to resume, or give it more time "
                "with --spark-set spark.python.authenticate.socketTimeout=300s") from None
        # The listener bus may still hold the last reports; recentProgress has them already.
        for report in query.recentProgress:
            self.listener.record(report)

    def batch_horizon(self, batch_id: int) -> int | None:
        """The simulated time micro-batch `batch_id` runs the groups to (streaming.step.horizon_of), from its
        watermark in the query's offset log (`offsets/<id>`: a version line, then the batch's metadata, with
        `batchWatermarkMs`), which Spark writes before it runs the batch; None for a batch that runs none."""
        lines = (self.checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8").splitlines()
        horizon = horizon_of(json.loads(lines[1])["batchWatermarkMs"], self.until)
        return horizon if horizon >= 0 else None

    def hold_slice(self) -> None:
        """`--speed`: a slice's rows are committed once its wall time is up, not before. Waiting after the
        commit instead showed them for that long under the previous slice's clock: Spark's progress report,
        which moves the dashboard's clock (views.run_clock), comes only when the batch returns."""
        if self.pace is not None:
            self.pace.slice_done()

    def on_batch(self, batch_id: int) -> None:
        if not self.display.enabled:
            return
        meta = batches.read_batch(self.batches, batch_id, META_TABLE)
        rejects = batches.read_batch(self.batches, batch_id, "rejects")
        facts = [] if meta is None else list(self.meta_rows(meta))
        self.display.batch_committed(batch_id, facts, 0 if rejects is None else sum(rejects["rows"].to_pylist()))

    @staticmethod
    def meta_rows(part) -> Iterator[tuple[str, GroupFacts]]:
        for group_id, payload in zip(part["group_id"].to_pylist(), part["payload"].to_pylist()):
            yield group_id, decode_facts(payload)

    def ensure_control(self, control: tuple[int, str], beyond: int, final: int, end_groups: Sequence[str] = (),
                       wake_groups: Sequence[str] = ()) -> None:
        """Write a control file unless a previous attempt of this run already did: its sentinel sits
        `delay + 1` ms after `beyond`, so the watermark reaches beyond + 1 and nothing it carries is late."""
        index, path = self._control_file(control)
        if not path.exists():
            write_control(path, index, beyond + self.delay + 1, final, end_groups, wake_groups)

    def _control_file(self, control: tuple[int, str]) -> tuple[int, Path]:
        index = self.main_files + control[0]
        return index, source_file(self.source, index, control[1])

    def decided_final(self) -> int | None:
        _, path = self._control_file(ADVANCE_TO_FINAL)
        return read_control_final(path) if path.exists() else None

    # -- results -------------------------------------------------------------------------------------------
    def facts(self) -> _Facts:
        facts = _Facts()
        for _, part in batches.read_committed(self.batches, META_TABLE):
            for group_id, group in self.meta_rows(part):
                facts.groups[group_id] = group
                facts.events += group.events
                facts.after_until += group.after_until
                if group.max_event_ts is not None and (facts.max_event_ts is None
                                                       or group.max_event_ts > facts.max_event_ts):
                    facts.max_event_ts = group.max_event_ts
        return facts

    def compact(self, final: int | None) -> SparkRunResult:
        facts = self.facts()
        rows = compaction.compact(self.batches, self.out, list(facts.groups), final, self.variant_names)
        committed = batches.committed_batches(self.batches)
        reports = batches.read_progress(self.batches)
        return SparkRunResult(
            tables=WrittenTables(self.out, rows),
            variants=self.variant_names,
            groups=len(facts.known),
            events_applied=facts.events,
            events_after_until=facts.after_until,
            final_ts=final,
            out_dir=str(self.out),
            batches=len(committed),
            late_rows=sum(reports[b]["late_rows"] for b in committed if b in reports),
            late_rows_unknown_batches=[b for b in committed if b not in reports],
        )

    def write_run_file(self, result: SparkRunResult, settings: Mapping[str, Any]) -> None:
        write_run_record(self.out, "spark", result, self.config.to_kafka(), [name for _, name in self.inputs],
                         self.captured, self.until, batches=result.batches, late_rows=result.late_rows,
                         late_rows_unknown_batches=result.late_rows_unknown_batches, wall_s=result.wall_s,
                         phases_s=result.phases_s, settings=dict(settings), **variant_settings(self.variants))


def start_application(profile: str = "local", master: str | None = None,
                      settings: Mapping[str, Any] | None = None) -> Future:
    """Start the Spark application a run will use (`run_spark(..., application=)`) and its Python workers in
    the background, while the caller prepares the run's input: a JVM's start and the workers' take seconds
    of mostly one core. The settings are checked at once (SettingsError); a failure to start comes out of
    the Future. A daemon thread: a caller that gives up exits without waiting for it (the JVM ends with it)."""
    resolved = resolve_settings(profile, settings)
    partitions = int(resolved.get("spark.sql.shuffle.partitions", 200))
    started: Future = Future()

    def start() -> None:
        try:
            session = get_session(profile, master, resolved)
            _warm_python_workers(session, partitions)
            started.set_result(session)
        except BaseException as error:  # noqa: BLE001 - handed to the caller, which re-raises it
            started.set_exception(error)

    threading.Thread(target=start, name="coordsim-spark-start", daemon=True).start()
    return started


def _warm_python_workers(spark, partitions: int) -> threading.Thread:
    """In a new Spark application, start its Python workers, each importing the step's modules, while the
    driver reads the input: the first micro-batch would otherwise wait for them (about 2 s on 2 cores), and
    Spark keeps them for the query (spark.python.worker.reuse). The thread doing it, to be joined before the
    query; the same thread again once the application has started it (`start_application` did, say)."""
    context = spark.sparkContext
    thread = getattr(context, "_coordsim_warming", None)
    if thread is not None:
        return thread

    def warm() -> None:
        (spark.range(0, partitions, numPartitions=partitions).groupBy("id")
         .applyInPandas(warm_worker, "id long").collect())

    thread = context._coordsim_warming = threading.Thread(target=warm, name="coordsim-warm-python-workers",
                                                           daemon=True)
    thread.start()
    return thread


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m streaming.engine EVENTS... --out DIR`: `coordsim replay --engine spark` without the CLI
    package, for scripts, spark-submit and the restart tests (which kill it). A user mistake (an input,
    setting or time that cannot be used, an OUT of another run) ends with its message and exit status 2."""
    import sys

    from tableio.captured import CapturedError
    from tableio.inputs import InputError
    from tableio.parquet import OutputError
    from tableio.coordinator_settings import load_config, parse_overrides
    from state.config import ConfigError
    from state.events import EventError, parse_ts
    from streaming.session import SettingsError

    parser = argparse.ArgumentParser(prog="python -m streaming.engine", description=main.__doc__)
    parser.add_argument("events", nargs="+", help="JSONL / Parquet event files or folders")
    parser.add_argument("--out", required=True, help="output folder (tables, checkpoint, run record)")
    parser.add_argument("--until", help="inclusive end time: epoch ms or ISO-8601 with a zone")
    parser.add_argument("--conf", help="YAML file of broker settings (Kafka names)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="broker setting")
    parser.add_argument("--spark-set", action="append", default=[], metavar="NAME=VALUE",
                        help="engine (streaming.*) or Spark (spark.*) setting")
    parser.add_argument("--profile", default="local", help="Spark profile: conf/spark-<profile>.yaml")
    parser.add_argument("--master", help="Spark master URL (overrides the profile's)")
    parser.add_argument("--captured", metavar="FILE",
                        help="captured responses (*.captured.ndjson) to attach to the events they answer, as "
                             "`coordsim replay --compare-captured` does")
    parser.add_argument("--slice", metavar="DURATION",
                        help="advance simulated time by this much per micro-batch (1m, 30s, ...; docs/spark.md)")
    parser.add_argument("--speed", metavar="PACE", default="max",
                        help="with --slice: hold simulated time to this multiple of the wall clock (60x), or max")
    parser.add_argument("--quiet", action="store_true", help="no progress display or summary")
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    # Stop the Spark application at the end only if this call started it (a caller's session stays up).
    started_here = SparkSession.getActiveSession() is None
    try:
        config = load_config(args.conf, args.set)
        until = None if args.until is None else parse_ts(args.until, "--until")
        spark_settings = parse_overrides(args.spark_set, "--spark-set")
        slice_ms = None if args.slice is None else slices.parse_slice(args.slice)
        speed = slices.parse_speed(args.speed)
        result = run_spark(args.events, args.out, config, until, spark_settings, not args.quiet,
                           profile=args.profile, master=args.master, captured=args.captured, slice_ms=slice_ms,
                           speed=speed)
    except (InputError, OutputError, ConfigError, EventError, CapturedError, SettingsError, RunMismatch,
            slices.SliceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except WorkerTimeout as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        session = SparkSession.getActiveSession()
        if started_here and session is not None:
            stop_session(session)
    if not args.quiet:
        print_summary(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
