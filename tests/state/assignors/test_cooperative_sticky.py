"""CooperativeStickyAssignor: the withholding post-step, where ownership is read from, and cases ported
from Kafka's CooperativeStickyAssignorTest."""

from __future__ import annotations

import pytest

from state.classic import consumer_protocol
from state.assignors import MemberSubscription, assign
from state.assignors.cooperative_sticky import cooperative_member_data

from .helpers import fresh, owning, rebalance_until_stable, tp, tps

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

NAME = "cooperative-sticky"
T, T1, T2 = "topic", "topic1", "topic2"
GEN = 1


def coop(member_id: str, topics: list[str], owned, generation: int) -> MemberSubscription:
    return owning(NAME, member_id, topics, owned, generation)


def test_two_rounds_when_a_member_joins() -> None:
    counts = {"t": 3}
    # c1 owns everything; c2 joins. Round 1: t-2 must move, so nobody gets it.
    round1 = assign(NAME, [coop("c1", ["t"], tps("t-0 t-1 t-2"), 4), fresh("c2", ["t"])], counts)
    assert round1 == {"c1": tps("t-0 t-1"), "c2": []}
    # c1 revokes t-2 and rejoins with what it kept; c2 now has generation 5 too. Round 2 hands t-2 out.
    round2 = assign(NAME, [coop("c1", ["t"], round1["c1"], 5), coop("c2", ["t"], [], 5)], counts)
    assert round2 == {"c1": tps("t-0 t-1"), "c2": tps("t-2")}


def test_unequal_subscriptions_withhold_moving_partitions_too() -> None:
    # The general builder does not track moves; the assignor compares the result with what members own.
    counts = {"a": 4, "b": 2}
    members = [coop("c1", ["a", "b"], tps("a-0 a-1 a-2 a-3 b-0 b-1"), 2), coop("c2", ["a"], [], 2)]
    round1 = assign(NAME, members, counts)
    assert round1 == {"c1": tps("a-3 b-0 b-1"), "c2": []}  # a-0, a-1, a-2 are on their way to c2
    final, rounds = rebalance_until_stable(NAME, members, counts, 2)
    assert rounds == 2
    assert final == {"c1": tps("a-3 b-0 b-1"), "c2": tps("a-0 a-1 a-2")}


def test_stale_claimant_can_receive_its_old_partition_directly() -> None:
    # X, a generation behind, still lists a-2 as owned; when the general builder gives a-2 back to X it is not
    # "added" for X, so Kafka does not withhold it, although A (current generation) loses it in the same
    # round. Verified against Kafka's classes.
    members = [coop("A", ["a", "b"], tps("a-0 a-1 a-2 a-3"), 3), fresh("B", ["a", "b"]), coop("X", ["b"], tps("a-2 a-3"), 2)]
    assert assign(NAME, members, {"a": 4, "b": 1}) == {"A": tps("a-1 a-3"), "B": tps("b-0"), "X": tps("a-2")}


# ---- ported from CooperativeStickyAssignorTest -------------------------------------------------------------


def test_partition_claimed_twice_in_one_generation_waits_a_round() -> None:
    members = [coop("consumer1", [T], tps("topic-0 topic-1"), GEN),
               coop("consumer2", [T], tps("topic-0 topic-2"), GEN),
               coop("consumer3", [T], [], GEN)]
    assert assign(NAME, members, {T: 3}) == {"consumer1": tps("topic-1"), "consumer2": tps("topic-2"), "consumer3": []}
    assert assign(NAME, members, {T: 4}) == {
        "consumer1": tps("topic-1 topic-3"), "consumer2": tps("topic-2"), "consumer3": []
    }


def test_generation_round_trips_through_user_data() -> None:
    # testEncodeAndDecodeGeneration / testDecodeGeneration: a v1 subscription (no GenerationId field).
    fresh_client = MemberSubscription("c", (T,), user_data=consumer_protocol.encode_cooperative_user_data(-1))
    assert cooperative_member_data(fresh_client).generation == -1
    after_gen_10 = MemberSubscription("c", (T,), user_data=consumer_protocol.encode_cooperative_user_data(10))
    assert cooperative_member_data(after_gen_10).generation == 10
    assert cooperative_member_data(fresh("c", [T])).generation is None
    assert cooperative_member_data(MemberSubscription("c", (T,), user_data=b"\x01")).generation == -1


def test_owned_partitions_come_from_the_subscription_and_generation_from_user_data_in_v1() -> None:
    # testMemberDataWithInconsistentData
    member = MemberSubscription("c", (T,), owned_partitions=tps("topic-0"),
                                user_data=consumer_protocol.encode_cooperative_user_data(GEN))
    data = cooperative_member_data(member)
    assert (list(data.partitions), data.generation) == (tps("topic-0"), GEN)


def test_v2_fields_win_over_user_data() -> None:
    # testMemberDataWithEmptyPartitionsAndEqualGeneration / ...AndHigherGeneration: the sticky-style
    # userData with partitions is ignored.
    for user_data_generation in (GEN, GEN - 1):
        user_data = consumer_protocol.encode_sticky_user_data([tp(T1, 0), tp(T2, 1)], user_data_generation)
        member = MemberSubscription("c", (T,), generation_id=GEN, user_data=user_data)
        data = cooperative_member_data(member)
        assert (data.partitions, data.generation) == ((), GEN)


def test_assignor_with_old_version_subscriptions() -> None:
    def v1(member_id: str, owned) -> MemberSubscription:
        return MemberSubscription(member_id, (T1,), owned_partitions=owned,
                                  user_data=consumer_protocol.encode_cooperative_user_data(GEN))

    members = [v1("consumer1", tps("topic1-0")), v1("consumer2", tps("topic1-1")), coop("consumer3", [T1], [], GEN)]
    assert assign(NAME, members, {T1: 3}) == {
        "consumer1": tps("topic1-0"), "consumer2": tps("topic1-1"), "consumer3": tps("topic1-2")
    }


def test_member_data_of_v1_and_v2_subscriptions() -> None:
    # testMemberData: a v0 subscription cannot carry owned partitions for this assignor, so it is not tested.
    owned = [tp(T1, 0), tp(T2, 1)]
    v1 = MemberSubscription("c", (T,), owned_partitions=owned, user_data=consumer_protocol.encode_cooperative_user_data(GEN))
    for member in (v1, coop("c", [T], owned, GEN)):
        data = cooperative_member_data(member)
        assert (list(data.partitions), data.generation) == (owned, GEN)
