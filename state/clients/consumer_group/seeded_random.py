"""The membership's source of randomness (the member id, the backoff jitter) with a stored form of two values:
the seed and how many 32-bit words of the Mersenne Twister's output were drawn. A decoded one replays those
words from the seed, so it goes on with exactly the draws a `random.Random(seed)` never stored would make.
"""

from __future__ import annotations

import random


class SeededRandom:
    """`random.Random(seed)`'s getrandbits and uniform. Each draw counts the words it takes from the
    generator (getrandbits(k): ceil(k / 32); uniform, through random(): 2), which is all the state stored
    (state/runtime/encoding.py) besides the seed; the generator itself is rebuilt when first needed."""

    __slots__ = ("seed", "drawn", "_generator")

    def __init__(self, seed: str | int) -> None:
        self.seed = seed
        self.drawn = 0
        self._generator = random.Random(seed)

    def _random(self) -> random.Random:
        try:
            return self._generator
        except AttributeError:  # decoded: only the seed and the count were stored
            self._generator = random.Random(self.seed)
            if self.drawn:
                self._generator.getrandbits(32 * self.drawn)
            return self._generator

    def getrandbits(self, k: int) -> int:
        bits = self._random().getrandbits(k)
        self.drawn += -(-k // 32)
        return bits

    def uniform(self, a: float, b: float) -> float:
        value = self._random().uniform(a, b)
        self.drawn += 2
        return value
