"""The client Membership as a runtime drives it: the member id, the two threads' reconciliation paths, and
ConsumerMembershipManagerTest cases best seen from outside."""

from __future__ import annotations

import random

from state.consumer_group.client import member_actions as actions
from state.consumer_group.client.member import Membership, generate_member_id
from state import encoding
from state.consumer_group.client.member_state import ClientMemberState
from state.consumer_group.client.seeded_random import SeededRandom

from tests.state.consumer_group.client.member_helpers import TOPIC_1, assignment, membership, response


def test_member_id_is_a_kafka_uuid_from_the_seeded_random():
    # AbstractMembershipManager.memberId = Uuid.randomUuid().toString(), generated once at startup
    ids = [generate_member_id(random.Random(seed)) for seed in range(200)]
    assert ids[:5] == [generate_member_id(random.Random(seed)) for seed in range(5)]
    assert len(set(ids)) == 200 and all(len(i) == 22 and "-" not in i for i in ids)


def test_seeded_random_goes_on_with_the_same_draws_once_stored():
    # Its stored form is the seed and the words drawn: a decoded one replays them and draws on as
    # random.Random(seed) does, member id and jitter alike.
    seeded, plain = SeededRandom("c0#1"), random.Random("c0#1")
    assert generate_member_id(seeded) == generate_member_id(plain)
    assert [seeded.uniform(0.8, 1.2) for _ in range(3)] == [plain.uniform(0.8, 1.2) for _ in range(3)]
    decoded = encoding.loads(encoding.dumps(seeded))
    assert (decoded.seed, decoded.drawn) == ("c0#1", seeded.drawn)
    assert [decoded.uniform(0.8, 1.2), decoded.getrandbits(40)] == [plain.uniform(0.8, 1.2), plain.getrandbits(40)]


def joined(listener: bool, owned=(), auto_commit: bool = False) -> Membership:
    m = membership(enable_auto_commit=auto_commit)
    if listener:
        m.subscribe(0, {"topic1"}, listener=True)
    join = m.next_request(0)
    m.on_response(0, join, response(assigned=owned))
    return m


def test_member_joining_calls_rebalance_listener_when_receiving_empty_assignment():
    # ConsumerMembershipManagerTest.testMemberJoiningCallsRebalanceListenerWhenReceivingEmptyAssignment
    m = joined(listener=True)
    assert m.state is ClientMemberState.RECONCILING
    m.poll(0)
    [assigned] = m.take_actions()
    assert assigned == actions.OnPartitionsAssigned(assigned.seq, (), (), listener=True)


def test_poll_must_call_maybe_reconcile_with_false():
    # ConsumerMembershipManagerTest.testPollMustCallsMaybeReconcileWithFalse: the background thread may
    # start a reconciliation that only adds; one that revokes waits for the application's poll()
    m = joined(listener=False)
    m.next_request(0)
    [assigned] = m.take_actions()
    assert assigned.added == () and not assigned.listener
    m.action_done(0, assigned)
    ack = m.next_request(0)
    m.on_response(1, ack, response(assigned=assignment((TOPIC_1, [0]))))
    m.next_request(1)
    [adding] = m.take_actions()
    m.action_done(2, adding)
    m.on_response(3, m.next_request(3), response())
    assert m.state is ClientMemberState.STABLE and m.owned_partitions == {(TOPIC_1, 0)}
    m.on_response(1003, m.next_request(1003), response(assigned=()))  # one interval after the ack
    assert m.state is ClientMemberState.RECONCILING
    m.next_request(1003)
    assert m.take_actions() == []  # revoking: not from the background
    m.poll(1003)
    assert [type(a) for a in m.take_actions()] == [actions.OnPartitionsAssigned]


def test_auto_commit_reconciliation_waits_for_the_application_poll():
    # AbstractMembershipManager.maybeReconcile(canCommit=false) with auto-commit on
    m = joined(listener=False, auto_commit=True)
    m.next_request(0)
    assert m.take_actions() == []
    m.poll(0)
    [commit] = m.take_actions()
    assert isinstance(commit, actions.CommitBeforeRebalance) and commit.deadline_ms == 10_000


def test_unsubscribe_skips_an_assignment_not_yet_applied():
    # AsyncKafkaConsumer.unsubscribe: processBackgroundEvents skips PartitionsAssignedEvent
    m = joined(listener=False, owned=assignment((TOPIC_1, [0])))
    m.poll(0)
    m.take_actions()
    m.unsubscribe(0)
    assert m.pending_actions() == [] and m.owned_partitions == frozenset() and m.state is ClientMemberState.LEAVING
    leave = m.next_request(0)
    assert leave.member_epoch == -1 and leave.topic_partitions is None and leave.subscribed_topic_names == ()
