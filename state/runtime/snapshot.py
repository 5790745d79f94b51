"""A group's live snapshot: the rows `GroupRuntime.finish()` would write if the run ended at a time T, taken
at an engine's visit without changing the runtime, for the readers of a run in progress (the dashboard and
/metrics of a Spark run: docs/spark.md, "What a reader sees of a run in progress").

finish() writes what is still open: the quiet runs (state/clients/elision.py), a generation whose outcome is not
known yet (without a stable time), and the group's `metrics` row, whose unconsumed partition time counts
the gaps still open up to the end. Between two visits of an engine (the group's next wakeup, or an event
reaching it) nothing happens to a group but its elided clients' periodic requests, which arrive at their
chains' fixed instants, and the passing of time, which lengthens the open gaps. So a snapshot taken at a
visit holds the open runs with how they grow, the pending generations' rows, and the metrics row with its
gaps apart; `rows_at(snapshot, T)` gives finish()'s rows at any T from the visit until the group's next
visit: each run with its requests that arrived by T, the metrics as of T.

A snapshot is bytes: plain values (marshal, no class names), zlib-compressed at level 1 (its rows repeat
their values run after run).
"""

from __future__ import annotations

import marshal
import zlib

from state.metrics import unconsumed_figures
from state.runtime.output import Output
from state.runtime.periodic_answers import runs_at
from state.runtime.quiet_runs import write_run

FORMAT = 2  # 2: a run's growth is (first arrival, period, requests folded)


class SnapshotError(ValueError):
    """A snapshot of another format, or read at a time before it was taken."""


def take(runtime) -> bytes:
    """The snapshot of `runtime` (a GroupRuntime) at its current time; the runtime is left as it was."""
    origins = {client_id: runtime.fleet.clients[client_id].origin for client_id in runtime.periodic_answers.members}
    runs, openings = runtime.periodic_answers.open_runs(origins)
    generations = [row for row in (runtime.classic.pending_generation_row(None), runtime.consumer.generation_row(None))
                   if row is not None]
    m = runtime.metrics
    metrics = m.row(runtime.now, *runtime.end_of_group)
    # Each generation finish() writes is one more (Output.generation; without a stable time, no duration).
    metrics["generations"] += len(generations)
    gaps = (dict(m.gaps_ms), list(m.unconsumed_since.values())) if m.synthetic else None
    out = runtime.out
    body = (FORMAT, runtime.group_id, runtime.now, out.next_seq, out.coordinator_partition, out.coordinator_id,
            runs, openings, generations, metrics, gaps)
    return zlib.compress(marshal.dumps(body), 1)


def rows_at(snapshot: bytes, at: int) -> Output:
    """The rows finish() would write at `at` (from the time the snapshot was taken until the group's next
    visit), with the `out_seq` finish() would give them."""
    (_, group_id, taken, next_seq, partition, coordinator_id, runs, openings, generations, metrics,
     gaps) = _body(snapshot)
    if at < taken:
        raise SnapshotError(f"a snapshot of group {group_id!r} taken at {taken} read at {at}")
    out = Output(group_id, next_seq, partition, coordinator_id)
    for run in runs_at(runs, openings, at):
        write_run(out, run)
    for row in generations:
        out.generation(row)
    if gaps is not None:
        metrics.update(unconsumed_figures(*gaps, at))
    metrics["end_ts"] = at
    out.metrics(metrics)
    return out


def _body(snapshot: bytes) -> tuple:
    body = marshal.loads(zlib.decompress(snapshot))
    if body[0] != FORMAT:
        raise SnapshotError(f"a live snapshot of format {body[0]}; this release reads format {FORMAT}")
    return body
