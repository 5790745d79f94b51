"""Deadlines kept in the group state: at most one timer per key, rescheduling a key replaces its timer
(Kafka's coordinator timer). A timer is plain data, a kind and its arguments, so the whole queue pickles with
the group state.

Timers fire in deadline order. At equal deadlines the coordinator's own timers come first, in the order they
were scheduled (as Kafka's timer wheel fires them: in insertion order); then the synthetic clients' timers
(keys starting with "client" or "deliver") in key order. Client timers tie-break on their content rather than
on when they were scheduled, so a client whose periodic work is computed in closed form (state/clients/elision.py)
fires in the same order as one simulated step by step.

For the same reason the coordinator's scheduling order is a point in the group's handling order rather than a
count: (clock, the item being handled, then a counter within that item), so closed-form work can schedule "as
of" an earlier request. The item is a request by (seq, member id); a step at a new time that is not a
request is a deadline firing (FIRING), and one at the same time keeps the item before it. Requests that reach
the coordinator at the same (ts, seq) are ordered by the input's source and line, which a run's `requests`
table does not keep (a quiet run's row is written when the run ends, its repeats share its line): taking
them by member id instead, for the timers they insert, lets a replay of that table expire same-millisecond
sessions in the run's order.
"""

from __future__ import annotations

import heapq
from functools import partial
from typing import NamedTuple

CLIENT_SIDE = ("client", "deliver")
# The item of a deadline firing: before any request handled at the same time (deadlines fire first).
FIRING = (0,)


def request_item(seq: int, member_id: str) -> tuple:
    """The item of a request with this `seq` from this member ("" when it names none)."""
    return (1, seq, member_id)


# A named tuple rather than a frozen dataclass: a busy group makes one per scheduling, and a tuple is
# several times cheaper to build and to pickle with the group state.
class Timer(NamedTuple):
    key: tuple
    deadline: int
    order: tuple  # coordinator timers: (scheduled at, item, stamp); client timers: the key
    kind: str
    args: tuple = ()
    stamp: int = 0  # unique per scheduling: tells a live heap entry from a replaced one

    @property
    def rank(self) -> int:
        return 1 if self.key[0] in CLIENT_SIDE else 0


# A Timer from its fields without the Python-level frame of Timer.__new__: every scheduling makes one.
_new_timer = partial(tuple.__new__, Timer)


class TimerQueue:
    def __init__(self) -> None:
        self._by_key: dict[tuple, Timer] = {}
        self._heap: list[tuple] = []
        self._stamp = 0
        self.clock = 0  # the runtime's current time and item, set before each step
        self.item = FIRING

    def schedule(self, key: tuple, deadline: int, kind: str, *args) -> None:
        self._stamp += 1
        stamp = self._stamp
        if key[0] in CLIENT_SIDE:
            self._by_key[key] = _new_timer((key, deadline, key, kind, args, stamp))
            heapq.heappush(self._heap, (deadline, 1, key, stamp, key))
        else:
            order = (self.clock, self.item, stamp)
            self._by_key[key] = _new_timer((key, deadline, order, kind, args, stamp))
            heapq.heappush(self._heap, (deadline, 0, order, stamp, key))

    def schedule_as_of(self, scheduled_at: int, item: tuple, key: tuple, deadline: int, kind: str,
                       *args) -> None:
        """Schedule a coordinator timer as if it had been scheduled while handling `item` at `scheduled_at`,
        a time at which nothing else ran (closed-form work)."""
        self._stamp += 1
        self._push(Timer(key, deadline, (scheduled_at, item, self._stamp), kind, args, self._stamp))

    def restore(self, timer: Timer) -> None:
        """Put back a timer taken out with `take`, in its original place in the order."""
        self._stamp += 1
        self._push(Timer(timer.key, timer.deadline, timer.order, timer.kind, timer.args, self._stamp))

    def take(self, key: tuple) -> Timer | None:
        """Remove a timer and return it, to be restored later."""
        return self._by_key.pop(key, None)

    def _push(self, timer: Timer) -> None:
        self._by_key[timer.key] = timer
        heapq.heappush(self._heap, (timer.deadline, timer.rank, timer.order, timer.stamp, timer.key))

    def cancel(self, key: tuple) -> None:
        self._by_key.pop(key, None)

    def cancel_all(self) -> None:
        self._by_key.clear()
        self._heap.clear()

    def get(self, key: tuple) -> Timer | None:
        return self._by_key.get(key)

    def next_deadline(self) -> int | None:
        timer = self.peek()
        return None if timer is None else timer.deadline

    def peek(self) -> Timer | None:
        """The timer due first; heap entries of replaced or cancelled timers on top are dropped on the way."""
        heap = self._heap
        while heap:
            entry = heap[0]
            timer = self._by_key.get(entry[4])
            if timer is not None and timer.stamp == entry[3]:
                return timer
            heapq.heappop(heap)
        return None

    def pop_due(self, now: int) -> Timer | None:
        """The earliest timer with deadline <= now, removed from the queue; None if nothing is due."""
        timer = self.peek()
        if timer is None or timer.deadline > now:
            return None
        self.pop_peeked()
        return timer

    def pop_peeked(self) -> None:
        """Remove the timer `peek` just returned (nothing was scheduled or cancelled since)."""
        del self._by_key[heapq.heappop(self._heap)[4]]

    def pending(self) -> list[Timer]:
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def __getstate__(self):
        return (sorted(self._by_key.values(), key=lambda t: t.stamp), self._stamp, self.clock, self.item)

    def __setstate__(self, state) -> None:
        timers, stamp, clock, self.item = state
        self._by_key = {t.key: t for t in timers}
        self._heap = [(t.deadline, t.rank, t.order, t.stamp, t.key) for t in timers]
        heapq.heapify(self._heap)
        self._stamp = stamp
        self.clock = clock
