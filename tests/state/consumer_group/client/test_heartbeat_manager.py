"""Ports of Kafka's ConsumerHeartbeatRequestManagerTest and AbstractHeartbeatRequestManagerTest (trunk): when
heartbeats go out, what they carry, and what each error or failure does. Kafka's fixtures: heartbeat interval
1000 ms, max.poll.interval.ms 10000, retry.backoff.ms 80, no jitter (here: a jitter drawn at its midpoint).
Kafka builds its manager with the 1000 ms interval already set; here a member gets it from its first
response, as a real one does."""

from __future__ import annotations

import random

import pytest

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.heartbeat_manager import CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG
from state.consumer_group.client.member import Membership
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.membership_manager import GroupMembershipOperation
from state.consumer_group.messages import LEAVE_EPOCH, STATIC_LEAVE_EPOCH

from tests.state.consumer_group.client.member_helpers import (
    GROUP_ID,
    MEMBER_EPOCH,
    TOPIC_1,
    assignment,
    membership,
    response,
)

INTERVAL = 1000
MAX_POLL = 10_000
BACKOFF = 80


def run_actions(m: Membership, now: int) -> None:
    for action in m.take_actions():
        if not isinstance(action, actions.ErrorEvent):
            m.action_done(now, action)


def stable(now: int = 0, owned=(), **config) -> Membership:
    """Joined at `now` with `owned` and acknowledged it: STABLE, its last heartbeat sent at `now`."""
    m = membership(now, **config)
    join = m.next_request(now)
    m.on_response(now, join, response(assigned=owned, interval=INTERVAL))
    m.poll(now)
    run_actions(m, now)
    ack = m.next_request(now)
    assert ack is not None and m.state is ClientMemberState.STABLE
    m.on_response(now, ack, response(interval=INTERVAL))
    return m


def test_heartbeat_on_startup():
    # ConsumerHeartbeatRequestManagerTest.testHeartbeatOnStartup
    m = membership()
    first = m.next_request(0)
    assert first is not None and first.member_epoch == 0
    assert m.next_request(0) is None  # not again while the first is in flight


def test_not_subscribed_member_sends_nothing():
    # ConsumerHeartbeatRequestManagerTest.testMaximumTimeToWaitWhenHeartbeatShouldBeSkipped (UNSUBSCRIBED)
    m = Membership(membership().config, random.Random(1), 0)
    m.coordinator_found()
    m.subscribe(0, {"topic1"})
    assert m.next_request(0) is None and m.next_deadline(0) is None  # joins only at the next poll
    m.poll(0)
    assert m.next_deadline(0) == 0


def test_first_heartbeat_includes_required_info_to_join_group_and_get_assignments():
    # ConsumerHeartbeatRequestManagerTest.testFirstHeartbeatIncludesRequiredInfoToJoinGroupAndGetAssignments
    m = membership(group_instance_id="group-instance-id", group_remote_assignor="uniform", client_rack="rack1")
    request = m.next_request(0)
    assert request.member_id == m.member_id and len(m.member_id) == 22
    assert (request.group_id, request.member_epoch, request.instance_id) == (GROUP_ID, 0, "group-instance-id")
    assert request.subscribed_topic_names == ("topic1",) and request.rebalance_timeout_ms == MAX_POLL
    assert request.server_assignor == "uniform" and request.rack_id == "rack1"
    assert request.topic_partitions == ()


@pytest.mark.parametrize("state", ["FENCED", "STALE", "FATAL"])
def test_skipping_heartbeat(state):
    # ConsumerHeartbeatRequestManagerTest.testSkippingHeartbeat
    m = stable(owned=assignment((TOPIC_1, [0])))
    m._manager.has_rebalance_listener = True  # keeps FENCED / STALE while onPartitionsLost is pending
    if state == "FENCED":
        m._manager.transition_to_fenced(0)
    elif state == "FATAL":
        m._manager.transition_to_fatal(0)
    else:
        m.next_request(MAX_POLL)
    assert m.state is ClientMemberState[state]
    assert m.next_request(MAX_POLL + 5 * INTERVAL) is None and m.next_deadline(MAX_POLL) is None


def test_heartbeat_not_sent_if_another_one_in_flight():
    # ConsumerHeartbeatRequestManagerTest.testHeartbeatNotSentIfAnotherOneInFlight
    m = stable()
    in_flight = m.next_request(INTERVAL)
    assert in_flight is not None
    assert m.next_request(2 * INTERVAL) is None and m.next_request(3 * INTERVAL) is None
    m.on_response(3 * INTERVAL, in_flight, response(interval=INTERVAL))
    assert m.next_request(3 * INTERVAL + BACKOFF - 1) is None  # the interval is over; the minimal backoff is not
    assert m.next_request(3 * INTERVAL + BACKOFF) is not None


@pytest.mark.parametrize("failure", ["TimeoutException", "DisconnectException"])
def test_network_timeout_and_disconnect(failure):
    # ConsumerHeartbeatRequestManagerTest.testNetworkTimeout / testDisconnect
    m = stable()
    request = m.next_request(INTERVAL)
    m.on_request_failed(INTERVAL, request, failure)
    assert m.take_actions() == [] and m.state is ClientMemberState.STABLE
    assert m.coordinator_known is (failure == "TimeoutException")
    m.coordinator_found()
    assert m.next_request(INTERVAL + BACKOFF - 1) is None
    assert m.next_deadline(INTERVAL + BACKOFF - 1) == INTERVAL + BACKOFF
    retry = m.next_request(INTERVAL + BACKOFF)
    assert retry is not None and retry.rebalance_timeout_ms == MAX_POLL  # full again after a failure


@pytest.mark.parametrize("failure, message", [
    ("KafkaException", None),
    ("UnsupportedVersionException", CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG),
])
def test_failure_on_fatal_exception(failure, message):
    # ConsumerHeartbeatRequestManagerTest.testFailureOnFatalException / testUnsupportedVersionFromClient
    m = stable()
    m.on_request_failed(INTERVAL, m.next_request(INTERVAL), failure)
    assert m.state is ClientMemberState.FATAL
    assert m.take_actions() == [actions.ErrorEvent(failure, message)]
    assert m.next_request(10 * INTERVAL) is None


def test_validate_consumer_group_heartbeat_request():
    # ConsumerHeartbeatRequestManagerTest.testValidateConsumerGroupHeartbeatRequest / testHeartbeatState:
    # a regular heartbeat carries only what changed; after an error everything goes again (but the rack,
    # sent only when joining).
    m = stable(group_instance_id="group-instance-id", group_remote_assignor="uniform", client_rack="rack1")
    regular = m.next_request(INTERVAL)
    assert (regular.member_epoch, regular.instance_id) == (MEMBER_EPOCH, "group-instance-id")
    assert regular.rebalance_timeout_ms == -1 and regular.subscribed_topic_names is None
    assert regular.server_assignor is None and regular.topic_partitions is None and regular.rack_id is None
    m.on_response(INTERVAL, regular, response(error="COORDINATOR_LOAD_IN_PROGRESS"))
    full = m.next_request(INTERVAL + BACKOFF)
    assert full.rebalance_timeout_ms == MAX_POLL and full.subscribed_topic_names == ("topic1",)
    assert full.server_assignor == "uniform" and full.topic_partitions == () and full.rack_id is None


def test_subscription_change_sent_with_next_regular_heartbeat():
    # ConsumerHeartbeatRequestManagerTest.testHeartbeatState (subscription part)
    m = stable()
    m.subscribe(10, {"topic1", "topic2"})
    m.poll(10)
    assert m.next_request(10) is None  # no immediate send
    assert m.next_request(INTERVAL).subscribed_topic_names == ("topic1", "topic2")


def test_assignment_sent_when_local_epoch_changes():
    # ConsumerHeartbeatRequestManagerTest.testValidateConsumerGroupHeartbeatRequestAssignmentSentWhenLocalEpochChanges
    m = stable()
    hb = m.next_request(INTERVAL)
    m.on_response(INTERVAL, hb, response(assigned=assignment((TOPIC_1, [0])), interval=INTERVAL))
    m.poll(INTERVAL)
    run_actions(m, INTERVAL)
    ack = m.next_request(INTERVAL)
    assert ack.topic_partitions == ((TOPIC_1, (0,)),) and m.state is ClientMemberState.STABLE
    m.on_response(INTERVAL, ack, response(interval=INTERVAL))
    assert m.next_request(2 * INTERVAL).topic_partitions is None


def test_consumer_acks_reconciled_assignment_after_ack_lost():
    # ConsumerHeartbeatRequestManagerTest.testConsumerAcksReconciledAssignmentAfterAckLost
    m = membership()
    join = m.next_request(0)
    m.on_response(0, join, response(assigned=assignment((TOPIC_1, [0])), interval=INTERVAL))
    m.poll(0)
    run_actions(m, 0)
    ack = m.next_request(0)
    assert ack.topic_partitions == ((TOPIC_1, (0,)),)
    m.on_request_failed(5, ack, "TimeoutException")
    retry = m.next_request(5 + BACKOFF)
    assert retry.topic_partitions == ((TOPIC_1, (0,)),) and retry.subscribed_topic_names == ("topic1",)


def test_poll_timer_expiration():
    # ConsumerHeartbeatRequestManagerTest.testPollTimerExpiration
    m = stable(owned=assignment((TOPIC_1, [0])))
    assert m.next_deadline(1) == INTERVAL
    leave = m.next_request(MAX_POLL)
    assert leave.member_epoch == LEAVE_EPOCH and m.state is ClientMemberState.STALE
    assert m.owned_partitions == frozenset()  # no listener: onPartitionsLost is immediate
    assert m.next_request(MAX_POLL + INTERVAL) is None
    m.poll(MAX_POLL + INTERVAL)
    assert m.state is ClientMemberState.JOINING
    rejoin = m.next_request(MAX_POLL + INTERVAL)
    assert rejoin.member_epoch == 0 and rejoin.member_id == leave.member_id and rejoin.topic_partitions == ()
    m.on_response(MAX_POLL + INTERVAL, leave, response(epoch=LEAVE_EPOCH))  # ignored
    assert m.state is ClientMemberState.JOINING


def test_static_member_leaves_with_epoch_minus_two_on_poll_timeout():
    # AbstractHeartbeatRequestManager.poll + ConsumerMembershipManager.leaveGroupEpoch
    m = stable(group_instance_id="instance1")
    assert m.next_request(MAX_POLL).member_epoch == STATIC_LEAVE_EPOCH


def test_poll_timer_expiration_should_not_mark_member_stale_if_member_already_leaving():
    # AbstractHeartbeatRequestManagerTest.testPollTimerExpirationShouldNotMarkMemberStaleIfMemberAlreadyLeaving
    m = stable(owned=assignment((TOPIC_1, [0])))
    m._manager.has_rebalance_listener = True
    m.unsubscribe(5)
    assert m.state is ClientMemberState.PREPARE_LEAVING
    request = m.next_request(MAX_POLL)
    assert request is not None and request.member_epoch == MEMBER_EPOCH  # still heartbeating while leaving
    assert m.state is ClientMemberState.PREPARE_LEAVING


@pytest.mark.parametrize("instance_id", [None, "groupInstanceId"])
@pytest.mark.parametrize("operation", list(GroupMembershipOperation))
def test_poll_on_leaving(instance_id, operation):
    # ConsumerHeartbeatRequestManagerTest.testPollOnLeaving / testPollOnCloseGeneratesRequestIfNeeded
    m = stable(group_instance_id=instance_id)
    in_flight = m.next_request(INTERVAL)
    m.close(INTERVAL, operation)
    assert m.state is ClientMemberState.LEAVING
    request = m.next_request(INTERVAL)
    if instance_id is None and operation is GroupMembershipOperation.REMAIN_IN_GROUP:
        assert request is None and m.state is ClientMemberState.LEAVING
        # Trunk as written: LEAVING is also a "heartbeat now" state, so once nothing is in flight the -1
        # goes out all the same (Kafka's test mocks that path away).
        m.on_response(INTERVAL + 1, in_flight, response())
        assert m.next_request(INTERVAL + 1).member_epoch == LEAVE_EPOCH
    else:
        assert request is not None and request.member_epoch == m.member_epoch < 0
        assert m.state is ClientMemberState.UNSUBSCRIBED and m.leave_in_progress
        m.on_response(INTERVAL + 1, in_flight, response())  # the older response changes nothing
        assert m.leave_in_progress
        m.on_response(INTERVAL + 2, request, response(epoch=request.member_epoch))
        assert not m.leave_in_progress


def test_fenced_member_stop_heartbeat_until_it_releases_assignment_to_rejoin():
    # ConsumerHeartbeatRequestManagerTest.testFencedMemberStopHeartbeatUntilItReleasesAssignmentToRejoin
    m = stable(owned=assignment((TOPIC_1, [0])))
    m._manager.has_rebalance_listener = True
    hb = m.next_request(INTERVAL)
    m.on_response(INTERVAL, hb, response(error="FENCED_MEMBER_EPOCH"))
    assert m.state is ClientMemberState.FENCED and m.next_request(INTERVAL) is None
    [lost] = m.take_actions()
    m.action_done(INTERVAL + 7, lost)
    rejoin = m.next_request(INTERVAL + 7)  # no backoff after fencing
    assert rejoin.member_epoch == 0 and rejoin.topic_partitions == () and rejoin.rebalance_timeout_ms == MAX_POLL
    # The fence also forgot the failure: the rejoin's first failure waits the minimal backoff, not twice it.
    m.on_response(INTERVAL + 9, rejoin, response(error="COORDINATOR_LOAD_IN_PROGRESS"))
    assert m.next_deadline(INTERVAL + 9) == INTERVAL + 9  # JOINING: sent at once, backoff or not
    m.on_response(INTERVAL + 9, m.next_request(INTERVAL + 9), response(error="COORDINATOR_LOAD_IN_PROGRESS"))
    assert m._heartbeat.request_state.backoff_ms == 2 * BACKOFF


def test_sending_leave_group_heartbeat_when_previous_one_in_flight():
    # ConsumerHeartbeatRequestManagerTest.testSendingLeaveGroupHeartbeatWhenPreviousOneInFlight
    m = stable()
    assert m.next_request(INTERVAL) is not None
    m.unsubscribe(INTERVAL)
    leave = m.next_request(INTERVAL)
    assert leave.member_epoch == LEAVE_EPOCH and m.state is ClientMemberState.UNSUBSCRIBED
    assert m.next_request(INTERVAL) is None


def test_rack_id_in_heartbeat_lifecycle():
    # ConsumerHeartbeatRequestManagerTest.testRackIdInHeartbeatLifecycle
    m = stable(client_rack="rack1")
    assert m.next_request(INTERVAL).rack_id is None
    m2 = membership(client_rack="rack1")
    hb = m2.next_request(0)
    assert hb.rack_id == "rack1"
    m2.on_response(0, hb, response(error="UNKNOWN_MEMBER_ID"))
    assert m2.next_request(0).rack_id == "rack1"  # joining again: sent again


def test_timer_not_due():
    # AbstractHeartbeatRequestManagerTest.testTimerNotDue
    m = stable()
    assert m.next_request(100) is None and m.next_deadline(100) == INTERVAL


def test_heartbeat_outside_interval():
    # AbstractHeartbeatRequestManagerTest.testHeartbeatOutsideInterval: ACKNOWLEDGING sends at once
    m = stable()
    hb = m.next_request(INTERVAL)
    m.on_response(INTERVAL + 10, hb, response(assigned=assignment((TOPIC_1, [0])), interval=INTERVAL))
    m.poll(INTERVAL + 20)
    run_actions(m, INTERVAL + 20)
    assert m.state is ClientMemberState.ACKNOWLEDGING and m.next_deadline(INTERVAL + 20) == INTERVAL + 20
    assert m.next_request(INTERVAL + 20) is not None  # within both the interval and the backoff
    # While the ack is in flight only the poll timer (restarted by the poll) can make a request.
    assert m.next_deadline(INTERVAL + 20) == INTERVAL + 20 + MAX_POLL


def test_no_coordinator():
    # AbstractHeartbeatRequestManagerTest.testNoCoordinator
    m = Membership(membership().config, random.Random(1), 0)
    m.subscribe(0, {"topic1"})
    m.poll(0)
    assert m.next_request(0) is None and m.next_deadline(0) is None
    m.coordinator_found()
    assert m.next_request(0) is not None


def test_successful_heartbeat_timing():
    # AbstractHeartbeatRequestManagerTest.testSuccessfulHeartbeatTiming: the cadence is send to send
    m = stable()
    assert m.next_request(INTERVAL - 1) is None
    in_flight = m.next_request(INTERVAL)
    assert m.next_request(INTERVAL + INTERVAL // 3) is None
    m.on_response(INTERVAL + INTERVAL // 3, in_flight, response(interval=INTERVAL))
    assert m.next_deadline(INTERVAL + INTERVAL // 3) == 2 * INTERVAL
    assert m.next_request(2 * INTERVAL) is not None


def test_heartbeat_interval_received_from_coordinator():
    # AbstractHeartbeatRequestManagerTest.testLogsHeartbeatIntervalReceivedFromCoordinatorOnlyWhenChanged:
    # a new interval restarts the timer at the response; the same one leaves it alone
    m = stable()
    hb = m.next_request(INTERVAL)
    m.on_response(INTERVAL + 100, hb, response(interval=INTERVAL + 500))
    assert m.heartbeat_interval_ms == INTERVAL + 500
    assert m.next_deadline(INTERVAL + 100) == 2 * INTERVAL + 600
    hb = m.next_request(2 * INTERVAL + 600)
    m.on_response(2 * INTERVAL + 700, hb, response(interval=INTERVAL + 500))
    assert m.next_deadline(2 * INTERVAL + 700) == 3 * INTERVAL + 1100


def test_group_id_not_found_exception_while_unsubscribed():
    # AbstractHeartbeatRequestManagerTest.testGroupIdNotFoundExceptionWhileUnsubscribed
    m = stable()
    m.unsubscribe(5)
    leave = m.next_request(5)
    m.on_response(6, leave, response(error="GROUP_ID_NOT_FOUND"))
    assert m.state is ClientMemberState.UNSUBSCRIBED and m.take_actions() == [] and not m.leave_in_progress


def test_group_id_not_found_while_stable_is_fatal():
    # AbstractHeartbeatRequestManagerTest.testGroupIdNotFoundWhileStableIsFatal
    m = stable()
    m.on_response(INTERVAL, m.next_request(INTERVAL), response(error="GROUP_ID_NOT_FOUND"))
    assert m.state is ClientMemberState.FATAL and [type(a) for a in m.take_actions()] == [actions.ErrorEvent]


# error, fatal, ms until the next heartbeat may go (None: none at all), coordinator still known
ERRORS = [
    ("NONE", False, INTERVAL, True),
    ("COORDINATOR_NOT_AVAILABLE", False, 0, False),
    ("COORDINATOR_LOAD_IN_PROGRESS", False, BACKOFF, True),
    ("NOT_COORDINATOR", False, 0, False),
    ("GROUP_AUTHORIZATION_FAILED", True, None, True),
    ("INVALID_REQUEST", True, None, True),
    ("UNKNOWN_MEMBER_ID", False, 0, True),
    ("FENCED_MEMBER_EPOCH", False, 0, True),
    ("UNSUPPORTED_ASSIGNOR", True, None, True),
    ("UNSUPPORTED_VERSION", True, None, True),
    ("UNRELEASED_INSTANCE_ID", True, None, True),
    ("FENCED_INSTANCE_ID", True, None, True),
    ("GROUP_MAX_SIZE_REACHED", True, None, True),
    ("TOPIC_AUTHORIZATION_FAILED", False, BACKOFF, True),
    ("INVALID_REGULAR_EXPRESSION", True, None, True),
    ("UNKNOWN_SERVER_ERROR", True, None, True),
]


@pytest.mark.parametrize("error, fatal, next_in, coordinator_known", ERRORS)
def test_heartbeat_response_on_error_handling(error, fatal, next_in, coordinator_known):
    # AbstractHeartbeatRequestManagerTest.testHeartbeatResponseOnErrorHandling (plus INVALID_REGULAR_EXPRESSION
    # and an error no case names, both fatal in the source)
    m = stable()
    t = INTERVAL
    m.on_response(t, m.next_request(t), response(error=error, interval=INTERVAL))
    emitted = m.take_actions()
    assert (m.state is ClientMemberState.FATAL) == fatal
    assert m.coordinator_known == coordinator_known
    errors = [a for a in emitted if isinstance(a, actions.ErrorEvent)]
    assert [e.error for e in errors] == ([error] if fatal or error == "TOPIC_AUTHORIZATION_FAILED" else [])
    if error == "UNSUPPORTED_VERSION":
        assert errors[0].message == CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG
    if next_in is None:
        assert m.next_request(t + 10 * INTERVAL) is None
        return
    m.coordinator_found()
    if error in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"):
        assert m.state is ClientMemberState.JOINING  # nothing owned: rejoins at once
    if next_in:
        assert m.next_request(t + next_in - 1) is None
    follow_up = m.next_request(t + next_in)
    assert follow_up is not None
    assert follow_up.member_epoch == (0 if error in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH") else MEMBER_EPOCH)


def test_retry_backoff_is_exponential_up_to_the_maximum():
    # RequestState / ExponentialBackoff: 80, 160, 320, 640, then retry.backoff.max.ms
    m = stable()
    t = INTERVAL
    waits = []
    for _ in range(6):
        request = m.next_request(t)
        m.on_response(t, request, response(error="COORDINATOR_LOAD_IN_PROGRESS"))
        waits.append(m.next_deadline(t) - t)
        t = m.next_deadline(t)
    assert waits == [80, 160, 320, 640, 1000, 1000]
    m.on_response(t, m.next_request(t), response(interval=INTERVAL))
    assert m.next_deadline(t) == t + INTERVAL  # a success forgets the failures


def _heartbeat_state(m: Membership):
    """HeartbeatState over the member's manager, as Kafka's test builds one over its mocks."""
    from state.consumer_group.client.heartbeat_manager import HeartbeatState
    return HeartbeatState(GROUP_ID, m._manager), m._manager


def test_regex_in_heartbeat_lifecycle():
    # ConsumerHeartbeatRequestManagerTest.testRegexInHeartbeatLifecycle
    state, mm = _heartbeat_state(membership())
    mm.subscribe(frozenset(), False, "t1.*")
    mm.transition_to_joining()
    assert state.build_request().subscribed_topic_regex == "t1.*"
    mm.state = ClientMemberState.STABLE
    assert state.build_request().subscribed_topic_regex is None  # not updated
    mm.pattern = "t2.*"
    assert state.build_request().subscribed_topic_regex == "t2.*"
    mm.pattern = None
    assert state.build_request().subscribed_topic_regex == ""  # removes the pattern subscription
    assert state.build_request().subscribed_topic_regex is None


def test_regex_in_joining_heartbeat():
    # ConsumerHeartbeatRequestManagerTest.testRegexInJoiningHeartbeat
    state, mm = _heartbeat_state(membership())
    mm.subscribe(frozenset(), False, "t1.*")
    mm.transition_to_joining()
    request = state.build_request()
    # SubscriptionState has no topic names for an RE2J pattern: a join sends an empty list.
    assert (request.subscribed_topic_regex, request.subscribed_topic_names) == ("t1.*", ())
    mm.pattern = None
    assert state.build_request().subscribed_topic_regex == ""
    assert state.build_request().subscribed_topic_regex is None  # rejoining without a pattern: no field
