"""State buckets (`streaming.state.buckets = N`): the Spark key of a group is a label of its hash bucket, and
each state partition gets the same number of buckets.

Spark places a key in state partition `pmod(murmur3(key, seed 42), partitions)` (`HashPartitioning`, the
same hash as `F.hash`). Labels "0" to "N-1" land where their hash sends them: with 2 partitions and 64
buckets a run had 41 buckets in one partition and 23 in the other, so in a storm one core did 64 % of the
work while the other sat idle for the last third of it. The label of bucket b is the first of "b", "b.1",
"b.2", ... whose hash sends it to partition b mod partitions. A run's labels depend on its partition count,
which is why the run's identity holds it (a checkpoint's keys must not change when it is resumed).
"""

from __future__ import annotations

import functools
import struct

SEED = 42  # Spark's HashPartitioning and F.hash


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593) & 0xFFFFFFFF


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF


def spark_string_hash(text: str, seed: int = SEED) -> int:
    """Spark's Murmur3 hash of a string column value (`Murmur3_x86_32.hashUnsafeBytes`: the bytes after the
    last whole 4-byte word are mixed one by one, as signed bytes), as a signed 32-bit int."""
    data = text.encode("utf-8")
    aligned = len(data) - len(data) % 4
    h1 = seed
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word))
    for byte in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & 0xFFFFFFFF))
    h1 ^= len(data)
    h1 = ((h1 ^ (h1 >> 16)) * 0x85EBCA6B) & 0xFFFFFFFF
    h1 = ((h1 ^ (h1 >> 13)) * 0xC2B2AE35) & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_of(label: str, partitions: int) -> int:
    """The state partition Spark gives the key `label` (`pmod` of the hash)."""
    return spark_string_hash(label) % partitions


@functools.lru_cache(maxsize=None)
def bucket_labels(buckets: int, partitions: int) -> tuple[str, ...]:
    """The key label of each bucket: bucket b's lands in partition b mod `partitions`."""
    labels = []
    for bucket in range(buckets):
        candidates = (str(bucket) if n == 0 else f"{bucket}.{n}" for n in range(10**6))
        labels.append(next(c for c in candidates if partition_of(c, partitions) == bucket % partitions))
    return tuple(labels)
