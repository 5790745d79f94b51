"""Deadlines kept in the group state: at most one timer per key, rescheduling a key replaces its timer
(Kafka's coordinator timer). Timers fire in (deadline, scheduling order); a timer is plain data, a kind and
its arguments, so the whole queue pickles with the group state."""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Timer:
    key: tuple
    deadline: int
    order: int
    kind: str
    args: tuple = ()


class TimerQueue:
    def __init__(self) -> None:
        self._by_key: dict[tuple, Timer] = {}
        self._heap: list[tuple[int, int, tuple]] = []
        self._order = 0

    def schedule(self, key: tuple, deadline: int, kind: str, *args) -> None:
        self._order += 1
        timer = Timer(key, deadline, self._order, kind, args)
        self._by_key[key] = timer
        heapq.heappush(self._heap, (deadline, self._order, key))

    def cancel(self, key: tuple) -> None:
        self._by_key.pop(key, None)

    def cancel_all(self) -> None:
        self._by_key.clear()
        self._heap.clear()

    def get(self, key: tuple) -> Timer | None:
        return self._by_key.get(key)

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            deadline, order, key = heap[0]
            timer = self._by_key.get(key)
            if timer is not None and timer.order == order:
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: int) -> Timer | None:
        """The earliest timer with deadline <= now, removed from the queue; None if nothing is due."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now:
            return None
        _, _, key = heapq.heappop(self._heap)
        return self._by_key.pop(key)

    def pending(self) -> list[Timer]:
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __getstate__(self):
        return (sorted(self._by_key.values(), key=lambda t: t.order), self._order)

    def __setstate__(self, state) -> None:
        timers, order = state
        self._by_key = {t.key: t for t in timers}
        self._heap = [(t.deadline, t.order, t.key) for t in timers]
        heapq.heapify(self._heap)
        self._order = order
