"""The capture features on the command line: the `capture` click group (`coordsim capture import`) and the
click-free report `coordsim replay --compare-captured FILE` writes after the run.

Same rule as simulations/cli.py: a user's mistake (a missing file, no tshark, an unreadable captured-responses
file) ends with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from tableio.captured import CapturedError
from simulations.capture.compare import compare_captured, final_offsets
from simulations.capture.importer import DEFAULT_PORTS, ImportResult, import_capture, write_import
from simulations.capture.pipelined import HELD, PIPELINED
from simulations.capture.segments import CaptureError
from simulations.cli_common import Console, UserError, print_lines

if TYPE_CHECKING:
    import pandas as pd

USER_ERRORS = (CaptureError, CapturedError)


@click.group("capture")
def capture() -> None:
    """Captured client traffic: import pcaps of Kafka group requests as events (docs/captures.md)."""


@capture.command("import")
@click.argument("file", metavar="FILE")
@click.option("--out", "out", required=True, metavar="EVENTS",
              help="Events file to write (JSONL); the captured responses and rejects go beside it.")
@click.option("--port", "ports", type=click.IntRange(1, 65535), multiple=True, metavar="PORT",
              help="Broker port to decode as Kafka; repeat for several brokers. Default: 9092.")
@click.option("--pipelined", type=click.Choice(PIPELINED), default=HELD, show_default=True,
              help="When a request sent behind another still unanswered on its connection is replayed: held until "
                   "the broker answered that one (a Kafka broker reads a connection's requests one at a time), or "
                   "as-captured (a server that reads them as they come, as librdkafka's mock cluster).")
def import_command(file: str, out: str, ports: tuple[int, ...], pipelined: str) -> None:
    """Import FILE (pcap/pcapng, tshark JSON export, or JSONL events) as events for `coordsim replay`.

    Group requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) become events,
    paired with the broker's responses, which are written to EVENTS' `.captured.ndjson` sibling for
    `coordsim replay ... --compare-captured`. Anything unusable is counted in `.rejects.ndjson`.
    """
    if not out.lower().endswith((".jsonl", ".json")):
        raise UserError(f"--out {out}: the events file must end in .jsonl (replay reads it by its suffix)")
    try:
        result = import_capture(file, ports or DEFAULT_PORTS, pipelined)
        paths = write_import(result, out)
    except USER_ERRORS as error:
        raise UserError(str(error)) from None
    print_import_summary(Console(), result, paths, ports or DEFAULT_PORTS)


def print_import_summary(console: Console, result: ImportResult, paths, ports) -> None:
    events_path, captured_path, rejects_path = paths
    answered = sum(1 for row in result.captured if row["error"] is not None)
    lines = [
        ("source", f"{result.source} ({result.kind})"),
        ("group requests", ", ".join(f"{api} {n}" for api, n in sorted(result.requests.items())) or "0"),
        ("events", f"{len(result.events)} -> {events_path}"),
        ("captured responses", f"{answered} of {len(result.captured)} requests answered -> {captured_path}"),
    ]
    if result.kind != "events-jsonl":
        lines.append(("other Kafka requests", f"{result.other_requests} (Fetch, Metadata, ...: not group traffic)"))
        if not result.requests and not result.other_requests and not result.rejects:
            lines.append(("hint", f"no Kafka traffic on port(s) {', '.join(map(str, ports))}: "
                                  "name the brokers' ports with --port"))
    reasons = result.reject_reasons()
    rejected = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
    lines.append(("rejects", f"{len(result.rejects)} ({rejected}) -> {rejects_path}" if result.rejects else "0"))
    print_lines(console, lines)


@dataclass
class CapturedReport:
    """How a replay's answers compare with the captured broker's."""

    divergences: "pd.DataFrame"  # compare.compare_captured
    offsets: "pd.DataFrame"  # compare.final_offsets


def captured_report(tables: dict[str, list[dict]], captured: list[dict]) -> CapturedReport:
    """The report on a finished run's tables (either engine's), against the captured rows."""
    return CapturedReport(compare_captured(tables, captured), final_offsets(tables, captured))
