"""Kafka's wire types, read from one frame: fixed-width integers and Uuids, and the strings, bytes and arrays whose
length prefix depends on whether the message version is "flexible" (KIP-482: unsigned-varint lengths plus
one, 0 meaning null, and a tagged-field section closing every struct) or not (int16 / int32 lengths, -1
meaning null).

Reading past the end, a negative length where null is not allowed, or a length longer than what is left
raises WireError: in a capture that means a damaged or non-Kafka frame, never a reason to crash. A
`lenient` reader takes null where the spec allows none: brokers other than Kafka's own send that (librdkafka's
mock answers some SyncGroups with a null assignment), and what the broker meant is still plain; so is a flexible
response closed by a second, empty tagged-field section (the mock's Metadata v13).
"""

from __future__ import annotations

import base64
import struct

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class WireError(ValueError):
    """Bytes that are not a valid encoding of the expected field."""


class Reader:
    __slots__ = ("data", "pos", "flexible", "lenient")

    def __init__(self, data: bytes, flexible: bool = False, pos: int = 0, lenient: bool = False) -> None:
        self.data = data
        self.pos = pos
        self.flexible = flexible
        self.lenient = lenient

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int, what: str) -> bytes:
        if n > self.remaining():
            raise WireError(f"{what} needs {n} bytes, {self.remaining()} left")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int8(self, what: str = "int8") -> int:
        return int.from_bytes(self._take(1, what), "big", signed=True)

    def int16(self, what: str = "int16") -> int:
        return _INT16.unpack(self._take(2, what))[0]

    def int32(self, what: str = "int32") -> int:
        return _INT32.unpack(self._take(4, what))[0]

    def int64(self, what: str = "int64") -> int:
        return _INT64.unpack(self._take(8, what))[0]

    def boolean(self, what: str = "bool") -> bool:
        return self.int8(what) != 0

    def uuid(self, what: str = "uuid") -> str:
        """A Kafka Uuid (16 bytes), as Uuid.toString prints it: URL-safe base64 without padding."""
        return base64.urlsafe_b64encode(self._take(16, what)).rstrip(b"=").decode("ascii")

    def uvarint(self, what: str = "varint") -> int:
        value = shift = 0
        while True:
            byte = self._take(1, what)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:  # Kafka's unsigned varints hold an int32
                raise WireError(f"{what}: varint longer than 5 bytes")

    def _length(self, nullable: bool, what: str, wide: bool) -> int | None:
        """A string (int16), bytes or array (int32) length; None for null."""
        if self.flexible:
            n = self.uvarint(what) - 1
        else:
            n = self.int32(what) if wide else self.int16(what)
        if n < 0:
            if nullable or (self.lenient and n == -1):
                return None
            raise WireError(f"{what}: null where a value is required")
        if n > self.remaining():
            raise WireError(f"{what}: length {n} but only {self.remaining()} bytes left")
        return n

    def string(self, nullable: bool = False, what: str = "string") -> str | None:
        n = self._length(nullable, what, wide=False)
        if n is None:
            return None
        return self._take(n, what).decode("utf-8", "replace")

    def bytes_(self, nullable: bool = False, what: str = "bytes") -> bytes | None:
        n = self._length(nullable, what, wide=True)
        return None if n is None else self._take(n, what)

    def array_length(self, nullable: bool = False, what: str = "array") -> int | None:
        return self._length(nullable, what, wide=True)

    def skip_tagged_fields(self, what: str = "tagged fields") -> None:
        """The tagged-field section of a flexible struct; none of the fields we read is tagged."""
        if not self.flexible:
            return
        for _ in range(self.uvarint(what)):
            self.uvarint(what)
            self._take(self.uvarint(what), what)
