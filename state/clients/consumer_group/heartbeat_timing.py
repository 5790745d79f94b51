"""When the client may send its next ConsumerGroupHeartbeat: Kafka's `ExponentialBackoff`, `RequestState` and
`HeartbeatRequestState` as one object. Two clocks decide it: the heartbeat timer (the coordinator's
HeartbeatIntervalMs, restarted whenever a heartbeat is sent, zeroed by a failure) and the retry backoff
(measured from the last response; after a success it is the minimal backoff, after the n-th failure in a
row retry.backoff.ms * 2^n, capped at retry.backoff.max.ms, each draw scaled by a jitter factor).
Time is given in ms by the caller; the jitter comes from the generator passed in (a `SeededRandom` or a
random.Random).
"""

from __future__ import annotations

import math
import random

from state.clients.consumer_group.seeded_random import SeededRandom

# RequestState.RETRY_BACKOFF_EXP_BASE / RETRY_BACKOFF_JITTER
RETRY_BACKOFF_EXP_BASE = 2
RETRY_BACKOFF_JITTER = 0.2


class ExponentialBackoff:
    """backoff(attempts) = uniform(1 - jitter, 1 + jitter) * initial * multiplier^attempts, never above max."""

    def __init__(self, initial_ms: int, multiplier: int, max_ms: int, jitter: float,
                 rng: SeededRandom | random.Random):
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, but got {jitter}")
        self.initial_ms = min(max_ms, initial_ms)
        self.multiplier = multiplier
        self.max_ms = max_ms
        self.jitter = jitter
        self._rng = rng
        # The exponent at which the cap is reached; 0 means a constant backoff.
        self._exp_max = (math.log(max_ms / max(self.initial_ms, 1)) / math.log(multiplier)
                         if max_ms > self.initial_ms else 0.0)

    def backoff(self, attempts: int) -> int:
        if self._exp_max == 0:
            return self.initial_ms
        term = self.initial_ms * math.pow(self.multiplier, min(attempts, self._exp_max))
        # Java's `jitter < Double.MIN_NORMAL` test: no draw at all without jitter.
        factor = 1.0 if self.jitter < 2.2250738585072014e-308 else self._rng.uniform(1 - self.jitter, 1 + self.jitter)
        return min(int(factor * term), self.max_ms)


class HeartbeatRequestState:
    """The heartbeat's send/receive bookkeeping. `last_received_ms` starts at -1, as Kafka's does, so right
    after construction or `reset()` the (freshly drawn) minimal backoff counts from time -1."""

    def __init__(self, now: int, heartbeat_interval_ms: int, backoff: ExponentialBackoff):
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._backoff = backoff
        self._timer_deadline_ms = now + heartbeat_interval_ms
        self.request_in_flight = False
        self.last_received_ms = -1
        self.num_attempts = 0
        self.backoff_ms = 0

    def reset(self) -> None:
        """Forget failures and any request in flight, so that the next heartbeat may go out at once."""
        self.request_in_flight = False
        self.last_received_ms = -1
        self.num_attempts = 0
        self.backoff_ms = self._backoff.backoff(0)

    def remaining_backoff_ms(self, now: int) -> int:
        return max(0, self.backoff_ms - (now - self.last_received_ms))

    def heartbeat_timer_expired(self, now: int) -> bool:
        return now >= self._timer_deadline_ms

    def can_send_request(self, now: int) -> bool:
        return (self.heartbeat_timer_expired(now) and not self.request_in_flight
                and self.remaining_backoff_ms(now) <= 0)

    def earliest_send_ms(self, now: int) -> int:
        """The first time `can_send_request` can hold, the request in flight aside: both clocks only run down."""
        return max(now, self._timer_deadline_ms, self.last_received_ms + self.backoff_ms)

    def reset_timer(self, now: int) -> None:
        self._timer_deadline_ms = now + self.heartbeat_interval_ms

    def on_send_attempt(self) -> None:
        self.request_in_flight = True

    def on_successful_attempt(self, now: int) -> None:
        self.request_in_flight = False
        self.last_received_ms = now
        self.backoff_ms = self._backoff.backoff(0)
        self.num_attempts = 0

    def on_failed_attempt(self, now: int) -> None:
        # The timer is zeroed so the retry waits for the backoff only (or nothing, after a reset()).
        self._timer_deadline_ms = now
        self.request_in_flight = False
        self.last_received_ms = now
        self.backoff_ms = self._backoff.backoff(self.num_attempts)
        self.num_attempts += 1

    def update_heartbeat_interval_ms(self, now: int, heartbeat_interval_ms: int) -> None:
        if heartbeat_interval_ms == self.heartbeat_interval_ms:
            return
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._timer_deadline_ms = now + heartbeat_interval_ms
