"""A partition's commits as the lag evaluator reads them, quiet runs kept as runs (docs/tables.md, "Quiet
runs"): commit i is computed when it is read, so an hour of auto-commits costs one entry, not one per commit.

The log is in write order (`out_seq`: a run's commits share its row's), which is also time order for one
partition: only its owner commits it, and a run closes before the owner sends anything else.
"""

from __future__ import annotations

import bisect
from typing import Mapping

from state.quiet_run import Run


def cell(row: Mapping, name: str):
    value = row.get(name)
    return None if value is None or value != value else value  # NaN: a null read back by pandas


class CommitLog:
    """Commits by index 0..len-1; `stored` are the indexes Burrow keeps (those with a log-end offset that
    are not too old), `samples` the (write_ts, log_end_offset) the commits say, first and last of each run."""

    def __init__(self) -> None:
        self._starts: list[int] = []     # index of each entry's first commit
        self._entries: list[tuple] = []  # (order, write_ts, commit_ts, offset, run)
        self._stored: list[tuple[int, int]] = []  # [start, end) ranges of stored commit indexes
        self._stored_starts: list[int] = []       # position in `stored` of each range's first index
        self.stored_count = 0
        self.samples: list[tuple[int, int]] = []
        self.size = 0

    def add(self, row: Mapping, stored: bool) -> None:
        run = Run.of(row)
        self._entries.append((row["out_seq"], row["write_ts"], row["commit_ts"], row["offset"], run))
        log_end = cell(row, "log_end_offset")
        if log_end is not None:
            self.samples.append((row["write_ts"], log_end))
            if run.count > 1:
                last = run.count - 1
                self.samples.append((run.time(row["write_ts"], last),
                                     run.log_end_offset(log_end, row["commit_ts"], last)))
            if stored:
                self._stored_starts.append(self.stored_count)
                self._stored.append((self.size, self.size + run.count))
                self.stored_count += run.count
        self._starts.append(self.size)
        self.size += run.count

    def _locate(self, i: int) -> tuple[tuple, int]:
        e = bisect.bisect_right(self._starts, i) - 1
        return self._entries[e], i - self._starts[e]

    def commit(self, i: int) -> tuple[int, int, int, int]:
        """Commit i's (order, write_ts, commit_ts, offset): one lookup for what a window reads of it."""
        (order, write_ts, commit_ts, offset, run), k = self._locate(i)
        return order, run.time(write_ts, k), run.time(commit_ts, k), run.offset(offset, commit_ts, k)

    def order(self, i: int) -> int:
        return self._locate(i)[0][0]

    def write_ts(self, i: int) -> int:
        (_, write_ts, _, _, run), k = self._locate(i)
        return run.time(write_ts, k)

    def stored(self, k: int) -> int:
        """The commit index of the k-th stored commit."""
        r = bisect.bisect_right(self._stored_starts, k) - 1
        return self._stored[r][0] + k - self._stored_starts[r]

    def arrived(self, at: int) -> int:
        """How many commits were written at or before `at`."""
        return bisect.bisect_right(_Indexed(self.write_ts, self.size), at)

    def stored_before(self, i: int) -> int:
        """How many stored commits have an index below i."""
        return bisect.bisect_left(_Indexed(self.stored, self.stored_count), i)

    def stored_after_order(self, order: int) -> int:
        """The position in `stored` of the first stored commit written after `order` (an out_seq)."""
        return bisect.bisect_right(_Indexed(lambda k: self.order(self.stored(k)), self.stored_count), order)


class _Indexed:
    """A read-only sequence whose item i is `get(i)`: what `bisect` needs."""

    def __init__(self, get, size: int) -> None:
        self._get, self._size = get, size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int):
        return self._get(i)
