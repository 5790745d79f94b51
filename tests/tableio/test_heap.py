"""The garbage-collector policy of the phases that build a large heap."""

from __future__ import annotations

import gc

import pytest

from tableio.heap import NO_FULL_COLLECTIONS, long_lived_heap


def test_full_collections_are_off_inside_and_the_thresholds_come_back():
    before = gc.get_threshold()
    with long_lived_heap():
        assert gc.get_threshold() == (before[0], before[1], NO_FULL_COLLECTIONS)
        with long_lived_heap():
            assert gc.get_threshold()[2] == NO_FULL_COLLECTIONS
        assert gc.get_threshold()[2] == NO_FULL_COLLECTIONS
    assert gc.get_threshold() == before


def test_thresholds_come_back_after_an_error():
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with long_lived_heap():
            raise RuntimeError("boom")
    assert gc.get_threshold() == before


def test_young_cycles_are_still_collected():
    class Node:
        pass

    with long_lived_heap():
        gc.collect()
        before = gc.get_stats()[0]["collected"] + gc.get_stats()[1]["collected"]
        for _ in range(20_000):  # enough allocations for many young collections
            node = Node()
            node.me = node
        del node
        collected = gc.get_stats()[0]["collected"] + gc.get_stats()[1]["collected"] - before
    assert collected > 10_000
