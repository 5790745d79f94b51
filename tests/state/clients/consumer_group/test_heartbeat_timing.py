"""Kafka's ExponentialBackoff and HeartbeatRequestState (ExponentialBackoffTest, HeartbeatRequestState's use
in the heartbeat manager tests)."""

from __future__ import annotations

import random

from state.clients.consumer_group.heartbeat_timing import ExponentialBackoff, HeartbeatRequestState


def test_exponential_backoff_without_jitter():
    # ExponentialBackoffTest.testExponentialBackoffWithoutJitter
    backoff = ExponentialBackoff(100, 2, 400, 0.0, random.Random(0))
    assert [backoff.backoff(n) for n in range(5)] == [100, 200, 400, 400, 400]


def test_exponential_backoff_with_jitter_stays_within_its_range():
    # ExponentialBackoffTest.testExponentialBackoff: within ±20 % of the term, never above the maximum
    backoff = ExponentialBackoff(100, 2, 1000, 0.2, random.Random(5))
    for attempts, term in [(0, 100), (1, 200), (2, 400), (3, 800)]:
        draws = {backoff.backoff(attempts) for _ in range(200)}
        assert min(draws) >= 0.8 * term - 1 and max(draws) <= 1.2 * term and len(draws) > 10
    assert {backoff.backoff(9) for _ in range(200)} <= set(range(800, 1001))


def test_constant_backoff_when_max_is_below_initial():
    # ExponentialBackoff: initialInterval = min(max, initial), and no growth then
    backoff = ExponentialBackoff(500, 2, 300, 0.2, random.Random(0))
    assert [backoff.backoff(n) for n in range(3)] == [300, 300, 300]


def test_same_seed_same_backoffs():
    draws = [[ExponentialBackoff(100, 2, 1000, 0.2, random.Random(42)).backoff(n) for n in range(6)]
             for _ in range(2)]
    assert draws[0] == draws[1]


def test_timer_and_backoff_must_both_have_run_down():
    # HeartbeatRequestState.canSendRequest: the heartbeat timer expired, nothing in flight, the backoff over
    state = HeartbeatRequestState(0, 1000, ExponentialBackoff(100, 2, 1000, 0.0, random.Random(0)))
    assert not state.can_send_request(999) and state.can_send_request(1000)
    state.on_send_attempt()
    state.reset_timer(1000)
    assert not state.can_send_request(5000)  # in flight
    state.on_failed_attempt(1200)
    assert not state.can_send_request(1299) and state.can_send_request(1300)
    assert state.earliest_send_ms(1200) == 1300
    state.reset()
    assert state.can_send_request(1300) and state.remaining_backoff_ms(1300) == 0
