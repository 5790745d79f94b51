"""Parity of state/runtime/timers.py's TimerQueue and the native engine's (native/src/runtime/timers.rs):
the same Hypothesis-generated sequence of operations (the runtime's clock and item moving, coordinator and
client timers scheduled, rescheduled, scheduled as of an earlier item, taken and restored, cancelled) gives
the same timers from every get, take, peek and pop, the same pending list in order, and the same queue
drained at the end. Keys come from a small pool and deadlines from a few values, so keys are replaced and
timers tie at a deadline in every way the order tells apart (rank, scheduling time, item, stamp, key)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.runtime.timers import FIRING, TimerQueue, request_item
from tests.native import cores

COORDINATOR_KEYS = [("heartbeat", "m1"), ("heartbeat", "m2"), ("join",), ("sync",), ("sweep",),
                    ("consumer_group", "session", "m1")]
CLIENT_KEYS = [("client", "c1", "poll"), ("client", "c1", "heartbeat"), ("client", "c2", "poll"),
               ("deliver", "c1", "r1"), ("deliver", "c2", "r1"), ("deliver", "c10", "r2")]

keys = st.sampled_from(COORDINATOR_KEYS + CLIENT_KEYS)
deadlines = st.integers(0, 6)
items = st.just(FIRING) | st.builds(request_item, st.integers(0, 3), st.sampled_from(["", "m1", "m2"]))
actions = st.tuples(st.sampled_from(["heartbeat", "join", "client", "deliver"]),
                    st.lists(st.integers(-2, 2) | st.sampled_from(["c1", "m2"]), max_size=3).map(tuple))
operations = st.lists(st.one_of(
    st.tuples(st.just("step"), st.integers(0, 4), items),
    st.tuples(st.just("schedule"), keys, deadlines, actions),
    st.tuples(st.just("schedule"), keys, deadlines, actions),
    st.tuples(st.just("schedule_as_of"), st.integers(0, 4), items, st.sampled_from(COORDINATOR_KEYS), deadlines,
              actions),
    st.tuples(st.just("take"), keys),
    st.tuples(st.just("restore"), st.integers(0, 10)),
    st.tuples(st.just("cancel"), keys),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("pop_due"), deadlines),
    st.tuples(st.just("peek_pop")),
    st.tuples(st.just("next_deadline")),
    st.tuples(st.just("pending")),
    st.just(("cancel_all",)) | st.tuples(st.just("len")),
), max_size=60)


def timer(t) -> tuple | None:
    return None if t is None else tuple(t)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ops=operations)
def test_timer_queue_parity(ops) -> None:
    native = cores.native_module("timers")
    python, queue = TimerQueue(), native.TimerQueue()
    taken: list[tuple] = []  # (the reference's timer, the native one)
    for op in ops:
        name, args = op[0], op[1:]
        if name == "step":
            python.clock, python.item = args
            queue.clock, queue.item = args
            assert (queue.clock, queue.item) == (python.clock, python.item)
        elif name == "schedule":
            key, deadline, (kind, rest) = args
            python.schedule(key, deadline, kind, *rest)
            queue.schedule(key, deadline, kind, *rest)
        elif name == "schedule_as_of":
            at, item, key, deadline, (kind, rest) = args
            python.schedule_as_of(at, item, key, deadline, kind, *rest)
            queue.schedule_as_of(at, item, key, deadline, kind, *rest)
        elif name == "take":
            pair = (python.take(args[0]), queue.take(args[0]))
            assert timer(pair[0]) == pair[1]
            if pair[0] is not None:
                taken.append(pair)
        elif name == "restore":
            if taken:
                reference, own = taken[args[0] % len(taken)]
                python.restore(reference)
                queue.restore(own)
        elif name == "peek_pop":
            peeked = python.peek()
            assert queue.peek() == timer(peeked)
            if peeked is not None:
                python.pop_peeked()
                queue.pop_peeked()
        elif name in ("cancel", "cancel_all"):
            getattr(python, name)(*args)
            getattr(queue, name)(*args)
        elif name == "len":
            assert len(queue) == len(python)
        elif name == "pending":
            assert queue.pending() == [tuple(t) for t in python.pending()]
        else:  # get, pop_due, next_deadline
            got = getattr(python, name)(*args)
            assert getattr(queue, name)(*args) == (got if isinstance(got, int | None) else tuple(got))
    assert queue.pending() == [tuple(t) for t in python.pending()]
    drained = []
    while (t := python.pop_due(10)) is not None:
        drained.append(tuple(t))
    assert [queue.pop_due(10) for _ in range(len(drained) + 1)] == [*drained, None]


def test_request_items_are_the_references() -> None:
    native = cores.native_module("timers")
    assert native.request_item(7, "m") == request_item(7, "m")
