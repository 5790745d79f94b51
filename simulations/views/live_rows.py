"""A Spark run in progress as its history will read at the time it has reached: the rows its committed
micro-batches wrote, and what the groups' latest live snapshots say is still open then.

A micro-batch runs every group with something due to its horizon and commits the rows they wrote; what is
still open is not in them: a quiet run is written when it closes, a generation once its outcome is known, a
group's `metrics` row at the end of the run (state/runtime/snapshot.py). So each visit of a group also leaves its
live snapshot with the batch (`streaming.step.LIVE_TABLE`), and the batch keeps its horizon
(`streaming.sink.committed_horizon`). At the latest committed batch's horizon (the time reached), each group
whose run has not ended reads its latest snapshot there: a group not visited since has nothing due before its
next wakeup, which lies beyond that time, so its snapshot still holds (its open runs' requests go on
arriving at their fixed instants, its open gaps lengthen). The committed rows plus those rows are the run's
tables as `coordsim metrics RUN --step` will read them at that time, quiet runs counted request by request.
"""

from __future__ import annotations

from pathlib import Path

from state.runtime import snapshot
from state.tables import GROUP_TABLES
from streaming.sink import committed_batches, read_batch
from streaming.step import LIVE_TABLE


def open_rows(batches: Path, at: int) -> dict[str, list[dict]]:
    """The rows finish() would write at `at` (the time the committed batches reached) for every group whose
    run has not ended, from its latest committed snapshot."""
    latest: dict[str, bytes] = {}
    for batch_id in reversed(committed_batches(batches)):
        part = read_batch(batches, batch_id, LIVE_TABLE, ["group_id"])
        # A group has at most one snapshot per batch (one call a batch); older batches' are superseded, and
        # their payloads are not read (during a storm every group's latest is in the latest batch).
        wanted = [] if part is None else [(i, g) for i, g in enumerate(part["group_id"].to_pylist()) if g not in latest]
        if wanted:
            payloads = read_batch(batches, batch_id, LIVE_TABLE, ["payload"])["payload"]
            latest.update((group_id, payloads[i].as_py()) for i, group_id in wanted)
    rows: dict[str, list[dict]] = {name: [] for name in GROUP_TABLES}
    for payload in latest.values():
        if payload:  # empty: the group's run ended, its rows are all committed
            for name, table_rows in snapshot.rows_at(payload, at).tables.items():
                rows[name].extend(table_rows)
    return rows

