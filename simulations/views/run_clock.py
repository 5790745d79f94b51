"""How far a Spark run still going has got in simulated time, and how fast it goes against the wall clock.

Read from the run's progress reports (`OUT/_batches/_progress.jsonl`, streaming.sink): a micro-batch runs
every group to its horizon, the watermark it was given minus 1 (streaming/step.py), so the latest committed
batch's horizon is the simulated time every group has reached. The pace is the simulated time the recent
batches advanced over the wall time they took (Spark's `triggerExecution`, which includes a `--speed`
wait). With `--slice`, the slice files' horizons (`OUT/_slices/horizons.json`) say how many slices of the
run are done.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path

from simulations.views.run_tables import BATCHES
from streaming.slices import HORIZONS_FILE, SLICES_DIR

# Batches the pace is taken over: recent enough to follow a storm, long enough not to jump with each one.
PACE_BATCHES = 5


@dataclass(frozen=True)
class RunClock:
    reached: int                   # the horizon of the latest committed micro-batch (epoch ms)
    pace: float | None             # simulated time per wall time over the last batches; None before two
    slices_done: int | None = None  # with --slice: slices whose horizon is reached
    slices: int | None = None


def run_clock(run_dir: str | os.PathLike) -> RunClock | None:
    """The clock of the Spark run in `run_dir`, or None before its first batch that ran any group."""
    from streaming.sink import committed_batches, read_progress

    root = Path(run_dir)
    reports = read_progress(root / BATCHES)
    steps = [(_horizon(reports[b]["watermark"]), reports[b]["duration_ms"])
             for b in committed_batches(root / BATCHES) if b in reports]
    steps = [(horizon, duration) for horizon, duration in steps if horizon is not None]
    if not steps:
        return None
    reached = steps[-1][0]
    recent = steps[-PACE_BATCHES - 1:]
    wall_ms = sum(duration or 0 for _, duration in recent[1:])
    pace = (reached - recent[0][0]) / wall_ms if wall_ms > 0 else None
    horizons_file = root / SLICES_DIR / HORIZONS_FILE
    if not horizons_file.is_file():
        return RunClock(reached, pace)
    horizons = json.loads(horizons_file.read_text(encoding="utf-8"))
    return RunClock(reached, pace, sum(1 for h in horizons if h <= reached), len(horizons))


def _horizon(watermark: str | None) -> int | None:
    """Spark reports the watermark in ISO-8601; the epoch (no watermark yet) has run no group."""
    if not watermark:
        return None
    ms = int(dt.datetime.fromisoformat(watermark.replace("Z", "+00:00")).timestamp() * 1000)
    return ms - 1 if ms > 0 else None
