"""A deliberately naive Kafka encoder for tests, written from the protocol guide rather than from
simulations/capture/messages.py, so a wrong field declaration there cannot hide behind the same mistake here.
Each test spells its message field by field with these primitives."""

from __future__ import annotations

import struct


class W:
    def __init__(self, flexible: bool = False) -> None:
        self.out = bytearray()
        self.flexible = flexible

    def i8(self, v):
        self.out += struct.pack(">b", v)
        return self

    def i16(self, v):
        self.out += struct.pack(">h", v)
        return self

    def i32(self, v):
        self.out += struct.pack(">i", v)
        return self

    def i64(self, v):
        self.out += struct.pack(">q", v)
        return self

    def boolean(self, v):
        return self.i8(1 if v else 0)

    def uuid(self, raw: bytes):
        assert len(raw) == 16
        self.out += raw
        return self

    def uvarint(self, v):
        while True:
            byte = v & 0x7F
            v >>= 7
            self.out.append(byte | (0x80 if v else 0))
            if not v:
                return self

    def string(self, s):
        if s is None:
            return self.uvarint(0) if self.flexible else self.i16(-1)
        data = s.encode()
        (self.uvarint(len(data) + 1) if self.flexible else self.i16(len(data)))
        self.out += data
        return self

    def bytes_(self, b):
        if b is None:
            return self.uvarint(0) if self.flexible else self.i32(-1)
        (self.uvarint(len(b) + 1) if self.flexible else self.i32(len(b)))
        self.out += b
        return self

    def array(self, items, write_item):
        if items is None:
            return self.uvarint(0) if self.flexible else self.i32(-1)
        (self.uvarint(len(items) + 1) if self.flexible else self.i32(len(items)))
        for item in items:
            write_item(self, item)
        return self

    def tags(self, *fields: tuple[int, bytes]):
        """A tagged-field section (flexible only): nothing, or unknown tags a reader must skip."""
        if self.flexible:
            self.uvarint(len(fields))
            for tag, data in fields:
                self.uvarint(tag).uvarint(len(data))
                self.out += data
        return self

    def done(self) -> bytes:
        return bytes(self.out)


def request_frame(api_key: int, version: int, correlation_id: int, client_id: str | None, body: bytes,
                  flexible: bool) -> bytes:
    """Size prefix + request header (v1, or v2 with tagged fields) + body."""
    header = W().i16(api_key).i16(version).i32(correlation_id).string(client_id)  # client id: never compact
    if flexible:
        header.out += b"\x00"
    data = header.done() + body
    return struct.pack(">i", len(data)) + data


def response_frame(correlation_id: int, body: bytes, flexible: bool) -> bytes:
    data = struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(data)) + data


def subscription(topics, owned=(), generation=-1, version=3) -> bytes:
    """A consumer-protocol Subscription (always non-flexible)."""
    w = W().i16(version).array(list(topics), lambda w, t: w.string(t)).bytes_(None)
    if version >= 1:
        by_topic = {}
        for t, p in owned:
            by_topic.setdefault(t, []).append(p)
        w.array(list(by_topic.items()), lambda w, tp: w.string(tp[0]).array(tp[1], lambda w, p: w.i32(p)))
    if version >= 2:
        w.i32(generation)
    if version >= 3:
        w.string(None)
    return w.done()


def assignment(partitions) -> bytes:
    by_topic = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return (W().i16(0).array(list(by_topic.items()), lambda w, tp: w.string(tp[0]).array(tp[1], lambda w, p: w.i32(p)))
            .bytes_(None).done())
