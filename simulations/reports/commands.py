"""The click commands of issue 7, for `simulations.cli` to register: `report`, `dashboard`, `describe`,
`offsets`, `lag` and `validate`; and `metrics`, a run's history for Prometheus (issue 16).

Each imports what it needs when it runs (great-expectations takes seconds to import), so registering them
costs the CLI nothing. A user's mistake (a missing run folder, an unknown group, a bad --at) ends with one
line and exit code 2, never a traceback; `validate` exits 1 when a check fails.
"""

from __future__ import annotations

import click

from simulations.cli_common import Timestamp, UserError


RUN_DIR = click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=False))
VARIANT = click.option("--variant", metavar="V", help="The variant of a sweep to read (coordsim sweep).")


def _run(run_dir: str, variant: str | None):
    """What a view of one run reads: the folder, or a sweep's variant of it."""
    from simulations.views.run_tables import load_run

    return run_dir if variant is None else load_run(run_dir, variant=variant)


def _user_errors():
    from tableio.inputs import InputError
    from tableio.parquet import OutputError
    from simulations.validation.suites import SuiteError
    from simulations.views import RunError

    return RunError, InputError, OutputError, SuiteError


@click.command()
@RUN_DIR
@click.option("--out", "out_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Where to write the HTML (default: RUN_DIR/report.html).")
@click.option("--group", metavar="G", help="Group of the ownership heatmap (default: the busiest).")
@VARIANT
def report(run_dir: str, out_file: str | None, group: str | None, variant: str | None) -> None:
    """Write one self-contained HTML report of the run in RUN_DIR (opens without a network). Of a sweep: its
    variants side by side, or with --variant, that variant's report."""
    from simulations.reports import build_report

    try:
        path = build_report(run_dir, out_file, group, variant)
    except _user_errors() as error:
        raise UserError(str(error)) from None
    click.echo(f"report: {path} ({path.stat().st_size // 1024 + 1} KiB)")


@click.command()
@RUN_DIR
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8050, show_default=True, type=click.IntRange(0, 65535),
              help="Port to bind; 0 picks a free one.")
@click.option("--refresh", default=2.0, show_default=True, type=click.FloatRange(0.2), metavar="SECONDS",
              help="How often the page fetches fresh panels.")
@click.option("--group", metavar="G", help="Group shown first in the ownership heatmap (default: the busiest).")
def dashboard(run_dir: str, host: str, port: int, refresh: float, group: str | None) -> None:
    """Serve the report's panels live from RUN_DIR, refreshed while a run writes it (Ctrl-C stops)."""
    from simulations.reports.dashboard import make_server

    try:
        server = make_server(run_dir, host, port, refresh, group)
    except _user_errors() as error:
        raise UserError(str(error)) from None
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    bound_host, bound_port = server.server_address[:2]
    click.echo(f"coordsim dashboard of {run_dir}: http://{bound_host}:{bound_port}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@click.command()
@RUN_DIR
@click.option("--group", required=True, metavar="G", help="The group to describe.")
@click.option("--offsets", "mode", flag_value="offsets", default=True,
              help="Partitions with committed offsets and owners (the default).")
@click.option("--members", "mode", flag_value="members", help="Members with their partition counts.")
@click.option("--state", "mode", flag_value="state", help="Coordinator, assignment strategy, state, member count.")
@click.option("--at", type=Timestamp(), metavar="TS",
              help="Simulated time: epoch ms or ISO-8601 with a zone (default: the end of the run).")
@VARIANT
def describe(run_dir: str, group: str, mode: str, at: int | None, variant: str | None) -> None:
    """Describe GROUP at a simulated time as `kafka-consumer-groups.sh --describe` does."""
    from simulations.views import describe as describe_group

    try:
        described = describe_group(_run(run_dir, variant), group, at, mode)
    except _user_errors() as error:
        raise UserError(str(error)) from None
    click.echo(described.err, err=True, nl=False)
    click.echo(described.out, nl=False)


@click.command()
@RUN_DIR
@click.option("--group", metavar="G", help="Only this group's records.")
@click.option("--formatter", metavar="F", default="OffsetsMessageFormatter", show_default=True,
              help="Kafka's formatter to print as (its class name, with or without its package): "
                   "OffsetsMessageFormatter, the OffsetCommit records; GroupMetadataMessageFormatter, the "
                   "GroupMetadata records.")
@click.option("--format", "text_format", type=click.Choice(["json", "legacy"]), default="json", show_default=True,
              help="json: Kafka 4.x's formatters; legacy: the text of Kafka 0.10.1 to 2.0's "
                   "OffsetsMessageFormatter.")
@VARIANT
def offsets(run_dir: str, group: str | None, formatter: str, text_format: str, variant: str | None) -> None:
    """Print the run's __consumer_offsets records as kafka-console-consumer.sh prints them with Kafka's
    OffsetsMessageFormatter (or GroupMetadataMessageFormatter), one record a line."""
    from simulations.views import offsets_log
    from simulations.views.offsets_log import FormatterError

    try:
        for line in offsets_log(_run(run_dir, variant), group, formatter, legacy=text_format == "legacy"):
            click.echo(line)
    except (*_user_errors(), FormatterError) as error:
        raise UserError(str(error)) from None


@click.command()
@RUN_DIR
@click.option("--events", "events", multiple=True, metavar="PATH",
              help="The run's input (files or folders, as given to replay; repeatable): every row must be "
                   "answered, applied or rejected.")
@click.option("--until", type=Timestamp(), metavar="TS", help="The run's --until, if it had one.")
@click.option("--data-docs", "data_docs", metavar="DIR", type=click.Path(file_okay=False),
              help="Also write great-expectations data docs (HTML) to DIR.")
@VARIANT
def validate(run_dir: str, events: tuple[str, ...], until: int | None, data_docs: str | None,
             variant: str | None) -> None:
    """Check the tables of RUN_DIR: schema, values and protocol invariants (exit 1 when a check fails). Of a
    sweep, one variant's (with its own events from RUN_DIR/scenario/)."""
    from tableio.parquet import make_folder
    from simulations.validation import validate as validate_run
    from simulations.validation import validate_variant
    from simulations.views.run_tables import require_variant

    try:
        require_variant(run_dir, variant)
        # great-expectations takes only an absolute folder, and would fail late and raw on a bad one.
        docs = None if data_docs is None else make_folder(data_docs, "the data docs folder").absolute()
        result = (validate_run(run_dir, docs, events, until) if variant is None
                  else validate_variant(run_dir, variant, until, docs))
    except _user_errors() as error:
        raise UserError(str(error)) from None
    click.echo(result.summary())
    if not result.success:
        raise SystemExit(1)


@click.command()
@RUN_DIR
@click.option("--group", metavar="G", help="Only this group, with every partition (default: every group, with the "
                                           "partitions that are not OK).")
@click.option("--at", type=Timestamp(), metavar="TS",
              help="Simulated time: epoch ms or ISO-8601 with a zone (default: the end of the run).")
@click.option("--intervals", default=10, show_default=True, type=click.IntRange(1),
              help="Burrow's storage intervals: commits kept per partition (the window).")
@click.option("--min-distance", default=0.0, show_default=True, type=click.FloatRange(0), metavar="SECONDS",
              help="Burrow's min-distance: a commit closer than this to the previous one replaces it.")
@click.option("--offset-refresh", default=10.0, show_default=True, type=click.FloatRange(0.001), metavar="SECONDS",
              help="Burrow's offset-refresh: how often the brokers' log-end offsets are sampled.")
@click.option("--allowed-lag", default=0, show_default=True, type=click.IntRange(0),
              help="Burrow's allowed-lag: a lag up to this counts as zero.")
@VARIANT
def lag(run_dir: str, group: str | None, at: int | None, intervals: int, min_distance: float,
        offset_refresh: float, allowed_lag: int, variant: str | None) -> None:
    """Burrow's consumer lag status (OK, WARN, ERR; partitions OK, WARN, STOP, STALL, REWIND) at a time."""
    from simulations.views.lag_status import lag_report
    from tableio.lag_status import Settings

    settings = Settings(intervals=intervals, min_distance_ms=round(min_distance * 1000),
                        offset_refresh_ms=round(offset_refresh * 1000), allowed_lag=allowed_lag)
    try:
        for line in lag_report(_run(run_dir, variant), group, at, settings):
            click.echo(line)
    except _user_errors() as error:
        raise UserError(str(error)) from None


@click.command()
@RUN_DIR
@click.option("--step", default=15.0, show_default=True, type=click.FloatRange(0.001), metavar="SECONDS",
              help="Simulated time between two points of each series.")
@click.option("--out", "out_file", required=True, metavar="FILE", type=click.Path(dir_okay=False),
              help="Where to write the OpenMetrics document.")
@click.option("--variant", metavar="V", help="Only this variant of a sweep (default: every variant, each series "
                                             "labelled with its variant).")
def metrics(run_dir: str, step: float, out_file: str, variant: str | None) -> None:
    """Write the run's history under Kafka's metric names, a point every --step of simulated time, for
    `promtool tsdb create-blocks-from openmetrics FILE DIR` (a live run: `coordsim dashboard` serves /metrics)."""
    from pathlib import Path

    from simulations.reports.prometheus import history
    from simulations.views.kafka_metrics import COLUMNS
    from simulations.views.run_tables import load_run, sweep_variants

    try:
        variants = sweep_variants(run_dir) if variant is None else [variant]
        runs = [load_run(run_dir, COLUMNS, name) for name in variants or [None]]
        body = history(runs, max(1, round(step * 1000)))
        Path(out_file).write_bytes(body)
    except _user_errors() as error:
        raise UserError(str(error)) from None
    except OSError as error:
        raise UserError(f"cannot write {out_file}: {error.strerror or error}") from None
    click.echo(f"metrics: {out_file} ({len(body) // 1024 + 1} KiB)")


COMMANDS = [report, dashboard, describe, offsets, lag, validate, metrics]
