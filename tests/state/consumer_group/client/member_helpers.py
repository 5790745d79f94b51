"""Builders for the client-side membership tests, shaped like the fixtures of Kafka's
ConsumerMembershipManagerTest and ConsumerHeartbeatRequestManagerTest (createMemberInStableState,
createConsumerGroupHeartbeatResponse, ...), so that ported cases read like their originals."""

from __future__ import annotations

import random
from typing import Iterable

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.member import Membership
from state.consumer_group.client.member_config import MemberConfig
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.membership_manager import MembershipManager
from state.consumer_group.messages import HeartbeatResponse, TopicPartitions
from state.consumer_group.topic_id import TopicId

GROUP_ID = "test-group"
MEMBER_ID = "member-id"
MEMBER_EPOCH = 1
REBALANCE_TIMEOUT = 100
TOPIC_1 = TopicId(1, 1)
TOPIC_2 = TopicId(2, 2)


class MidpointRandom(random.Random):
    """Draws every jitter factor at the middle of its range (1.0), as Kafka's tests' zero jitter does."""

    def uniform(self, a: float, b: float) -> float:
        return (a + b) / 2


def assignment(*topics: tuple[TopicId, Iterable[int]]) -> TopicPartitions:
    return tuple((topic_id, tuple(sorted(ps))) for topic_id, ps in sorted(topics))


def response(epoch: int = MEMBER_EPOCH, assigned: TopicPartitions | None = None, error: str = "NONE",
             interval: int = 1000, member_id: str = MEMBER_ID) -> HeartbeatResponse:
    return HeartbeatResponse(error=error, member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=interval,
                             assignment=assigned)


def manager(instance_id: str | None = None, auto_commit: bool = False, **config) -> MembershipManager:
    """createMembershipManager: subscribed to topic1, not yet joined."""
    mm = MembershipManager(MemberConfig(GROUP_ID, group_instance_id=instance_id, enable_auto_commit=auto_commit,
                                        max_poll_interval_ms=REBALANCE_TIMEOUT, **config), MEMBER_ID)
    mm.subscribe(frozenset({"topic1"}), listener=False)
    return mm


def joining_manager(instance_id: str | None = None, auto_commit: bool = False, listener: bool = False,
                    **config) -> MembershipManager:
    """createMembershipManagerJoiningGroup."""
    mm = manager(instance_id, auto_commit, **config)
    mm.has_rebalance_listener = listener
    mm.on_consumer_poll()
    assert mm.state is ClientMemberState.JOINING
    return mm


def complete_next(mm: MembershipManager, now: int = 0) -> None:
    """The oldest pending action (a commit too) completes."""
    mm.action_done(now, min(mm.actions.pending(), key=lambda a: a.seq))


def complete_all(mm: MembershipManager, now: int = 0) -> None:
    """Every pending action completes, in order, including those the completed ones lead to."""
    while mm.actions.pending():
        complete_next(mm, now)
    mm.actions.take()


def complete_until(mm: MembershipManager, kind: type) -> actions.Action:
    """Actions complete in order until one of `kind` is pending; that one is returned, still pending."""
    for _ in range(10):
        found = [a for a in mm.actions.pending() if isinstance(a, kind)]
        if found:
            mm.actions.take()
            return found[0]
        complete_next(mm)
    raise AssertionError(f"no {kind.__name__} came")


def stable_manager(instance_id: str | None = None, owned: TopicPartitions = (), auto_commit: bool = False,
                   listener: bool = False, **config) -> MembershipManager:
    """createMemberInStableState: joined, reconciled `owned` at epoch 1 and acknowledged it."""
    mm = joining_manager(instance_id, auto_commit, listener, **config)
    mm.on_heartbeat_success(response(MEMBER_EPOCH, owned))
    mm.maybe_reconcile(0, can_commit=True)
    complete_all(mm)
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.STABLE
    return mm


def pending(mm: MembershipManager, kind: type) -> list[actions.Action]:
    return [a for a in mm.actions.pending() if isinstance(a, kind)]


def membership(now: int = 0, rng: random.Random | None = None, **config) -> Membership:
    """A consumer with its coordinator known, subscribed to topic1 and polled once: JOINING."""
    config.setdefault("max_poll_interval_ms", 10_000)
    config.setdefault("retry_backoff_ms", 80)
    config.setdefault("enable_auto_commit", False)
    m = Membership(MemberConfig(GROUP_ID, **config), rng or MidpointRandom(7), now)
    m.coordinator_found()
    m.subscribe(now, {"topic1"})
    m.poll(now)
    return m
