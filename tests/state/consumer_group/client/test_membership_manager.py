"""Ports of Kafka's ConsumerMembershipManagerTest (trunk): the client membership's states, reconciliation,
fencing, fatal errors and leaving. Where Kafka verifies calls on mocks (subscriptionState, the background
event queue), these check the emitted actions and the owned partitions instead."""

from __future__ import annotations

import pytest

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.membership_manager import GroupMembershipOperation
from state.consumer_group.messages import LEAVE_EPOCH, STATIC_LEAVE_EPOCH

from tests.state.consumer_group.client.member_helpers import (
    MEMBER_EPOCH,
    MEMBER_ID,
    REBALANCE_TIMEOUT,
    TOPIC_1,
    TOPIC_2,
    assignment,
    complete_all,
    complete_until,
    joining_manager,
    manager,
    pending,
    response,
    stable_manager,
)

T1_0 = (TOPIC_1, 0)


def test_membership_manager_init_supports_empty_group_instance_id():
    # ConsumerMembershipManagerTest.testMembershipManagerInitSupportsEmptyGroupInstanceId
    mm = joining_manager(instance_id=None)
    assert mm.member_id == MEMBER_ID and mm.member_epoch == 0 and not mm.is_static()


def test_reconciling_when_receiving_assignment_found_in_metadata():
    # ConsumerMembershipManagerTest.testReconcilingWhenReceivingAssignmentFoundInMetadata
    mm = joining_manager()
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    assert mm.state is ClientMemberState.RECONCILING
    mm.maybe_reconcile(0, can_commit=True)
    [assigned] = pending(mm, actions.OnPartitionsAssigned)
    assert assigned.assigned == (T1_0,) and assigned.added == (T1_0,)
    mm.action_done(0, assigned)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == {T1_0}
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.STABLE


def test_transition_to_reconciling_if_empty_assignment_received():
    # ConsumerMembershipManagerTest.testTransitionToReconcilingIfEmptyAssignmentReceived
    mm = joining_manager()
    mm.on_heartbeat_success(response(assigned=()))
    assert mm.state is ClientMemberState.RECONCILING
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    assert mm.state is ClientMemberState.RECONCILING


def test_member_joining_transitions_to_stable_when_receiving_empty_assignment():
    # ConsumerMembershipManagerTest.testMemberJoiningTransitionsToStableWhenReceivingEmptyAssignment
    mm = joining_manager()
    mm.on_heartbeat_success(response(assigned=()))
    mm.maybe_reconcile(0, can_commit=True)
    complete_all(mm)
    assert mm.state is ClientMemberState.ACKNOWLEDGING
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.STABLE and mm.current_assignment.local_epoch == 0


def test_member_id_and_epoch_reset_on_fenced_members():
    # ConsumerMembershipManagerTest.testMemberIdAndEpochResetOnFencedMembers
    mm = stable_manager(owned=assignment((TOPIC_1, [0])))
    assert mm.member_epoch == MEMBER_EPOCH
    mm.transition_to_fenced(0)
    assert mm.member_epoch == 0 and mm.member_id == MEMBER_ID


def test_transition_to_fatal():
    # ConsumerMembershipManagerTest.testTransitionToFatal
    mm = stable_manager(owned=assignment((TOPIC_1, [0])))
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL and mm.owned == frozenset()
    mm.leave_group(0)
    assert mm.subscription == frozenset() and mm.state is ClientMemberState.FATAL


def test_transition_to_failed_when_trying_to_join():
    # ConsumerMembershipManagerTest.testTransitionToFailedWhenTryingToJoin
    mm = manager()
    assert mm.state is ClientMemberState.UNSUBSCRIBED
    mm.transition_to_joining()
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL


@pytest.mark.parametrize("reconciling", [False, True])
def test_fencing_when_state_is_stable_or_reconciling(reconciling):
    # ConsumerMembershipManagerTest.testFencingWhenStateIsStable / testFencingWhenStateIsReconciling /
    # testOnPartitionsLostNoError (through testFencedMemberReleasesAssignmentAndTransitionsToJoining)
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    if reconciling:
        mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
        assert mm.state is ClientMemberState.RECONCILING
    mm.transition_to_fenced(0)
    assert mm.state is ClientMemberState.FENCED and mm.member_epoch == 0
    [lost] = mm.actions.take()
    assert isinstance(lost, actions.OnPartitionsLost) and lost.partitions == (T1_0,)
    assert mm.should_skip_heartbeat()
    mm.action_done(5, lost)
    assert mm.state is ClientMemberState.JOINING and mm.owned == frozenset() and mm.current_assignment.is_none()


def test_on_partitions_lost_error():
    # ConsumerMembershipManagerTest.testOnPartitionsLostError: the member rejoins anyway
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.transition_to_fenced(0)
    [lost] = mm.actions.take()
    mm.action_done(0, lost, error="KafkaException")
    assert mm.state is ClientMemberState.JOINING and mm.owned == frozenset()


def test_fenced_when_assignment_empty():
    # ConsumerMembershipManagerTest.testFencedWhenAssignmentEmpty: nothing to release, rejoin at once
    mm = stable_manager(listener=True)
    mm.transition_to_fenced(0)
    assert mm.actions.take() == [] and mm.state is ClientMemberState.JOINING


def test_fencing_when_state_is_prepare_leaving():
    # ConsumerMembershipManagerTest.testFencingWhenStateIsPrepareLeaving (and ...CompletesTheLeaveOperation)
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.leave_group(0)
    [revoked] = mm.actions.take()
    assert isinstance(revoked, actions.OnPartitionsRevoked) and mm.state is ClientMemberState.PREPARE_LEAVING
    assert mm.leave_in_progress
    mm.transition_to_fenced(0)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and not mm.leave_in_progress
    assert mm.actions.take() == []  # no onPartitionsLost, no rejoin
    mm.action_done(0, revoked)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and mm.member_epoch == LEAVE_EPOCH
    assert mm.should_skip_heartbeat()


def test_new_assignment_ignored_when_state_is_prepare_leaving():
    # ConsumerMembershipManagerTest.testNewAssignmentIgnoredWhenStateIsPrepareLeaving
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.leave_group(0)
    [revoked] = mm.actions.take()
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
    assert mm.state is ClientMemberState.PREPARE_LEAVING and mm.target_assignment.partitions == {T1_0}
    mm.maybe_reconcile(0, can_commit=True)
    assert mm.actions.take() == []
    mm.action_done(0, revoked)
    assert mm.state is ClientMemberState.LEAVING


def test_fencing_when_state_is_leaving():
    # ConsumerMembershipManagerTest.testFencingWhenStateIsLeaving
    mm = stable_manager()
    mm.leave_group(0)
    assert mm.state is ClientMemberState.LEAVING and mm.leave_in_progress
    mm.transition_to_fenced(0)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and not mm.leave_in_progress
    assert mm.actions.take() == []


@pytest.mark.parametrize("instance_id, operation, epoch", [
    ("instance1", None, STATIC_LEAVE_EPOCH),
    (None, None, LEAVE_EPOCH),
    ("instance1", GroupMembershipOperation.DEFAULT, STATIC_LEAVE_EPOCH),
    ("instance1", GroupMembershipOperation.LEAVE_GROUP, LEAVE_EPOCH),
    ("instance1", GroupMembershipOperation.REMAIN_IN_GROUP, STATIC_LEAVE_EPOCH),
    (None, GroupMembershipOperation.DEFAULT, LEAVE_EPOCH),
    (None, GroupMembershipOperation.LEAVE_GROUP, LEAVE_EPOCH),
])
def test_leave_group_epoch(instance_id, operation, epoch):
    # ConsumerMembershipManagerTest.testLeaveGroupEpoch (operation None: unsubscribe) / testLeaveGroupEpochOnClose
    mm = stable_manager(instance_id=instance_id)
    if operation is None:
        mm.leave_group(0)
    else:
        mm.close(0, operation)
    assert mm.state is ClientMemberState.LEAVING and mm.member_epoch == epoch
    assert mm.subscription == frozenset()


def test_close_runs_commit_and_revocation_before_leaving():
    # AsyncKafkaConsumer.close: autoCommitOnClose, then onPartitionsRevoked (epoch > 0), then the leave
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), auto_commit=True, listener=True)
    mm.close(0, GroupMembershipOperation.DEFAULT)
    [commit] = mm.actions.take()
    assert isinstance(commit, actions.CommitOnClose) and mm.state is ClientMemberState.STABLE
    mm.action_done(1, commit)
    [revoked] = mm.actions.take()
    assert isinstance(revoked, actions.OnPartitionsRevoked) and revoked.partitions == (T1_0,)
    mm.action_done(2, revoked)
    assert mm.state is ClientMemberState.LEAVING and mm.owned == frozenset()


def test_delayed_reconciliation_result_discarded_if_member_not_in_reconciling_state_anymore():
    # ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedIfMemberNotInReconcilingStateAnymore
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), auto_commit=True)
    mm.on_heartbeat_success(response(assigned=()))
    mm.maybe_reconcile(0, can_commit=True)
    [commit] = mm.actions.take()
    assert isinstance(commit, actions.CommitBeforeRebalance) and commit.deadline_ms == REBALANCE_TIMEOUT
    mm.transition_to_fatal(0)
    assert mm.owned == frozenset()
    mm.action_done(0, commit)
    assert mm.actions.take() == [] and mm.state is ClientMemberState.FATAL


@pytest.mark.parametrize("stuck_on", [actions.CommitBeforeRebalance, actions.OnPartitionsRevoked,
                                      actions.OnPartitionsAssigned])
def test_delayed_reconciliation_result_discarded_if_member_rejoins(stuck_on):
    # ConsumerMembershipManagerTest.testDelayedReconciliationResultDiscardedAfterCommitIfMemberRejoins,
    # ...AfterPartitionsRevokedCallbackIfMemberRejoins, ...AfterPartitionsAssignedCallbackIfMemberRejoins
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), auto_commit=True, listener=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [1]))))
    mm.maybe_reconcile(0, can_commit=True)
    stuck = complete_until(mm, stuck_on)
    mm.transition_to_fenced(0)
    lost = pending(mm, actions.OnPartitionsLost)
    for action in sorted(mm.actions.pending(), key=lambda a: a.seq):
        if action is not stuck and action not in lost:
            mm.action_done(0, action)
    if stuck_on is not actions.CommitBeforeRebalance:
        mm.action_done(0, stuck)  # the application thread takes it before the onPartitionsLost behind it
    for action in lost:
        mm.action_done(0, action)
    assert mm.state is ClientMemberState.JOINING
    mm.on_heartbeat_success(response(epoch=2, assigned=assignment((TOPIC_1, [1]))))
    if stuck_on is actions.CommitBeforeRebalance:
        mm.action_done(0, stuck)
    # The stale reconciliation did not acknowledge anything; the new target reconciles from scratch.
    assert mm.state is ClientMemberState.RECONCILING and mm.current_assignment.is_none()
    mm.actions.take()
    mm.maybe_reconcile(0, can_commit=True)
    assert isinstance(mm.actions.take()[0], actions.CommitBeforeRebalance)


def test_same_assignment_reconciled_again_when_fenced():
    # ConsumerMembershipManagerTest.testSameAssignmentReconciledAgainWhenFenced
    mm = stable_manager(auto_commit=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1, 2]))))
    mm.maybe_reconcile(0, can_commit=False)  # auto-commit: only the application's poll may start it
    assert mm.actions.take() == []
    mm.transition_to_fenced(0)
    assert mm.state is ClientMemberState.JOINING and mm.current_assignment.is_none()
    mm.on_heartbeat_success(response(assigned=()))
    assert mm.state is ClientMemberState.RECONCILING
    mm.maybe_reconcile(0, can_commit=True)
    complete_all(mm)
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.STABLE and mm.current_assignment.partitions == frozenset()


def test_delayed_reconciliation_result_applied_when_target_changed_with_new_assignment():
    # ConsumerMembershipManagerTest.testDelayedReconciliationResultAppliedWhenTargetChangedWithNewAssignment
    mm = joining_manager(auto_commit=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    mm.maybe_reconcile(0, can_commit=True)
    [commit] = mm.actions.take()
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]), (TOPIC_2, [0]))))
    mm.maybe_reconcile(0, can_commit=True)
    assert mm.actions.take() == []  # one reconciliation at a time
    complete_all(mm)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == {T1_0}
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.RECONCILING  # the newer target is still to be reconciled
    mm.maybe_reconcile(0, can_commit=True)
    complete_all(mm)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == {T1_0, (TOPIC_2, 0)}


def test_same_partitions_with_new_local_epoch_are_acknowledged_again():
    # AbstractMembershipManager.maybeReconcile: the resolvable target equals the current assignment under a
    # newer local epoch (in Kafka reached through unresolved topics): ack without running anything.
    mm = stable_manager(owned=assignment((TOPIC_1, [0])))
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    assert mm.state is ClientMemberState.RECONCILING
    mm.maybe_reconcile(0, can_commit=False)
    assert mm.actions.take() == [] and mm.state is ClientMemberState.ACKNOWLEDGING
    assert mm.current_assignment.local_epoch == 2


def test_leave_group_when_state_is_stable():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenStateIsStable
    # (testLeaveGroupReleasesAssignmentAndResetsEpochToSendLeaveGroup)
    mm = stable_manager()
    mm.leave_group(0)
    assert mm.state is ClientMemberState.LEAVING and mm.member_epoch == LEAVE_EPOCH
    assert mm.current_assignment.is_none() and mm.owned == frozenset()


def test_heartbeat_successful_response_when_leaving_group_completes_leave():
    # ConsumerMembershipManagerTest.testHeartbeatSuccessfulResponseWhenLeavingGroupCompletesLeave
    mm = stable_manager()
    mm.leave_group(0)
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and mm.leave_in_progress
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    assert mm.leave_in_progress
    mm.on_heartbeat_success(response(epoch=LEAVE_EPOCH))
    assert not mm.leave_in_progress and mm.state is ClientMemberState.UNSUBSCRIBED
    assert mm.member_epoch == LEAVE_EPOCH and mm.current_assignment.is_none()


def test_heartbeat_failed_response_when_leaving_group_completes_leave():
    # ConsumerMembershipManagerTest.testHeartbeatFailedResponseWhenLeavingGroupCompletesLeave
    mm = stable_manager()
    mm.leave_group(0)
    mm.on_heartbeat_request_generated(0)
    mm.on_heartbeat_failure()
    assert not mm.leave_in_progress and mm.state is ClientMemberState.UNSUBSCRIBED


@pytest.mark.parametrize("state", ["UNSUBSCRIBED", "FENCED", "FATAL", "STALE"])
def test_ignore_heartbeat_response_when_not_in_group(state):
    # ConsumerMembershipManagerTest.testIgnoreHeartbeatResponseWhenNotInGroup
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    if state == "UNSUBSCRIBED":
        mm.leave_group(0)
        complete_all(mm)
        mm.on_heartbeat_request_generated(0)
    elif state == "FENCED":
        mm.transition_to_fenced(0)
    elif state == "FATAL":
        mm.transition_to_fatal(0)
    else:
        mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
        mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState[state]
    epoch, target = mm.member_epoch, mm.target_assignment
    mm.on_heartbeat_success(response(epoch=7, assigned=assignment((TOPIC_1, [3]))))
    assert (mm.state, mm.member_epoch, mm.target_assignment) == (ClientMemberState[state], epoch, target)


def test_leave_group_when_member_owns_assignment():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenMemberOwnsAssignment
    mm = stable_manager(owned=assignment((TOPIC_1, [0, 1])), listener=True)
    mm.leave_group(0)
    [revoked] = mm.actions.take()
    assert revoked.partitions == ((TOPIC_1, 0), (TOPIC_1, 1)) and mm.state is ClientMemberState.PREPARE_LEAVING
    mm.action_done(0, revoked, error="KafkaException")  # a failed callback does not stop the leave
    assert mm.state is ClientMemberState.LEAVING and mm.owned == frozenset()


def test_leave_group_when_member_already_leaving():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenMemberAlreadyLeaving
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.leave_group(0)
    mm.leave_group(0)
    assert len(mm.actions.take()) == 1 and mm.state is ClientMemberState.PREPARE_LEAVING


def test_leave_group_when_member_already_left():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenMemberAlreadyLeft
    mm = stable_manager()
    mm.leave_group(0)
    mm.on_heartbeat_request_generated(0)
    mm.on_heartbeat_success(response(epoch=LEAVE_EPOCH))
    mm.leave_group(0)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and not mm.leave_in_progress and mm.actions.take() == []


def test_leave_group_when_member_fenced():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenMemberFenced
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.transition_to_fenced(0)
    [lost] = mm.actions.take()
    mm.leave_group(0)
    assert mm.state is ClientMemberState.UNSUBSCRIBED and mm.owned == frozenset() and not mm.leave_in_progress
    mm.action_done(0, lost)
    assert mm.state is ClientMemberState.UNSUBSCRIBED


def test_leave_group_when_member_is_stale():
    # ConsumerMembershipManagerTest.testLeaveGroupWhenMemberIsStale
    mm = stable_manager()
    mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
    mm.on_heartbeat_request_generated(0)
    mm.leave_group(0)
    assert mm.state is ClientMemberState.STALE and not mm.leave_in_progress and mm.subscription == frozenset()


def test_leave_group_during_reconciliation_then_rejoin():
    # ConsumerMembershipManagerTest.testLeaveGroupDuringReconciliationThenRejoin
    mm = joining_manager()
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    mm.maybe_reconcile(0, can_commit=True)
    mm.actions.take()
    mm.skip_assignment_events(0)  # what unsubscribe() does to an assignment not yet applied
    assert mm.owned == frozenset() and mm.current_assignment.is_none() and mm.actions.pending() == []
    mm.leave_group(0)
    assert mm.state is ClientMemberState.LEAVING and mm.owned == frozenset() and mm.actions.pending() == []
    mm.on_heartbeat_request_generated(0)
    mm.subscribe(frozenset({"topic1"}), listener=False)
    mm.transition_to_joining()
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0]))))
    mm.maybe_reconcile(0, can_commit=True)
    assert [type(a) for a in mm.actions.take()] == [actions.OnPartitionsAssigned]


@pytest.mark.parametrize("state", ["JOINING", "STABLE"])
def test_fatal_failure_when_state_is_unjoined_or_stable(state):
    # ConsumerMembershipManagerTest.testFatalFailureWhenStateIsUnjoined / ...WhenStateIsStable
    # (testStateUpdateOnFatalFailure)
    mm = joining_manager() if state == "JOINING" else stable_manager()
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL and mm.owned == frozenset() and mm.should_skip_heartbeat()


def test_fatal_failure_when_state_is_prepare_leaving():
    # ConsumerMembershipManagerTest.testFatalFailureWhenStateIsPrepareLeaving
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.leave_group(0)
    [revoked] = mm.actions.take()
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL and not mm.leave_in_progress and mm.actions.take() == []
    mm.action_done(0, revoked)
    assert mm.state is ClientMemberState.FATAL


def test_fatal_failure_when_state_is_leaving():
    # ConsumerMembershipManagerTest.testFatalFailureWhenStateIsLeaving
    mm = stable_manager()
    mm.leave_group(0)
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL and not mm.leave_in_progress
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.FATAL


def test_fatal_failure_when_member_already_left():
    # ConsumerMembershipManagerTest.testFatalFailureWhenMemberAlreadyLeft
    mm = stable_manager(owned=assignment((TOPIC_1, [0])))
    mm.leave_group(0)
    mm.on_heartbeat_request_generated(0)
    mm.has_rebalance_listener = True
    mm.on_heartbeat_failure()
    mm.transition_to_fatal(0)
    assert mm.state is ClientMemberState.FATAL and mm.actions.take() == []  # no onPartitionsLost


def test_update_state_fails_on_responses_with_errors():
    # ConsumerMembershipManagerTest.testUpdateStateFailsOnResponsesWithErrors
    mm = joining_manager()
    with pytest.raises(ValueError):
        mm.on_heartbeat_success(response(error="UNKNOWN_MEMBER_ID"))


@pytest.mark.parametrize("owned, target, added", [
    ((), [0, 1], [0, 1]),  # testReconcileNewPartitionsAssignedWhenNoPartitionOwned
    ([0], [0, 1, 2], [1, 2]),  # testReconcileNewPartitionsAssignedWhenOtherPartitionsOwned
])
def test_reconcile_new_partitions_assigned(owned, target, added):
    # ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedWhenNoPartitionOwned /
    # ...WhenOtherPartitionsOwned
    mm = stable_manager(owned=assignment((TOPIC_1, owned)) if owned else ())
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, target))))
    mm.maybe_reconcile(0, can_commit=False)  # nothing revoked, no auto-commit: the background may start it
    [assigned] = mm.actions.take()
    assert assigned.added == tuple((TOPIC_1, p) for p in added)
    assert assigned.assigned == tuple((TOPIC_1, p) for p in target)
    mm.action_done(0, assigned)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == {(TOPIC_1, p) for p in target}


def test_reconciliation_skipped_when_same_assignment_received():
    # ConsumerMembershipManagerTest.testReconciliationSkippedWhenSameAssignmentReceived
    mm = stable_manager(owned=assignment((TOPIC_1, [0, 1])))
    epoch = mm.current_assignment.local_epoch
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
    mm.maybe_reconcile(0, can_commit=True)
    assert mm.state is ClientMemberState.STABLE and mm.actions.take() == []
    assert mm.current_assignment.local_epoch == epoch


def test_reconcile_partitions_revoked_no_auto_commit_no_callbacks():
    # ConsumerMembershipManagerTest.testReconcilePartitionsRevokedNoAutoCommitNoCallbacks
    mm = stable_manager(owned=assignment((TOPIC_1, [0])))
    mm.on_heartbeat_success(response(assigned=()))
    mm.maybe_reconcile(0, can_commit=False)
    assert mm.actions.take() == []  # revoking: only from the application's poll
    mm.maybe_reconcile(0, can_commit=True)
    [assigned] = mm.actions.take()  # no listener: no onPartitionsRevoked
    assert assigned.assigned == () and assigned.added == ()
    mm.action_done(0, assigned)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == frozenset()


@pytest.mark.parametrize("commit_error", [None, "KafkaException"])
def test_reconcile_partitions_revoked_with_auto_commit_no_callbacks(commit_error):
    # ConsumerMembershipManagerTest.testReconcilePartitionsRevokedWithSuccessfulAutoCommitNoCallbacks /
    # ...WithFailedAutoCommitCompletesRevocationAnyway
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), auto_commit=True)
    mm.on_heartbeat_success(response(assigned=()))
    mm.maybe_reconcile(50, can_commit=True)
    [commit] = mm.actions.take()
    assert commit.deadline_ms == 50 + REBALANCE_TIMEOUT
    assert mm.state is ClientMemberState.RECONCILING and mm.owned == {T1_0}
    mm.action_done(60, commit, commit_error)
    complete_all(mm)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == frozenset()


def test_reconcile_new_partitions_assigned_and_revoked():
    # ConsumerMembershipManagerTest.testReconcileNewPartitionsAssignedAndRevoked (with a listener: revoked
    # runs before the assignment)
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [1, 2]))))
    mm.maybe_reconcile(0, can_commit=True)
    [revoked] = mm.actions.take()
    assert isinstance(revoked, actions.OnPartitionsRevoked) and revoked.partitions == (T1_0,)
    mm.action_done(0, revoked)
    [assigned] = mm.actions.take()
    assert assigned.added == ((TOPIC_1, 1), (TOPIC_1, 2)) == assigned.assigned
    mm.action_done(0, assigned)
    assert mm.state is ClientMemberState.ACKNOWLEDGING and mm.owned == {(TOPIC_1, 1), (TOPIC_1, 2)}


@pytest.mark.parametrize("failing", [actions.OnPartitionsRevoked, actions.OnPartitionsAssigned])
def test_listener_callbacks_throws_error(failing):
    # ConsumerMembershipManagerTest.testListenerCallbacksThrowsErrorOnPartitionsRevoked / ...OnPartitionsAssigned
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [1]))))
    mm.maybe_reconcile(0, can_commit=True)
    action = complete_until(mm, failing)
    mm.action_done(0, action, error="KafkaException")
    assert mm.state is ClientMemberState.RECONCILING and mm.actions.take() == []  # no ack
    mm.maybe_reconcile(0, can_commit=True)  # retried on a later poll
    assert mm.actions.take()


def test_on_subscription_updated_does_not_transition_to_joining_if_in_group():
    # ConsumerMembershipManagerTest.testOnSubscriptionUpdatedDoesNotTransitionToJoiningIfInGroup
    mm = stable_manager()
    mm.subscribe(frozenset({"topic1", "topic2"}), listener=False)
    mm.on_consumer_poll()
    assert mm.state is ClientMemberState.STABLE


def test_on_subscription_updated_transitions_to_joining_on_poll_if_not_in_group():
    # ConsumerMembershipManagerTest.testOnSubscriptionUpdatedTransitionsToJoiningOnPollIfNotInGroup
    mm = manager()
    assert mm.state is ClientMemberState.UNSUBSCRIBED
    mm.on_consumer_poll()
    assert mm.state is ClientMemberState.JOINING


@pytest.mark.parametrize("state", ["RECONCILING", "JOINING", "STABLE", "ACKNOWLEDGING"])
def test_transition_to_leaving_due_to_stale_member(state):
    # ConsumerMembershipManagerTest.testTransitionToLeavingWhile{Reconciling,Joining,Stable,Acknowledging}DueToStaleMember
    mm = joining_manager() if state == "JOINING" else stable_manager(owned=assignment((TOPIC_1, [0])))
    if state in ("RECONCILING", "ACKNOWLEDGING"):
        mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
    if state == "ACKNOWLEDGING":
        mm.maybe_reconcile(0, can_commit=True)
        complete_all(mm)
    assert mm.state is ClientMemberState[state]
    mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
    assert mm.state is ClientMemberState.LEAVING and mm.member_epoch == LEAVE_EPOCH
    assert mm.current_assignment.is_none()


def test_stale_member_does_not_send_heartbeat_and_allows_transition_to_joining_to_recover():
    # ConsumerMembershipManagerTest.testStaleMemberDoesNotSendHeartbeatAndAllowsTransitionToJoiningToRecover /
    # testStaleMemberRejoinsWhenTimerResetsNoCallbacks
    mm = stable_manager()
    mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
    mm.on_heartbeat_request_generated(0)
    assert mm.state is ClientMemberState.STALE and mm.should_skip_heartbeat()
    mm.maybe_rejoin_stale_member()
    assert mm.state is ClientMemberState.JOINING and mm.member_epoch == 0


def test_stale_member_waits_for_callback_to_rejoin_when_timer_reset():
    # ConsumerMembershipManagerTest.testStaleMemberWaitsForCallbackToRejoinWhenTimerReset
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.transition_to_sending_leave_group(due_to_expired_poll_timer=True)
    assert mm.owned == {T1_0}  # no callback before this leave
    mm.on_heartbeat_request_generated(0)
    [lost] = mm.actions.take()
    assert isinstance(lost, actions.OnPartitionsLost) and mm.state is ClientMemberState.STALE
    mm.maybe_rejoin_stale_member()
    assert mm.state is ClientMemberState.STALE
    mm.action_done(0, lost)
    assert mm.state is ClientMemberState.JOINING and mm.owned == frozenset()


def test_application_thread_actions_complete_in_order():
    # The application thread takes PartitionsAssignedEvent and PartitionsRemovedEvent from one queue.
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.on_heartbeat_success(response(assigned=assignment((TOPIC_1, [0, 1]))))
    mm.maybe_reconcile(0, can_commit=True)
    [assigned] = mm.actions.take()
    mm.transition_to_fenced(0)
    [lost] = mm.actions.take()
    with pytest.raises(ValueError):
        mm.action_done(0, lost)
    mm.action_done(0, assigned)
    mm.action_done(0, lost)
    assert mm.state is ClientMemberState.JOINING and mm.owned == frozenset()


def test_subscribe_without_listener_keeps_the_registered_one():
    # AsyncKafkaConsumer.subscribeInternal sets the listener only when one is given; unsubscribe clears it
    mm = stable_manager(owned=assignment((TOPIC_1, [0])), listener=True)
    mm.subscribe(frozenset({"topic1", "topic2"}), listener=False)
    mm.transition_to_fenced(0)
    assert [type(a) for a in mm.actions.take()] == [actions.OnPartitionsLost]
    mm.leave_group(0)
    assert not mm.has_rebalance_listener
