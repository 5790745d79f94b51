"""Parity of state/java_compat.py and the native engine's: for Hypothesis-generated strings, seeds and
operations, String.hashCode, the coordinator partition, String.length, String.compareTo's order, a
java.util.HashMap's iteration order after puts and removes (through resizes), and java.util.Random's draws
and shuffles are the same on both cores."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.java_compat import (
    JavaHashMap,
    JavaRandom,
    coordinator_partition,
    java_string_length,
    java_string_sort_key,
    string_hash_code,
)
from tests.native import cores

PARITY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any Unicode but lone surrogates (no UTF-16 or UTF-8 form), with the BMP's top and the astral planes
# well represented: there String.compareTo and code-point order disagree.
text = st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from("\uffff\ufb01\U0001f600\U00010000"),
               max_size=12)


@pytest.fixture(scope="module")
def native():
    return cores.native_java_compat()


@PARITY
@given(s=text, partitions=st.integers(1, 200))
def test_string_hash_code_partition_and_length(native, s, partitions) -> None:
    assert native.string_hash_code(s) == string_hash_code(s)
    assert native.coordinator_partition(s, partitions) == coordinator_partition(s, partitions)
    assert native.java_string_length(s) == java_string_length(s)


@PARITY
@given(strings=st.lists(text, max_size=12))
def test_string_compare_to_order(native, strings) -> None:
    assert native.java_sorted(strings) == sorted(strings, key=java_string_sort_key)


@PARITY
@given(operations=st.lists(st.tuples(st.sampled_from(["put", "put", "remove"]), st.sampled_from(
    [f"member-{i}" for i in range(40)] + ["", "Aa", "BB", "polygenelubricants"])), max_size=60))
def test_hash_map_iteration_order_through_puts_removes_and_resizes(native, operations) -> None:
    # "Aa" and "BB" collide (hashCode 2112): their order within the bucket is insertion order.
    reference = JavaHashMap()
    for op, key in operations:
        if op == "put":
            reference[key] = None
        else:
            reference.pop(key, None)
    assert native.hash_map_keys(operations) == reference.keys()


@PARITY
@given(seed=st.integers(-2**63, 2**63 - 1), bounds=st.lists(st.integers(1, 2**31 - 1) | st.integers(1, 64), max_size=8),
       n=st.integers(0, 20))
def test_random_draws_and_shuffles(native, seed, bounds, n) -> None:
    reference = JavaRandom(seed)
    assert native.random_ints(seed, bounds) == [reference.next_int(b) for b in bounds]
    items = list(range(n))
    JavaRandom(seed).shuffle(items)
    assert native.shuffled(seed, list(range(n))) == items
