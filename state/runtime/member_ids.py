"""The ids a group's coordinator hands out: classic member ids (Kafka's clientId or group.instance.id + "-" + a
random UUID) and consumer-protocol member ids (Uuid.randomUuid().toString()), derived from the group id and a
counter instead of randomness, so runs are reproducible. One counter serves both, in the order ids are asked
for."""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass


@dataclass
class MemberIds:
    group_id: str
    counter: int = 0

    def member_id(self, prefix: str) -> str:
        """clientId (or group.instance.id) + "-" + a UUID, as Kafka's classic group coordinator does."""
        return f"{prefix}-{uuid.UUID(bytes=self._next_digest(), version=4)}"

    def uuid(self) -> str:
        """A Kafka Uuid's text (URL-safe base64)."""
        raw = uuid.UUID(bytes=self._next_digest(), version=4).bytes
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def _next_digest(self) -> bytes:
        self.counter += 1
        return hashlib.sha256(f"{self.group_id}\x00{self.counter}".encode()).digest()[:16]
