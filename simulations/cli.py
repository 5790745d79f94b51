"""The `coordsim` command line.

A user's mistake (a missing file, an unwritable folder, an unknown setting, a bad --until) ends with one
clear line on stderr and exit code 2, never a traceback; anything else is a bug and is allowed to raise.
"""

from __future__ import annotations

import datetime as _dt

from collections import Counter

import click
from rich.console import Console
from rich.markup import escape

from simulations.engines import RunResult, run_local
from simulations.inputs import InputError, read_events
from simulations.parquet_tables import OutputError, write_tables
from simulations.settings import load_config, non_default_settings
from state.config import ConfigError, CoordinatorConfig
from state.events import EventError, parse_ts

USER_ERRORS = (InputError, OutputError, ConfigError, EventError)
SPARK_NOT_AVAILABLE = "the spark engine is not available yet; use --engine local"


class UserError(click.ClickException):
    exit_code = 2


class Timestamp(click.ParamType):
    """Epoch milliseconds or ISO-8601 with a zone, as in the events' `ts`."""

    name = "TS"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_ts(value, param.name if param else "ts")
        except EventError as error:
            self.fail(str(error), param, ctx)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="coordsim", prog_name="coordsim")
def main() -> None:
    """coordsim: Apache Kafka's classic consumer-group coordinator, simulated on recorded client events."""


@main.command()
@click.argument("events", nargs=-1, required=True, metavar="EVENTS...")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for the output tables (Parquet).")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Where the coordinators run.")
@click.option("--conf", "conf_file", metavar="FILE",
              help="YAML file of broker settings (a 'coordinator:' mapping, Kafka names) over conf/coordinator.yaml.")
@click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
              help="Override one broker setting by its Kafka name, e.g. group.initial.rebalance.delay.ms=0.")
@click.option("--until", type=Timestamp(), metavar="TS",
              help="Stop at this time (inclusive): epoch ms or ISO-8601 with a zone. Later events are skipped.")
def replay(events: tuple[str, ...], out_dir: str, engine: str, conf_file: str | None,
           overrides: tuple[str, ...], until: int | None) -> None:
    """Replay client requests from EVENTS (JSONL/Parquet files or folders) through the coordinator.

    Every output table is written as Parquet under DIR (docs/tables.md); rows that are not valid events go to
    the rejects table and the run goes on. Without --until the run continues past the last event until every
    pending protocol timeout has fired (docs/events.md, "How a run ends").
    """
    if engine == "spark":
        raise UserError(SPARK_NOT_AVAILABLE)
    try:
        config = load_config(conf_file, overrides)
        rows = read_events(events)
        result = run_local(rows.events, config, until)
        tables = dict(result.tables, rejects=rows.rejects + result.tables["rejects"])
        write_tables(out_dir, tables)
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    print_summary(Console(), result, tables, config, out_dir)


def print_summary(console: Console, result: RunResult, tables: dict[str, list[dict]], config: CoordinatorConfig,
                  out_dir: str) -> None:
    errors = Counter(row["error"] for row in tables["responses"])
    by_count = sorted(errors.items(), key=lambda item: (-item[1], item[0]))
    rebalances = sum(1 for row in tables["group_states"] if row["to_state"] == "PreparingRebalance")
    rejected = len(tables["rejects"])
    applied = str(result.events_applied)
    if result.events_after_until:
        applied += f" ({result.events_after_until} after --until, not applied)"
    lines = [
        ("groups", str(result.groups)),
        ("events applied", applied),
        ("final time", "-" if result.final_ts is None else f"{result.final_ts} ({_iso(result.final_ts)})"),
        ("generations", str(len(tables["generations"]))),
        ("rebalances", str(rebalances)),
        ("responses", ", ".join(f"{name} {count}" for name, count in by_count) or "0"),
        ("rejected rows", f"{rejected} (reasons in the rejects table)" if rejected else "0"),
    ]
    changed = non_default_settings(config)
    if changed:
        lines.append(("settings", ", ".join(f"{name}={value}" for name, value in changed.items())))
    lines.append(("output", str(out_dir)))
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        console.print(f"[bold]{label:<{width}}[/bold]  {escape(value)}", highlight=False, soft_wrap=True)


def _iso(ts_ms: int) -> str:
    return _dt.datetime.fromtimestamp(ts_ms / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds")
