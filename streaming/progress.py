"""What a Spark run tells its user: a live panel while it runs (gone at the end), a warning if Spark dropped
late rows, and the one-screen summary `python -m streaming.engine` ends with (the CLI prints its own).

The panel is fed from two places: the engine (each committed micro-batch: events received, groups seen,
rejects) and the query's progress reports (late rows dropped by the watermark, the watermark itself, which
is how far simulated time has got). Progress reports are also recorded with the batches, since they are the
only place Spark reports late rows.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener
from rich.console import Console
from rich.live import Live
from rich.table import Table

from streaming import sink
from streaming.step import GroupFacts, horizon_of


def progress_facts(report) -> dict:
    """The facts of one StreamingQueryProgress that a run keeps."""
    return {
        "late_rows": sum(op.numRowsDroppedByWatermark for op in report.stateOperators),
        "input_rows": report.numInputRows,
        "watermark": report.eventTime.get("watermark"),
        "duration_ms": report.durationMs.get("triggerExecution"),
    }


def _iso_ms(text: str | None) -> int | None:
    if not text:
        return None
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def format_ts(ms: int | None) -> str:
    if ms is None:
        return "-"
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    return f"{moment.isoformat(timespec='milliseconds').replace('+00:00', 'Z')} ({ms})"


class RunDisplay:
    """Counters of this invocation, rendered live on stderr when `enabled`."""

    def __init__(self, enabled: bool, until: int | None = None) -> None:
        self.enabled = enabled
        self.until = until
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.stage = "starting Spark"
        self.batches: set[int] = set()
        self.events = 0
        self.rejects = 0
        self.groups: set[str] = set()
        self.reports: dict[int, dict] = {}
        self.horizons: list[int] = []  # a sliced run's, one per slice
        self.live: Live | None = None

    def __enter__(self) -> "RunDisplay":
        if self.enabled:
            # Transient: once the run ends, its summary (the caller's) is the one table left on screen.
            self.live = Live(get_renderable=self.render, console=Console(stderr=True), refresh_per_second=2,
                             transient=True)
            self.live.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.stop()

    def phase(self, name: str) -> None:
        self.stage = name

    def sliced(self, horizons: list[int]) -> None:
        self.horizons = horizons

    def batch_committed(self, batch_id: int, facts: list[tuple[str, GroupFacts]], rejects: int) -> None:
        with self.lock:
            self.batches.add(batch_id)
            self.events += sum(f.events for _, f in facts)
            self.groups.update(g for g, f in facts if f.known)
            self.rejects += rejects

    def report(self, batch_id: int, facts: dict) -> None:
        with self.lock:
            self.reports[batch_id] = facts

    def render(self) -> Table:
        with self.lock:
            late = sum(r["late_rows"] for r in self.reports.values())
            marks = [_iso_ms(r["watermark"]) for r in self.reports.values()]
            watermark = max((m for m in marks if m), default=None)
            reached = None if watermark is None else horizon_of(watermark, self.until)
            table = Table(title=f"coordsim on Spark: {self.stage}", show_header=False, min_width=60)
            table.add_row("micro-batches", str(len(self.batches)))
            table.add_row("events in", f"{self.events:,}")
            done = "" if not self.horizons or reached is None else \
                f", slice {sum(1 for h in self.horizons if h <= reached)} of {len(self.horizons)}"
            table.add_row("simulated time reached", format_ts(reached) + done)
            table.add_row("groups", f"{len(self.groups):,}")
            table.add_row("rejects", f"{self.rejects:,}")
            table.add_row("late rows (dropped)", f"{late:,}")
            table.add_row("elapsed", f"{time.monotonic() - self.started:.1f} s")
        return table


class ProgressListener(StreamingQueryListener):
    """Records every progress report with the run's batches and shows it."""

    def __init__(self, batches_root: Path, display: RunDisplay) -> None:
        self.batches_root = batches_root
        self.display = display
        self.recorded: set[tuple[str, int]] = set()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        self.record(event.progress)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

    def record(self, report) -> None:
        """Keep `report` unless this query run already reported its batch (reports also come from
        `StreamingQuery.recentProgress`, which the engine replays after each phase)."""
        key = (report.runId, report.batchId)
        if key in self.recorded:
            return
        self.recorded.add(key)
        facts = progress_facts(report)
        sink.record_progress(self.batches_root, report.batchId, facts)
        self.display.report(report.batchId, facts)


def print_summary(result) -> None:
    """One screen: where the tables are, how far the run got, what went in and what came out."""
    table = Table(title="coordsim replay (engine: spark)", show_header=False)
    table.add_row("tables", result.out_dir)
    table.add_row("final time", format_ts(result.final_ts))
    table.add_row("events applied", f"{result.events_applied:,}")
    if result.events_after_until:
        table.add_row("events after --until (left out)", f"{result.events_after_until:,}")
    table.add_row("groups", f"{result.groups:,}")
    late = f"{result.late_rows:,}"
    if result.late_rows_unknown_batches:
        late += f" (+ unknown for batches {result.late_rows_unknown_batches}: progress lost in a kill)"
    table.add_row("late rows dropped by the watermark", late)
    for name in result.tables:
        table.add_row(f"  {name}", f"{result.tables.row_count(name):,} rows")
    table.add_row("micro-batches", str(result.batches))
    table.add_row("wall time", f"{result.wall_s:.1f} s")
    Console(stderr=True).print(table)


def warn_late_rows(result) -> None:
    """The one thing about a run that its caller's summary may not say: input rows Spark dropped."""
    if result.late_rows:
        Console(stderr=True).print(f"[yellow]{result.late_rows:,} input rows arrived later than "
                                   f"streaming.watermark.delay.ms allows and were dropped; the tables do not "
                                   f"include them.[/yellow]")
