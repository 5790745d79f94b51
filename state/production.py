"""The production model, in one arithmetic: a partition receiving `rate` records per second from time `origin`
on top of `base` records holds `base + int(rate * (t - origin) / 1000)` at time t (Python `int` truncates).
Log-end offsets, a consuming client's positions, the offsets rules of quiet runs and the views that read them
all use it, so a closed form and a step-by-step simulation agree to the record. `rule_offsets` is the same
arithmetic over numpy columns (float64 products truncated toward zero, as `int` does), for the views;
tests/state/test_production.py checks the two against each other."""

from __future__ import annotations

import numpy as np


def rule_offset(rule: tuple[float, int, int], t: int) -> int:
    """The offset at time t under `rule` = (records per second, origin ts, base offset)."""
    rate, origin, base = rule
    return base + int(rate * (t - origin) / 1000)


def rule_offsets(rate, origin, base, t) -> np.ndarray:
    """`rule_offset` of each element of numpy arrays (or scalars) that broadcast, as int64."""
    delta = np.asarray(t, dtype="int64") - np.asarray(origin, dtype="int64")
    return np.asarray(base, dtype="int64") + np.trunc(np.asarray(rate, dtype="float64") * delta / 1000).astype("int64")
