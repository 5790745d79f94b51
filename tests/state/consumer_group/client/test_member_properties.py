"""Properties of one client membership driven by random coordinator answers, application polls and callback
completions (Hypothesis stateful testing): the member only ever owns partitions a response assigned it, a
STABLE member owns exactly what it acknowledged, at most one heartbeat is awaited at a time (outside the
leaves Kafka sends regardless), its epoch is 0, a leave epoch or one the coordinator gave, FATAL is final,
and `next_deadline` says exactly when `next_request` has something to send."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.member import Membership
from state.consumer_group.client.member_config import MemberConfig
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.membership_manager import GroupMembershipOperation
from state.consumer_group.messages import HeartbeatRequest, HeartbeatResponse

from tests.state.consumer_group.client.member_helpers import TOPIC_1, TOPIC_2, assignment

POOL = [(TOPIC_1, 0), (TOPIC_1, 1), (TOPIC_2, 0)]
ERRORS = ["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
          "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_SERVER_ERROR", "GROUP_ID_NOT_FOUND"]


class MemberMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.now = 0
        self.in_flight: list[tuple[HeartbeatRequest, int]] = []  # (request, leaves sent before it)
        self.leaves = 0
        self.stale_answer_since_leave = False
        self.ever_assigned: set = set()
        self.epochs_given = {0, -1, -2}
        self.fatal = False
        self.member: Membership | None = None

    @rule(static=st.booleans(), auto_commit=st.booleans(), listener=st.booleans(), seed=st.integers(0, 99))
    def start(self, static, auto_commit, listener, seed):
        if self.member is not None:
            return
        config = MemberConfig("g", group_instance_id="i1" if static else None, enable_auto_commit=auto_commit,
                              max_poll_interval_ms=5_000)
        self.member = Membership(config, random.Random(seed), self.now)
        self.member.coordinator_found()
        self.member.subscribe(self.now, {"t1", "t2"}, listener=listener)
        self.member.poll(self.now)
        self._send()

    def _send(self):
        m = self.member
        deadline = m.next_deadline(self.now)
        request = m.next_request(self.now)
        assert (request is not None) == (deadline == self.now), (deadline, self.now, request)
        if request is None:
            return
        if request.member_epoch < 0:
            self.leaves += 1
            self.stale_answer_since_leave = False
        elif not self.stale_answer_since_leave:
            # At most one heartbeat awaited. A leave goes out regardless of one in flight, and the poll-timer
            # leave forgets it: Kafka keeps one in-flight flag, so once the answer to a heartbeat from before
            # the last leave has cleared it, two may be in flight until the next leave.
            assert not [r for r, leaves in self.in_flight if leaves == self.leaves and r.member_epoch >= 0]
        self.in_flight.append((request, self.leaves))

    @rule(dt=st.sampled_from([1, 50, 100, 1_000, 3_000, 6_000]))
    def advance(self, dt):
        if self.member is None:
            return
        self.now += dt
        self._send()

    @rule()
    def app_poll(self):
        if self.member is None:
            return
        self.member.poll(self.now)
        self._send()

    @rule(index=st.integers(0, 3), epoch_step=st.integers(0, 2), assigned=st.none() | st.sets(st.sampled_from(POOL)),
          error=st.none() | st.sampled_from(ERRORS), fail=st.booleans())
    def answer(self, index, epoch_step, assigned, error, fail):
        if not self.in_flight:
            return
        request, leaves = self.in_flight.pop(index % len(self.in_flight))
        if leaves < self.leaves and request.member_epoch >= 0:
            self.stale_answer_since_leave = True
        if fail:
            self.member.on_request_failed(self.now, request, "TimeoutException")
        elif error is not None:
            self.member.on_response(self.now, request, HeartbeatResponse(error=error))
        else:
            epoch = request.member_epoch if request.member_epoch < 0 else max(1, request.member_epoch) + epoch_step
            self.epochs_given.add(epoch)
            topic_partitions = None if assigned is None else assignment(
                *[(t, [p for tt, p in assigned if tt == t]) for t in {t for t, _ in assigned}])
            if assigned:
                self.ever_assigned |= assigned
            self.member.on_response(self.now, request, HeartbeatResponse(
                member_id=request.member_id, member_epoch=epoch, heartbeat_interval_ms=1_000,
                assignment=topic_partitions))
        self.member.coordinator_found()
        self._send()

    @rule(error=st.none() | st.just("KafkaException"), commit_first=st.booleans())
    def complete_action(self, error, commit_first):
        if self.member is None:
            return
        self.member.take_actions()
        pending = sorted(self.member.pending_actions(), key=lambda a: a.seq)
        commits = [a for a in pending if isinstance(a, (actions.CommitBeforeRebalance, actions.CommitOnClose))]
        others = [a for a in pending if a not in commits]
        order = commits + others if commit_first else others + commits
        if order:
            self.member.action_done(self.now, order[0], error)
        self._send()

    @rule(close=st.booleans(), operation=st.sampled_from(list(GroupMembershipOperation)))
    def leave(self, close, operation):
        if self.member is None:
            return
        if close:
            self.member.close(self.now, operation)
        else:
            self.member.unsubscribe(self.now)
        self._send()

    @invariant()
    def owns_only_what_was_assigned(self):
        if self.member is not None:
            assert self.member.owned_partitions <= self.ever_assigned

    @invariant()
    def stable_member_owns_what_it_acknowledged(self):
        m = self.member
        if m is not None and m.state is ClientMemberState.STABLE:
            assert m.owned_partitions == m._manager.current_assignment.partitions

    @invariant()
    def epoch_comes_from_the_coordinator(self):
        if self.member is not None:
            assert self.member.member_epoch in self.epochs_given

    @invariant()
    def fatal_is_final(self):
        if self.member is None:
            return
        if self.fatal:
            assert self.member.state is ClientMemberState.FATAL
        self.fatal = self.member.state is ClientMemberState.FATAL


TestMemberMachine = MemberMachine.TestCase
TestMemberMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
