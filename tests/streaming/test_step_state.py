"""The key state's encoding: versioned, compressed, and readable across releases."""

from __future__ import annotations

import marshal

import pytest

from streaming.step import STATE_FORMAT, STATE_FORMAT_VERSION, Slot, _decode, _encode

SLOTS = {
    "g1": Slot(b"runtime-bytes" * 50, 1_767_225_600_000, 1_767_225_645_000, ()),
    "g2": Slot(None, None, None, ((1_767_225_600_007, b"\x80\x05pickled-event"),)),
}


def test_slots_round_trip_in_the_current_format():
    blob = _encode(SLOTS)
    assert blob.startswith(STATE_FORMAT + bytes([STATE_FORMAT_VERSION]))
    assert _decode(blob) == SLOTS


def test_the_current_format_is_smaller_than_the_plain_one():
    plain = marshal.dumps({g: tuple(s) for g, s in SLOTS.items()})
    assert len(_encode(SLOTS)) < len(plain) / 3


def test_a_v1_checkpoint_state_is_still_read():
    v1 = STATE_FORMAT + bytes([1]) + marshal.dumps({g: tuple(s) for g, s in SLOTS.items()})
    assert _decode(v1) == SLOTS


@pytest.mark.parametrize("blob, message", [
    (STATE_FORMAT + bytes([99]) + b"x", "key state format v99 is not readable by this release (reads v1, v2)"),
    (b"something else", "not a coordsim key state"),
])
def test_unreadable_states_are_refused_with_their_reason(blob, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _decode(blob)
