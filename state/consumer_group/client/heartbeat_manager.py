"""The client's heartbeat loop: Kafka's AbstractHeartbeatRequestManager, ConsumerHeartbeatRequestManager and
its HeartbeatState (trunk). It decides when a ConsumerGroupHeartbeat goes out (`heartbeat_timing`, the
member's state, the poll timer, the coordinator being known), what it carries (full when joining, then
only what changed since the last one sent; everything again after any error), and what each response or
failure does to the membership (`membership_manager`).

At most one heartbeat is awaited at a time, with two exceptions Kafka makes: the leave heartbeat of a
LEAVING member goes out even with one in flight, and the leave of an expired poll timer goes out at once
and its response is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.consumer_group.client.heartbeat_timing import HeartbeatRequestState
from state.consumer_group.client.member_state import InvalidTransition, ClientMemberState
from state.consumer_group.client.membership_manager import GroupMembershipOperation, LocalAssignment, MembershipManager
from state.consumer_group.messages import UNCHANGED_REBALANCE_TIMEOUT, HeartbeatRequest, HeartbeatResponse

CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG = (
    "The cluster does not support the new CONSUMER group protocol. Set group.protocol=classic on the consumer "
    "configs to revert to the CLASSIC protocol until the cluster is upgraded.")

# Request failures (no response) that are RetriableExceptions: retried after the backoff. Any other failure
# is fatal; a DisconnectException also makes the coordinator unknown.
RETRIABLE_FAILURES = frozenset({"DisconnectException", "TimeoutException", "NetworkException"})


@dataclass
class SentFields:
    """What the last heartbeat carried; None / -1 after a reset, so that the next one carries everything."""

    rebalance_timeout_ms: int = UNCHANGED_REBALANCE_TIMEOUT
    subscribed_topic_names: frozenset[str] | None = None
    pattern: str | None = None
    server_assignor: str | None = None
    local_assignment: LocalAssignment | None = None


class HeartbeatState:
    """HeartbeatState.buildRequestData: a field goes out when joining or when it differs from what was sent."""

    def __init__(self, group_id: str, membership: MembershipManager):
        self._group_id = group_id
        self._membership = membership
        self.sent = SentFields()

    def reset(self) -> None:
        self.sent = SentFields()

    def unchanged(self) -> bool:
        """Whether the next heartbeat carries no field but who the member is (`build_request` unchanged)."""
        mm = self._membership
        config = mm.config
        return (mm.state is not ClientMemberState.JOINING and self.sent.rebalance_timeout_ms == config.max_poll_interval_ms
                and mm.subscription == self.sent.subscribed_topic_names and mm.pattern == self.sent.pattern
                and (config.group_remote_assignor is None or config.group_remote_assignor == self.sent.server_assignor)
                and mm.current_assignment == self.sent.local_assignment)

    def build_request(self) -> HeartbeatRequest:
        mm = self._membership
        config = mm.config
        send_all = mm.state is ClientMemberState.JOINING
        rebalance_timeout_ms = UNCHANGED_REBALANCE_TIMEOUT
        if send_all or self.sent.rebalance_timeout_ms != config.max_poll_interval_ms:
            rebalance_timeout_ms = self.sent.rebalance_timeout_ms = config.max_poll_interval_ms
        topics = None
        if send_all or mm.subscription != self.sent.subscribed_topic_names:
            self.sent.subscribed_topic_names = mm.subscription
            topics = tuple(sorted(mm.subscription))
        # SubscribedTopicRegex: when joining with a pattern, or when the pattern changed ("" drops it).
        regex = None
        if (send_all and mm.pattern is not None) or mm.pattern != self.sent.pattern:
            regex = mm.pattern if mm.pattern is not None else ""
            self.sent.pattern = mm.pattern
        assignor = None
        if config.group_remote_assignor is not None and (
                send_all or config.group_remote_assignor != self.sent.server_assignor):
            assignor = self.sent.server_assignor = config.group_remote_assignor
        # Re-sent on the first heartbeat after every reconciliation (the local epoch moved), which is the ack.
        owned = None
        if send_all or mm.current_assignment != self.sent.local_assignment:
            self.sent.local_assignment = mm.current_assignment
            owned = mm.current_assignment.topic_partitions()
        return HeartbeatRequest(
            group_id=self._group_id,
            member_id=mm.member_id,
            member_epoch=mm.member_epoch,
            instance_id=config.group_instance_id,
            rack_id=config.client_rack if send_all else None,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=owned,
        )


class HeartbeatRequestManager:
    def __init__(self, now: int, membership: MembershipManager, request_state: HeartbeatRequestState):
        self.membership = membership
        self.request_state = request_state
        self.heartbeat_state = HeartbeatState(membership.config.group_id, membership)
        self.coordinator_known = False
        self.poll_deadline_ms = now + membership.config.max_poll_interval_ms
        self.in_flight: list[tuple[HeartbeatRequest, bool]] = []  # (request, its response is handled)

    # -- sending ---------------------------------------------------------------------------------------

    def poll(self, now: int) -> HeartbeatRequest | None:
        """One pass of the background thread: the heartbeat to send now, if any."""
        mm = self.membership
        if not self.coordinator_known or mm.should_skip_heartbeat():
            mm.on_heartbeat_request_skipped()
            return None
        if self.poll_timer_expired(now) and not mm.is_leaving_group():
            if not self._leaves_on_poll_timeout():
                return None
            mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
            request = self._make_request(now, handle_response=False)
            # Rejoining need not wait for this leave's response, nor for any backoff.
            self.request_state.reset()
            self.heartbeat_state.reset()
            return request
        heartbeat_now = self._should_send_leave_heartbeat_now() or (
            mm.should_heartbeat_now() and not self.request_state.request_in_flight)
        if not self.request_state.can_send_request(now) and not heartbeat_now:
            return None
        return self._make_request(now, handle_response=True)

    def next_deadline(self, now: int) -> int | None:
        """The earliest time `poll` may send something without any event in between, or None."""
        mm = self.membership
        if not self.coordinator_known or mm.should_skip_heartbeat():
            return None
        leaves_on_timeout = self._leaves_on_poll_timeout()
        if self.poll_timer_expired(now) and not mm.is_leaving_group():
            return now if leaves_on_timeout else None
        poll_expiry = self.poll_deadline_ms if leaves_on_timeout else None
        if self._should_send_leave_heartbeat_now() or (
                mm.should_heartbeat_now() and not self.request_state.request_in_flight):
            return now
        heartbeat = None if self.request_state.request_in_flight else self.request_state.earliest_send_ms(now)
        candidates = [t for t in (poll_expiry, heartbeat) if t is not None]
        return min(candidates) if candidates else None

    def _leaves_on_poll_timeout(self) -> bool:
        """Whether an expired poll timer makes the member leave (and go STALE). Not while it is leaving anyway;
        nor for a dynamic member closing with REMAIN_IN_GROUP once LEAVING, which is not "leaving the group"
        for Kafka, whose move to PREPARE_LEAVING then throws IllegalStateException on every pass of the
        network thread: nothing at all is sent."""
        return not self.membership.is_leaving_group() and self.membership.state is not ClientMemberState.LEAVING

    def poll_timer_expired(self, now: int) -> bool:
        return now >= self.poll_deadline_ms

    def reset_poll_timer(self, now: int) -> None:
        """The application polled (AsyncPollEvent): a stale member rejoins, and the timer starts again."""
        if self.poll_timer_expired(now):
            self.membership.maybe_rejoin_stale_member()
        self.poll_deadline_ms = now + self.membership.config.max_poll_interval_ms

    def _should_send_leave_heartbeat_now(self) -> bool:
        mm = self.membership
        if not mm.is_static() and mm.leave_group_operation is GroupMembershipOperation.REMAIN_IN_GROUP:
            return False
        return mm.state is ClientMemberState.LEAVING

    def _make_request(self, now: int, handle_response: bool) -> HeartbeatRequest:
        request = self.heartbeat_state.build_request()
        self.request_state.on_send_attempt()
        self.membership.on_heartbeat_request_generated(now)
        self.request_state.reset_timer(now)
        self.in_flight.append((request, handle_response))
        return request

    def _take_in_flight(self, request: HeartbeatRequest) -> bool:
        for i, (sent, handle) in enumerate(self.in_flight):
            if sent is request:
                del self.in_flight[i]
                return handle
        raise ValueError(f"{request} is not in flight")

    # -- outcomes --------------------------------------------------------------------------------------

    def on_response(self, now: int, request: HeartbeatRequest, response: HeartbeatResponse) -> None:
        if not self._take_in_flight(request):
            return
        try:
            if response.error == "NONE":
                self.request_state.update_heartbeat_interval_ms(now, response.heartbeat_interval_ms)
                self.request_state.on_successful_attempt(now)
                self.membership.on_heartbeat_success(response)
            else:
                self._on_error_response(now, response)
        except InvalidTransition:
            # Kafka runs this handler inside the response's future, whose failure nobody reads: the rest of
            # the handling is skipped and the member keeps its state (e.g. FENCED_MEMBER_EPOCH while STALE).
            pass

    def on_request_failed(self, now: int, request: HeartbeatRequest, error: str) -> None:
        """No response: `error` is the exception's class name (DisconnectException, TimeoutException, ...)."""
        if not self._take_in_flight(request):
            return
        self.request_state.on_failed_attempt(now)
        self.heartbeat_state.reset()
        try:
            if error in RETRIABLE_FAILURES:
                if error == "DisconnectException":
                    self.coordinator_known = False
            elif error == "UnsupportedVersionException":
                self._fatal(now, "UnsupportedVersionException", CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG)
            else:
                self._fatal(now, error, None)
            self.membership.on_heartbeat_failure()
        except InvalidTransition:
            pass  # as in on_response

    def _on_error_response(self, now: int, response: HeartbeatResponse) -> None:
        mm = self.membership
        error = response.error
        self.heartbeat_state.reset()
        self.request_state.on_failed_attempt(now)
        if error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE"):
            self.coordinator_known = False
            # No backoff: the next heartbeat goes as soon as the coordinator is found again.
            self.request_state.reset()
        elif error == "COORDINATOR_LOAD_IN_PROGRESS":
            pass  # retried after the backoff
        elif error == "TOPIC_AUTHORIZATION_FAILED":
            # Thrown from poll(); the member stays as it is, to recover if the ACLs are added.
            mm.actions.emit_error(error, response.error_message)
        elif error in ("FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"):
            mm.transition_to_fenced(now)
            # No backoff: the rejoin goes as soon as the partitions are released.
            self.request_state.reset()
        elif error == "GROUP_ID_NOT_FOUND" and mm.state is ClientMemberState.UNSUBSCRIBED:
            pass  # the answer to the leave of a group that never came to exist
        elif error == "UNSUPPORTED_VERSION":
            self._fatal(now, error, CONSUMER_PROTOCOL_NOT_SUPPORTED_MSG)
        elif error == "GROUP_AUTHORIZATION_FAILED":
            self._fatal(now, error, f"Not authorized to access group: {mm.config.group_id}")
        else:
            # INVALID_REQUEST, GROUP_MAX_SIZE_REACHED, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION,
            # UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND while in the group, and any
            # error not named here (UNKNOWN_SERVER_ERROR, ...): all fatal.
            self._fatal(now, error, response.error_message)
        mm.on_heartbeat_failure()

    def _fatal(self, now: int, error: str, message: str | None) -> None:
        # The error reaches the application before the member changes state (handleFatalFailure).
        self.membership.actions.emit_error(error, message)
        self.membership.transition_to_fatal(now)
