"""Topic ids as the consumer-group coordinator keys everything by: Kafka's `org.apache.kafka.common.Uuid`.

This module owns the three Java behaviours of a topic id that change the server-side assignors' output:
its text form (URL-safe base64 without padding, as `Uuid.toString` / `Uuid.fromString`), `hashCode` (it
places the id in a java.util.HashMap / HashSet bucket, and the uniform assignor iterates such sets) and
`compareTo` (signed most significant half, then signed least significant half: the uniform assignor's last
tie-break between topics). The natural tuple order of a TopicId is `compareTo`'s order. It also owns the id
coordsim derives for a topic whose input gives none (`derived_topic_id`).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
from typing import NamedTuple

from state.java_compat import to_int32


class TopicId(NamedTuple):
    """A Kafka Uuid as its two signed 64-bit halves."""

    msb: int
    lsb: int

    @classmethod
    def from_string(cls, text: str) -> "TopicId":
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(raw) != 16:
            raise ValueError(f"{text!r} decodes to {len(raw)} bytes, not the 16 of a Kafka Uuid")
        return cls(int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True))

    def __str__(self) -> str:
        raw = self.msb.to_bytes(8, "big", signed=True) + self.lsb.to_bytes(8, "big", signed=True)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def java_hash(self) -> int:
        """Uuid.hashCode: the two 32-bit halves of (msb XOR lsb), XORed."""
        mixed = self.msb ^ self.lsb
        return to_int32((mixed >> 32) ^ mixed)


# Kafka's Uuid.ZERO_UUID ("no id") and METADATA_TOPIC_ID (AAAAAAAAAAAAAAAAAAAAAQ), which randomUuid never returns.
_RESERVED = (TopicId(0, 0), TopicId(0, 1))


def derived_topic_id(name: str) -> TopicId:
    """The id coordsim gives a topic whose TOPIC_METADATA row names none. Kafka draws a random Uuid when it
    creates a topic (Uuid.randomUuid: a version 4 UUID, drawn again when it is reserved or its text starts
    with '-'); here the draws are SHA-256 of "coordsim-topic-id", the name and the draw's number, so a topic
    has the same id in every run and on every engine."""
    for draw in itertools.count():
        digest = bytearray(hashlib.sha256(f"coordsim-topic-id\0{name}\0{draw}".encode()).digest()[:16])
        digest[6] = digest[6] & 0x0F | 0x40  # version 4
        digest[8] = digest[8] & 0x3F | 0x80  # IETF variant, as java.util.UUID.randomUUID sets them
        topic_id = TopicId(int.from_bytes(digest[:8], "big", signed=True), int.from_bytes(digest[8:], "big", signed=True))
        if topic_id not in _RESERVED and not str(topic_id).startswith("-"):
            return topic_id
