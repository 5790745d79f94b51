"""Topic ids as the consumer-group coordinator keys everything by: Kafka's `org.apache.kafka.common.Uuid`.

This module owns the three Java behaviours of a topic id that change the server-side assignors' output:
its text form (URL-safe base64 without padding, as `Uuid.toString` / `Uuid.fromString`), `hashCode` (it
places the id in a java.util.HashMap / HashSet bucket, and the uniform assignor iterates such sets) and
`compareTo` (signed most significant half, then signed least significant half: the uniform assignor's last
tie-break between topics). The natural tuple order of a TopicId is `compareTo`'s order.
"""

from __future__ import annotations

import base64
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
