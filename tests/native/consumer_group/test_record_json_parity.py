"""Parity of the `consumer_group_records` table's `value` column (state/consumer_group/manager.py's
`json.dumps(_json_value(value), sort_keys=True)`) and the native engine's: Hypothesis-generated records of every
kind (tests/native/consumer_group/test_group_parity.py's, with text of any characters: quotes, backslashes,
control characters, non-ASCII and beyond the BMP) give the same text, or None for a tombstone.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import records as cg
from state.consumer_group.manager import _json_value
from tests.native import cores
from tests.native.consumer_group.test_group_parity import subscriptions, values

PARITY = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
TEXT = st.text(st.characters(codec="utf-8"), max_size=6)
odd_subscriptions = st.builds(
    cg.MemberSubscription, st.none() | TEXT, st.none() | TEXT, TEXT, TEXT, st.lists(TEXT, max_size=3).map(tuple),
    TEXT, st.none() | TEXT, st.integers(-2**31, 2**31 - 1), st.none() | st.builds(
        cg.ClassicMemberMetadata, st.integers(0, 2**31 - 1), st.lists(st.builds(
            cg.ClassicProtocol, TEXT, st.binary(max_size=7)), max_size=2).map(tuple)))
records = st.one_of(values, st.builds(cg.ConsumerGroupMemberMetadata, TEXT, odd_subscriptions | subscriptions),
                    st.builds(cg.ConsumerGroupRegularExpression, TEXT, st.none() | st.builds(
                        cg.ResolvedRegularExpression, st.lists(TEXT, max_size=3).map(tuple),
                        st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1))))


@PARITY
@given(record=records)
def test_record_values_are_written_as_the_reference(record) -> None:
    module = cores.native_module("consumer_group")
    expected = None if record.value is None else json.dumps(_json_value(record.value), sort_keys=True)
    assert module.record_value_json(record) == expected
