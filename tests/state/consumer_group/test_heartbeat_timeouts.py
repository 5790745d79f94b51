"""Kafka's GroupMetadataManagerTest session and rebalance timeout cases (trunk): the timers a heartbeat
arms and cancels, and the members their expiry fences."""

from __future__ import annotations

import pytest

from state.consumer_group.heartbeat import REBALANCE_TIMEOUT, CoordinatorResult, on_loaded
from state.consumer_group.reconciliation import MemberState
from state.consumer_group.records import member_tombstones
from tests.state.consumer_group.coordinator_context import (
    FOO,
    Context,
    assignment_metadata_record,
    epoch_record,
    epochs,
    member,
    tps,
)

# On the native core, the timeouts these cases fire run on the native group too (tests/native/consumer_group/shadow.py).
pytestmark = pytest.mark.usefixtures("core")

M1, M2 = "member-id-1", "member-id-2"


def test_session_timeout_lifecycle():
    # GroupMetadataManagerTest.testSessionTimeoutLifecycle
    ctx = Context({"foo": (FOO, 6)})
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    result = ctx.join(M1, names=("foo",), rebalance_timeout_ms=90000, server_assignor="range")
    assert result.response.member_epoch == 2
    ctx.assert_session_timeout(M1, 45000)
    assert ctx.sleep(result.response.heartbeat_interval_ms) == []
    # Every heartbeat pushes the session timeout back.
    result = ctx.heartbeat(M1, 2)
    assert result.response.member_epoch == 2
    ctx.assert_session_timeout(M1, 45000)
    assert ctx.sleep(result.response.heartbeat_interval_ms) == []
    # Leaving cancels the member's timers.
    assert ctx.heartbeat(M1, -1).response.member_epoch == -1
    assert ctx.session_deadline(M1) is None and ctx.rebalance_timer(M1) is None


def test_failed_heartbeat_does_not_refresh_the_session():
    # GroupMetadataManagerTest (a failed request writes nothing and reschedules nothing)
    ctx = Context({"foo": (FOO, 6)})
    ctx.join(M1, names=("foo",), server_assignor="range")
    deadline = ctx.session_deadline(M1)
    ctx.sleep(5000)
    assert ctx.heartbeat(M1, 99).response.error == "FENCED_MEMBER_EPOCH"
    assert ctx.session_deadline(M1) == deadline


def test_session_timeout_expiration():
    # GroupMetadataManagerTest.testSessionTimeoutExpiration
    ctx = Context({"foo": (FOO, 6)})
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    assert ctx.join(M1, names=("foo",), rebalance_timeout_ms=90000, server_assignor="range").response.member_epoch == 2
    ctx.assert_session_timeout(M1, 45000)
    (expired,) = ctx.sleep(45000 + 1)
    assert expired.records == (*member_tombstones(M1), epoch_record(3, 0), assignment_metadata_record(3, 0))
    assert expired.response is None
    assert ctx.session_deadline(M1) is None and ctx.rebalance_timer(M1) is None


def test_session_timeout_expiration_static_member():
    # GroupMetadataManagerTest.testSessionTimeoutExpirationStaticMember
    ctx = Context({"foo": (FOO, 6)})
    ctx.assignor.prepare({M1: {FOO: range(6)}})
    ctx.join(M1, names=("foo",), rebalance_timeout_ms=90000, server_assignor="range", instance_id=M1)
    ctx.assert_session_timeout(M1, 45000)
    # A temporary leave keeps the session timer: the instance has one session to come back.
    assert ctx.heartbeat(M1, -2, instance_id=M1).response.member_epoch == -2
    ctx.assert_session_timeout(M1, 45000)
    (expired,) = ctx.sleep(45000 + 1)
    assert expired.records == (*member_tombstones(M1), epoch_record(3, 0), assignment_metadata_record(3, 0))


def test_session_timeout_of_a_replaced_static_member_does_nothing():
    # GroupMetadataManager.replaceMember: the old member's timers are left to find it gone
    ctx = Context({"foo": (FOO, 6)})
    ctx.join(M1, names=("foo",), server_assignor="range", instance_id="instance")
    ctx.heartbeat(M1, -2, instance_id="instance")
    ctx.join(M2, names=("foo",), server_assignor="range", instance_id="instance")
    assert ctx.fire(("session-timeout", M1)).records == ()
    assert M2 in ctx.group.members


def rebalancing_group(rebalance_timeout_ms):
    """testRebalanceTimeoutLifecycle's start: member 1 holds foo 0-2, member 2 joins, member 1 is asked to
    give up foo 2."""
    ctx = Context({"foo": (FOO, 3)})
    ctx.assignor.prepare({M1: {FOO: [0, 1, 2]}})
    result = ctx.join(M1, names=("foo",), rebalance_timeout_ms=180000, server_assignor="range")
    assert result.response.member_epoch == 2 and result.response.assignment == tps(foo=[0, 1, 2])
    assert ctx.sleep(result.response.heartbeat_interval_ms) == []
    ctx.assignor.prepare({M1: {FOO: [0, 1]}, M2: {FOO: [2]}})
    result = ctx.join(M2, names=("foo",), rebalance_timeout_ms=90000, server_assignor="range")
    assert result.response.member_epoch == 3 and result.response.assignment == ()
    assert ctx.sleep(result.response.heartbeat_interval_ms) == []
    result = ctx.heartbeat(M1, 2, rebalance_timeout_ms=rebalance_timeout_ms, subscribed_topic_names=("foo",))
    assert result.response.member_epoch == 2 and result.response.assignment == tps(foo=[0, 1])
    ctx.assert_rebalance_timeout(M1, rebalance_timeout_ms)
    return ctx


def test_rebalance_timeout_lifecycle():
    # GroupMetadataManagerTest.testRebalanceTimeoutLifecycle
    ctx = rebalancing_group(12000)
    captured = ctx.rebalance_timer(M1)
    assert ctx.sleep(5000) == []
    # Member 1 acknowledges the revocation: the timer is cancelled.
    result = ctx.heartbeat(M1, 2, topic_partitions=tps(foo=[0, 1]))
    assert result.response.member_epoch == 3 and result.response.assignment is None
    assert ctx.rebalance_timer(M1) is None
    # The captured timer firing late finds the member at another epoch: nothing happens.
    ctx.timers[(REBALANCE_TIMEOUT, M1)] = captured
    assert ctx.fire((REBALANCE_TIMEOUT, M1)).records == ()


def test_rebalance_timeout_expiration():
    # GroupMetadataManagerTest.testRebalanceTimeoutExpiration
    ctx = rebalancing_group(10000)
    (expired,) = ctx.sleep(10000 + 1)
    assert expired.records == (*member_tombstones(M1), epoch_record(4, ctx.metadata_hash("foo")))
    assert ctx.session_deadline(M1) is None and ctx.rebalance_timer(M1) is None
    assert set(ctx.group.members) == {M2}


def test_session_timeout_and_heartbeat_interval_come_from_the_broker_config():
    # GroupMetadataManager.consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs (no group config)
    ctx = Context({"foo": (FOO, 6)}, group_consumer_session_timeout_ms=50000, group_consumer_max_session_timeout_ms=60000,
                  group_consumer_heartbeat_interval_ms=7000)
    result = ctx.join(M1, names=("foo",), server_assignor="range")
    assert result.response.heartbeat_interval_ms == 7000
    ctx.assert_session_timeout(M1, 50000)


def test_on_loaded_session_timeout_expiration():
    # GroupMetadataManagerTest.testOnLoadedSessionTimeoutExpiration, testOnLoaded (rebalance timers of
    # members still revoking)
    ctx = Context({"foo": (FOO, 6)})
    revoking = member(M2, epoch=10, previous=9, state=MemberState.UNREVOKED_PARTITIONS, names=("foo",),
                      rebalance_timeout_ms=30000, pending=epochs(10, foo=[3]))
    ctx.with_group(member(M1, epoch=10, previous=9, names=("foo",)), revoking, group_epoch=10, assignment_epoch=10,
                   names=("foo",), targets={M1: {"foo": [0, 1, 2, 3]}, M2: {"foo": []}})
    ctx.apply(CoordinatorResult(timers=on_loaded(ctx.group, ctx.time, ctx.context)))
    ctx.assert_session_timeout(M1, 45000)
    ctx.assert_rebalance_timeout(M2, 30000)
    assert ctx.rebalance_timer(M1) is None
    expired = ctx.sleep(45000 + 1)
    # M2's rebalance timeout comes first; then M1's session.
    assert [r.records for r in expired] == [
        (*member_tombstones(M2), epoch_record(11, ctx.metadata_hash("foo"))),
        (*member_tombstones(M1), epoch_record(12, 0), assignment_metadata_record(12, 0)),
    ]
