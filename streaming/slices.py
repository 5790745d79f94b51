"""Simulated time in slices: what `--slice` and `--speed` mean, where each input row goes, and the pace.

A sliced run's main phase reads, instead of the input files, one slice file per micro-batch (written by
the engine with `streaming.source.write_slice`). Slice k's file holds the rows with event time in
(h[k-1] + 1, h[k] + 1] and a sentinel at h[k] + delay + 1, so the watermark after it is h[k] + 1: the
next micro-batch runs every group to the horizon h[k] (streaming/step.py), and its rows commit with it.
The horizons are the multiples of the slice from the first event on, and last the run's end (`until`, or
the last event's time when the run drains), never beyond: the drain's and the finish's control rows sit
after the end, and a later horizon would make them late. Rejects travel with the first slice; rows after
`until` with the last (they are counted, never applied).

The slicing changes which micro-batch applies what, never what is applied: the tables are those of the
unsliced run (tested). Nothing here imports Spark: the CLI checks a user's values before Spark starts.
"""

from __future__ import annotations

import time
from typing import Sequence

from state.events import DURATION_HINT, duration_ms

# Where a sliced run keeps its slice files, inside OUT, and the list of their horizons, written last.
SLICES_DIR = "_slices"
HORIZONS_FILE = "horizons.json"
# A slice so short that the run would be millions of micro-batches is a mistake, not a wish.
MAX_SLICES = 100_000
SPEED_HINT = "max, or a multiple of real time such as 60x"


class SliceError(ValueError):
    """A slice or pace that makes no sense: one line for the user."""


def parse_slice(text: str, option: str = "--slice") -> int:
    """A slice of simulated time in ms (> 0), from `1m`, `30s`, `1h30m` or whole milliseconds."""
    ms = duration_ms(text)
    if ms is None:
        raise SliceError(f"{option}: must be {DURATION_HINT}, got {text!r}")
    if ms <= 0:
        raise SliceError(f"{option}: must be longer than 0, got {text!r}")
    return ms


def parse_speed(text: str, option: str = "--speed") -> float | None:
    """How fast simulated time may go against the wall clock: None for `max`, else the factor of `60x`
    (or `60`, `0.5x`), > 0."""
    value = text.strip().lower()
    if value == "max":
        return None
    try:
        speed = float(value.removesuffix("x"))
    except ValueError:
        raise SliceError(f"{option}: must be {SPEED_HINT}, got {text!r}") from None
    if not speed > 0 or speed == float("inf"):
        raise SliceError(f"{option}: must be more than 0x, got {text!r}")
    return speed


def check(slice_ms: int | None, speed: float | None) -> None:
    """What `run_spark` takes: a slice > 0 or none, a speed > 0 (only with a slice) or none."""
    if slice_ms is not None and (isinstance(slice_ms, bool) or not isinstance(slice_ms, int) or slice_ms <= 0):
        raise SliceError(f"--slice: must be a whole number of ms above 0, got {slice_ms!r}")
    if speed is not None:
        if slice_ms is None:
            raise SliceError("--speed: holds slices to the wall clock; give --slice as well")
        if not 0 < speed < float("inf"):
            raise SliceError(f"--speed: must be more than 0x, got {speed!r}")


def horizons(first: int, end: int, slice_ms: int) -> list[int]:
    """The horizon each slice brings the groups to: every multiple of `slice_ms` from `first` until `end`,
    then `end`."""
    start = -(-first // slice_ms) * slice_ms
    count = max(0, -(-(end - start) // slice_ms)) + 1
    if count > MAX_SLICES:
        raise SliceError(f"--slice: {slice_ms} ms cuts the run's {end - first:,} ms into {count:,} slices "
                         f"(at most {MAX_SLICES:,}); take a longer slice")
    return [*range(start, end, slice_ms), end]


def split(rows: Sequence[tuple], slice_ms: int, until: int | None) -> list[tuple[int, list[tuple]]]:
    """(horizon, rows) per slice, in order. `rows`: the source's (kind, key, event time, payload) rows of
    every input file, in input order (kept within a slice: the step sorts what it applies anyway)."""
    times = [row[2] for row in rows if row[2] is not None]
    if not times:
        return [(until if until is not None else 0, list(rows))]
    last = max(times)
    edges = horizons(min(times), last if until is None else until, slice_ms)
    parts: list[list[tuple]] = [[] for _ in edges]
    for row in rows:
        ts = row[2]
        parts[0 if ts is None else _slice_of(ts, edges, slice_ms)].append(row)
    return list(zip(edges, parts))


def _slice_of(ts: int, edges: list[int], slice_ms: int) -> int:
    """The first slice whose watermark (horizon + 1) is at or after `ts`: slice k holds (h[k-1] + 1, h[k] + 1]."""
    if ts <= edges[0] + 1:
        return 0
    index = -(-(ts - 1 - edges[0]) // slice_ms)  # the multiples of the slice come first, evenly spaced
    return min(index, len(edges) - 1)


class Pace:
    """`--speed`: holds each slice to the wall clock. `slice_done()` returns once at least
    slice / speed seconds have passed since the previous slice was done (or the pace began); a slow slice
    is not made up for by the next, so a storm never plays faster than asked."""

    def __init__(self, slice_ms: int, speed: float | None) -> None:
        self.min_s = 0.0 if speed is None else slice_ms / 1000 / speed
        self.last = time.monotonic()

    def slice_done(self) -> None:
        wait = self.last + self.min_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.last = time.monotonic()

