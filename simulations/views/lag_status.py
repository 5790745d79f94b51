"""`coordsim lag`: a run's consumer lag status (`tableio.lag_status`, LinkedIn Burrow's evaluation) at any
simulated time, as Burrow's /lag and /status endpoints list it.
"""

from __future__ import annotations

import datetime as _dt
import os

from simulations.views.describe import require_group
from simulations.views.run_tables import RunTables, load_run
from tableio.lag_status import GroupStatus, LagHistory, PartitionStatus, Settings

NO_LOG_END_OFFSET = ("no log-end offset in the commits: the run has no production model for the topic, as in a "
                     "replay of captured requests")

HEADER = ("TOPIC", "PARTITION", "STATUS", "START-OFFSET", "START-LAG", "START-TIME", "END-OFFSET", "END-LAG",
          "END-TIME", "CURRENT-LAG")


def lag_report(run_dir: str | os.PathLike | RunTables, group: str | None = None, at: int | None = None,
               settings: Settings = Settings()) -> list[str]:
    """What `coordsim lag` prints: per group its status line, then its partitions as Burrow's /lag endpoint
    lists them (all of them for `group`; otherwise only those not OK, as /status does). `at` defaults to
    the time the run's lag_status table was evaluated at (the run's final time), else its last row."""
    run = run_dir if isinstance(run_dir, RunTables) else load_run(run_dir)
    if group is not None:
        require_group(run, group)
    if at is None:
        evaluated_at = run["lag_status"]["evaluated_ts"].dropna()
        at = int(evaluated_at.iloc[0]) if len(evaluated_at) else run.end_ts
    history = LagHistory.from_run(run, settings)
    lines = []
    for group_id in [group] if group is not None else history.groups:
        evaluated = history.evaluate(group_id, at) if at is not None else None
        if evaluated is None:
            lines.append(f"{group_id}: NOTFOUND at {_time(at)} (no commit yet, none since the group was deleted, "
                         f"or none within expire-group)")
            continue
        lines.append(_group_line(evaluated))
        shown = [p for p in evaluated.partitions if group is not None or p.status not in ("OK", None)]
        if shown:
            lines += _table([HEADER] + [_partition_cells(p) for p in shown])
        if any(p.status is None for p in shown):
            lines.append(f"  STATUS -: {NO_LOG_END_OFFSET}")
    return lines


def _group_line(g: GroupStatus) -> str:
    if g.status is None:
        return f"{g.group_id}: no status at {_time(g.at)}, {len(g.partitions)} partitions: {NO_LOG_END_OFFSET}"
    maxlag = g.maxlag
    worst = "-" if maxlag is None else f"{maxlag.topic}-{maxlag.partition} ({maxlag.current_lag})"
    return (f"{g.group_id}: {g.status} at {_time(g.at)}, complete {g.complete:.2f}, {len(g.partitions)} partitions, "
            f"total lag {g.total_lag}, maxlag {worst}")


def _partition_cells(p: PartitionStatus) -> list[str]:
    if not p.window:
        return [p.topic, str(p.partition)] + ["-"] * 8
    start, end = p.window[0], p.window[-1]
    return [p.topic, str(p.partition), p.status, str(start.offset), str(start.lag), _time(start.ts),
            str(end.offset), str(end.lag), _time(end.ts), str(p.current_lag)]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows if i < len(row) - 1) for i in range(len(rows[0]) - 1)]
    return ["  " + " ".join(cell.ljust(w) for cell, w in zip(row, widths)) + " " + row[-1] for row in rows]


def _time(ts: int | None) -> str:
    if ts is None:
        return "-"
    return _dt.datetime.fromtimestamp(ts / 1000, _dt.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")
