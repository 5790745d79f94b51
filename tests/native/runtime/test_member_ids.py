"""Parity of state/runtime/member_ids.py and the native engine's: for any group id and sequence of asks (a
classic member id with a client id or group.instance.id prefix, or a consumer-protocol Uuid), the same ids
in the same order on both cores."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.runtime.member_ids import MemberIds
from tests.native import cores

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_id=text, asks=st.lists(st.none() | text, max_size=8))
def test_member_ids(group_id, asks) -> None:
    ids = MemberIds(group_id)
    expected = [ids.uuid() if ask is None else ids.member_id(ask) for ask in asks]
    assert cores.native_module("member_ids").member_ids(group_id, asks) == expected
