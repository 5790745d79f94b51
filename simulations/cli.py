"""The `coordsim` command line: `replay` recorded events, `generate` a scenario's events, `run` a scenario.

A user's mistake (a missing file, an unwritable folder, an unknown setting, a bad --until, a scenario that
does not validate) ends with one clear line on stderr and exit code 2, never a traceback; anything else is a
bug and is allowed to raise.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Mapping

import click
import pyarrow.compute as pc
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from simulations import scenarios
from simulations.capture.commands import USER_ERRORS as CAPTURE_ERRORS
from simulations.capture.commands import capture, captured_report
from simulations.capture.compare import DIVERGENCES_TABLE, print_divergence_summary, write_divergences
from simulations.cli_common import CommandGroup, Console, Timestamp, UserError, print_lines
from simulations.conformance.commands import conformance
from simulations.engines import run_local_to
from simulations.reports import REPORT_FILE
from simulations.reports.commands import COMMANDS as REPORT_COMMANDS
from simulations.scenarios import ScenarioError
from simulations.scenarios.summary import render, render_comparison, summarize
from simulations.views import RunError
from simulations.views.run_tables import sweep_variants
from simulations.views.comparison import write_comparison
from simulations.views.capacity import (ACTIONS_FILE, BROKERS_FILE, CapacityError, capacity, parse_window, render_csv,
                                        render_json, render_text)
from simulations.views.quiet_runs import count_requests
from simulations.views.variants import EVENTS_FILE, SCENARIO_DIR
from state.config import ConfigError, CoordinatorConfig
from state.events import EventError
from state.variants import by_variant
from tableio.captured import captured_records
from tableio.captured_answers import attach_captured, captured_answers
from tableio.coordinator_settings import load_config, non_default_settings, parse_overrides, read_conf_file
from tableio.inputs import JSONL_SUFFIXES, InputError, coordinator_reject, event_files, read_events
from tableio.parquet import OutputError, make_folder, output_errors, read_columns, written_rows
from tableio.run_record import input_names
from tableio.run_result import RunResult

USER_ERRORS = (InputError, OutputError, ConfigError, EventError, ScenarioError, *CAPTURE_ERRORS)
# Where `coordsim run` keeps the scenario it ran and the events it generated, inside --out.
RUN_SCENARIO_DIR = SCENARIO_DIR
# The main job runs on Spark, as the design asks; the local engine gives byte-identical tables.
RUN_ENGINE = "spark"
# Simulated time per micro-batch of `coordsim run` on Spark (docs/benchmarks.md, "Slices").
RUN_SLICE = "5m"
# Where the Spark engine keeps what it resumes a run from, inside --out.
SPARK_CHECKPOINTS = "_checkpoints"
# What a run writes beside its tables only sometimes (a report, a comparison with a capture):
# left by an earlier run, it would pass for this one's.
EARLIER_OUTPUTS = (REPORT_FILE, DIVERGENCES_TABLE)
# Reasons and rows of the rejects table a summary shows; the table has them all.
REJECT_REASONS_SHOWN = 5
REJECTS_SHOWN = 3


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="coordsim", prog_name="coordsim")
def main() -> None:
    """coordsim: Apache Kafka's classic consumer-group coordinator, simulated on recorded client events
    (replay) or on synthetic consumers driven by a scenario (run, generate)."""


def spark_options(command):
    """The Spark engine's own settings, as `python -m streaming.engine` takes them (docs/spark.md)."""
    command = click.option("--master", metavar="URL", help="Spark master URL, over the profile's (spark engine).")(command)
    command = click.option("--profile", default="local", show_default=True, metavar="NAME",
                           help="Spark profile: conf/spark-NAME.yaml (spark engine).")(command)
    return click.option("--spark-set", "spark_sets", multiple=True, metavar="NAME=VALUE",
                        help="Engine (streaming.*) or Spark (spark.*) setting over the profile's, e.g. "
                             "streaming.state.buckets=64 (spark engine).")(command)


def spark_engine(engine: str, spark_sets: tuple[str, ...], profile: str, master: str | None) -> dict | None:
    """The Spark engine's settings, or None for the local engine (which takes none: one line if given)."""
    if engine == "spark":
        return {"settings": parse_overrides(spark_sets, "--spark-set"), "profile": profile, "master": master}
    given = [option for option, value in (("--spark-set", spark_sets), ("--profile", profile != "local"),
                                         ("--master", master)) if value]
    if given:
        raise UserError(f"{', '.join(given)}: only the spark engine takes Spark settings (--engine local was given)")
    return None


@main.command()
@click.argument("events", nargs=-1, required=True, metavar="EVENTS...")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for the output tables (Parquet).")
@click.option("--engine", type=click.Choice(["spark", "local"]), default="spark", show_default=True,
              help="Where the coordinators run; the tables are the same.")
@click.option("--conf", "conf_file", metavar="FILE",
              help="YAML file of broker settings (a 'coordinator:' mapping, Kafka names) over conf/coordinator.yaml.")
@click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Override one broker setting by its Kafka name, e.g. group.initial.rebalance.delay.ms=0.")
@click.option("--until", type=Timestamp(), metavar="TS",
              help="Stop at this time (inclusive): epoch ms or ISO-8601 with a zone. Later events are skipped.")
@click.option("--compare-captured", "captured_file", metavar="FILE",
              help="Captured responses (*.captured.ndjson from `coordsim capture import`): map the broker's "
                   "member ids to the simulator's and report where the simulated answers diverge (either engine; "
                   "the divergences table goes to DIR).")
@spark_options
def replay(events: tuple[str, ...], out_dir: str, engine: str, conf_file: str | None,
           overrides: tuple[str, ...], until: int | None, captured_file: str | None, spark_sets: tuple[str, ...],
           profile: str, master: str | None) -> None:
    """Replay client requests from EVENTS (JSONL/Parquet files or folders) through the coordinator.

    Every output table is written as Parquet under DIR (docs/tables.md); rows that are not valid events go to
    the rejects table and the run goes on. Without --until the run continues past the last event until every
    pending protocol timeout has fired (docs/events.md, "How a run ends").
    """
    console = Console()
    report = None
    try:
        config = load_config(conf_file, overrides)
        spark = spark_engine(engine, spark_sets, profile, master)
        captured = None if captured_file is None else captured_records(captured_file)
        event_files(events)  # a path that cannot be read is refused before --out is created
        out = Path(out_dir)
        # A replay writes no scenario/, but a Spark run's checkpoint may name the events kept there.
        keeps_scenario = (out / SPARK_CHECKPOINTS).exists()
        _clear_earlier_outputs(out, EARLIER_OUTPUTS + (() if keeps_scenario else (RUN_SCENARIO_DIR,)))
        if engine == "spark":
            result = _run_spark(list(events), config, until, out_dir, spark, captured_file)
            tables = result.tables
        else:
            rows = read_events(events)
            replayed = rows.events if captured is None else attach_captured(rows.events, captured_answers(captured))
            result = run_local_to(out_dir, replayed, config, until, rows.rejects, inputs=input_names(events),
                                  captured=None if captured_file is None else str(Path(captured_file).absolute()))
            tables = result.tables
        if captured is not None:
            report = captured_report(tables, captured)
            write_divergences(out_dir, report.divergences)
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    print_summary(console, result, config, out_dir)
    if report is not None:
        console.print()
        print_divergence_summary(console, report.divergences, report.offsets)


def print_summary(console: Console, result: RunResult, config: CoordinatorConfig, out_dir: str) -> None:
    """The figures come from the tables as written (either engine), read a few columns at a time."""
    errors = count_requests(read_columns(out_dir, "responses", ["error", "repeat_count"]).to_pandas(), by="error")
    by_count = sorted(errors.items(), key=lambda item: (-item[1], item[0]))
    # The metrics table's count, either protocol's (docs/tables.md#metrics), as every other summary shows it.
    rebalances = pc.sum(read_columns(out_dir, "metrics", ["rebalances"])["rebalances"]).as_py() or 0
    rejects = _rejects(out_dir)
    # Events the coordinators were handed but rejected are counted once: as rejected.
    applied = str(result.events_applied - sum(1 for row in rejects if coordinator_reject(row) is not None))
    if result.events_after_until:
        applied += f" ({result.events_after_until} after --until, not applied)"
    lines = [
        ("groups", str(result.groups)),
        ("events applied", applied),
        ("final time", "-" if result.final_ts is None else f"{result.final_ts} ({_iso(result.final_ts)})"),
        ("generations", str(written_rows(out_dir, "generations"))),
        ("rebalances", str(rebalances)),
        ("responses", ", ".join(f"{name} {count}" for name, count in by_count) or "0"),
        *_reject_lines(rejects),
    ]
    lines += [*_settings_line(config), ("output", str(out_dir))]
    print_lines(console, lines)


def _rejects(out_dir: str) -> list[dict]:
    return read_columns(out_dir, "rejects", ["raw", "reason", "source", "line"]).to_pylist()


def _reject_lines(rejects: list[dict]) -> list[tuple[str, str]]:
    """The rejected rows: how many, the commonest reasons, and the first rows (source:line)."""
    if not rejects:
        return [("rejected rows", "0")]
    by_reason = sorted(Counter(row["reason"] for row in rejects).items(), key=lambda item: (-item[1], item[0]))
    lines = [("rejected rows", f"{len(rejects)}, all in the rejects table; by reason:")]
    lines += [("", f"{count:>6}  {reason}") for reason, count in by_reason[:REJECT_REASONS_SHOWN]]
    if len(by_reason) > REJECT_REASONS_SHOWN:
        others = sum(count for _, count in by_reason[REJECT_REASONS_SHOWN:])
        lines.append(("", f"{others:>6}  for {len(by_reason) - REJECT_REASONS_SHOWN} other reasons"))
    first = sorted(rejects, key=lambda row: (row["source"], row["line"]))[:REJECTS_SHOWN]
    lines += [("first rejected" if i == 0 else "", f"{row['source']}:{row['line']}  {row['reason']}")
              for i, row in enumerate(first)]
    return lines


def _settings_line(config: CoordinatorConfig) -> list[tuple[str, str]]:
    changed = non_default_settings(config)
    if not changed:
        return []
    return [("settings", ", ".join(f"{name}={value}" for name, value in changed.items()))]


def _iso(ts_ms: int) -> str:
    return _dt.datetime.fromtimestamp(ts_ms / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")


# ----------------------------------------------------------------------------------------------------------
# Scenarios

def _load_scenario(argument: str) -> tuple[Path, scenarios.Scenario]:
    path = _scenario_path(argument)
    return path, scenarios.load_scenario(path)


def _write_text(path: Path, text: str, noun: str) -> None:
    with output_errors(path, noun):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _clear_earlier_outputs(out: Path, names: tuple[str, ...]) -> None:
    """Create the output folder `out` (or say what is wrong with its path) and remove what an earlier run
    left there under `names`, before anything of this run is written."""
    make_folder(out)
    for name in names:
        path = out / name
        with output_errors(path, "the output of an earlier run"):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@click.option("--out", "out_path", required=True, metavar="EVENTS",
              help="The events file to write: *.jsonl (or *.json), or a folder, which gets events.jsonl.")
def generate(scenario: str, out_path: str) -> None:
    """Write the events of SCENARIO (a YAML file, or a shipped scenario's name) as a JSONL file.

    The events are synthetic-client directives in the input contract (docs/events.md), sorted by time, each
    with its group's `seq`. `coordsim replay EVENTS --until END --out DIR`, END being the end of the
    scenario (printed below), gives the same tables as `coordsim run`. Parquet is not offered: directive rows
    of different types give `topics` different shapes, which one Parquet schema cannot hold.
    """
    target = Path(out_path)
    if target.suffix.lower() == ".parquet":
        raise UserError(f"{out_path}: scenario events are written as JSONL (*.jsonl), not Parquet: the rows of "
                        "different directives give 'topics' different shapes")
    if target.suffix.lower() not in JSONL_SUFFIXES:
        target = target / EVENTS_FILE
    try:
        path, loaded = _load_scenario(scenario)
        generated = scenarios.generate(loaded)
        _write_text(target, scenarios.to_jsonl(generated.rows), "the events file")
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    lines = [
        ("scenario", f"{loaded.name} ({path}), seed {loaded.seed}"),
        ("groups", f"{sum(map(len, generated.groups.values())):,} in {len(generated.groups)} group set(s)"),
        ("events", f"{len(generated.rows):,}"),
        ("simulated", f"{_iso(generated.start_ms)} to {_iso(generated.until_ms)}"),
        *(("note", note) for note in generated.notes),
        ("output", str(target)),
        ("replay with", " ".join([f"coordsim replay {target} --until {_iso(generated.until_ms)} --out DIR",
                                  *(f"--set {name}={value}" for name, value in loaded.broker.items())])),
    ]
    print_lines(Console(), lines)


def run_options(command):
    """The options `run` and `sweep` share: where the tables go, the engine, the broker settings, the report
    and validation that end a run, the Spark engine's slices and settings."""
    command = spark_options(command)
    command = click.option("--speed", "speed_text", metavar="PACE",
                           help="Hold each slice to the wall clock: 60x plays a minute in a second; max (the "
                                "default) runs as fast as it can (spark engine).")(command)
    command = click.option("--slice", "slice_text", metavar="DURATION",
                           help=f"Simulated time per micro-batch; its rows commit when it ends (spark engine; "
                                f"default {RUN_SLICE}).")(command)
    command = click.option("--validate/--no-validate", "run_validation", default=True, show_default=True,
                           help="Check the tables at the end (schema, values, protocol invariants; exit 1 if one "
                                "fails).")(command)
    command = click.option("--report/--no-report", "write_report", default=True, show_default=True,
                           help="Write the HTML report to DIR/report.html at the end.")(command)
    command = click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
                           help="Override one broker setting by its Kafka name, e.g. "
                                "group.initial.rebalance.delay.ms=0.")(command)
    command = click.option("--conf", "conf_file", metavar="FILE",
                           help="YAML file of broker settings (a 'coordinator:' mapping, Kafka names); wins over "
                                "the scenario's broker: settings.")(command)
    command = click.option("--engine", type=click.Choice(["spark", "local"]), default=RUN_ENGINE, show_default=True,
                           help="Where the coordinators run; the tables are the same.")(command)
    return click.option("--out", "out_dir", required=True, metavar="DIR",
                        help="Folder for the output tables (Parquet) and the run's scenario and events.")(command)


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@run_options
def run(scenario: str, out_dir: str, engine: str, conf_file: str | None, overrides: tuple[str, ...],
        write_report: bool, run_validation: bool, slice_text: str | None, speed_text: str | None,
        spark_sets: tuple[str, ...], profile: str, master: str | None) -> None:
    """Run SCENARIO: generate its events and simulate them, then summarize per group set. The main job.

    SCENARIO is a YAML file, or the name of a shipped scenario ({shipped}). A scenario, in brief:

    \b
      duration: 15m                  # required; also start (ISO time), seed, broker
      group_sets:
        - name: orders               # groups orders-000 ... orders-299
          groups: 300
          members: 6                 # clients orders-000-c0 ... -c5
          topics: [{name: orders, partitions: 24, records_per_second: 100}]
          assignors: [range]         # partition.assignment.strategy, in order
          membership: dynamic        # or static (group.instance.id)
          config: {session.timeout.ms: 45000}   # any consumer setting
      timeline:
        - {at: 2m, action: rolling_restart, downtime: 10s, gap: 30s}

    \b
    Actions: rolling_restart, crash, pause, slow_poll, flap, scale_out,
    scale_in, partition_increase, coordinator_move, idle; with a cluster:
    section, broker_down, broker_shutdown, broker_up, preferred_leader_election.
    Reference: docs/scenarios.md.

    The run ends at start + duration. Tables go to DIR as Parquet (docs/tables.md), the scenario and its
    events to DIR/scenario/. The summary gives, per group set: the formation (p50/p99/max), the rebalances
    after it and their durations (p50/p99/max), rebalances by cause, unconsumed partition-seconds and gaps
    (p50/p99/max), partitions moved, duplicate and skipped records, failed commits, with a legend.
    """
    console = Console()
    started = time.monotonic()
    try:
        path, loaded = _load_scenario(scenario)
        config = load_config(conf_file, overrides, loaded.broker)
        spark = _engine_settings(engine, spark_sets, profile, master, slice_text, speed_text)
        _start_spark(spark)  # while the scenario's events are generated
        generated = scenarios.generate(loaded)
        events_file = _write_run_inputs(path, scenarios.to_jsonl(generated.rows), generated.actions,
                                        _broker_ids(loaded), Path(out_dir), check_checkpoint=engine == "spark")
        result = _simulate(console, engine, events_file, config, generated.until_ms, out_dir, spark)
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    wall_s = time.monotonic() - started
    _print_run(console, out_dir, [
        ("scenario", f"{loaded.name} ({path}), seed {loaded.seed}"),
        ("simulated", f"{_iso(generated.start_ms)} to {_iso(generated.until_ms)}"),
        ("groups", f"{result.groups:,} in {len(generated.groups)} group set(s)"),
    ], len(generated.rows), f"{engine}, {wall_s:.1f} s wall, {loaded.duration_ms / 1000 / wall_s:,.1f}x simulated time",
        config, generated.notes)
    console.print()
    render(console, summarize(loaded, generated.groups, result.tables))
    _finish_run(console, out_dir, events_file, generated.until_ms, write_report, run_validation)


def _print_run(console: Console, out_dir: str, head: list[tuple[str, str]], directives: int, engine_line: str,
               config: CoordinatorConfig, notes: list[str]) -> None:
    """The lines that open a scenario's (or a sweep's) summary: `head`, the traffic, the engine, the rejects,
    the settings, the generator's notes and where the tables are."""
    requests = count_requests(read_columns(out_dir, "requests", ["repeat_count"]).to_pandas())
    lines = [*head, ("events", f"{directives:,} directives; the clients sent {requests:,} requests "
                               f"that reached a broker ({written_rows(out_dir, 'requests'):,} rows)"), ("engine", engine_line)]
    rejects = _rejects(out_dir)
    if rejects:
        lines += _reject_lines(rejects)
    lines += [*_settings_line(config), *(("note", note) for note in notes), ("output", out_dir)]
    print_lines(console, lines)


# Listed from the folder, so that a new scenario is in the help as soon as it ships.
run.help = run.help.replace("{shipped}", ", ".join(scenarios.shipped()))


@main.command()
@click.argument("scenario", metavar="SCENARIO")
@click.option("--vary", "vary", multiple=True, metavar="NAME=V1,V2,...",
              help="Vary one value of the scenario, e.g. group_sets.orders.members=3,6 or "
                   "broker.group.initial.rebalance.delay.ms=0,3000; adds to (or replaces) the scenario's sweep:.")
@run_options
def sweep(scenario: str, vary: tuple[str, ...], out_dir: str, engine: str, conf_file: str | None,
          overrides: tuple[str, ...], write_report: bool, run_validation: bool, slice_text: str | None,
          speed_text: str | None, spark_sets: tuple[str, ...], profile: str, master: str | None) -> None:
    """Run every variant of SCENARIO in one run: each combination of the values varied (--vary, and the
    scenario's sweep: section) is a variant, with its groups under their own keys.

    NAME is a path into the scenario: broker.SETTING, cluster.KEY, group_sets.SET.FIELD,
    group_sets.SET.config.SETTING, group_sets.SET.topics.TOPIC.FIELD, timeline.N.KEY, seed. Variants are
    named after the values, e.g. members=3,group.initial.rebalance.delay.ms=0. Every table gets a variant
    column, and the comparison table one row per variant (docs/scenarios.md, "Sweeps").
    """
    console = Console()
    started = time.monotonic()
    try:
        path = _scenario_path(scenario)
        loaded = scenarios.load_sweep(path, vary)
        config = load_config(conf_file, overrides, loaded.base.broker)
        configs = _variant_configs(loaded, conf_file, overrides)
        spark = _engine_settings(engine, spark_sets, profile, master, slice_text, speed_text)
        _start_spark(spark)  # while the variants' events are generated
        generated = scenarios.generate_variants(loaded)
        rows = [dict(row, variant=name) for name, variant_generated in generated.items()
                for row in variant_generated.rows]
        actions = {name: variant_generated.actions for name, variant_generated in generated.items()}
        brokers = {variant.name: _broker_ids(variant.scenario) for variant in loaded.variants}
        events_file = _write_run_inputs(path, scenarios.to_jsonl(rows), actions, brokers, Path(out_dir),
                                        check_checkpoint=engine == "spark")
        result = _simulate(console, engine, events_file, config, loaded.base.until_ms, out_dir, spark, configs)
        comparison = write_comparison(out_dir, loaded)
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    wall_s = time.monotonic() - started
    base = loaded.base
    _print_run(console, out_dir, [
        ("scenario", f"{base.name} ({path}), seed {base.seed}"),
        ("variants", f"{len(loaded.variants)}: " + ", ".join(axis.name for axis in loaded.axes) + " varied"),
        ("simulated", f"{_iso(base.start_ms)} to {_iso(base.until_ms)}"),
        ("groups", f"{result.groups:,} in {len(loaded.variants)} variants"),
    ], len(rows), f"{engine}, {wall_s:.1f} s wall", config,
        [f"{name}: {note}" for name, variant_generated in generated.items() for note in variant_generated.notes])
    metrics = by_variant(result.tables["metrics"])
    for variant in loaded.variants:
        console.print()
        console.print(f"[bold]variant {escape(variant.name)}[/bold]", highlight=False)
        render(console, summarize(variant.scenario, generated[variant.name].groups,
                                  {"metrics": metrics.get(variant.name, [])}))
    console.print()
    render_comparison(console, comparison.to_pylist())
    _finish_sweep(console, out_dir, loaded, write_report, run_validation)


def _scenario_path(argument: str) -> Path:
    path = scenarios.resolve(argument)
    if not path.exists():
        raise ScenarioError(f"no such file, and no shipped scenario of that name "
                            f"(shipped: {', '.join(scenarios.shipped())})", argument)
    return path


def _variant_configs(loaded: scenarios.Sweep, conf_file: str | None, overrides: tuple[str, ...]
                     ) -> dict[str, CoordinatorConfig]:
    """Each variant's broker settings, layered as `run` layers them. A setting the sweep varies may not be
    given by --conf or --set too: it would win in every variant, and the sweep would vary nothing."""
    given = set(parse_overrides(overrides)) | set(read_conf_file(Path(conf_file)) if conf_file else ())
    clash = sorted(given & set(loaded.varied_broker_settings()))
    if clash:
        raise UserError(f"{', '.join(clash)}: varied by the sweep and given by --set or --conf, which would set "
                        f"it in every variant; give it in one place")
    configs = {}
    for variant in loaded.variants:
        try:
            configs[variant.name] = load_config(conf_file, overrides, variant.scenario.broker)
        except ConfigError as error:
            raise ConfigError(f"variant {variant.name}: {error}") from None
    return configs


def _finish_sweep(console: Console, out_dir: str, loaded: scenarios.Sweep, write_report: bool,
                  run_validation: bool) -> None:
    """The report (the variants side by side) and the validation of each variant, as a run of its own."""
    if write_report:
        from simulations.reports import build_report

        console.print(f"report: {build_report(out_dir)}", highlight=False)
    if not run_validation:
        return
    from simulations.validation import validate_variant

    failed = False
    for variant in loaded.variants:
        result = validate_variant(out_dir, variant.name, loaded.base.until_ms)
        console.print(result.summary(), highlight=False)
        failed = failed or not result.success
    if failed:
        raise SystemExit(1)


def _finish_run(console: Console, out_dir: str, events_file: Path, until: int, write_report: bool,
                run_validation: bool) -> None:
    """The report and the validation that close a run; each can be switched off."""
    if write_report:
        from simulations.reports import build_report

        console.print(f"report: {build_report(out_dir)}", highlight=False)
    if run_validation:
        from simulations.validation import validate

        result = validate(out_dir, None, [events_file], until)
        console.print(result.summary(), highlight=False)
        if not result.success:
            raise SystemExit(1)


def _write_run_inputs(scenario_file: Path, text: str, actions: list | dict, brokers: list | dict | None, out: Path,
                      check_checkpoint: bool) -> Path:
    """DIR/scenario/: the scenario as given, its events (`text`), which is what the engine reads, when its
    actions ran (`actions.json`) and the ids of its cluster's brokers (`brokers.json`, null without a
    cluster), for `coordsim capacity` (a sweep's: per variant)."""
    folder = out / RUN_SCENARIO_DIR
    events_file = folder / EVENTS_FILE
    if check_checkpoint and (out / SPARK_CHECKPOINTS).exists() and events_file.is_file() \
            and events_file.read_text(encoding="utf-8") != text:
        # The Spark engine identifies a run by its input paths: new events under the old path would resume it.
        raise OutputError(f"{out} holds a Spark run of other events; use another --out, or delete {out}")
    _clear_earlier_outputs(out, EARLIER_OUTPUTS)
    _write_text(folder / "scenario.yaml", scenario_file.read_text(encoding="utf-8"), "the run's scenario")
    _write_text(events_file, text, "the run's events")
    _write_text(folder / ACTIONS_FILE, json.dumps(actions, indent=1) + "\n", "the run's action times")
    _write_text(folder / BROKERS_FILE, json.dumps(brokers) + "\n", "the run's brokers")
    return events_file


def _broker_ids(scenario: scenarios.Scenario) -> list[int] | None:
    return None if scenario.cluster is None else [broker.id for broker in scenario.cluster.brokers]


def _engine_settings(engine: str, spark_sets: tuple[str, ...], profile: str, master: str | None,
                     slice_text: str | None, speed_text: str | None) -> dict | None:
    """`spark_engine`'s settings with the slices of a scenario's run."""
    spark = spark_engine(engine, spark_sets, profile, master)
    if spark is not None:
        spark.update(_slicing(slice_text, speed_text))
    elif slice_text is not None or speed_text is not None:
        raise UserError("--slice, --speed: only the spark engine runs in slices (--engine local was given)")
    return spark


def _simulate(console: Console, engine: str, events_file: Path, config: CoordinatorConfig, until: int,
              out_dir: str, spark: dict | None, variants: Mapping[str, CoordinatorConfig] | None = None) -> RunResult:
    """A scenario's (or a sweep's) events run by `engine`."""
    if engine == "local":
        return _run_local(console, events_file, config, until, out_dir, variants)
    return _run_spark([events_file], config, until, out_dir, spark, variants=variants)


def _run_local(console: Console, events_file: Path, config: CoordinatorConfig, until: int, out_dir: str,
               variants: Mapping[str, CoordinatorConfig] | None) -> RunResult:
    columns = (TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TextColumn("groups"),
               TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("reading events", total=None)
        rows = read_events([events_file], variants)
        bar.update(task, description="simulating")
        # Tables are written as the groups finish.
        result = run_local_to(out_dir, rows.events, config, until, rows.rejects,
                              progress=lambda done, total: bar.update(task, completed=done, total=total),
                              variants=variants, inputs=input_names([events_file]))
        bar.update(task, description="done")
    return result


def _slicing(slice_text: str | None, speed_text: str | None) -> dict:
    from streaming.slices import SliceError, parse_slice, parse_speed

    try:
        return {"slice_ms": parse_slice(slice_text or RUN_SLICE), "speed": parse_speed(speed_text or "max")}
    except SliceError as error:
        raise UserError(str(error)) from None


def _start_spark(spark: dict | None) -> None:
    """With the spark engine, start its application in the background (`spark["application"]`)."""
    if spark is None:
        return
    try:
        from streaming.engine import start_application
        from streaming.session import SettingsError
    except ImportError:
        return  # said by _run_spark, once the input is written
    try:
        spark["application"] = start_application(spark["profile"], spark["master"], spark["settings"])
    except SettingsError as error:
        raise UserError(str(error)) from None


def _run_spark(paths: list, config: CoordinatorConfig, until: int | None, out_dir: str, spark: dict,
               captured_file: str | None = None, variants: Mapping[str, CoordinatorConfig] | None = None
               ) -> RunResult:
    try:
        from pyspark.sql import SparkSession

        from streaming.engine import RunMismatch, WorkerTimeout, run_spark
        from streaming.session import SettingsError, stop_session
    except ImportError as error:
        raise UserError(f"the spark engine cannot start ({error}); use --engine local") from None
    try:
        return run_spark([str(p) for p in paths], out_dir, config, until, spark["settings"], captured=captured_file,
                         profile=spark["profile"], master=spark["master"], slice_ms=spark.get("slice_ms"),
                         speed=spark.get("speed"), variants=variants, application=spark.get("application"))
    except (RunMismatch, SettingsError) as error:
        raise UserError(str(error)) from None
    except WorkerTimeout as error:
        raise click.ClickException(str(error)) from None
    finally:
        session = SparkSession.getActiveSession()
        application = spark.get("application")
        if session is None and application is not None and application.done() and not application.exception():
            session = application.result()  # started in another thread, where it is the active one
        if session is not None:
            stop_session(session)


@main.command(name="capacity")
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False))
@click.option("--window", metavar="DURATION",
              help="Window the rates are taken over, e.g. 1s, 500ms, 1m (default: the table's, 1s unless the "
                   "run spans weeks).")
@click.option("--broker", type=int, metavar="B", help="Only this broker's figures.")
@click.option("--format", "output", type=click.Choice(["text", "csv", "json"]), default="text", show_default=True)
@click.option("--variant", metavar="V", help="A sweep's variant (default: every variant, one after the other).")
def capacity_command(run_dir: str, window: str | None, broker: int | None, output: str, variant: str | None) -> None:
    """Per broker: requests per API, __consumer_offsets records and bytes per second (mean, p99 window,
    busiest window), steady state and during the run's actions; the hottest broker and the skew
    (docs/capacity.md). A sweep's figures are per variant."""
    try:
        variants = sweep_variants(run_dir) if variant is None else [variant]
        window_ms = None if window is None else parse_window(window)
        results = [capacity(run_dir, window_ms, broker, name) for name in variants or [None]]
    except (RunError, CapacityError) as error:
        raise UserError(str(error)) from None
    click.echo({"csv": render_csv, "json": render_json}[output](results) if output != "text"
               else "\n\n".join("\n".join(render_text(result)) for result in results))


main.add_command(capture)
main.add_command(conformance)
for _command in REPORT_COMMANDS:
    main.add_command(_command)
