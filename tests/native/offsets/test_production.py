"""Parity of state/offsets/production.py's `rule_offset` and the native engine's: for Hypothesis-generated
rates (floats, as the events parse them: whole, fractional, negative, tiny), origins, bases and times, the same offset on both cores
(the product truncated toward zero, the time difference rounded to a float alike), and Python's exception
where the product is not a number or infinite."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.offsets.production import rule_offset
from tests.native import cores

PARITY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

int64 = st.integers(-2**63, 2**63 - 1)


@pytest.fixture(scope="module")
def native():
    return cores.native_module("production")


@PARITY
@given(rate=st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([1e-300, 0.001]),  # floats, as parsed
       origin=st.integers(-2**62, 2**62), base=st.integers(-2**40, 2**40), t=st.integers(-2**62, 2**62))
def test_rule_offset(native, rate, origin, base, t) -> None:
    expected = rule_offset((rate, origin, base), t)
    if -2**63 <= expected < 2**63:
        assert native.rule_offset((rate, origin, base), t) == expected
    else:  # beyond int64, where Python's integers go on: the native core refuses, naming the call
        with pytest.raises(OverflowError, match="rule_offset"):
            native.rule_offset((rate, origin, base), t)


@pytest.mark.parametrize("rate, t, error", [(math.inf, 1, OverflowError), (math.inf, 0, ValueError),
                                            (math.nan, 5, ValueError)])
def test_not_a_number_raises_as_the_reference(native, rate, t, error) -> None:
    with pytest.raises(error):
        rule_offset((rate, 0, 0), t)
    with pytest.raises(error, match="rule_offset"):
        native.rule_offset((rate, 0, 0), t)
