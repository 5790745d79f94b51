"""One quiet-run row (docs/tables.md, "Quiet runs") read back one request at a time, without expanding it:
`Run`, what the lag evaluator's commit log (`tableio.commit_log`) reads an `offsets` run with.

It reads a row as `state.periodic.expand_row` (the reference expansion) does, by the rules every reader of
the tables follows (`simulations.views.quiet_runs` lists them; that module reads whole columns of rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from state.production import rule_offset

COUNT, INTERVAL = "repeat_count", "repeat_interval_ms"


def _known(value) -> bool:
    return value is not None and value == value  # NaN: a null read back by pandas


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
        count = row.get(COUNT)
        count = max(1, int(count)) if _known(count) else 1
        if count == 1:
            return LONE
        interval = row.get(INTERVAL)
        rate = row.get("records_per_second")
        if not _known(rate) or rate == 0:
            return cls(count, int(interval) if _known(interval) else 0)
        log_end_origin = row.get("log_end_origin_ts")
        return cls(count, int(interval) if _known(interval) else 0, rate, row.get("rate_origin_ts"),
                   log_end_origin if _known(log_end_origin) else None)

    def time(self, first: int, k: int) -> int:
        """Request k's time, given the row's time `first`."""
        return first + k * self.interval

    def offset(self, offset: int, commit_ts: int, k: int) -> int:
        """Commit k's offset, given the row's `offset` and `commit_ts`."""
        return self._grown(offset, self.origin, commit_ts, k)

    def log_end_offset(self, log_end_offset: int, commit_ts: int, k: int) -> int:
        """Commit k's log-end offset, given the row's `log_end_offset` and `commit_ts`."""
        return self._grown(log_end_offset, self.log_end_origin, commit_ts, k)

    def _grown(self, value: int, origin: int | None, commit_ts: int, k: int) -> int:
        if not k or self.rate is None or origin is None:
            return value
        rule = (self.rate, origin, 0)
        return value + rule_offset(rule, self.time(commit_ts, k)) - rule_offset(rule, commit_ts)


LONE = Run(1, 0)
