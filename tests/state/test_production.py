"""state.production: the production model's arithmetic over numpy columns (`rule_offsets`) is the one-value
form's (`rule_offset`) to the record, truncation toward zero before an origin included."""

from __future__ import annotations

import random

import numpy as np

from state.production import rule_offset, rule_offsets


def test_rule_offsets_are_rule_offset_element_by_element():
    draw = random.Random(30)
    rates = [0.0, 0.001, 1 / 3, 33.3, 100.0, 12_345.678, 1_000_000.7] + [draw.uniform(0, 5_000) for _ in range(40)]
    rules = [(rate, draw.randrange(-10**6, 2 * 10**12), draw.randrange(0, 10**9)) for rate in rates]
    times = [draw.randrange(-10**6, 2 * 10**12) for _ in range(50)] + [origin + d for _, origin, _ in rules
                                                                       for d in (-1_001, -999, -1, 0, 1, 29, 3_000)]
    rate, origin, base = (np.repeat([r[i] for r in rules], len(times)) for i in range(3))
    t = np.tile(times, len(rules))
    expected = [rule_offset(rule, at) for rule in rules for at in times]
    assert rule_offsets(rate, origin, base, t).tolist() == expected
    assert rule_offsets(rate, origin, base, t).dtype == np.int64
    # A scalar time broadcasts over the rules, as the views ask for one instant.
    assert rule_offsets(rate[:5], origin[:5], base[:5], 77).tolist() == [rule_offset(r, 77) for r in rules[:1] * 5]
