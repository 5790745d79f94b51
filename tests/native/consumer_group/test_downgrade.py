"""Parity of state/consumer_group/downgrade.py's `in_timeline_hash_map_order` (the order the consumer group's
member map, a TimelineHashMap, iterates in) and the native engine's: any member ids in any put order, many
sharing a slot (ids differing in their last characters), through the table's growth, give the same order.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from state.consumer_group.downgrade import in_timeline_hash_map_order
from tests.native import cores

# Java member ids and names with lone surrogates left out (they have no UTF-8 form to hand Rust).
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(keys=[f"member-{i}" for i in range(30)])  # slots holding several ids: last put comes first
@given(keys=st.lists(text | st.integers(0, 60).map(lambda i: f"member-{i}"), unique=True, max_size=40))
def test_in_timeline_hash_map_order(keys) -> None:
    native = cores.native_module("consumer_group")
    assert native.in_timeline_hash_map_order(keys) == in_timeline_hash_map_order(keys)
