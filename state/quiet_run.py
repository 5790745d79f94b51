"""The rules of a quiet run, written once (docs/tables.md, "Quiet runs"): how one row with `repeat_count` and
`repeat_interval_ms` stands for the requests (or commits) of a run, for every reader of the tables and of
the input: the core (`expand_row`, `state.events.expand_repeats`), tableio (the lag evaluator's commit log,
`coordinator_load`) and the views, reports and validation (`simulations.views.quiet_runs`, on pandas frames).

- A row stands for `repeat_count` requests; a missing count (null, or NaN as pandas reads a null back) reads
  1, a lone request, and so does a count below 1. A missing interval reads 0, and so does a lone request's.
- Request k (from 0) is at `t + k * repeat_interval_ms` for each of the row's time columns t.
- "At or before `at`" includes a request at `at`; a time window [lo, hi) holds a request at lo, not one at
  hi: a request on a window's edge belongs to the later window.
- Commit k of an `offsets` run (and of an OffsetCommit run's `requests` row, per partition) commits the
  row's offset grown by what the run's offsets rule (`records_per_second` from `rate_origin_ts`, the
  production model's `state.production.rule_offset`) produced between the first commit and commit k; its
  log-end offset grows by the same rate from `log_end_origin_ts`. A missing or zero rate, or a missing
  origin: the value stays the same.
- A synthetic client's periodic request is named by when it was sent (`<client>/heartbeat@<ts>`), so request
  k's id is the one `k * repeat_interval_ms` later; an input row's repeats share its id.

Each rule comes in two forms: one value at a time (the core's rows, `Run` for one row read request by
request) and whole numpy columns at a time (`*_array` and `counts_per_window`, for tableio and the views,
which never expand a run to count it); tests/state/test_quiet_run.py checks the columns against the values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from state.production import rule_offset, rule_offsets

COUNT, INTERVAL = "repeat_count", "repeat_interval_ms"
# What an `offsets` row needs besides its own values to be read commit by commit.
OFFSETS_RUN_COLUMNS = (COUNT, INTERVAL, "records_per_second", "rate_origin_ts", "log_end_origin_ts")
_PERIODIC_ID = re.compile(r"^(.*/(?:heartbeat|commit))@(-?\d+)$")


def known(value) -> bool:
    return value is not None and value == value  # NaN: a null read back by pandas


def _rated(rate) -> bool:
    return known(rate) and rate != 0


# -- one value at a time -----------------------------------------------------------------------------------

def run_count(value) -> int:
    """The requests a row stands for, from its `repeat_count`."""
    return max(1, int(value)) if known(value) else 1


def run_interval(count: int, value) -> int:
    """The ms between a run's requests, from its count and its `repeat_interval_ms`."""
    return int(value) if count > 1 and known(value) else 0


def request_time(first: int, interval: int, k: int) -> int:
    """Request k's time, given the row's time `first`."""
    return first + k * interval


def requests_until(first: int, count: int, interval: int, at: int) -> int:
    """How many of a run's requests are at or before `at`."""
    if first > at:
        return 0
    return count if interval <= 0 else min(count, (at - first) // interval + 1)


def last_request_time(first: int, count: int, interval: int, at: int | None = None) -> int:
    """The time of a run's last request at or before `at` (of its last request at all without `at`); a run
    whose first request comes after `at` gives its first request's time."""
    passed = count if at is None else requests_until(first, count, interval, at)
    return request_time(first, interval, max(passed, 1) - 1)


def grown(value: int, rate, origin, first: int, t: int) -> int:
    """`value` at a run's first commit (time `first`), as the commit at time `t` has it: grown by what the
    offsets rule (`rate` records/s from `origin`) produced between the two."""
    if not _rated(rate) or not known(origin):
        return value
    rule = (rate, origin, 0)
    return value + rule_offset(rule, t) - rule_offset(rule, first)


def repeated_request_id(request_id: str | None, shift: int) -> str | None:
    """The id of the request `shift` ms after `request_id` in its run."""
    match = _PERIODIC_ID.match(request_id or "")
    return request_id if match is None else f"{match.group(1)}@{int(match.group(2)) + shift}"


@dataclass(frozen=True, slots=True)
class Run:
    """One row's requests read one at a time (request k from 0), without expanding the row."""

    count: int
    interval: int
    rate: float | None = None            # records/s of the offsets rule; None: the offset stays the same
    origin: int | None = None            # rate_origin_ts
    log_end_origin: int | None = None    # log_end_origin_ts; None: the log-end offset stays the same

    @classmethod
    def of(cls, row: Mapping) -> "Run":
        count = run_count(row.get(COUNT))
        if count == 1:
            return LONE
        interval, rate = run_interval(count, row.get(INTERVAL)), row.get("records_per_second")
        if not _rated(rate):
            return cls(count, interval)
        log_end_origin = row.get("log_end_origin_ts")
        return cls(count, interval, rate, row.get("rate_origin_ts"), log_end_origin if known(log_end_origin) else None)

    def time(self, first: int, k: int) -> int:
        """Request k's time, given the row's time `first`."""
        return request_time(first, self.interval, k)

    def offset(self, offset: int, commit_ts: int, k: int) -> int:
        """Commit k's offset, given the row's `offset` and `commit_ts`."""
        return grown(offset, self.rate, self.origin, commit_ts, self.time(commit_ts, k))

    def log_end_offset(self, log_end_offset: int, commit_ts: int, k: int) -> int:
        """Commit k's log-end offset, given the row's `log_end_offset` and `commit_ts`."""
        return grown(log_end_offset, self.rate, self.log_end_origin, commit_ts, self.time(commit_ts, k))


LONE = Run(1, 0)
_SINGLE = {COUNT: 1, INTERVAL: None}


def expand_row(table: str, row: dict) -> list[dict]:
    """A `responses`, `offsets` or `requests` row as the one row per request it stands for (a row that is not a
    run comes back as it is): the reference expansion, which the column forms agree with."""
    run = Run.of(row)
    if run.count == 1:
        return [row]
    expanded = []
    for k in range(run.count):
        shift = run.time(0, k)
        if table == "responses":
            expanded.append(dict(row, **_SINGLE, request_ts=row["request_ts"] + shift,
                                 response_ts=row["response_ts"] + shift,
                                 request_id=repeated_request_id(row["request_id"], shift)))
        elif table == "offsets":
            log_end = row["log_end_offset"]
            if log_end is not None:
                log_end = run.log_end_offset(log_end, row["commit_ts"], k)
            expanded.append(dict(row, **_SINGLE, records_per_second=None, rate_origin_ts=None, log_end_offset=log_end,
                                 log_end_origin_ts=None, offset=run.offset(row["offset"], row["commit_ts"], k),
                                 commit_ts=row["commit_ts"] + shift, write_ts=row["write_ts"] + shift))
        else:
            raw = json.loads(row["raw"])
            raw.pop(COUNT)
            raw.pop(INTERVAL)
            first = raw["ts"]
            raw.update(ts=first + shift, request_id=repeated_request_id(raw["request_id"], shift))
            for p in raw.get("offsets", ()):
                rate, origin = p.pop("records_per_second", None), p.pop("rate_origin_ts", None)
                p["offset"] = grown(p["offset"], rate, origin, first, raw["ts"])
            expanded.append(dict(row, **_SINGLE, ts=raw["ts"], request_id=raw["request_id"],
                                 raw=json.dumps(raw, sort_keys=True)))
    return expanded


def expand_rows(table: str, rows) -> list[dict]:
    """Rows of `table` with every run expanded (tables without runs come back as they are)."""
    if table not in ("requests", "responses", "offsets"):
        return list(rows)
    return [r for row in rows for r in expand_row(table, row)]


# -- whole columns at a time (numpy arrays, one element per row) ---------------------------------------------

def run_counts(values: np.ndarray) -> np.ndarray:
    """`run_count` of each `repeat_count` (float64, NaN for a null)."""
    return np.maximum(np.nan_to_num(np.asarray(values, dtype="float64"), nan=1), 1).astype("int64")


def run_intervals(counts: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`run_interval` of each run, from its count and its `repeat_interval_ms` (float64, NaN for a null)."""
    return np.where(counts > 1, np.nan_to_num(np.asarray(values, dtype="float64"), nan=0), 0).astype("int64")


def requests_until_array(first: np.ndarray, count: np.ndarray, interval: np.ndarray, at) -> np.ndarray:
    """`requests_until` of each run (arrays that broadcast; `at` a time or an array of them)."""
    passed = np.where(interval > 0, (at - first) // np.maximum(interval, 1) + 1, count)
    return np.where(first <= at, np.minimum(np.maximum(passed, 0), count), 0)


def last_request_times(first: np.ndarray, count: np.ndarray, interval: np.ndarray, at: int | None = None
                       ) -> np.ndarray:
    """`last_request_time` of each run."""
    passed = count if at is None else requests_until_array(first, count, interval, at)
    return first + (np.maximum(passed, 1) - 1) * interval


def request_times(first: np.ndarray, count: np.ndarray, interval: np.ndarray) -> np.ndarray:
    """Every request's time, run after run: `request_time` for k in range(count) of each run."""
    step = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(first, count) + step * np.repeat(interval, count)


def counts_per_window(first: np.ndarray, count: np.ndarray, interval: np.ndarray, edges: Sequence[int]
                      ) -> list[int]:
    """Requests per time window between ascending `edges`: len(edges) + 1 counts, the first of the requests
    before edges[0], the last of those at or after edges[-1]. A request before an edge is one at or before
    edge - 1 (times are whole ms), so a request on an edge counts in the later window."""
    if not len(first):
        return [0] * (len(edges) + 1)
    before = requests_until_array(first[:, None], count[:, None], interval[:, None],
                                  np.asarray(edges, dtype="int64")[None, :] - 1)
    return np.diff(np.concatenate([[0], before.sum(axis=0), [count.sum()]])).tolist()


def grown_array(value: np.ndarray, rate: np.ndarray, origin: np.ndarray, first: np.ndarray, t: np.ndarray
                ) -> np.ndarray:
    """`grown` of each row (`rate` and `origin` float64, NaN for a null)."""
    rate = np.nan_to_num(np.asarray(rate, dtype="float64"), nan=0)
    origin = np.asarray(origin, dtype="float64")
    ruled = (rate != 0) & ~np.isnan(origin)
    whole = np.nan_to_num(origin, nan=0).astype("int64")
    growth = rule_offsets(rate, whole, 0, t) - rule_offsets(rate, whole, 0, first)
    return value + np.where(ruled, growth, 0)
