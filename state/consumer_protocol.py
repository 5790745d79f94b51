"""The classic consumer protocol's byte blobs (Kafka's ConsumerProtocol.java): what a consumer puts in its JoinGroup
metadata (Subscription), what the leader hands back through SyncGroup (Assignment), and the userData layouts of
the two sticky assignors.

Every blob is an int16 version followed by non-flexible fields: strings are an int16 length plus UTF-8,
bytes an int32 length (-1 for null), arrays an int32 count. Writers emit version 3 unless told otherwise
and silently drop fields the chosen version lacks (they are "ignorable" in Kafka's schema). Readers take
any version >= 0, read a higher one as version 3 and ignore trailing bytes, which is how newer fields
stay invisible to older clients.

Structural damage (truncation, negative or oversized lengths) raises ConsumerProtocolError, a ValueError.
Malformed UTF-8 inside a string is replaced rather than rejected, as Java's `new String(bytes, UTF_8)`
does.

TopicPartition lives here because both this codec and the assignors need it, and the assignors already
depend on this module; `state.assignors.model` re-exports it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import lru_cache, partial
from itertools import repeat
from typing import Iterable, NamedTuple, Sequence

from state.java_compat import JavaHashMap, java_string_sort_key

PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_MAX_STRING_BYTES = 0x7FFF


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


# TopicPartition from a (topic, partition) pair without the Python-level frame of TopicPartition._make; the
# assignors build hundreds of thousands of them.
new_topic_partition = partial(tuple.__new__, TopicPartition)


class ConsumerProtocolError(ValueError):
    """A blob that cannot be encoded or decoded."""


@dataclass(frozen=True)
class Subscription:
    """ConsumerProtocolSubscription as the Java client models it after decoding."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    # None when absent: versions 0-1, or a negative value (the Java Subscription maps those to empty).
    generation_id: int | None = None
    rack_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(self, "owned_partitions", tuple(TopicPartition(*tp) for tp in self.owned_partitions))
        if self.generation_id is not None and self.generation_id < 0:
            object.__setattr__(self, "generation_id", None)


@dataclass(frozen=True)
class Assignment:
    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(TopicPartition(*tp) for tp in self.partitions))


@dataclass(frozen=True)
class StickyUserData:
    """StickyAssignor userData: the member's previous assignment, and (V1 only) its generation."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


# ---------------------------------------------------------------------------------------------- writing


class _Writer:
    __slots__ = ("_out",)

    def __init__(self) -> None:
        self._out = bytearray()

    def int16(self, value: int) -> None:
        self._out += _INT16.pack(value)

    def int32(self, value: int, field: str) -> None:
        if not -(2**31) <= value < 2**31:
            raise ConsumerProtocolError(f"{field}: {value} does not fit in an int32")
        self._out += _INT32.pack(value)

    def string(self, value: str, field: str) -> None:
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ConsumerProtocolError(f"{field}: {value!r} is not encodable as UTF-8") from e
        if len(data) > _MAX_STRING_BYTES:
            raise ConsumerProtocolError(f"{field}: {len(data)} UTF-8 bytes is longer than {_MAX_STRING_BYTES}")
        self._out += _INT16.pack(len(data))
        self._out += data

    def nullable_string(self, value: str | None, field: str) -> None:
        if value is None:
            self.int16(-1)
        else:
            self.string(value, field)

    def nullable_bytes(self, value: bytes | None) -> None:
        if value is None:
            self.count(-1)
        else:
            self.count(len(value))
            self._out += value

    def count(self, n: int) -> None:
        """An array or bytes length."""
        self._out += _INT32.pack(n)

    def topic_partitions(self, groups: Iterable[tuple[str, Sequence[int]]], field: str) -> None:
        groups = list(groups)
        self.count(len(groups))
        for topic, partitions in groups:
            self.string(topic, f"{field}.topic")
            self.count(len(partitions))
            for p in partitions:
                self.int32(p, f"{field}.partitions")

    def bytes(self) -> bytes:
        return bytes(self._out)


def _check_write_version(version: int, what: str) -> int:
    if version < 0:
        raise ConsumerProtocolError(f"Unsupported {what} version: {version}")
    return min(version, HIGHEST_VERSION)


def _group_runs(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Consecutive runs of one topic, as the subscription writer emits its sorted owned partitions."""
    runs: list[tuple[str, list[int]]] = []
    for topic, partition in partitions:
        if not runs or runs[-1][0] != topic:
            runs.append((topic, []))
        runs[-1][1].append(partition)
    return runs


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    version = _check_write_version(version, "subscription")
    w = _Writer()
    w.int16(version)
    topics = sorted(subscription.topics, key=java_string_sort_key)
    w.count(len(topics))
    for topic in topics:
        w.string(topic, "topics")
    w.nullable_bytes(subscription.user_data)
    if version >= 1:
        owned = sorted(subscription.owned_partitions, key=lambda tp: (java_string_sort_key(tp.topic), tp.partition))
        w.topic_partitions(_group_runs(owned), "owned_partitions")
    if version >= 2:
        w.int32(-1 if subscription.generation_id is None else subscription.generation_id, "generation_id")
    if version >= 3:
        w.nullable_string(subscription.rack_id, "rack_id")
    return w.bytes()


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    version = _check_write_version(version, "assignment")
    w = _Writer()
    w.int16(version)
    # The writer looks each topic up in the collection built so far, so a topic that reappears later in the
    # list joins its first group: grouping is by first appearance, not by consecutive runs.
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment.partitions:
        by_topic.setdefault(topic, []).append(partition)
    w.topic_partitions(by_topic.items(), "assigned_partitions")
    w.nullable_bytes(assignment.user_data)
    return w.bytes()


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None, version: int = 1) -> bytes:
    """StickyAssignor userData. Version 1 (what every client since 2.3 writes) appends the generation.

    Topics come out in java.util.HashMap order, because the client groups its partitions through a HashMap
    (CollectionUtils.groupPartitionsByTopic); partitions keep their list order within a topic.
    """
    if version not in (0, 1):
        raise ConsumerProtocolError(f"Unsupported sticky userData version: {version}")
    by_topic: JavaHashMap[str, list[int]] = JavaHashMap()
    for topic, partition in partitions:
        if topic not in by_topic:
            by_topic[topic] = []
        by_topic[topic].append(partition)
    w = _Writer()
    w.topic_partitions(by_topic.items(), "previous_assignment")
    if version == 1:
        if generation is None:
            raise ConsumerProtocolError("sticky userData V1 needs a generation")
        w.int32(generation, "generation")
    return w.bytes()


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor userData: just the generation of the member's last assignment."""
    w = _Writer()
    w.int32(generation, "generation")
    return w.bytes()


# ---------------------------------------------------------------------------------------------- reading


@lru_cache(maxsize=256)
def _int32_array(n: int) -> struct.Struct:
    return struct.Struct(f">{n}i")


@lru_cache(maxsize=1 << 16)
def _utf8(data: bytes) -> str:
    """Topic names repeat across every member's blob; decoding each once also hands all members the same
    str object, whose hash is then computed once."""
    return data.decode("utf-8", "replace")


class _Reader:
    __slots__ = ("_data", "_pos", "_end", "_what")

    def __init__(self, data: bytes, what: str) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ConsumerProtocolError(f"{what}: expected bytes, got {type(data).__name__}")
        self._data = bytes(data)
        self._pos = 0
        self._end = len(self._data)
        self._what = what

    def remaining(self) -> int:
        return self._end - self._pos

    def _fail(self, message: str) -> ConsumerProtocolError:
        return ConsumerProtocolError(f"{self._what}: {message} (at byte {self._pos} of {self._end})")

    def _advance(self, n: int, field: str) -> int:
        """Claim the next n bytes; returns where they start."""
        pos = self._pos
        if pos + n > self._end:
            raise self._fail(f"{field} needs {n} bytes but only {self._end - pos} remain")
        self._pos = pos + n
        return pos

    def int16(self, field: str) -> int:
        return _INT16.unpack_from(self._data, self._advance(2, field))[0]

    def int32(self, field: str) -> int:
        return _INT32.unpack_from(self._data, self._advance(4, field))[0]

    def _bytes(self, n: int, field: str) -> bytes:
        pos = self._advance(n, field)
        return self._data[pos:pos + n]

    def string(self, field: str) -> str:
        length = self.int16(field)
        if length < 0:
            raise self._fail(f"non-nullable field {field} was serialized as null")
        return _utf8(self._bytes(length, field))

    def nullable_string(self, field: str) -> str | None:
        length = self.int16(field)
        if length < 0:
            return None
        return _utf8(self._bytes(length, field))

    def nullable_bytes(self, field: str) -> bytes | None:
        length = self.int32(field)
        if length < 0:
            return None
        return self._bytes(length, field)

    def array_length(self, field: str) -> int:
        n = self.int32(field)
        if n < 0:
            raise self._fail(f"non-nullable field {field} was serialized as null")
        # Every element takes at least one byte, so a larger count can only be garbage; Kafka's readers
        # refuse it before allocating.
        if n > self._end - self._pos:
            raise self._fail(f"{field} claims {n} elements but only {self._end - self._pos} bytes remain")
        return n

    def topic_partitions(self, field: str) -> list[TopicPartition]:
        topic_field, partitions_field = f"{field}.topic", f"{field}.partitions"
        out: list[TopicPartition] = []
        for _ in range(self.array_length(field)):
            topic = self.string(topic_field)
            n = self.array_length(partitions_field)
            numbers = _int32_array(n).unpack_from(self._data, self._advance(4 * n, partitions_field))
            out.extend(map(new_topic_partition, zip(repeat(topic), numbers)))
        return out

    def version(self) -> int:
        version = self.int16("version")
        if version < 0:
            raise self._fail(f"Unsupported {self._what} version: {version}")
        return min(version, HIGHEST_VERSION)


def decode_version(data: bytes) -> int:
    """The version a blob declares (before clamping to the highest known version)."""
    return _Reader(data, "consumer protocol header").int16("version")


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data, "subscription")
    version = r.version()
    topics = [r.string("topics") for _ in range(r.array_length("topics"))]
    user_data = r.nullable_bytes("user_data")
    owned = r.topic_partitions("owned_partitions") if version >= 1 else []
    generation = r.int32("generation_id") if version >= 2 else -1
    rack = r.nullable_string("rack_id") if version >= 3 else None
    return Subscription(tuple(topics), user_data, tuple(owned), generation, rack or None)


def decode_assignment(data: bytes) -> Assignment:
    r = _Reader(data, "assignment")
    r.version()
    partitions = r.topic_partitions("assigned_partitions")
    return Assignment(tuple(partitions), r.nullable_bytes("user_data"))


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """Strict decode: a V1 blob has four more bytes after the partition array; fewer means V0."""
    r = _Reader(data, "sticky userData")
    partitions = r.topic_partitions("previous_assignment")
    generation = r.int32("generation") if r.remaining() >= 4 else None
    return StickyUserData(tuple(partitions), generation)


def decode_cooperative_user_data(data: bytes) -> int:
    return _Reader(data, "cooperative-sticky userData").int32("generation")
