"""The sticky family. Cases ported from Kafka's AbstractStickyAssignorTest run against both assignors;
StickyAssignorTest's own cases and worked examples follow.

Kafka's tests check a cooperative result only after the follow-up rebalances it triggers (their
verifyValidityAndBalance rejoins until nothing is revoked), so `settle` does the same here: for "sticky" it
is a single call, for "cooperative-sticky" it repeats the rounds.
"""

from __future__ import annotations

import pytest

from state.classic import consumer_protocol
from state.assignors import AssignorError, MemberSubscription, assign
from state.assignors.sticky import sticky_member_data

from .helpers import STICKY_FAMILY, check_kafka_balance, check_valid, fresh, owning, rebalance_until_stable, tp, tps

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

family = pytest.mark.parametrize("name", STICKY_FAMILY)
T, T1, T2, T3 = "topic", "topic1", "topic2", "topic3"
GEN = 1  # AbstractStickyAssignorTest.generationId


def settle(name: str, members: list[MemberSubscription], counts: dict[str, int]) -> dict:
    result, _ = rebalance_until_stable(name, members, counts, GEN)
    check_valid(members, counts, result)
    return result


def subsets(result: dict) -> dict:
    return {m: set(p) for m, p in result.items()}


# ---- worked examples -----------------------------------------------------------------------------------


def test_four_topics_three_consumers_then_one_leaves() -> None:
    topics = ["t0", "t1", "t2", "t3"]
    counts = {t: 2 for t in topics}
    members = [fresh(c, topics) for c in ("C0", "C1", "C2")]
    first = assign("sticky", members, counts)
    assert first == {"C0": tps("t0-0 t1-1 t3-0"), "C1": tps("t0-1 t2-0 t3-1"), "C2": tps("t1-0 t2-1")}

    survivors = [owning("sticky", c, topics, first[c], 1) for c in ("C0", "C2")]
    second = assign("sticky", survivors, counts)
    # Survivors keep everything they had. StickyAssignor's javadoc shows C0 taking t2p0 and C2 taking t0p1;
    # Kafka's code (3.8+) hands C0 t0p1 first: C0 sorts first among the under-quota members and t0p1 is
    # the first unassigned partition. Kafka's code wins.
    assert second == {"C0": tps("t0-0 t3-0 t1-1 t0-1"), "C2": tps("t1-0 t2-1 t2-0 t3-1")}


def test_member_ids_sort_like_java_string_compare_to() -> None:
    members = [fresh("consumer-2", ["t"]), fresh("consumer-10", ["t"])]
    assert assign("sticky", members, {"t": 3}) == {"consumer-2": tps("t-1"), "consumer-10": tps("t-0 t-2")}


def test_member_cut_to_quota_keeps_partition_zero_of_each_topic_first() -> None:
    # KAFKA-16277 (3.8+): owned partitions are sorted by partition index, then topic, before the quota cut.
    members = [owning("sticky", "a", ["x", "y"], tps("x-0 x-1 y-0 y-1"), 1), fresh("b", ["x", "y"])]
    assert assign("sticky", members, {"x": 2, "y": 2}) == {"a": tps("x-0 y-0"), "b": tps("x-1 y-1")}


@family
def test_empty_subscription_first_in_map_order_still_counts_as_equal(name: str) -> None:
    # Kafka's allSubscriptionsEqual takes the first non-empty topic set as the reference, so "consumer3"
    # (first in HashMap order, subscribed to nothing) does not make the subscriptions unequal, and the
    # constrained builder hands it a partition of a topic it never subscribed to. Verified against Kafka's
    # classes; Kafka's code wins over the "only subscribers" rule.
    members = [fresh("consumer1", ["t"]), fresh("consumer2", ["t"]), fresh("consumer3", [])]
    assert assign(name, members, {"t": 3}) == {"consumer1": tps("t-0"), "consumer2": tps("t-1"), "consumer3": tps("t-2")}
    # Anywhere else in map order, the empty subscription makes them unequal and it gets nothing.
    members = [fresh("consumer1", []), fresh("consumer2", ["t"]), fresh("consumer3", ["t"])]
    assert assign(name, members, {"t": 3}) == {"consumer1": [], "consumer2": tps("t-0 t-2"), "consumer3": tps("t-1")}


def test_previous_owner_gets_partition_back_without_subscribing() -> None:
    # The general builder returns a partition to its previous-generation owner when that improves balance,
    # without checking the owner still subscribes to the topic. Verified against Kafka's classes.
    counts = {"a": 4, "b": 1}
    members = [
        owning("sticky", "A", ["a", "b"], tps("a-0 a-1 a-2 a-3"), 3),
        fresh("B", ["a", "b"]),
        owning("sticky", "X", ["b"], tps("a-2 a-3"), 2),
    ]
    assert assign("sticky", members, counts) == {"A": tps("a-1 a-3"), "B": tps("b-0 a-0"), "X": tps("a-2")}


@family
def test_fixed_previous_owner_fails_like_kafkas_null_pointer_exception(name: str) -> None:
    # X is a generation behind, still claims a-0, and now reads only "solo", which nobody else reads; the
    # general builder sets X aside as fixed and then looks up its partition count: Java throws a
    # NullPointerException and the leader sends no assignment.
    members = [
        owning(name, "A", ["a"], tps("a-0 a-1 a-2 a-3"), 2),
        owning(name, "B", ["a"], [], 2),
        owning(name, "X", ["solo"], tps("a-0"), 1),
    ]
    with pytest.raises(AssignorError, match="NullPointerException"):
        assign(name, members, {"a": 4, "solo": 1})


@family
def test_claim_beyond_partition_count_is_kept_as_kafka_does(name: str) -> None:
    # A claims t-5 of a 2-partition topic (say the topic was recreated smaller). Kafka keeps the phantom
    # partition, and its unassigned-partition walk stalls on it; the results are those of Kafka's classes.
    members = [owning(name, "A", ["t", "v"], tps("t-5 v-0"), 1), owning(name, "B", ["t", "v"], tps("v-1"), 1)]
    with pytest.raises(AssignorError, match="IllegalStateException"):
        assign(name, members, {"t": 2, "v": 2})  # constrained builder: quota bookkeeping no longer adds up
    members.append(owning(name, "C", ["t"], [], 1))
    assert assign(name, members, {"t": 2, "v": 2}) == {"A": tps("t-5 v-0"), "B": tps("v-1 t-1"), "C": tps("t-0")}


# ---- ported from AbstractStickyAssignorTest ---------------------------------------------------------------


@family
def test_one_consumer_no_topic(name: str) -> None:
    assert assign(name, [fresh("consumer", [])], {}) == {"consumer": []}


@family
def test_one_consumer_nonexistent_topic(name: str) -> None:
    assert assign(name, [fresh("consumer", [T])], {T: 0}) == {"consumer": []}


@family
def test_one_consumer_one_topic(name: str) -> None:
    assert assign(name, [fresh("consumer", [T])], {T: 3}) == {"consumer": tps("topic-0 topic-1 topic-2")}


@family
def test_only_assigns_partitions_from_subscribed_topics(name: str) -> None:
    members = [owning(name, "consumer", [T], tps("topic-0 topic-1 other-0 other-1"), GEN)]
    assert assign(name, members, {T: 2}) == {"consumer": tps("topic-0 topic-1")}


@family
def test_one_consumer_multiple_topics(name: str) -> None:
    assert assign(name, [fresh("consumer", [T1, T2])], {T1: 1, T2: 2}) == {"consumer": tps("topic1-0 topic2-0 topic2-1")}


@family
def test_two_consumers_one_topic_two_partitions(name: str) -> None:
    result = assign(name, [fresh("consumer1", [T]), fresh("consumer2", [T])], {T: 2})
    assert result == {"consumer1": tps("topic-0"), "consumer2": tps("topic-1")}


@family
def test_multiple_consumers_mixed_topic_subscriptions(name: str) -> None:
    members = [fresh("consumer1", [T1]), fresh("consumer2", [T1, T2]), fresh("consumer3", [T1])]
    assert assign(name, members, {T1: 3, T2: 2}) == {
        "consumer1": tps("topic1-0 topic1-2"),
        "consumer2": tps("topic2-0 topic2-1"),
        "consumer3": tps("topic1-1"),
    }


@family
def test_two_consumers_two_topics_six_partitions(name: str) -> None:
    members = [fresh("consumer1", [T1, T2]), fresh("consumer2", [T1, T2])]
    assert assign(name, members, {T1: 3, T2: 3}) == {
        "consumer1": tps("topic1-0 topic1-2 topic2-1"),
        "consumer2": tps("topic1-1 topic2-0 topic2-2"),
    }


@family
def test_consumer_owning_min_quota_expected_max_quota(name: str) -> None:
    topics = [T1, T2]
    members = [owning(name, "consumer1", topics, tps("topic1-0 topic2-1"), GEN),
               owning(name, "consumer2", topics, tps("topic1-1 topic2-2"), GEN)]
    assert assign(name, members, {T1: 2, T2: 3}) == {
        "consumer1": tps("topic1-0 topic2-1 topic2-0"),
        "consumer2": tps("topic1-1 topic2-2"),
    }


@family
def test_max_quota_consumers_more_than_expected(name: str) -> None:
    topics = [T1, T2]
    members = [owning(name, "consumer1", topics, tps("topic1-0 topic2-0"), GEN),
               owning(name, "consumer2", topics, tps("topic1-1 topic2-1"), GEN),
               owning(name, "consumer3", topics, [], GEN)]
    assert settle(name, members, {T1: 2, T2: 2}) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1 topic2-1"),
        "consumer3": tps("topic2-0"),
    }


@family
def test_all_consumers_are_under_min_quota(name: str) -> None:
    topics = [T1, T2]
    members = [owning(name, "consumer1", topics, tps("topic1-0"), GEN),
               owning(name, "consumer2", topics, tps("topic1-1"), GEN),
               owning(name, "consumer3", topics, [], GEN)]
    assert assign(name, members, {T1: 2, T2: 3}) == {
        "consumer1": tps("topic1-0 topic2-1"),
        "consumer2": tps("topic1-1 topic2-2"),
        "consumer3": tps("topic2-0"),
    }


@family
def test_add_remove_consumer_one_topic(name: str) -> None:
    counts = {T: 3}
    first = assign(name, [fresh("consumer1", [T])], counts)
    assert first == {"consumer1": tps("topic-0 topic-1 topic-2")}

    two = [owning(name, "consumer1", [T], first["consumer1"], GEN), owning(name, "consumer2", [T], [], GEN)]
    second = settle(name, two, counts)
    assert second == {"consumer1": tps("topic-0 topic-1"), "consumer2": tps("topic-2")}

    third = assign(name, [owning(name, "consumer2", [T], second["consumer2"], GEN)], counts)
    assert set(third["consumer2"]) == set(tps("topic-0 topic-1 topic-2"))


@family
def test_add_remove_two_consumers_two_topics(name: str) -> None:
    topics = [T1, T2]
    counts = {T1: 3, T2: 4}
    first = assign(name, [fresh("consumer1", topics), fresh("consumer2", topics)], counts)
    assert first == {
        "consumer1": tps("topic1-0 topic1-2 topic2-1 topic2-3"),
        "consumer2": tps("topic1-1 topic2-0 topic2-2"),
    }

    four = [owning(name, "consumer1", topics, first["consumer1"], GEN),
            owning(name, "consumer2", topics, first["consumer2"], GEN),
            owning(name, "consumer3", topics, [], GEN),
            owning(name, "consumer4", topics, [], GEN)]
    second = settle(name, four, counts)
    assert second == {
        "consumer1": tps("topic1-0 topic2-1"),
        "consumer2": tps("topic2-0 topic1-1"),
        "consumer3": tps("topic1-2 topic2-3"),
        "consumer4": tps("topic2-2"),
    }

    two = [owning(name, "consumer3", topics, second["consumer3"], GEN),
           owning(name, "consumer4", topics, second["consumer4"], GEN)]
    assert assign(name, two, counts) == {
        "consumer3": tps("topic1-2 topic2-3 topic1-0 topic2-1"),
        "consumer4": tps("topic2-2 topic1-1 topic2-0"),
    }


@family
def test_topic_balance_after_reassignment(name: str) -> None:
    topics = [T1, T2]
    counts = {T1: 12, T2: 12}
    result = assign(name, [fresh("consumer1", topics)], counts)
    ids = ["consumer1"]
    for added, per_topic in ((["consumer2"], 6), (["consumer3", "consumer4"], 3)):
        members = [owning(name, m, topics, result[m], GEN) for m in ids]
        members += [owning(name, m, topics, [], GEN) for m in added]
        ids += added
        result = settle(name, members, counts)
        for partitions in result.values():
            assert sum(p.topic == T1 for p in partitions) == per_topic
            assert sum(p.topic == T2 for p in partitions) == per_topic
    members = [owning(name, m, topics, result[m], GEN) for m in ("consumer3", "consumer4")]
    result = assign(name, members, counts)
    for partitions in result.values():
        assert sum(p.topic == T1 for p in partitions) == 6


@family
def test_poor_round_robin_scenario(name: str) -> None:
    counts = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    everything = list(counts)
    odd = ["topic1", "topic3", "topic5"]
    members = [fresh("consumer1", everything), fresh("consumer2", odd), fresh("consumer3", odd), fresh("consumer4", everything)]
    result = assign(name, members, counts)
    check_valid(members, counts, result)
    check_kafka_balance(members, result)


@family
def test_add_remove_topic_two_consumers(name: str) -> None:
    counts = {T: 3}
    first = assign(name, [fresh("consumer1", [T]), fresh("consumer2", [T])], counts)
    assert sorted(len(p) for p in first.values()) == [1, 2]

    counts = {T: 3, T2: 3}
    members = [owning(name, m, [T, T2], first[m], GEN) for m in ("consumer1", "consumer2")]
    second = assign(name, members, counts)
    for m in ("consumer1", "consumer2"):
        assert len(second[m]) == 3 and set(first[m]) <= set(second[m])

    counts = {T2: 3}
    members = [owning(name, m, [T2], second[m], GEN) for m in ("consumer1", "consumer2")]
    third = settle(name, members, counts)
    assert sorted(len(p) for p in third.values()) == [1, 2]
    for m in ("consumer1", "consumer2"):
        assert set(third[m]) <= set(second[m])


@family
def test_reassignment_after_one_consumer_leaves(name: str) -> None:
    counts = {f"t{i:02d}": i for i in range(1, 20)}
    members = [fresh(f"c{i:02d}", [f"t{j:02d}" for j in range(1, i + 1)]) for i in range(1, 20)]
    result = assign(name, members, counts)
    check_valid(members, counts, result)
    check_kafka_balance(members, result)
    survivors = [owning(name, m.member_id, m.topics, result[m.member_id], GEN) for m in members if m.member_id != "c10"]
    final = settle(name, survivors, counts)
    check_kafka_balance(survivors, final)


@family
def test_reassignment_after_one_consumer_added(name: str) -> None:
    counts = {T: 20}
    members = [fresh(f"c{i}", [T]) for i in range(1, 10)]
    result = assign(name, members, counts)
    members = [owning(name, m.member_id, [T], result[m.member_id], GEN) for m in members] + [fresh("c10", [T])]
    final = settle(name, members, counts)
    assert sorted(len(p) for p in final.values()) == [2] * 10


@family
def test_same_subscriptions(name: str) -> None:
    counts = {f"t{i:02d}": i for i in range(1, 15)}
    members = [fresh(f"c{i}", list(counts)) for i in range(1, 9)]
    result = assign(name, members, counts)
    members = [owning(name, m.member_id, m.topics, result[m.member_id], GEN) for m in members if m.member_id != "c5"]
    final = settle(name, members, counts)
    assert max(map(len, final.values())) - min(map(len, final.values())) <= 1
    for m in members:  # nobody loses a partition when a member leaves
        assert set(m.owned_partitions) <= set(final[m.member_id])


@family
def test_all_consumers_reach_expected_quota_and_are_considered_filled(name: str) -> None:
    members = [owning(name, "consumer1", [T], tps("topic-0 topic-1"), GEN),
               owning(name, "consumer2", [T], tps("topic-2"), GEN),
               owning(name, "consumer3", [T], [], GEN)]
    assert assign(name, members, {T: 4}) == {
        "consumer1": tps("topic-0 topic-1"),
        "consumer2": tps("topic-2"),
        "consumer3": tps("topic-3"),
    }


@family
@pytest.mark.parametrize("stale_generation", [9, None])
def test_owned_partitions_of_a_stale_or_generationless_consumer_are_invalidated(name: str, stale_generation) -> None:
    owned = tps("topic-0 topic-2 topic2-1")
    stale = owning(name, "consumer2", [T, T2], owned, -1 if stale_generation is None else stale_generation)
    members = [owning(name, "consumer1", [T, T2], owned, 10), stale]
    result = assign(name, members, {T: 3, T2: 3})
    assert subsets(result) == {"consumer1": set(owned), "consumer2": set(tps("topic-1 topic2-0 topic2-2"))}


@family
def test_partition_claimed_by_two_members_of_one_generation_goes_elsewhere(name: str) -> None:
    members = [owning(name, "consumer1", [T], tps("topic-0 topic-1"), GEN),
               owning(name, "consumer2", [T], tps("topic-0 topic-2"), GEN),
               owning(name, "consumer3", [T], [], GEN)]
    assert settle(name, members, {T: 3}) == {
        "consumer1": tps("topic-1"),
        "consumer2": tps("topic-2"),
        "consumer3": tps("topic-0"),
    }


@family
def test_partitions_go_to_the_highest_generation(name: str) -> None:
    topics = [T, T2, T3]
    members = [owning(name, "consumer1", topics, tps("topic-0 topic2-0 topic3-0"), 10),
               owning(name, "consumer2", topics, tps("topic-1 topic2-1 topic3-1"), 9),
               owning(name, "consumer3", topics, tps("topic2-1 topic3-0 topic3-2"), 8)]
    result = assign(name, members, {t: 3 for t in topics})
    assert subsets(result) == {
        "consumer1": set(tps("topic-0 topic2-0 topic3-0")),
        "consumer2": set(tps("topic-1 topic2-1 topic3-1")),
        "consumer3": set(tps("topic-2 topic2-2 topic3-2")),
    }


@family
def test_no_reassignment_on_current_members(name: str) -> None:
    topics = [T, T2, T3, T1]
    members = [owning(name, "consumer1", topics, [], -1),
               owning(name, "consumer2", topics, tps("topic-0 topic2-0 topic1-0"), 9),
               owning(name, "consumer3", topics, tps("topic3-2 topic2-2 topic1-1"), 8),
               owning(name, "consumer4", topics, tps("topic3-1 topic-1 topic-2"), 7)]
    result = assign(name, members, {t: 3 for t in topics})
    assert set(result["consumer1"]) == set(tps("topic1-2 topic2-1 topic3-0"))


@family
def test_owned_partitions_invalidated_for_consumer_with_multiple_generations(name: str) -> None:
    members = [owning(name, "consumer1", [T, T2], tps("topic-0 topic2-1 topic-1"), 10),
               owning(name, "consumer2", [T, T2], tps("topic-0 topic2-1 topic2-2"), 8)]
    result = assign(name, members, {T: 3, T2: 3})
    assert subsets(result) == {
        "consumer1": set(tps("topic-0 topic2-1 topic-1")),
        "consumer2": set(tps("topic-2 topic2-2 topic2-0")),
    }


@family
def test_unequal_subscriptions_same_partition_claimed_in_three_generations(name: str) -> None:
    counts = {T: 6, T1: 1}
    for g1, g2, g3 in [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]:
        members = [owning(name, "consumer1", [T], tps("topic-0 topic-2"), g1),
                   owning(name, "consumer2", [T], tps("topic-1 topic-2 topic-3"), g2),
                   owning(name, "consumer3", [T], tps("topic-2 topic-4 topic-5"), g3),
                   owning(name, "consumer4", [T1], tps("topic1-0"), 2)]
        result = assign(name, members, counts)
        held = [p for ps in result.values() for p in ps]
        assert len(held) == len(set(held))
        assert all(1 <= len(ps) <= 2 for ps in result.values())


@family
def test_assignment_updated_for_deleted_topic(name: str) -> None:
    result = assign(name, [fresh("consumer", [T1, T2, T3])], {T1: 1, T3: 100})
    assert len(result["consumer"]) == 101


@family
def test_no_exception_when_only_subscribed_topic_deleted(name: str) -> None:
    first = assign(name, [fresh("consumer", [T])], {T: 3})
    assert assign(name, [owning(name, "consumer", [T], first["consumer"], GEN)], {}) == {"consumer": []}


@family
def test_stickiness_when_the_potential_leader_leaves(name: str) -> None:
    ids = ["consumer1", "consumer2", "consumer3", "consumer4"]
    first = assign(name, [fresh(m, [T1]) for m in ids], {T1: 3})
    assert all(len(p) <= 1 for p in first.values())
    survivors = [owning(name, m, [T1], first[m], GEN) for m in ids[1:]]
    second = assign(name, survivors, {T1: 3})
    for m in ids[1:]:
        assert len(second[m]) == 1
        assert set(first[m]) <= set(second[m])


@family
def test_move_existing_assignments(name: str) -> None:
    counts = {f"topic{i}": 1 for i in range(1, 7)}
    members = [owning(name, "consumer1", [T1, T2], tps("topic1-0"), GEN),
               owning(name, "consumer2", [T1, T2, T3, "topic4"], tps("topic2-0 topic3-0"), GEN),
               owning(name, "consumer3", [T2, T3, "topic4", "topic5", "topic6"], tps("topic4-0 topic5-0 topic6-0"), GEN)]
    result = settle(name, members, counts)
    check_kafka_balance(members, result)


# ---- ported from StickyAssignorTest ----------------------------------------------------------------------


@pytest.mark.parametrize("partitions,expected", [(3, "topic-1 | topic-2 | topic-0"), (4, "topic-1 topic-3 | topic-2 | topic-0")])
def test_partition_claimed_twice_in_one_generation_is_revoked_from_both(partitions: int, expected: str) -> None:
    members = [owning("sticky", "consumer1", [T], tps("topic-0 topic-1"), GEN),
               owning("sticky", "consumer2", [T], tps("topic-0 topic-2"), GEN),
               owning("sticky", "consumer3", [T], [], GEN)]
    result = assign("sticky", members, {T: partitions})
    assert [result[m] for m in ("consumer1", "consumer2", "consumer3")] == [tps(s) for s in expected.split("|")]


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations_1(equal: bool) -> None:
    all_topics = [T, T2]
    c2_topics = all_topics if equal else [T]
    counts = {T: 6, T2: 6}
    r1 = assign("sticky", [fresh("consumer1", all_topics), fresh("consumer2", c2_topics), fresh("consumer3", all_topics)], counts)
    assert [len(r1[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]

    r2 = assign("sticky", [owning("sticky", "consumer1", all_topics, r1["consumer1"], GEN),
                           owning("sticky", "consumer2", c2_topics, r1["consumer2"], GEN)], counts)
    assert len(r2["consumer1"]) == 6 and len(r2["consumer2"]) == 6
    if equal:
        assert set(r1["consumer1"]) <= set(r2["consumer1"])
    assert set(r1["consumer2"]) <= set(r2["consumer2"])
    assert set(r2["consumer2"]) & set(r1["consumer3"])

    r3 = assign("sticky", [owning("sticky", "consumer2", c2_topics, r2["consumer2"], 2),
                           owning("sticky", "consumer3", all_topics, r1["consumer3"], 1)], counts)
    assert len(r3["consumer2"]) == 6 and len(r3["consumer3"]) == 6
    assert not set(r3["consumer2"]) & set(r3["consumer3"])


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_multiple_generations_2(equal: bool) -> None:
    all_topics = [T, T2, T3]
    c1_topics = all_topics if equal else [T]
    c3_topics = all_topics if equal else [T, T2]
    counts = {T: 4, T2: 4, T3: 4}
    r1 = assign("sticky", [fresh("consumer1", c1_topics), fresh("consumer2", all_topics), fresh("consumer3", c3_topics)], counts)
    assert [len(r1[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]

    r2 = assign("sticky", [owning("sticky", "consumer2", all_topics, r1["consumer2"], 1)], counts)
    assert len(r2["consumer2"]) == 12 and set(r1["consumer2"]) <= set(r2["consumer2"])

    r3 = assign("sticky", [owning("sticky", "consumer1", c1_topics, r1["consumer1"], 1),
                           owning("sticky", "consumer2", all_topics, r2["consumer2"], 2),
                           owning("sticky", "consumer3", c3_topics, r1["consumer3"], 1)], counts)
    assert [len(r3[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]


@pytest.mark.parametrize("equal", [True, False])
def test_assignment_with_conflicting_previous_generations(equal: bool) -> None:
    all_topics = [T, T2, T3]
    c1_topics = all_topics if equal else [T]
    c2_topics = all_topics if equal else [T, T2]
    c1_owned = tps("topic-0 topic-1 topic-2 topic2-2 topic2-3 topic3-0") if equal else tps("topic-0 topic-1 topic-2 topic-3")
    c2_owned = tps("topic-0 topic-1 topic2-0 topic2-1 topic2-2 topic2-3")
    c3_owned = tps("topic-2 topic-3 topic3-0 topic3-1 topic3-2 topic3-3")
    members = [owning("sticky", "consumer1", c1_topics, c1_owned, 1),
               owning("sticky", "consumer2", c2_topics, c2_owned, 2),
               owning("sticky", "consumer3", all_topics, c3_owned, 2)]
    result = assign("sticky", members, {T: 4, T2: 4, T3: 4})
    assert [len(result[m]) for m in ("consumer1", "consumer2", "consumer3")] == [4, 4, 4]
    assert set(result["consumer2"]) <= set(c2_owned)
    assert set(result["consumer3"]) <= set(c3_owned)


def test_schema_backward_compatibility_with_v0_user_data() -> None:
    old_schema = consumer_protocol.encode_sticky_user_data(tps("topic-1"), None, version=0)
    members = [owning("sticky", "consumer1", [T], tps("topic-0 topic-2"), 1),
               MemberSubscription("consumer2", (T,), user_data=old_schema),
               fresh("consumer3", [T])]
    result = assign("sticky", members, {T: 3})
    assert [len(result[m]) for m in ("consumer1", "consumer2", "consumer3")] == [1, 1, 1]
    assert set(result["consumer1"]) <= set(tps("topic-0 topic-2"))
    assert result["consumer2"] == tps("topic-1")


def test_member_data_always_comes_from_user_data() -> None:
    # testMemberDataWithInconsistentData / testMemberDataWillHonorUserData
    user_data = consumer_protocol.encode_sticky_user_data(tps("topic-1"), GEN)
    member = MemberSubscription("c", (T,), owned_partitions=tps("topic-0"), user_data=user_data)
    data = sticky_member_data(member)
    assert (list(data.partitions), data.generation) == (tps("topic-1"), GEN)

    user_data = consumer_protocol.encode_sticky_user_data(tps("topic1-0 topic2-1"), GEN - 1)
    member = MemberSubscription("c", (T,), generation_id=GEN, user_data=user_data)
    data = sticky_member_data(member)
    assert (list(data.partitions), data.generation) == (tps("topic1-0 topic2-1"), GEN - 1)


def test_member_data_without_or_with_broken_user_data() -> None:
    assert sticky_member_data(fresh("c", [T])).generation is None
    assert sticky_member_data(MemberSubscription("c", (T,), user_data=b"")).generation is None
    broken = sticky_member_data(MemberSubscription("c", (T,), user_data=b"\x00\x01"))
    assert (broken.partitions, broken.generation) == ((), -1)


def test_old_version_subscriptions() -> None:
    # V0: userData only; V1: userData and owned partitions, no GenerationId; V2+: everything.
    v0 = MemberSubscription("consumer1", (T1,), user_data=consumer_protocol.encode_sticky_user_data(tps("topic1-0"), GEN))
    v1 = MemberSubscription("consumer2", (T1,), owned_partitions=tps("topic1-1"),
                            user_data=consumer_protocol.encode_sticky_user_data(tps("topic1-1"), GEN))
    v2 = owning("sticky", "consumer3", [T1], [], GEN)
    assert assign("sticky", [v0, v1, v2], {T1: 3}) == {
        "consumer1": tps("topic1-0"), "consumer2": tps("topic1-1"), "consumer3": tps("topic1-2")
    }


def test_member_data_of_every_subscription_version() -> None:
    # testMemberData, for the sticky assignor.
    owned = [tp(T1, 0), tp(T2, 1)]
    user_data = consumer_protocol.encode_sticky_user_data(owned, GEN)
    for member in (MemberSubscription("c", (T,), user_data=user_data),
                   MemberSubscription("c", (T,), owned_partitions=owned, user_data=user_data),
                   owning("sticky", "c", [T], owned, GEN)):
        data = sticky_member_data(member)
        assert (list(data.partitions), data.generation) == (owned, GEN)
