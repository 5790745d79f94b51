"""The coordinator's timer order at equal deadlines: the order they were scheduled in, as a replay of a run's
`requests` table sees it."""

from __future__ import annotations

import json

import pytest

from state.events import parse_event
from state.runtime.group_runtime import GroupRuntime
from state.runtime.timers import FIRING, TimerQueue, request_item
from tests.state.harness import GroupContext


def fired(queue: TimerQueue, now: int) -> list:
    order = []
    while (timer := queue.pop_due(now)) is not None:
        order.append(timer.key)
    return order


def test_same_deadline_timers_fire_in_the_order_of_the_items_that_scheduled_them():
    queue = TimerQueue()
    queue.clock = 100
    for seq, member in ((2, "a"), (1, "z"), (1, "m")):
        queue.item = request_item(seq, member)
        queue.schedule(("heartbeat", member), 500, "heartbeat", member)
    queue.item = FIRING
    queue.schedule(("join",), 500, "join")
    # Deadlines first, then requests by seq; requests at the same (ts, seq) by member id, whatever order they
    # were handled in.
    assert fired(queue, 500) == [("join",), ("heartbeat", "m"), ("heartbeat", "z"), ("heartbeat", "a")]


def test_timers_scheduled_by_one_item_keep_their_scheduling_order():
    queue = TimerQueue()
    queue.item = request_item(1, "")
    for member in ("z", "a"):
        queue.schedule(("heartbeat", member), 500, "heartbeat", member)
    assert fired(queue, 500) == [("heartbeat", "z"), ("heartbeat", "a")]


@pytest.mark.parametrize("elision", [0, 1])
def test_replaying_the_requests_table_reproduces_same_millisecond_session_expiries(elision):
    ctx = GroupContext(coordsim_periodic_elision=elision)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 6, "records_per_second": 10}])
    for name in ("c0", "c1", "c2"):
        ctx.send("CLIENT_START", client_id=name, topics=["orders"], config={"session.timeout.ms": 10_000})
    ctx.sleep(20_000)
    # Crashed in the reverse of their start order: their quiet runs close, and their `requests` rows are
    # written, in that order, while the run handled their same-millisecond heartbeats in start order.
    crashed = [ctx.runtime.fleet.clients[name].member_id for name in ("c1", "c0")]
    ctx.send("CLIENT_CRASH", client_id="c1")
    ctx.send("CLIENT_CRASH", client_id="c0")
    ctx.sleep(30_000)
    ctx.finish()
    expiry = [r for r in ctx.rows("group_states") if r["cause"] == "session_timeout"]
    assert len(expiry) == 1 and expiry[0]["member_count"] == 2  # the first of two expiries at that ms
    assert ctx.rows("generations")[-1]["member_count"] == 1
    assert ctx.group.leader_id not in crashed

    replay = GroupRuntime(ctx.group_id, ctx.config)
    replay.offer([parse_event(json.loads(r["raw"]), "requests", i) for i, r in enumerate(ctx.written("requests"))])
    replay.advance_to(ctx.time)
    replay.finish()
    out = replay.take_output().tables

    def strip(rows):
        return [{k: v for k, v in r.items() if k not in ("out_seq", "log_end_offset")} for r in rows]

    for table in ("generations", "assignments", "group_states"):
        assert strip(out[table]) == strip(ctx.rows(table)), table
