"""Parity of state/consumer_group/topic_id.py's derived ids and the native engine's: any topic name gets the
same id on both cores (SHA-256 draws, version 4 bits, reserved ids and a leading '-' drawn again)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group.topic_id import TopicId, derived_topic_id
from tests.native import cores


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_derived_topic_ids(name) -> None:
    assert TopicId(*cores.native_module("topic_id").derived_topic_id(name)) == derived_topic_id(name)


def test_a_draw_starting_with_dash_is_drawn_again() -> None:
    # Names whose first draw prints with a leading '-' (1 in 64): the second draw decides.
    native = cores.native_module("topic_id")
    names = [f"t{i}" for i in range(400) if str(_first_draw(f"t{i}")).startswith("-")]
    assert names
    for name in names:
        assert TopicId(*native.derived_topic_id(name)) == derived_topic_id(name) != _first_draw(name)


def _first_draw(name: str) -> TopicId:
    import hashlib

    digest = bytearray(hashlib.sha256(f"coordsim-topic-id\0{name}\0{0}".encode()).digest()[:16])
    digest[6] = digest[6] & 0x0F | 0x40
    digest[8] = digest[8] & 0x3F | 0x80
    return TopicId(int.from_bytes(digest[:8], "big", signed=True), int.from_bytes(digest[8:], "big", signed=True))
