"""How a quiet-run row reads back (docs/tables.md, "Quiet runs"): with `tableio.quiet_run`, the one reader,
outside state/, of `repeat_count` and `repeat_interval_ms` in the `requests`, `responses` and `offsets`
tables, and of an `offsets` run's rule (`records_per_second`, `rate_origin_ts`, `log_end_origin_ts`).

Every operation reads a row the same way, as `state.periodic.expand_row` (the reference expansion) does:
- a row stands for `repeat_count` requests; a missing count (null, or NaN as pandas reads a null back) reads
  1, a lone request, and so does a count below 1;
- request i (from 0) is at `t + i * repeat_interval_ms` for each of the row's time columns t; a missing
  interval (a lone request's) reads 0;
- "at or before `at`" includes a request at `at`; a time window [lo, hi) holds a request at lo, not one at
  hi (a request on an edge belongs to the later window);
- commit i of an `offsets` run commits the offset and has the log-end offset its rule gives at its time.

The column operations work on pandas frames without expanding a run (unless asked to, `expand_runs`), so
a run of a day of heartbeats costs one row; `tableio.quiet_run.Run` reads one row's requests one at a time,
for the lag evaluator's commit log.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from state.periodic import expand_row
from tableio.quiet_run import COUNT, INTERVAL


def repeat_counts(frame: pd.DataFrame) -> pd.Series:
    """The requests each row stands for (int64, the frame's index)."""
    if COUNT not in frame.columns:
        return pd.Series(1, index=frame.index, dtype="int64")
    return frame[COUNT].astype("float64").fillna(1).clip(lower=1).astype("int64")


def _intervals(frame: pd.DataFrame) -> pd.Series:
    if INTERVAL not in frame.columns:
        return pd.Series(0, index=frame.index, dtype="int64")
    return frame[INTERVAL].astype("Int64").fillna(0).astype("int64")


def count_requests(frame: pd.DataFrame, by: str | None = None) -> int | pd.Series:
    """How many requests (or commits) the rows stand for: in all, or per value of the column `by`."""
    counts = repeat_counts(frame)
    return int(counts.sum()) if by is None else counts.groupby(frame[by]).sum()


def last_repeat(frame: pd.DataFrame, column: str, at: int | None = None) -> pd.Series:
    """`column` (a time) of each row's last request at or before `at`, or of its last request at all. A row
    whose first request comes after `at` gives its first request's time."""
    first = frame[column]
    if COUNT not in frame.columns:
        return first
    interval = _intervals(frame)
    repeats = repeat_counts(frame) - 1
    if at is not None:
        passed = ((at - first) // interval.where(interval > 0, 1)).clip(lower=0)
        repeats = repeats.where(repeats < passed, passed)
    return first + repeats * interval


def repeats_until(frame: pd.DataFrame, column: str, at: int) -> pd.Series:
    """How many of each row's requests have `column` (a time) at or before `at` (int64, the frame's index)."""
    first = frame[column].astype("int64")
    count = repeat_counts(frame)
    interval = _intervals(frame)
    passed = (at - first) // interval.where(interval > 0, 1) + 1
    return passed.where(interval > 0, count).clip(lower=0, upper=count).where(first <= at, 0)


def repeat_times(frame: pd.DataFrame, column: str) -> pd.Series:
    """`column` (a time) of every request, row after row, each with its row's index label: a run's row
    repeated once per request."""
    counts = repeat_counts(frame).to_numpy()
    first = frame[column].astype("int64").to_numpy()
    interval = _intervals(frame).to_numpy()
    step = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return pd.Series(np.repeat(first, counts) + step * np.repeat(interval, counts),
                     index=frame.index.repeat(counts), dtype="int64")


def counts_per_window(frame: pd.DataFrame, column: str, edges: Sequence[int]) -> list[int]:
    """Requests per time window of `column` between ascending `edges`: len(edges) + 1 counts, the first of
    the requests before edges[0], the last of those at or after edges[-1]. Computed per edge, never by
    expanding the runs."""
    total = count_requests(frame)
    if frame.empty:
        return [0] * (len(edges) + 1)
    first = frame[column].astype("int64").to_numpy()[:, None]
    count = repeat_counts(frame).to_numpy()[:, None]
    interval = _intervals(frame).to_numpy()[:, None]
    span = np.asarray(edges, dtype="int64")[None, :] - first
    # Requests before an edge: first + i * interval < edge, i.e. i < span / interval (all of them when the
    # run has no interval and starts before the edge).
    before = np.where(interval > 0, np.clip(-(-span // np.maximum(interval, 1)), 0, count),
                      np.where(span > 0, count, 0))
    cumulative = np.concatenate([[0], before.sum(axis=0), [total]])
    return np.diff(cumulative).tolist()


def expand_runs(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """One row per request of `requests`, `responses` or `offsets` rows (their columns, their types): each
    run's row expanded by `state.periodic.expand_row` in its place, other rows as they are."""
    if frame.empty or not (repeat_counts(frame) > 1).any():
        return frame
    data = pa.Table.from_pandas(frame, preserve_index=False)
    expanded = [r for row in data.to_pylist() for r in expand_row(table, row)]
    # The schema's pandas metadata gives the columns their types back (nullable integers stay nullable).
    return pa.Table.from_pylist(expanded, schema=data.schema).to_pandas()
