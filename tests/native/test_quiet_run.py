"""Parity of state/quiet_run.py's rule one value at a time (the part the core reads) and the native engine's:
Hypothesis-generated counts, intervals, times, rates and origins (missing as None and as NaN, floats as
pandas reads them back) give the same run, request times, counts until a time, grown offsets and periodic
request ids on both cores."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state import quiet_run
from tests.native import cores

PARITY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

times = st.integers(-10**12, 10**12)
small = st.integers(-5, 10**6)
missing = st.sampled_from([None, math.nan])
counts = missing | st.integers(-3, 10**4) | st.floats(-3, 10**4, allow_nan=False)
# Rates are floats, as the events parse them (an int rate would make the reference's product exact).
rates = missing | st.just(0.0) | st.floats(-10**6, 10**6, allow_nan=False)
origins = missing | times
# Request ids: periodic ones (with an optional trailing newline), near misses, and any text.
suffixes = st.sampled_from(["/heartbeat", "/commit", "/heartbeats", "heartbeat", "/commit/"])
request_ids = st.none() | st.text(max_size=8) | st.builds(
    lambda head, suffix, time, tail: f"{head}{suffix}@{time}{tail}",
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=6) | st.just("a\nb"),
    suffixes, st.integers(-10**12, 10**12).map(str) | st.sampled_from(["", "-", "--1", "1a"]),
    st.sampled_from(["", "", "\n", "\n\n", " "]))


@pytest.fixture(scope="module")
def native():
    return cores.native_module("quiet_run")


@PARITY
@given(count=counts, interval=counts, rate=rates, origin=origins, log_end_origin=origins)
def test_a_rows_run_is_the_references(native, count, interval, rate, origin, log_end_origin) -> None:
    row = {quiet_run.COUNT: count, quiet_run.INTERVAL: interval, "records_per_second": rate,
           "rate_origin_ts": origin, "log_end_origin_ts": log_end_origin}
    run = quiet_run.Run.of(row)
    native_run = native.run(count, interval, rate, origin, log_end_origin)
    python_run = (run.count, run.interval, run.rate, run.origin, run.log_end_origin)
    # The reference keeps a NaN origin as it is (grown reads it as missing); the native core has None.
    assert native_run == tuple(None if v != v else v for v in python_run)
    assert native.run_count(count) == quiet_run.run_count(count)
    assert native.run_interval(run.count, interval) == quiet_run.run_interval(run.count, interval)


@PARITY
@given(first=times, count=st.integers(1, 10**4), interval=small, at=times | st.none(), k=st.integers(0, 10**4))
def test_request_times_and_counts(native, first, count, interval, at, k) -> None:
    assert native.request_time(first, interval, k) == quiet_run.request_time(first, interval, k)
    if at is not None:
        assert (native.requests_until(first, count, interval, at)
                == quiet_run.requests_until(first, count, interval, at))
    assert (native.last_request_time(first, count, interval, at)
            == quiet_run.last_request_time(first, count, interval, at))


@PARITY
@given(value=st.integers(0, 10**15), rate=rates, origin=origins, first=times, t=times)
def test_grown_offsets(native, value, rate, origin, first, t) -> None:
    assert native.grown(value, rate, origin, first, t) == quiet_run.grown(value, rate, origin, first, t)


@PARITY
@given(request_id=request_ids, shift=st.integers(-10**9, 10**9))
def test_periodic_request_ids(native, request_id, shift) -> None:
    assert native.repeated_request_id(request_id, shift) == quiet_run.repeated_request_id(request_id, shift)
