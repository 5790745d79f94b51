"""Builders and checks shared by the assignor tests, shaped like the helpers of Kafka's own assignor tests
so that ported cases read alike."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from state.classic import consumer_protocol
from state.assignors import MemberSubscription, TopicPartition, assign

ALL = ("range", "roundrobin", "sticky", "cooperative-sticky")
STICKY_FAMILY = ("sticky", "cooperative-sticky")


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def tps(spec: str) -> list[TopicPartition]:
    """'t1-0 t1-2 t2-1' -> [tp('t1', 0), ...]; the partition is after the last dash."""
    out = []
    for item in spec.split():
        topic, _, partition = item.rpartition("-")
        out.append(TopicPartition(topic, int(partition)))
    return out


def fresh(member_id: str, topics: Iterable[str], instance: str | None = None) -> MemberSubscription:
    """Kafka tests' subscription(topics, i): no userData, no owned partitions, no generation."""
    return MemberSubscription(member_id, tuple(topics), group_instance_id=instance)


def owning(
    assignor: str, member_id: str, topics: Iterable[str], owned: Sequence[TopicPartition], generation: int
) -> MemberSubscription:
    """Kafka tests' buildSubscriptionV2Above: what each sticky assignor's test puts in a v2+ subscription.
    StickyAssignorTest also serializes the partitions and generation into V1 userData."""
    user_data = consumer_protocol.encode_sticky_user_data(owned, generation) if assignor == "sticky" else None
    return MemberSubscription(
        member_id, tuple(topics), owned_partitions=tuple(owned), generation_id=generation, user_data=user_data
    )


def all_partitions(members: Sequence[MemberSubscription], counts: Mapping[str, int]) -> set[TopicPartition]:
    subscribed = {t for m in members for t in m.topics}
    return {TopicPartition(t, p) for t in subscribed for p in range(counts.get(t, 0))}


def check_valid(members: Sequence[MemberSubscription], counts: Mapping[str, int], result: dict) -> None:
    """Every member has an entry, no partition is handed out twice, and only to a subscriber."""
    assert list(result) == [m.member_id for m in members]
    seen: set[TopicPartition] = set()
    for m in members:
        for p in result[m.member_id]:
            assert p not in seen, f"{p} assigned twice"
            seen.add(p)
            assert p.topic in m.topics, f"{p} given to {m.member_id}, which does not subscribe to {p.topic}"
            assert 0 <= p.partition < counts[p.topic]


def check_kafka_balance(members: Sequence[MemberSubscription], result: dict) -> None:
    """AbstractStickyAssignorTest.verifyValidityAndBalance's balance rule: two members whose counts differ
    by two or more share no topic (otherwise a partition could have moved to the lighter one)."""
    for a in members:
        for b in members:
            if len(result[a.member_id]) >= len(result[b.member_id]) + 2:
                common = {p.topic for p in result[a.member_id]} & {p.topic for p in result[b.member_id]}
                assert not common, f"{a.member_id} and {b.member_id} both hold {common}"


def next_round(
    assignor: str, members: Sequence[MemberSubscription], result: dict, generation: int
) -> list[MemberSubscription]:
    """Every member reports `result` as what it owns, at `generation`, with unchanged subscriptions."""
    return [owning(assignor, m.member_id, m.topics, result[m.member_id], generation) for m in members]


def rebalance_until_stable(
    assignor: str, members: Sequence[MemberSubscription], counts: Mapping[str, int], generation: int, limit: int = 4
) -> tuple[dict, int]:
    """Cooperative rounds: rejoin while some member lost a partition it owned (Kafka's
    CooperativeStickyAssignorTest.verifyValidityAndBalance). Returns the final result and the rounds run."""
    result = assign(assignor, members, counts)
    rounds = 1
    while any(set(m.owned_partitions) - set(result[m.member_id]) for m in members):
        assert rounds <= limit, "did not settle"
        generation += 1
        members = next_round(assignor, members, result, generation)
        result = assign(assignor, members, counts)
        rounds += 1
    return result, rounds
