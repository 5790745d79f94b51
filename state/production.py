"""The production model, in one arithmetic: a partition receiving `rate` records per second from time `origin`
on top of `base` records holds `base + int(rate * (t - origin) / 1000)` at time t (Python `int` truncates).
Log-end offsets, a consuming client's positions, the offsets rules of quiet runs and the views that read them
all use it, so a closed form and a step-by-step simulation agree to the record."""

from __future__ import annotations


def rule_offset(rule: tuple[float, int, int], t: int) -> int:
    """The offset at time t under `rule` = (records per second, origin ts, base offset)."""
    rate, origin, base = rule
    return base + int(rate * (t - origin) / 1000)
