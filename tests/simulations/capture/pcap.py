"""Synthetic captures for the bad-capture tests: a classic pcap of raw IPv4/TCP packets (link type RAW),
built from a script of client/broker payloads. Checksums are left zero; tshark does not verify them by
default. Knobs for damage: `cut` keeps only the first bytes of a packet's payload (as a small snap length
does), `drop` leaves a packet out (a capture gap)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

LINKTYPE_RAW = 101
CLIENT = ("127.0.0.1", 51000)
BROKER = ("127.0.0.1", 9092)


@dataclass
class Packet:
    ts_us: int
    src: tuple[str, int]
    dst: tuple[str, int]
    seq: int
    ack: int
    flags: int  # TCP flags byte
    payload: bytes
    cut: int | None = None  # captured payload bytes, when fewer than sent


@dataclass
class Conversation:
    """One TCP connection, client to broker, starting with a handshake at `start_us`."""

    start_us: int = 1_700_000_000_000_000
    client: tuple[str, int] = CLIENT
    broker: tuple[str, int] = BROKER
    packets: list[Packet] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._seq = {self.client: 1000, self.broker: 5000}
        self._now = self.start_us
        self._emit(self.client, 0x02, b"")  # SYN
        self._seq[self.client] += 1
        self._emit(self.broker, 0x12, b"")  # SYN-ACK
        self._seq[self.broker] += 1
        self._emit(self.client, 0x10, b"")  # ACK

    def _emit(self, src, flags, payload, cut=None) -> Packet:
        dst = self.broker if src == self.client else self.client
        self._now += 1000
        packet = Packet(self._now, src, dst, self._seq[src], self._seq[dst], flags, payload, cut)
        self.packets.append(packet)
        self._seq[src] += len(payload)
        return packet

    def send(self, payload: bytes, to_broker: bool = True, cut: int | None = None) -> Packet:
        return self._emit(self.client if to_broker else self.broker, 0x18, payload, cut)


def write_pcap(path: Path, packets: list[Packet], drop: set[int] = frozenset()) -> Path:
    """`drop`: indexes into `packets` to leave out of the file."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_RAW))
    for index, p in enumerate(sorted(packets, key=lambda p: p.ts_us)):
        if index in drop:
            continue
        frame = _ip_tcp(p)
        captured = frame if p.cut is None else frame[:40 + p.cut]
        out += struct.pack("<IIII", p.ts_us // 1_000_000, p.ts_us % 1_000_000, len(captured), len(frame))
        out += captured
    path.write_bytes(bytes(out))
    return path


def _ip_tcp(p: Packet) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", p.src[1], p.dst[1], p.seq, p.ack, 5 << 4, p.flags, 65535, 0, 0)
    total = 20 + len(tcp) + len(p.payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0,
                     bytes(map(int, p.src[0].split("."))), bytes(map(int, p.dst[0].split("."))))
    return ip + tcp + p.payload
