"""The garbage-collector policy of the phases that build a large, long-lived heap: reading an input's events,
running its groups, turning their rows into Arrow tables.

Such a phase keeps nearly everything it allocates until it ends (events, runtimes, output rows: tens of
millions of objects on a large input) and makes almost no reference cycles. CPython's automatic full
collections walk that whole heap again and again as it grows: on `benchmarks/engine.py`'s input they made
running the groups take about 1.7 times the coordinator's own CPU time. Inside `long_lived_heap()` only the
full collections are off: young ones still run, so the few cycles the coordinator makes are still freed
while they are young.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

# A generation-2 threshold no run reaches: CPython then starts no full collection on its own.
NO_FULL_COLLECTIONS = 2**31 - 1


@contextlib.contextmanager
def long_lived_heap() -> Iterator[None]:
    """Full collections off for the block (nested blocks too); the thresholds in force before come back
    after it."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], NO_FULL_COLLECTIONS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
