"""One KIP-848 consumer (Kafka's AsyncKafkaConsumer, `group.protocol=consumer`) as its group membership sees
it: the surface a runtime drives. It wires the membership (`membership_manager`) to the heartbeat loop
(`heartbeat_manager`) the way the consumer's two threads do, and does nothing on its own: time is passed in,
randomness (the member id and the backoff jitter) comes from the generator given (a `SeededRandom`, whose
state is stored with the rest, or a random.Random), and no I/O happens.

A runtime:
* calls `subscribe`, `poll` (the application's poll()), `unsubscribe` and `close` as the application does;
* after every call and at `next_deadline()`, calls `next_request(now)` and sends what it returns;
* answers each request with `on_response` or `on_request_failed`, and `coordinator_found` once the
  coordinator is known (FindCoordinator itself is the runtime's);
* takes the actions (`take_actions`) and reports each done with `action_done`, in the order given for those
  the application thread runs (callbacks, the assignment), at the application's polls to be faithful.
"""

from __future__ import annotations

import random
import uuid

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.heartbeat_manager import HeartbeatRequestManager
from state.consumer_group.client.heartbeat_timing import (
    RETRY_BACKOFF_EXP_BASE,
    RETRY_BACKOFF_JITTER,
    ExponentialBackoff,
    HeartbeatRequestState,
)
from state.consumer_group.client.member_actions import Partition
from state.consumer_group.client.member_config import MemberConfig
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.membership_manager import GroupMembershipOperation, MembershipManager
from state.consumer_group.client.seeded_random import SeededRandom
from state.consumer_group.messages import HeartbeatRequest, HeartbeatResponse
from state.consumer_group.topic_id import TopicId


def generate_member_id(rng: SeededRandom | random.Random) -> str:
    """Uuid.randomUuid().toString(): a random version-4 UUID in Kafka's text form, drawn again while that
    text contains a '-', as Kafka does. Kafka's other exclusions (the ids 0 and 1) are not version-4 UUIDs,
    so they cannot come up."""
    while True:
        raw = uuid.UUID(int=rng.getrandbits(128), version=4).bytes
        halves = int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)
        member_id = str(TopicId(*halves))
        if "-" not in member_id:
            return member_id


class Membership:
    def __init__(self, config: MemberConfig, rng: SeededRandom | random.Random, now: int):
        self.config = config
        self._manager = MembershipManager(config, generate_member_id(rng))
        backoff = ExponentialBackoff(config.retry_backoff_ms, RETRY_BACKOFF_EXP_BASE, config.retry_backoff_max_ms,
                                     RETRY_BACKOFF_JITTER, rng)
        # The heartbeat interval is 0 until the coordinator gives one: the first heartbeat goes at once.
        self._heartbeat = HeartbeatRequestManager(now, self._manager, HeartbeatRequestState(now, 0, backoff))

    # -- read-only view --------------------------------------------------------------------------------

    @property
    def state(self) -> ClientMemberState:
        return self._manager.state

    @property
    def member_id(self) -> str:
        return self._manager.member_id

    @property
    def member_epoch(self) -> int:
        return self._manager.member_epoch

    @property
    def owned_partitions(self) -> frozenset[Partition]:
        """What consumer.assignment() shows: the assignment the application thread last applied."""
        return self._manager.owned

    @property
    def leave_in_progress(self) -> bool:
        """A leave (unsubscribe, close) not yet finished: close() returns once this is False."""
        return self._manager.leave_in_progress

    @property
    def coordinator_known(self) -> bool:
        return self._heartbeat.coordinator_known

    @property
    def heartbeat_interval_ms(self) -> int:
        return self._heartbeat.request_state.heartbeat_interval_ms

    def pending_actions(self) -> list[actions.Action]:
        return self._manager.actions.pending()

    # -- the application ------------------------------------------------------------------------------

    def subscribe(self, now: int, topics: set[str] | frozenset[str], listener: bool = False,
                  pattern: str | None = None) -> None:
        """consumer.subscribe(topics[, listener]), or with `pattern` consumer.subscribe(SubscriptionPattern[,
        listener]) (the coordinator resolves it; no topics then); an empty list is an unsubscribe, as in Kafka."""
        if not topics and pattern is None:
            self.unsubscribe(now)
            return
        self._manager.subscribe(frozenset(() if pattern is not None else topics), listener, pattern)

    def poll(self, now: int) -> None:
        """consumer.poll(): reconcile (commits and revocations may start only here), join if newly
        subscribed, and restart the poll timer (a stale member rejoins)."""
        self._manager.maybe_reconcile(now, can_commit=True)
        self._manager.on_consumer_poll()
        self._heartbeat.reset_poll_timer(now)

    def unsubscribe(self, now: int) -> None:
        self._manager.skip_assignment_events(now)
        self._manager.leave_group(now, run_callbacks=True)

    def close(self, now: int, operation: GroupMembershipOperation = GroupMembershipOperation.DEFAULT) -> None:
        self._manager.close(now, operation)

    def take_actions(self) -> list[actions.Action | actions.ErrorEvent]:
        return self._manager.actions.take()

    def action_done(self, now: int, action: actions.Action, error: str | None = None) -> None:
        self._manager.action_done(now, action, error)

    # -- the network --------------------------------------------------------------------------------------

    def coordinator_found(self) -> None:
        self._heartbeat.coordinator_known = True

    def next_request(self, now: int) -> HeartbeatRequest | None:
        """One pass of the background thread: the heartbeat manager, then the membership manager, which
        may start a reconciliation that neither revokes nor needs an auto-commit."""
        request = self._heartbeat.poll(now)
        self._manager.maybe_reconcile(now, can_commit=False)
        return request

    def next_deadline(self, now: int) -> int | None:
        return self._heartbeat.next_deadline(now)

    def on_response(self, now: int, request: HeartbeatRequest, response: HeartbeatResponse) -> None:
        self._heartbeat.on_response(now, request, response)

    def on_request_failed(self, now: int, request: HeartbeatRequest, error: str) -> None:
        self._heartbeat.on_request_failed(now, request, error)

    # -- periodic elision (state/periodic.py) ---------------------------------------------------------------

    def steady_interval(self, now: int, round_trip_ms: int) -> int | None:
        """The heartbeat interval if the member is steady now: Stable, nothing awaited or pending, and its
        heartbeats the same request every interval, each answer back (and its success backoff over) before the
        next is due; None otherwise."""
        hb, mm = self._heartbeat, self._manager
        state = hb.request_state
        interval = state.heartbeat_interval_ms
        backoff = state._backoff
        longest_backoff = min(backoff.max_ms, int(backoff.initial_ms * (1 + backoff.jitter)) + 1)
        if (mm.state is not ClientMemberState.STABLE or mm.member_epoch <= 0 or not hb.coordinator_known or hb.in_flight
                or state.request_in_flight or state.num_attempts or mm.leave_in_progress or mm.actions.pending()
                or interval <= 0 or round_trip_ms + longest_backoff >= interval
                or not hb.heartbeat_state.unchanged() or hb.poll_timer_expired(now)
                or hb.next_deadline(now) != state._timer_deadline_ms):
            return None
        return interval

    def steady_request(self) -> HeartbeatRequest:
        """The heartbeat a steady member sends (building it changes nothing: nothing changed since the last)."""
        return self._heartbeat.heartbeat_state.build_request()

    def catch_up(self, sent: int | None, answered: int | None, answers: int, in_flight: HeartbeatRequest | None,
                 polled: int | None) -> None:
        """Put the member where its steady heartbeats and polls leave it: the last heartbeat sent at `sent`, the
        last answer handled at `answered` after `answers` answers in all, `in_flight` still awaited, and the
        application's last poll at `polled` (None: nothing of that kind happened)."""
        hb = self._heartbeat
        state = hb.request_state
        if sent is not None:
            state.reset_timer(sent)
        if answers:
            for _ in range(answers - 1):
                state._backoff.backoff(0)  # the jitter each answer drew
            state.on_successful_attempt(answered)
        if in_flight is not None:
            state.on_send_attempt()
            hb.in_flight.append((in_flight, True))
        if polled is not None:
            hb.poll_deadline_ms = polled + self.config.max_poll_interval_ms
