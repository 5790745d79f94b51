"""Quiet runs read back from pandas frames (docs/tables.md, "Quiet runs"): `state.quiet_run`'s rules over whole
columns of `requests`, `responses` and `offsets` rows, for every view, report figure and check, without
expanding a run (unless asked to, `expand_runs`), so a run of a day of heartbeats costs one row. A frame
without `repeat_count` reads as lone requests.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from state import quiet_run
from state.quiet_run import COUNT, INTERVAL


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column as float64, NaN for a null; all null where the frame lacks it (read without it)."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    return frame[column].to_numpy("float64", na_value=np.nan)


def _runs(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's request count and interval (int64 arrays)."""
    counts = quiet_run.run_counts(_floats(frame, COUNT))
    return counts, quiet_run.run_intervals(counts, _floats(frame, INTERVAL))


def repeat_counts(frame: pd.DataFrame) -> pd.Series:
    """The requests each row stands for (int64, the frame's index)."""
    return pd.Series(_runs(frame)[0], index=frame.index, dtype="int64")


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
    count, interval = _runs(frame)
    start = first.to_numpy("int64")
    return first + pd.Series(quiet_run.last_request_times(start, count, interval, at) - start, index=frame.index)


def repeats_until(frame: pd.DataFrame, column: str, at: int) -> pd.Series:
    """How many of each row's requests have `column` (a time) at or before `at` (int64, the frame's index)."""
    count, interval = _runs(frame)
    return pd.Series(quiet_run.requests_until_array(frame[column].to_numpy("int64"), count, interval, at),
                     index=frame.index, dtype="int64")


def repeat_times(frame: pd.DataFrame, column: str) -> pd.Series:
    """`column` (a time) of every request, row after row, each with its row's index label: a run's row
    repeated once per request."""
    count, interval = _runs(frame)
    return pd.Series(quiet_run.request_times(frame[column].to_numpy("int64"), count, interval),
                     index=frame.index.repeat(count), dtype="int64")


def counts_per_window(frame: pd.DataFrame, column: str, edges: Sequence[int]) -> list[int]:
    """Requests per time window of `column` between ascending `edges`: len(edges) + 1 counts, the first of
    the requests before edges[0], the last of those at or after edges[-1]. Computed per edge, never by
    expanding the runs."""
    count, interval = _runs(frame)
    return quiet_run.counts_per_window(frame[column].to_numpy("int64"), count, interval, edges)


def expand_runs(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """One row per request of `requests`, `responses` or `offsets` rows (their columns, their types): each
    run's row expanded by `state.quiet_run.expand_row` in its place, other rows as they are."""
    if frame.empty or not (repeat_counts(frame) > 1).any():
        return frame
    data = pa.Table.from_pandas(frame, preserve_index=False)
    expanded = [r for row in data.to_pylist() for r in quiet_run.expand_row(table, row)]
    # The schema's pandas metadata gives the columns their types back (nullable integers stay nullable).
    return pa.Table.from_pylist(expanded, schema=data.schema).to_pandas()
