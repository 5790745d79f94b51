"""How far a Spark run still going has got in simulated time, and how fast it goes against the wall clock.

A micro-batch runs every group to its horizon, the watermark it was given minus 1 (streaming/step.py), kept
with the batch (streaming.sink): the latest committed batch's horizon is the simulated time every group has
reached. The pace is the simulated time the recent batches advanced over the wall time they took (Spark's
`triggerExecution`, which includes a `--speed` wait, from the run's progress reports,
`OUT/_batches/_progress.jsonl`). With `--slice`, the slice files' horizons (`OUT/_slices/horizons.json`) say
how many slices of the run are done.
"""

from __future__ import annotations

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
    from streaming.sink import batch_horizon, committed_batches, read_progress

    root = Path(run_dir)
    batches = root / BATCHES
    ran = [(b, h) for b in committed_batches(batches) if (h := batch_horizon(batches, b)) is not None]
    if not ran:
        return None
    reached = ran[-1][1]
    # The pace of the recent batches whose progress report has come (it follows the commit).
    reports = read_progress(batches)
    recent = [(h, reports[b]["duration_ms"]) for b, h in ran if b in reports][-PACE_BATCHES - 1:]
    wall_ms = sum(duration or 0 for _, duration in recent[1:])
    pace = (recent[-1][0] - recent[0][0]) / wall_ms if wall_ms > 0 else None
    horizons_file = root / SLICES_DIR / HORIZONS_FILE
    if not horizons_file.is_file():
        return RunClock(reached, pace)
    horizons = json.loads(horizons_file.read_text(encoding="utf-8"))
    return RunClock(reached, pace, sum(1 for h in horizons if h <= reached), len(horizons))
