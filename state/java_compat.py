"""Java semantics that Kafka's outcomes depend on: String.hashCode, Utils.abs, String.compareTo, the
iteration order of java.util.HashMap / HashSet, and java.util.Random.

Kafka picks leaders, breaks protocol-vote ties and resolves sticky-assignor claims in HashMap iteration
order, so reproducing a real broker's answers needs that order exactly (java.util.HashMap's table). Treeified buckets
(8+ collisions in one bucket at capacity >= 64) are not modelled.
"""

from __future__ import annotations

import functools
import operator
import sys
from typing import Generic, Iterator, TypeVar

INT_MIN = -(2**31)

K = TypeVar("K")
V = TypeVar("V")


def to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= (1 << 31) else n


# UTF-16 in this machine's byte order, so the code units read straight out of the encoded bytes.
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


# 31**i mod 2**32, grown on demand: String.hashCode is the polynomial sum(unit * 31**(n-1-i)) mod 2**32,
# summed in C instead of one Python step per code unit.
_POWERS_OF_31 = [1]


# Member ids are hashed every time a member map's iteration order is rebuilt: remembering the recent ones
# takes the hashing out of the coordinator's per-event cost.
@functools.lru_cache(maxsize=1 << 16)
def string_hash_code(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    units = memoryview(s.encode(_UTF16_NATIVE)).cast("H")
    n = len(units)
    while len(_POWERS_OF_31) < n:
        _POWERS_OF_31.append(_POWERS_OF_31[-1] * 31 & 0xFFFFFFFF)
    return to_int32(sum(map(operator.mul, units, _POWERS_OF_31[n - 1::-1])))


def kafka_abs(n: int) -> int:
    """Kafka's Utils.abs: like Math.abs, but Integer.MIN_VALUE maps to 0 instead of staying negative."""
    return 0 if n == INT_MIN else abs(n)


def coordinator_partition(group_id: str, offsets_topic_partitions: int) -> int:
    """The __consumer_offsets partition whose leader coordinates the group."""
    return kafka_abs(string_hash_code(group_id)) % offsets_topic_partitions


def java_string_key(s: str) -> tuple[int, ...]:
    """Sort key equal to Java's String.compareTo order (UTF-16 code units, not code points)."""
    data = s.encode("utf-16-be")
    return tuple((data[i] << 8) | data[i + 1] for i in range(0, len(data), 2))


def java_string_length(s: str) -> int:
    """String.length(): UTF-16 code units (a character outside the BMP counts twice)."""
    return len(s.encode("utf-16-be")) // 2


def spread(h: int) -> int:
    """HashMap.hash(): the key's hashCode with its high half folded into the low half."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashMap(Generic[K, V]):
    """A dict that iterates like java.util.HashMap with default capacity and load factor.

    Order is (bucket at the current capacity, then insertion order within the bucket). Capacity starts at
    16, doubles when the size passes 0.75 x capacity and never shrinks: a long-lived map keeps the bucket
    layout of its largest size, as the coordinator's member map does. A resize keeps the relative order of
    the keys that share a bucket, so (bucket, insertion sequence) stays the exact order. Re-putting an
    existing key keeps its place; removing and re-adding moves it to the end of its bucket.
    """

    __slots__ = ("_data", "_seq", "_next_seq", "capacity", "_hash", "_order")

    def __init__(self, hash_fn=None, capacity: int = 16) -> None:
        self._data: dict[K, V] = {}
        self._seq: dict[K, int] = {}
        self._next_seq = 0
        self.capacity = capacity
        self._hash = hash_fn or string_hash_code
        self._order: list[K] | None = None

    def __setitem__(self, key: K, value: V) -> None:
        if key not in self._data:
            self._seq[key] = self._next_seq
            self._next_seq += 1
            if len(self._data) + 1 > self.capacity * 3 // 4:
                self.capacity *= 2
            self._order = None
        self._data[key] = value

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __delitem__(self, key: K) -> None:
        del self._data[key]
        del self._seq[key]
        self._order = None

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K, default=None):
        return self._data.get(key, default)

    def pop(self, key: K, *default):
        if key in self._data:
            del self._seq[key]
            self._order = None
        return self._data.pop(key, *default)

    def _ordered(self) -> list[K]:
        if self._order is None:
            mask, hash_fn, seq = self.capacity - 1, self._hash, self._seq
            self._order = sorted(self._data, key=lambda k: (spread(hash_fn(k)) & mask, seq[k]))
        return self._order

    def keys(self) -> list[K]:
        return list(self._ordered())

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def values(self) -> list[V]:
        data = self._data
        return [data[k] for k in self._ordered()]

    def items(self) -> list[tuple[K, V]]:
        data = self._data
        return [(k, data[k]) for k in self._ordered()]

    def first_key(self) -> K | None:
        return self._ordered()[0] if self._data else None

    # Snapshot support: the state encoder stores (entries in insertion order, capacity, next_seq).
    def snapshot(self) -> tuple[list[tuple[K, int, V]], int, int]:
        return ([(k, self._seq[k], v) for k, v in self._data.items()], self.capacity, self._next_seq)

    @classmethod
    def restore(cls, snap, hash_fn=None) -> "JavaHashMap":
        entries, capacity, next_seq = snap
        m = cls(hash_fn, capacity)
        for k, seq, v in entries:
            m._data[k] = v
            m._seq[k] = seq
        m._next_seq = next_seq
        return m

    def __getstate__(self):
        return (self.snapshot(), self._hash if self._hash is not string_hash_code else None)

    def __setstate__(self, state) -> None:
        snap, hash_fn = state
        restored = JavaHashMap.restore(snap, hash_fn)
        for name in JavaHashMap.__slots__:
            object.__setattr__(self, name, getattr(restored, name))


def java_string_sort_key(s: str) -> bytes:
    """A faster sort key with the same order as java_string_key: big-endian UTF-16 bytes compare code unit by
    code unit, and a proper prefix sorts first, exactly like String.compareTo."""
    return s.encode("utf-16-be", "surrogatepass")


def topic_partition_hash_code(topic: str, partition: int) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode(): 31 * (31 + partition) + topic.hashCode(), in int32."""
    return to_int32(31 * (31 + partition) + string_hash_code(topic))


class JavaHashSet(Generic[K]):
    """A set that iterates like java.util.HashSet (a HashMap underneath, see JavaHashMap).

    Kafka's sticky assignor takes `set.iterator().next()` in places, so which element comes first must match
    Java: the lowest bucket at the set's current capacity, then the earliest insertion within that bucket.
    """

    __slots__ = ("_map",)

    def __init__(self, hash_fn=None) -> None:
        self._map: JavaHashMap[K, None] = JavaHashMap(hash_fn)

    def add(self, item: K) -> None:
        self._map[item] = None

    def discard(self, item: K) -> None:
        self._map.pop(item, None)

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        return iter(self._map.keys())

    def first(self) -> K:
        """iterator().next(); the set must not be empty."""
        keys = self._map.keys()
        if not keys:
            raise KeyError("first() on an empty JavaHashSet")
        return keys[0]


class JavaRandom:
    """java.util.Random: the 48-bit LCG, `nextInt(bound)` and `Collections.shuffle(list, random)`.

    Kafka's controller places replicas with one (state/cluster.py).
    """

    MULTIPLIER = 0x5DEECE66D
    MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self.MULTIPLIER) & self.MASK

    def next(self, bits: int) -> int:
        self._seed = (self._seed * self.MULTIPLIER + 0xB) & self.MASK
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: the high bits, which are the more random ones in an LCG
            return (bound * r) >> 31
        u = r
        r = u % bound
        while to_int32(u - r + m) < 0:  # u falls in the last, incomplete run of `bound`: draw again
            u = self.next(31)
            r = u % bound
        return r

    def shuffle(self, items: list) -> None:
        for i in range(len(items), 1, -1):
            j = self.next_int(i)
            items[i - 1], items[j] = items[j], items[i - 1]
