"""`coordsim conformance --kafka-version V [--scenario NAME ...]`: the suite against that Kafka release, and the
table of answers and records compared (docs/conformance.md). A bad state of the surroundings (Maven
unreachable, a port in use, a broker that does not start) is one line and exit code 2; a difference no rule
explains is exit code 1."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from simulations.cli_common import Console, UserError
from simulations.conformance import ConformanceError
from simulations.conformance.explain import render, summary_row
from simulations.conformance.runner import run_suite
from simulations.conformance.scenarios import CI_SUBSET, SCENARIOS

SUMMARY_FILE = "conformance.json"


@click.command(name="conformance")
@click.option("--kafka-version", "version", required=True, metavar="V",
              help="The Kafka release to run (4.0.0 or newer), resolved from Maven Central.")
@click.option("--scenario", "names", multiple=True, metavar="NAME",
              help=f"A scenario (repeatable; default: all): {', '.join(SCENARIOS)}.")
@click.option("--ci", is_flag=True, help=f"The short subset: {', '.join(CI_SUBSET)}.")
@click.option("--work", "work_dir", metavar="DIR",
              help="Folder for the clusters' data, captures and comparisons (default: a new temp folder).")
@click.option("--maven-repo", metavar="DIR", help="Maven's local repository (default: Maven's, ~/.m2/repository).")
def conformance(version: str, names: tuple[str, ...], ci: bool, work_dir: str | None, maven_repo: str | None) -> None:
    """Run real Java consumers against a real Kafka cluster (KRaft, 127.0.0.1), replay their captured traffic
    in coordsim and print every answer and __consumer_offsets record compared, each difference with its cause."""
    console = Console()
    work = Path(work_dir or tempfile.mkdtemp(prefix=f"coordsim-conformance-{version}-"))
    chosen = list(names) or list(CI_SUBSET if ci else SCENARIOS)
    try:
        outcomes = run_suite(version, chosen, work, maven_repo, progress=lambda line: console.print(line, highlight=False))
    except ConformanceError as error:
        raise UserError(str(error)) from None
    rows = [summary_row(o) for o in outcomes]
    (work / SUMMARY_FILE).write_text(json.dumps(rows, indent=1) + "\n")
    click.echo(render(rows))
    unexplained = sum(r["unexplained"] for r in rows)
    if unexplained:
        console.print(f"{unexplained} difference(s) unexplained: see {work}/*/divergences.ndjson and records.ndjson",
                      highlight=False, markup=False)
        raise SystemExit(1)
