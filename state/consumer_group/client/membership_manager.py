"""One KIP-848 consumer's membership as its background thread keeps it: Kafka's AbstractMembershipManager and
ConsumerMembershipManager (trunk). It owns the member's state (`member_state`), epoch, subscription, the
target assignment last received and the assignment last reconciled (each with a local epoch), and the
reconciliation: revoke first (auto-commit, then onPartitionsRevoked), then assign (PartitionsAssignedEvent),
then acknowledge. It also owns fencing (onPartitionsLost, rejoin at epoch 0), fatal errors, leaving
(unsubscribe, close, an expired poll timer) and the rejoin of a stale member.

What the application thread (or the commit manager) would run is emitted as `member_actions` and goes on
when the runtime reports it done (`action_done`): where Kafka chains a CompletableFuture, the continuation
waits in `actions` (a `PendingActions`) as data, a `Step` and its arguments, and `resume` runs it. Topic ids
are taken as always resolvable (the client's metadata is not modelled), so Kafka's partial reconciliation
of unresolved topics never happens here.
"""

from __future__ import annotations

import enum

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.local_assignment import NONE, LocalAssignment, partitions_of
from state.consumer_group.client.member_actions import Partition, PendingActions, Then
from state.consumer_group.client.member_config import MemberConfig
from state.consumer_group.client.member_state import ClientMemberState, check_transition
from state.consumer_group.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    HeartbeatResponse,
)

ASSIGNMENT_EVENT_SKIPPED = "Assignment event skipped because consumer is unsubscribing"


class GroupMembershipOperation(enum.Enum):
    """CloseOptions.GroupMembershipOperation: what close() does about the membership."""

    DEFAULT = "DEFAULT"  # leave: -1 for a dynamic member, -2 for a static one
    LEAVE_GROUP = "LEAVE_GROUP"  # leave for good (-1), static members too
    REMAIN_IN_GROUP = "REMAIN_IN_GROUP"  # a static member still sends -2


class Step(enum.Enum):
    """What follows an action once it is done (`member_actions.Then`): the name of the MembershipManager
    method that `resume` calls with (now, error, *the Then's arguments)."""

    CLEAR_ASSIGNMENT = "_lost_on_fatal"
    REJOIN_WHEN_FENCED = "_lost_on_fenced"
    REJOIN_WHEN_STALE = "_lost_on_stale"
    LEAVE = "_released_before_leave"
    CLOSE_RELEASE = "_committed_on_close"
    CLOSE_LEAVE = "_released_on_close"
    REVOKE = "_committed_before_revocation"
    ASSIGN = "_revocation_done"
    ACKNOWLEDGE = "_assignment_applied"


class MembershipManager:
    def __init__(self, config: MemberConfig, member_id: str):
        self.config = config
        self.member_id = member_id  # generated once by the client (KIP-1082), kept across rejoins
        self.member_epoch = JOIN_EPOCH
        self.state = ClientMemberState.UNSUBSCRIBED
        self.subscription: frozenset[str] = frozenset()
        # SubscriptionState.subscriptionPattern: the RE2J pattern (SubscriptionPattern) subscribed to, if any;
        # the topic names are then empty (AUTO_PATTERN_RE2J).
        self.pattern: str | None = None
        self.has_rebalance_listener = False
        self.owned: frozenset[Partition] = frozenset()  # SubscriptionState.assignedPartitions()
        self.current_assignment = NONE
        self.target_assignment = NONE
        self.leave_group_operation = GroupMembershipOperation.DEFAULT
        self.leave_in_progress = False  # Kafka's leaveGroupInProgress future, not yet completed
        self._reconciliation_in_progress = False
        self._rejoined_while_reconciliation_in_progress = False
        self._subscription_updated = False
        self._is_poll_timer_expired = False
        self._stale_assignment_released = False
        self._rejoin_when_stale_assignment_released = False
        self.actions = PendingActions()

    def _invoke_callback(self, kind: type, partitions: frozenset[Partition], then: Then, now: int) -> None:
        """A ConsumerRebalanceListener method, only for a registered listener and a non-empty set."""
        if partitions and self.has_rebalance_listener:
            self.actions.emit(then, kind, tuple(sorted(partitions)))
        else:
            self.resume(now, then, None)

    def action_done(self, now: int, action: actions.Action, error: str | None = None) -> None:
        """The runtime ran `action`; `error` names the exception the callback or commit ended with."""
        self.resume(now, self.actions.complete(action), error)

    def resume(self, now: int, then: Then, error: str | None) -> None:
        getattr(self, then.step.value)(now, error, *then.args)

    # -- state -----------------------------------------------------------------------------------------

    def transition_to(self, next_state: ClientMemberState) -> None:
        check_transition(self.state, next_state)
        self.state = next_state

    def is_static(self) -> bool:
        return self.config.group_instance_id is not None

    def is_not_in_group(self) -> bool:
        return self.state in (ClientMemberState.UNSUBSCRIBED, ClientMemberState.FENCED, ClientMemberState.FATAL, ClientMemberState.STALE)

    def should_skip_heartbeat(self) -> bool:
        return self.is_not_in_group()

    def should_heartbeat_now(self) -> bool:
        return self.state in (ClientMemberState.ACKNOWLEDGING, ClientMemberState.LEAVING, ClientMemberState.JOINING)

    def is_leaving_group(self) -> bool:
        # A dynamic member closing with REMAIN_IN_GROUP leaves by session timeout, not by heartbeat.
        if self.leave_group_operation is GroupMembershipOperation.REMAIN_IN_GROUP and not self.is_static():
            return False
        return self.state in (ClientMemberState.PREPARE_LEAVING, ClientMemberState.LEAVING)

    def leave_group_epoch(self) -> int:
        if self.leave_group_operation is GroupMembershipOperation.LEAVE_GROUP:
            return LEAVE_EPOCH
        return STATIC_LEAVE_EPOCH if self.is_static() else LEAVE_EPOCH

    def _target_reconciled(self) -> bool:
        return self.current_assignment == self.target_assignment

    def _maybe_complete_leave_in_progress(self) -> bool:
        completed, self.leave_in_progress = self.leave_in_progress, False
        return completed

    def _clear_assignment(self) -> None:
        self.owned = frozenset()
        self.current_assignment = NONE
        self.target_assignment = NONE

    def _unsubscribe(self) -> None:
        """SubscriptionState.unsubscribe: no topics, no partitions, no listener."""
        self.subscription = frozenset()
        self.pattern = None
        self.has_rebalance_listener = False
        self.owned = frozenset()

    # -- subscription and joining -----------------------------------------------------------------------

    def subscribe(self, topics: frozenset[str], listener: bool, pattern: str | None = None) -> None:
        """The application subscribed (to topics, or to a broker-side `pattern`): joins on its next poll, or
        sends the new subscription with the next regular heartbeat if already in the group."""
        self.subscription = topics
        self.pattern = pattern
        if listener:  # subscribing without a listener keeps the one registered before
            self.has_rebalance_listener = True
        self._subscription_updated = True

    def on_consumer_poll(self) -> None:
        updated, self._subscription_updated = self._subscription_updated, False
        if updated and self.state is ClientMemberState.UNSUBSCRIBED:
            self.transition_to_joining()

    def transition_to_joining(self) -> None:
        if self.state is ClientMemberState.FATAL:
            return
        if self._reconciliation_in_progress:
            self._rejoined_while_reconciliation_in_progress = True
        self.member_epoch = JOIN_EPOCH
        self.transition_to(ClientMemberState.JOINING)
        self.target_assignment = NONE

    # -- heartbeat outcomes ------------------------------------------------------------------------------

    def on_heartbeat_success(self, response: HeartbeatResponse) -> None:
        if response.error != "NONE":
            raise ValueError(f"Unexpected error in Heartbeat response: {response.error}")
        if self.state is ClientMemberState.LEAVING:
            return
        if (self.state is ClientMemberState.UNSUBSCRIBED and response.member_epoch < 0
                and self._maybe_complete_leave_in_progress()):
            return
        if self.is_not_in_group():
            return
        if response.member_epoch < 0:
            self._maybe_complete_leave_in_progress()
            return
        self.member_epoch = response.member_epoch
        if response.assignment is None:
            return
        if not self.state.can_handle_new_assignment():
            return
        self.target_assignment = self.target_assignment.update_with(partitions_of(response.assignment))
        if not self._target_reconciled():
            self.transition_to(ClientMemberState.RECONCILING)
        elif self.state in (ClientMemberState.RECONCILING, ClientMemberState.JOINING):
            self.transition_to(ClientMemberState.STABLE)

    def on_heartbeat_failure(self) -> None:
        # The leave heartbeat is sent once and not retried: whatever its outcome, the leave is over.
        if self.state is ClientMemberState.UNSUBSCRIBED:
            self._maybe_complete_leave_in_progress()

    def on_heartbeat_request_generated(self, now: int) -> None:
        if self.state is ClientMemberState.ACKNOWLEDGING:
            self.transition_to(ClientMemberState.STABLE if self._target_reconciled() else ClientMemberState.RECONCILING)
        elif self.state is ClientMemberState.LEAVING:
            if self._is_poll_timer_expired:
                self.transition_to_stale(now)
            else:
                self.transition_to(ClientMemberState.UNSUBSCRIBED)

    def on_heartbeat_request_skipped(self) -> None:
        """No coordinator (or a state that skips heartbeats): a pending leave heartbeat is given up."""
        if self.state is ClientMemberState.LEAVING:
            self.transition_to(ClientMemberState.UNSUBSCRIBED)
            self._maybe_complete_leave_in_progress()

    def transition_to_fenced(self, now: int) -> None:
        if self.state is ClientMemberState.PREPARE_LEAVING:
            # Already out of the group for the coordinator: stop at once, with no leave heartbeat.
            self.transition_to_sending_leave_group(due_to_expired_poll_timer=False)
            self.transition_to(ClientMemberState.UNSUBSCRIBED)
            self._maybe_complete_leave_in_progress()
            return
        if self.state is ClientMemberState.LEAVING:
            self.transition_to(ClientMemberState.UNSUBSCRIBED)
            self._maybe_complete_leave_in_progress()
            return
        if self.state is ClientMemberState.UNSUBSCRIBED:
            return
        self.transition_to(ClientMemberState.FENCED)
        self.member_epoch = JOIN_EPOCH
        self._invoke_callback(actions.OnPartitionsLost, self.owned, Then(Step.REJOIN_WHEN_FENCED), now)

    def _lost_on_fenced(self, _now: int, _error: str | None) -> None:
        # A failed onPartitionsLost does not stop the rejoin.
        self._clear_assignment()
        if self.state is ClientMemberState.FENCED:
            self.transition_to_joining()

    def transition_to_fatal(self, now: int) -> None:
        previous = self.state
        self.transition_to(ClientMemberState.FATAL)
        if previous is ClientMemberState.UNSUBSCRIBED and self._maybe_complete_leave_in_progress():
            return
        if previous in (ClientMemberState.LEAVING, ClientMemberState.PREPARE_LEAVING):
            self._maybe_complete_leave_in_progress()
            return
        self._invoke_callback(actions.OnPartitionsLost, self.owned, Then(Step.CLEAR_ASSIGNMENT), now)

    def _lost_on_fatal(self, _now: int, _error: str | None) -> None:
        self._clear_assignment()

    # -- leaving -------------------------------------------------------------------------------------

    def leave_group(self, now: int, run_callbacks: bool = True) -> None:
        """unsubscribe() (with callbacks) or the leave of close() (its callbacks already run)."""
        if self.is_not_in_group():
            if self.state is ClientMemberState.FENCED:
                self._clear_assignment()
                self.transition_to(ClientMemberState.UNSUBSCRIBED)
            self._unsubscribe()
            return
        if self.state in (ClientMemberState.PREPARE_LEAVING, ClientMemberState.LEAVING):
            return
        self.transition_to(ClientMemberState.PREPARE_LEAVING)
        self.leave_in_progress = True
        if run_callbacks:
            self._release_assignment(now, Then(Step.LEAVE))
        else:
            self._clear_assignment_and_leave_group()

    def _released_before_leave(self, _now: int, _error: str | None) -> None:
        # Whether the callback fails or not, the member goes on to leave.
        self._clear_assignment_and_leave_group()

    def close(self, now: int, operation: GroupMembershipOperation) -> None:
        """AsyncKafkaConsumer.close on the application thread: auto-commit, then onPartitionsRevoked (in the
        group) or onPartitionsLost (out of it) for what it owns, then the leave (leaveGroupOnClose)."""
        self.skip_assignment_events(now)
        then = Then(Step.CLOSE_RELEASE, (operation,))
        if self.config.enable_auto_commit:
            self.actions.emit(then, actions.CommitOnClose)
        else:
            self.resume(now, then, None)

    def _committed_on_close(self, now: int, _error: str | None, operation: GroupMembershipOperation) -> None:
        kind = actions.OnPartitionsRevoked if self.member_epoch > 0 else actions.OnPartitionsLost
        self._invoke_callback(kind, self.owned, Then(Step.CLOSE_LEAVE, (operation,)), now)

    def _released_on_close(self, now: int, _error: str | None, operation: GroupMembershipOperation) -> None:
        self.leave_group_operation = operation
        self.leave_group(now, run_callbacks=False)

    def skip_assignment_events(self, now: int) -> None:
        """unsubscribe() and close() never apply an assignment still waiting for the application thread
        (Kafka skips or reaps those events): the reconciliation it ends fails, with no ack."""
        for action in self.actions.pending():
            if isinstance(action, actions.OnPartitionsAssigned):
                self.action_done(now, action, ASSIGNMENT_EVENT_SKIPPED)

    def _release_assignment(self, now: int, then: Then) -> None:
        """onPartitionsRevoked if still in the group (epoch > 0), else onPartitionsLost."""
        if not self.owned:
            self.resume(now, then, None)
        elif self.member_epoch > 0:
            self._revoke_partitions(now, self.owned, then)
        else:
            self._invoke_callback(actions.OnPartitionsLost, self.owned, then, now)

    def _clear_assignment_and_leave_group(self) -> None:
        self._unsubscribe()
        self._clear_assignment()
        self.transition_to_sending_leave_group(due_to_expired_poll_timer=False)

    def transition_to_sending_leave_group(self, due_to_expired_poll_timer: bool) -> None:
        if self.state in (ClientMemberState.FATAL, ClientMemberState.UNSUBSCRIBED):
            return
        if due_to_expired_poll_timer:
            self._is_poll_timer_expired = True
            # No callbacks before this leave: the partitions are given up as lost once STALE.
            self.transition_to(ClientMemberState.PREPARE_LEAVING)
        self.member_epoch = self.leave_group_epoch()
        self.current_assignment = NONE
        self.transition_to(ClientMemberState.LEAVING)

    def transition_to_stale(self, now: int) -> None:
        self.transition_to(ClientMemberState.STALE)
        self._stale_assignment_released = False
        self._rejoin_when_stale_assignment_released = False
        self._invoke_callback(actions.OnPartitionsLost, self.owned, Then(Step.REJOIN_WHEN_STALE), now)

    def _lost_on_stale(self, _now: int, _error: str | None) -> None:
        self._clear_assignment()
        self._stale_assignment_released = True
        if self._rejoin_when_stale_assignment_released:
            self.transition_to_joining()

    def maybe_rejoin_stale_member(self) -> None:
        """The poll timer was found expired at a poll: a stale member rejoins once its partitions are lost."""
        self._is_poll_timer_expired = False
        if self.state is not ClientMemberState.STALE:
            return
        if self._stale_assignment_released:
            self.transition_to_joining()
        else:
            self._rejoin_when_stale_assignment_released = True

    # -- reconciliation --------------------------------------------------------------------------------

    def maybe_reconcile(self, now: int, can_commit: bool) -> None:
        """can_commit: called from the application's poll (AsyncPollEvent). From the background thread
        only a reconciliation that revokes nothing and needs no auto-commit may start."""
        if (self.state is not ClientMemberState.RECONCILING or self._target_reconciled()
                or self._reconciliation_in_progress):
            return
        resolved = self.target_assignment
        if not self.current_assignment.is_none() and resolved.partitions == self.current_assignment.partitions:
            # Same partitions under a newer local epoch: nothing to run, only to acknowledge again.
            self.current_assignment = resolved
            self.transition_to(ClientMemberState.ACKNOWLEDGING)
            return
        added = resolved.partitions - self.owned
        revoked = self.owned - resolved.partitions
        if not can_commit and (self.config.enable_auto_commit or revoked):
            return
        self._reconciliation_in_progress = True
        self._rejoined_while_reconciliation_in_progress = False
        then = Then(Step.REVOKE, (resolved, revoked, added))
        if self.config.enable_auto_commit:
            self.actions.emit(then, actions.CommitBeforeRebalance, now + self.config.max_poll_interval_ms)
        else:
            self.resume(now, then, None)

    def _committed_before_revocation(self, now: int, _error: str | None, resolved: LocalAssignment,
                                     revoked: frozenset[Partition], added: frozenset[Partition]) -> None:
        # A failed commit does not stop the reconciliation.
        if self._maybe_abort_reconciliation():
            return
        then = Then(Step.ASSIGN, (resolved, added))
        if revoked:
            self._revoke_partitions(now, revoked, then)
        else:
            self.resume(now, then, None)

    def _revocation_done(self, _now: int, error: str | None, resolved: LocalAssignment,
                         added: frozenset[Partition]) -> None:
        if error is not None:
            self._mark_reconciliation_completed()
        elif not self._maybe_abort_reconciliation():
            self.actions.emit(Then(Step.ACKNOWLEDGE, (resolved,)), actions.OnPartitionsAssigned,
                              tuple(sorted(resolved.partitions)), tuple(sorted(added)), self.has_rebalance_listener)

    def _assignment_applied(self, _now: int, error: str | None, resolved: LocalAssignment) -> None:
        # The application thread makes the assignment effective before it runs the callback, unless it
        # skipped the event altogether.
        if error != ASSIGNMENT_EVENT_SKIPPED:
            self.owned = resolved.partitions
        if error is not None:
            # No ack: the member stays RECONCILING and retries; the coordinator may fence it meanwhile.
            self._mark_reconciliation_completed()
        elif self._reconciliation_in_progress and not self._maybe_abort_reconciliation():
            self.current_assignment = resolved
            self.transition_to(ClientMemberState.ACKNOWLEDGING)
            self._mark_reconciliation_completed()

    def _revoke_partitions(self, now: int, partitions: frozenset[Partition], then: Then) -> None:
        self._invoke_callback(actions.OnPartitionsRevoked, partitions & self.owned, then, now)

    def _maybe_abort_reconciliation(self) -> bool:
        """A reconciliation that outlived its purpose (the member left RECONCILING or rejoined) stops."""
        abort = self.state is not ClientMemberState.RECONCILING or self._rejoined_while_reconciliation_in_progress
        if abort:
            self._mark_reconciliation_completed()
        return abort

    def _mark_reconciliation_completed(self) -> None:
        self._reconciliation_in_progress = False
        self._rejoined_while_reconciliation_in_progress = False
