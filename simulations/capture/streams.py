"""TCP segments in, Kafka frames out: per connection and direction, the byte stream is put back together
(retransmissions dropped, overlaps trimmed, out-of-order segments held until the gap before them fills) and
cut into Kafka's size-prefixed frames.

A direction whose bytes can no longer be trusted stops there, with one reason ("kind: detail"): a packet cut
short by the snap length, bytes the capture never saw, or a length prefix no Kafka peer would send.
Past such a point frame boundaries are unknown, so nothing later in that direction is decoded; the
connection's other direction goes on. A connection the capture joined mid-way is framed from its first
captured byte, which on an idle connection is a frame boundary; when it is not, the header check below
stops that direction as non-Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

from simulations.capture.messages import MAX_FRAME_BYTES
from simulations.capture.segments import Segment

_SEQ_MOD = 2**32
MIN_REQUEST_BYTES = 10  # api key, version, correlation id, client id length
MIN_RESPONSE_BYTES = 4  # correlation id


@dataclass(frozen=True)
class Connection:
    name: str  # "client_ip:port>broker_ip:port", suffixed "#n" when the capture reuses the 4-tuple
    client_host: str
    broker: str
    stream: int


@dataclass(frozen=True, slots=True)
class Frame:
    connection: Connection
    to_broker: bool
    ts_us: int  # when the segment that completed the frame was captured
    first_frame: int  # capture frame numbers of the frame's first and last segment
    last_frame: int
    data: bytes  # without the size prefix


@dataclass(frozen=True, slots=True)
class Broken:
    """A direction that stopped being decodable at `frame`."""

    connection: Connection
    to_broker: bool
    frame: int
    reason: str
    raw: str  # a short hex/text excerpt of what was seen, for the rejects table


@dataclass
class _Direction:
    next_seq: int | None = None
    buffer: bytearray = field(default_factory=bytearray)
    buffer_first_frame: int = 0
    held: dict[int, Segment] = field(default_factory=dict)  # out-of-order segments by sequence number
    broken: bool = False


def _endpoint(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Reassembler:
    def __init__(self, ports: Iterable[int]) -> None:
        self.ports = frozenset(ports)
        self._connections: dict[int, tuple[Connection, tuple[str, int]]] = {}  # stream -> (conn, broker address)
        self._names: dict[str, int] = {}
        self._directions: dict[tuple[int, bool], _Direction] = {}

    def feed(self, segments: Iterable[Segment]) -> Iterator[Frame | Broken]:
        for segment in segments:
            connection = self._connection(segment)
            if connection is None:
                continue
            conn, broker = connection
            to_broker = segment.dst == broker
            direction = self._directions.setdefault((segment.stream, to_broker), _Direction())
            if segment.syn and direction.next_seq is None:
                # with the handshake captured, the stream's start is known even if data arrives out of order
                direction.next_seq = (segment.seq + 1) % _SEQ_MOD
            if segment.length and not direction.broken:
                yield from self._add(conn, to_broker, direction, segment)

    def stop(self, connection: Connection, to_broker: bool) -> None:
        """The decoder found the bytes are not Kafka: nothing later in this direction is framed."""
        self._directions[(connection.stream, to_broker)].broken = True

    def leftovers(self) -> Iterator[Broken]:
        """At the end of the capture: directions that stopped inside a frame or before a gap that never filled."""
        for (stream, to_broker), direction in self._directions.items():
            if direction.broken:
                continue
            conn = self._connections[stream][0]
            if direction.held:
                first = min(s.frame for s in direction.held.values())
                yield Broken(conn, to_broker, first, f"capture gap: bytes before packet {first} were not "
                             "captured; the rest of this direction cannot be framed", "")
            elif direction.buffer:
                size = int.from_bytes(direction.buffer[:4], "big") if len(direction.buffer) >= 4 else None
                have = len(direction.buffer) - 4
                yield Broken(conn, to_broker, direction.buffer_first_frame,
                             f"capture ends mid-frame: {have} of {size} bytes of a Kafka frame captured"
                             if size is not None else "capture ends mid-frame: inside a frame's size prefix",
                             direction.buffer[:64].hex())

    def _connection(self, segment: Segment) -> tuple[Connection, tuple[str, int]] | None:
        known = self._connections.get(segment.stream)
        if known is not None:
            return known
        if segment.syn and not segment.ack:
            client, broker = segment.src, segment.dst
        elif segment.dst[1] in self.ports:
            client, broker = segment.src, segment.dst
        elif segment.src[1] in self.ports:
            client, broker = segment.dst, segment.src
        else:
            return None
        if broker[1] not in self.ports:
            return None
        name = f"{_endpoint(client)}>{_endpoint(broker)}"
        seen = self._names.get(name, 0) + 1
        self._names[name] = seen
        conn = Connection(name if seen == 1 else f"{name}#{seen}", client[0], _endpoint(broker), segment.stream)
        self._connections[segment.stream] = (conn, broker)
        return self._connections[segment.stream]

    def _add(self, conn: Connection, to_broker: bool, d: _Direction, segment: Segment) -> Iterator[Frame | Broken]:
        if len(segment.payload) < segment.length:
            d.broken = True
            yield Broken(conn, to_broker, segment.frame,
                         f"truncated packet: packet {segment.frame} carries {len(segment.payload)} of "
                         f"{segment.length} payload bytes (snap length too small?)", segment.payload[:64].hex())
            return
        if d.next_seq is None:
            d.next_seq = segment.seq
        ahead = (segment.seq - d.next_seq) % _SEQ_MOD
        if ahead and ahead < _SEQ_MOD // 2:
            d.held.setdefault(segment.seq, segment)
            return
        pending = [segment]
        while pending:
            current = pending.pop()
            behind = (d.next_seq - current.seq) % _SEQ_MOD
            fresh = current.payload[behind:] if behind < _SEQ_MOD // 2 else current.payload
            if not fresh:
                continue  # a retransmission of bytes we have
            if not d.buffer:
                d.buffer_first_frame = current.frame
            d.buffer += fresh
            d.next_seq = (d.next_seq + len(fresh)) % _SEQ_MOD
            yield from self._frames(conn, to_broker, d, current)
            if d.broken:
                return
            # a held segment that now starts at or before the end of the stream (it may overlap) goes next
            follower = next((seq for seq in d.held if not 0 < (seq - d.next_seq) % _SEQ_MOD < _SEQ_MOD // 2), None)
            if follower is not None:
                pending.append(d.held.pop(follower))

    def _frames(self, conn: Connection, to_broker: bool, d: _Direction, segment: Segment) -> Iterator[Frame | Broken]:
        minimum = MIN_REQUEST_BYTES if to_broker else MIN_RESPONSE_BYTES
        while len(d.buffer) >= 4:
            size = int.from_bytes(d.buffer[:4], "big", signed=True)
            if not minimum <= size <= MAX_FRAME_BYTES:
                d.broken = True
                yield Broken(conn, to_broker, d.buffer_first_frame, f"not Kafka traffic: a frame size of {size} "
                             f"bytes (first bytes {bytes(d.buffer[:16])!r})", d.buffer[:64].hex())
                return
            if len(d.buffer) < 4 + size:
                return
            data = bytes(d.buffer[4:4 + size])
            del d.buffer[:4 + size]
            yield Frame(conn, to_broker, segment.ts_us, d.buffer_first_frame, segment.frame, data)
            d.buffer_first_frame = segment.frame
