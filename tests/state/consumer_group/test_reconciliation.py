"""Kafka's CurrentAssignmentBuilderTest (trunk), case by case, plus the two cases whose expected member
differs at Kafka 4.0.0 (from that release's CurrentAssignmentBuilderTest). Kafka's tests use random topic
ids; reconciliation does not depend on them."""

from __future__ import annotations

import pytest

from state.consumer_group.reconciliation import (
    CurrentAssignment,
    FencedMemberEpochError,
    MemberState,
    reconcile,
    subscribed_topic_ids,
)
from tests.state.consumer_group.helpers import TOPIC_1, TOPIC_2

STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS
BOTH = frozenset({TOPIC_1, TOPIC_2})


def epochs(epoch: int, t1=(), t2=()):
    """toAssignmentWithEpochs(mkAssignment(t1 partitions, t2 partitions), epoch), empty topics left out."""
    return {t: dict.fromkeys(ps, epoch) for t, ps in ((TOPIC_1, t1), (TOPIC_2, t2)) if ps}


def target(t1=(), t2=()):
    return {t: set(ps) for t, ps in ((TOPIC_1, t1), (TOPIC_2, t2)) if ps}


def owned(t1=(), t2=()):
    return {TOPIC_1: list(t1), TOPIC_2: list(t2)}


def always(epoch):
    return lambda topic_id, partition: epoch


def member(state, epoch, previous, assigned=None, pending=None):
    return CurrentAssignment(state, epoch, previous, assigned or {}, pending or {})


def test_stable_to_stable():
    m = member(STABLE, 10, 10, epochs(5, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=11, target=target([1, 2, 3], [4, 5, 6]), subscribed=BOTH,
                    current_partition_epoch=always(10))
    assert got == member(STABLE, 11, 10, epochs(5, [1, 2, 3], [4, 5, 6]))


def test_stable_to_stable_with_new_partitions():
    m = member(STABLE, 10, 10, epochs(10, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=11, target=target([1, 2, 3, 4], [4, 5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(-1))
    assert got == member(STABLE, 11, 10, {TOPIC_1: {1: 10, 2: 10, 3: 10, 4: 11}, TOPIC_2: {4: 10, 5: 10, 6: 10, 7: 11}})


def test_stable_to_unrevoked_partitions():
    m = member(STABLE, 10, 10, epochs(10, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=11, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(-1))
    assert got == member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [1], [4]))


def test_stable_to_unreleased_partitions():
    m = member(STABLE, 10, 10, epochs(10, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=11, target=target([1, 2, 3, 4], [4, 5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(10))
    assert got == member(UNRELEASED, 11, 10, epochs(10, [1, 2, 3], [4, 5, 6]))


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions():
    m = member(STABLE, 10, 10, epochs(10, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=11, target=target([1, 2, 3], [4, 5, 7]), subscribed=BOTH,
                    current_partition_epoch=lambda t, p: 10 if t == TOPIC_2 else -1, owned={})
    assert got == member(UNRELEASED, 11, 10, epochs(10, [1, 2, 3], [4, 5]))


def test_unrevoked_partitions_to_stable():
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [1], [4]))
    got = reconcile(m, target_epoch=11, target=target([2, 3], [5, 6]), subscribed=BOTH,
                    current_partition_epoch=always(-1), owned=owned([2, 3], [5, 6]))
    assert got == member(STABLE, 11, 10, epochs(10, [2, 3], [5, 6]))


def test_remains_in_unrevoked_partitions():
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [1], [4]))
    for reported in (None, owned([1, 2, 3], [5, 6]), owned([2, 3], [4, 5, 6])):
        assert reconcile(m, target_epoch=12, target=target([3], [6]), subscribed=BOTH,
                         current_partition_epoch=always(-1), owned=reported) is m


@pytest.mark.parametrize("kafka_4_0, epoch", [(False, 10), (True, 11)])
def test_unrevoked_partitions_to_unrevoked_partitions(kafka_4_0, epoch):
    # Kafka 4.0 bumped the epoch by one on the way out of UNREVOKED_PARTITIONS (KAFKA-19974 removed it).
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [1], [4]))
    got = reconcile(m, target_epoch=12, target=target([3], [6]), subscribed=BOTH,
                    current_partition_epoch=always(-1), owned=owned([2, 3], [5, 6]), kafka_4_0=kafka_4_0)
    assert got == member(UNREVOKED, epoch, 10, epochs(10, [3], [6]), epochs(10, [2], [5]))


def test_unrevoked_partitions_to_unreleased_partitions():
    m = member(UNREVOKED, 11, 10, epochs(11, [2, 3], [5, 6]))
    got = reconcile(m, target_epoch=11, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(10), owned=owned([2, 3], [5, 6]))
    assert got == member(UNRELEASED, 11, 11, epochs(11, [2, 3], [5, 6]))


def test_unrevoked_partitions_to_stable_with_returned_partitions_pending_revocation():
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [4]))
    held = {TOPIC_1: {2, 3, 4}, TOPIC_2: {5, 6}}
    got = reconcile(m, target_epoch=12, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=lambda t, p: 10 if p in held[t] else -1, owned=owned([2, 3], [5, 6]))
    assert got == member(STABLE, 12, 10, {TOPIC_1: {2: 10, 3: 10, 4: 12}, TOPIC_2: {5: 10, 6: 10, 7: 12}})


def test_own_pending_revocation_counts_as_unreleased_in_kafka_4_0():
    # The same member before KAFKA-19449: its own partition 4 pending revocation still blocks it.
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [4]))
    held = {TOPIC_1: {2, 3, 4}, TOPIC_2: {5, 6}}
    got = reconcile(m, target_epoch=12, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=lambda t, p: 10 if p in held[t] else -1, owned=owned([2, 3], [5, 6]),
                    kafka_4_0=True)
    assert got == member(UNRELEASED, 12, 10, {TOPIC_1: {2: 10, 3: 10}, TOPIC_2: {5: 10, 6: 10, 7: 12}})


def test_unreleased_partitions_to_stable():
    m = member(UNRELEASED, 11, 11, epochs(11, [2, 3], [5, 6]))
    got = reconcile(m, target_epoch=12, target=target([2, 3], [5, 6]), subscribed=BOTH,
                    current_partition_epoch=always(10))
    assert got == member(STABLE, 12, 11, epochs(11, [2, 3], [5, 6]))


def test_unreleased_partitions_to_stable_with_new_partitions():
    m = member(UNRELEASED, 11, 11, epochs(11, [2, 3], [5, 6]))
    got = reconcile(m, target_epoch=11, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(-1))
    assert got == member(STABLE, 11, 11, epochs(11, [2, 3, 4], [5, 6, 7]))


def test_unreleased_partitions_to_unreleased_partitions():
    m = member(UNRELEASED, 11, 11, epochs(11, [2, 3], [5, 6]))
    got = reconcile(m, target_epoch=11, target=target([2, 3, 4], [5, 6, 7]), subscribed=BOTH,
                    current_partition_epoch=always(10))
    assert got == m


def test_unreleased_partitions_to_unrevoked_partitions():
    m = member(UNRELEASED, 11, 11, epochs(11, [2, 3], [5, 6]))
    got = reconcile(m, target_epoch=12, target=target([3], [6]), subscribed=BOTH,
                    current_partition_epoch=always(10))
    assert got == member(UNREVOKED, 11, 11, epochs(11, [3], [6]), epochs(11, [2], [5]))


def test_unknown_state():
    m = member(MemberState.from_value(42), 11, 11, epochs(11, [3], [6]), epochs(11, [2], [5]))
    assert m.state is MemberState.UNKNOWN
    with pytest.raises(FencedMemberEpochError):
        reconcile(m, target_epoch=12, target=target([3], [6]), subscribed=BOTH, current_partition_epoch=always(10))
    got = reconcile(m, target_epoch=12, target=target([3], [6]), subscribed=BOTH,
                    current_partition_epoch=always(11), owned={})
    assert got == member(STABLE, 12, 11, epochs(11, [3], [6]))


def stable_on_both_subscribed_to_topic_2(member_epoch, target_epoch, reported, subscription_changed):
    """A STABLE member holding topics 1 and 2, now subscribed to topic 2 only, target unchanged."""
    m = member(STABLE, member_epoch, member_epoch - 1, epochs(member_epoch, [1, 2, 3], [4, 5, 6]))
    return reconcile(m, target_epoch=target_epoch, target=target([1, 2, 3], [4, 5, 6]), subscribed={TOPIC_2},
                     current_partition_epoch=always(-1), owned=reported, subscription_changed=subscription_changed)


@pytest.mark.parametrize("member_epoch, target_epoch, expected_epoch, subscription_changed", [
    (10, 11, 11, False),  # advancing to a new target always applies the subscription
    (10, 11, 11, True),
    (10, 10, 10, True),
])
def test_stable_to_stable_with_assignment_topics_no_longer_in_subscription(
        member_epoch, target_epoch, expected_epoch, subscription_changed):
    got = stable_on_both_subscribed_to_topic_2(member_epoch, target_epoch, {TOPIC_2: [4, 5, 6]},
                                               subscription_changed)
    # The previous epoch moves in every case, also when only unsubscribed topics were dropped.
    assert got == member(STABLE, expected_epoch, member_epoch, epochs(member_epoch, t2=[4, 5, 6]))


@pytest.mark.parametrize("member_epoch, target_epoch, expected_epoch, subscription_changed", [
    (10, 11, 10, False),
    (10, 11, 10, True),
    (10, 10, 10, True),
])
def test_stable_to_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription(
        member_epoch, target_epoch, expected_epoch, subscription_changed):
    got = stable_on_both_subscribed_to_topic_2(member_epoch, target_epoch, owned([1, 2, 3], [4, 5, 6]),
                                               subscription_changed)
    assert got == member(UNREVOKED, expected_epoch, member_epoch, epochs(expected_epoch, t2=[4, 5, 6]),
                         epochs(member_epoch, [1, 2, 3]))


def test_remains_in_unrevoked_partitions_with_assignment_topics_no_longer_in_subscription():
    m = member(UNREVOKED, 10, 10, epochs(10, [2, 3], [5, 6]), epochs(10, [1], [4]))
    got = reconcile(m, target_epoch=12, target=target([1, 3, 4], [6, 7]), subscribed={TOPIC_2},
                    current_partition_epoch=always(-1), owned=owned([1, 2, 3], [4, 5, 6]),
                    subscription_changed=True)
    assert got == member(UNREVOKED, 10, 10, epochs(10, t2=[5, 6]), epochs(10, [1, 2, 3], [4]))


def test_subscription_change_is_ignored_in_kafka_4_0():
    m = member(STABLE, 10, 9, epochs(10, [1, 2, 3], [4, 5, 6]))
    got = reconcile(m, target_epoch=10, target=target([1, 2, 3], [4, 5, 6]), subscribed={TOPIC_2},
                    current_partition_epoch=always(-1), owned=owned([1, 2, 3], [4, 5, 6]),
                    subscription_changed=True, kafka_4_0=True)
    assert got is m


# The regex cases: Kafka resolves the member's subscription inside the builder; here the caller does it
# with subscribed_topic_ids and passes the result.
TOPIC_IDS = {"foo": TOPIC_1, "bar": TOPIC_2}
FOO_BAR_STABLE = member(STABLE, 10, 10, epochs(10, [1, 2, 3], [4, 5, 6]))


def reconcile_foo_bar(subscribed):
    return reconcile(FOO_BAR_STABLE, target_epoch=10, target=target([1, 2, 3], [4, 5, 6]), subscribed=subscribed,
                     current_partition_epoch=always(-1), owned=owned([1, 2, 3], [4, 5, 6]), subscription_changed=True)


def test_subscribed_topic_name_and_unresolved_regular_expression():
    subscribed = subscribed_topic_ids(["foo"], "bar*", {}, TOPIC_IDS)
    assert reconcile_foo_bar(subscribed) == member(UNREVOKED, 10, 10, epochs(10, [1, 2, 3]), epochs(10, t2=[4, 5, 6]))


def test_unresolved_regular_expression():
    subscribed = subscribed_topic_ids([], "bar*", {}, TOPIC_IDS)
    assert reconcile_foo_bar(subscribed) == member(UNREVOKED, 10, 10, {}, epochs(10, [1, 2, 3], [4, 5, 6]))


def test_subscribed_topic_name_and_resolved_regular_expression():
    subscribed = subscribed_topic_ids(["foo"], "bar*", {"bar*": {"bar"}}, TOPIC_IDS)
    assert reconcile_foo_bar(subscribed) is FOO_BAR_STABLE
