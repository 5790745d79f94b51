"""Synthetic consumers across a coordinator move: they learn of it from error codes, rediscover the
coordinator with FindCoordinator and carry on (AbstractCoordinator's markCoordinatorUnknown and
lookupCoordinator, with the client's retry backoff)."""

from __future__ import annotations

import pytest

from state.clients.config import ClientConfig
from state.events import EventError, parse_event
from tests.state.harness import GroupContext
from tests.state.clients.test_fleet import rebalances, start


def stable_fleet(n: int = 3, **config) -> GroupContext:
    ctx = GroupContext()
    start(ctx, n, config=config or None)
    ctx.sleep(20_000)
    assert ctx.state == "Stable"
    return ctx


def requests_after(ctx: GroupContext, ts: int) -> dict[str, set[str]]:
    """client id -> the APIs it had answered after `ts` (quiet runs count from their first request)."""
    seen: dict[str, set[str]] = {}
    for r in ctx.rows("responses"):
        last = r["request_ts"] + ((r.get("repeat_count") or 1) - 1) * (r.get("repeat_interval_ms") or 0)
        if last > ts:
            seen.setdefault(r["client_id"], set()).add(r["api"])
    return seen


@pytest.mark.parametrize("load_delay_ms", [0, 1_000, 20_000])
def test_a_move_while_stable_keeps_the_group_and_every_client_going(load_delay_ms):
    ctx = stable_fleet()
    generation = ctx.group.generation_id
    moved_at = ctx.time
    ctx.fault(fault="move", load_delay_ms=load_delay_ms)
    ctx.sleep(120_000)
    # Reloaded Stable at the persisted generation; the members' heartbeats reach the new coordinator in
    # time, so no session expires and nothing rebalances.
    assert ctx.state == "Stable" and ctx.group.generation_id == generation
    assert rebalances(ctx) == ["initial_join"] or "heartbeat_expiration" not in rebalances(ctx)
    assert all(c.alive and c.phase.value == "STABLE" for c in ctx.runtime.fleet.clients.values())
    after = requests_after(ctx, moved_at + load_delay_ms + 10_000)
    assert sorted(after) == ["c0", "c1", "c2"]
    assert all({"Heartbeat", "OffsetCommit"} <= apis for apis in after.values())
    errors = {r["error"] for r in ctx.rows("responses") if r["request_ts"] > moved_at}
    assert "NOT_COORDINATOR" in errors
    finds = [r for r in ctx.rows("responses") if r["api"] == "FindCoordinator"]
    assert sorted({r["client_id"] for r in finds}) == ["c0", "c1", "c2"]
    assert all(r["error"] == "NONE" and r["request_ts"] > moved_at for r in finds)


def test_requests_sent_to_the_old_coordinator_get_not_coordinator_then_the_client_looks_it_up():
    ctx = stable_fleet(1)
    moved_at = ctx.time
    ctx.fault(fault="move", load_delay_ms=5_000)
    ctx.sleep(10_000)
    client = [r for r in ctx.rows("responses") if r["client_id"] == "c0" and r["request_ts"] > moved_at]
    apis = [(r["api"], r["error"]) for r in client]
    first_error = apis.index(next(a for a in apis if a[1] == "NOT_COORDINATOR"))
    assert apis[first_error + 1] == ("FindCoordinator", "NONE")
    # The new coordinator is still loading: heartbeats are acknowledged blindly, commits are refused.
    loading = [a for a in apis[first_error + 2:] if a[0] == "OffsetCommit"]
    assert loading and loading[0][1] == "COORDINATOR_LOAD_IN_PROGRESS"


def test_a_move_during_a_rebalance_ends_in_a_stable_group_with_every_client():
    ctx = GroupContext()
    start(ctx, 3)
    ctx.sleep(1_000)  # inside the initial rebalance delay: JoinGroups are parked
    ctx.fault(fault="move", load_delay_ms=2_000)
    ctx.sleep(60_000)
    assert ctx.state == "Stable"
    assert sorted(m.client_id for m in ctx.group.all_members()) == ["c0", "c1", "c2"]
    assert all(c.phase.value == "STABLE" and c.owned for c in ctx.runtime.fleet.clients.values())


def test_a_move_costs_failed_commits_in_the_metrics():
    ctx = stable_fleet()
    ctx.fault(fault="move", load_delay_ms=10_000)
    ctx.sleep(60_000)
    assert ctx.runtime.metrics.failed_commits > 0


def test_retry_backoff_doubles_up_to_the_max_with_a_jitter_of_a_fifth():
    # Kafka's ExponentialBackoffTest, with the factor drawn from a seed instead of a random source.
    config = ClientConfig(retry_backoff_ms=100, retry_backoff_max_ms=1_000)
    for attempts in range(12):
        term = min(100 * 2 ** attempts, 1_000)
        waits = {config.retry_backoff(attempts, f"seed-{i}") for i in range(50)}
        assert all(0.8 * term <= w <= 1.2 * term for w in waits), (attempts, sorted(waits))
        assert len(waits) > 1
    assert config.retry_backoff(3, "same") == config.retry_backoff(3, "same")
    assert ClientConfig(retry_backoff_ms=0).retry_backoff(5, "x") == 0
    # A max below the initial backoff leaves the initial one (the Java client does the same).
    assert 80 <= ClientConfig(retry_backoff_ms=500, retry_backoff_max_ms=100).retry_backoff(4, "x") <= 600


def test_a_join_retried_while_the_group_loads_backs_off_exponentially():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.fault(fault="move", load_delay_ms=5_000)  # before the first JoinGroup reaches the group
    ctx.sleep(10_000)
    joins = [r["request_ts"] for r in ctx.rows("responses")
             if r["api"] == "JoinGroup" and r["error"] == "COORDINATOR_LOAD_IN_PROGRESS"]
    gaps = [b - a for a, b in zip(joins, joins[1:])]
    assert len(joins) >= 4 and gaps[1] > gaps[0] and max(gaps) <= 1_200 + 100
    assert ctx.state == "Stable"


def test_a_negative_retry_backoff_max_is_a_rejected_directive():
    with pytest.raises(EventError, match="retry.backoff.max.ms must be >= 0"):
        parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": "c", "topics": ["t"],
                     "config": {"retry.backoff.max.ms": -1}})
