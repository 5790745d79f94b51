"""Parity of the classic assignors (state/assignors/) and the native engine's: Hypothesis-generated leader
rounds give the identical result on both cores (same members, same partitions, same order within each
member's list), or the same exception with the same message.

The rounds go well beyond what real clients send, because the reference reproduces Kafka's answers there
too: empty and unequal subscriptions, subscriptions to topics that do not exist or have no partitions,
owned partitions of other topics, of missing topics and beyond a topic's partition count, one partition
claimed by several members at equal or different generations, absent and negative generations, static
members, and userData that is a valid StickyAssignor blob (V0 or V1), a CooperativeStickyAssignor blob, or
garbage. The Kafka-named cases of tests/state/assignors/ run on both cores as well (their conftest.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.classic import consumer_protocol
from state.assignors import AssignorError, MemberSubscription, RebalanceProtocol, TopicPartition
from tests.native import cores

NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
PARITY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Java's String order differs from Python's for these: "consumer-10" < "consumer-2", upper case first,
# and characters outside the BMP sort as surrogates (below U+E000..U+FFFF).
MEMBER_IDS = ["consumer-1", "consumer-2", "consumer-10", "C", "c", "b\U0001f600", "b\ufb01", "m", "zz", "it's"]
TOPICS = ["t0", "t1", "topic", "T", "x\U0001f600", "x\ufb01"]
GHOST = "ghost"  # subscribed or owned, never in the metadata


@st.composite
def user_data(draw, owned: list[TopicPartition]) -> bytes | None:
    kind = draw(st.sampled_from(["none", "empty", "sticky-v0", "sticky-v1", "cooperative", "garbage"]))
    if kind == "none":
        return None
    if kind == "empty":
        return b""
    if kind == "garbage":
        return draw(st.binary(max_size=12))
    if kind == "cooperative":
        return consumer_protocol.encode_cooperative_user_data(draw(st.integers(-1, 6)))
    claimed = draw(st.lists(st.sampled_from(owned), unique=True)) if owned else []
    generation = None if kind == "sticky-v0" else draw(st.integers(-1, 6))
    return consumer_protocol.encode_sticky_user_data(claimed, generation, version=0 if generation is None else 1)


@st.composite
def rounds(draw) -> tuple[list[MemberSubscription], dict[str, int]]:
    """One leader's round: the JoinGroup member list and the topic metadata."""
    topics = draw(st.lists(st.sampled_from(TOPICS), max_size=4, unique=True))
    counts = {t: draw(st.integers(0, 8)) for t in topics}
    ids = draw(st.lists(st.sampled_from(MEMBER_IDS), max_size=8, unique=True))
    known = topics + [GHOST]
    shared = draw(st.none() | st.lists(st.sampled_from(known), unique=True))  # equal subscriptions
    partitions = [TopicPartition(t, p) for t in known for p in range(counts.get(t, 0) + 2)]
    members = []
    for member_id in ids:
        subscribed = shared if shared is not None else draw(st.lists(st.sampled_from(known), max_size=4, unique=True))
        if shared is not None:
            subscribed = draw(st.permutations(subscribed))
        owned = draw(st.lists(st.sampled_from(partitions), max_size=6)) if partitions else []
        members.append(MemberSubscription(
            member_id,
            tuple(subscribed),
            group_instance_id=draw(st.none() | st.sampled_from(["instance-1", "instance-2", "Instance-1"])),
            owned_partitions=tuple(owned),
            generation_id=draw(st.none() | st.integers(-2, 6)),
            user_data=draw(user_data(owned)),
        ))
    return members, counts


@st.composite
def histories(draw) -> tuple[list[MemberSubscription], dict[str, int]]:
    """A group with a past: overlapping, unequal subscriptions over more partitions, and each partition owned
    (per userData and OwnedPartitions) by whichever subscriber held it, some at an older generation, so the
    general builder has to move partitions, back to previous owners and against earlier moves."""
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=2, max_size=5, unique=True))
    counts = {t: draw(st.integers(1, 24)) for t in topics}
    ids = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=2, max_size=10, unique=True))
    subscriptions = {m: draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)) for m in ids}
    generations = {m: draw(st.sampled_from([None, 3, 4, 4, 4])) for m in ids}
    owned: dict[str, list[TopicPartition]] = {m: [] for m in ids}
    for t in topics:
        holders = [m for m in ids if t in subscriptions[m] and draw(st.booleans())]
        for p in range(counts[t]):
            if holders:
                owned[holders[draw(st.integers(0, len(holders) - 1)) if p % 3 else 0]].append(TopicPartition(t, p))
    members = []
    for m in ids:
        generation = generations[m]
        members.append(MemberSubscription(
            m, tuple(subscriptions[m]), owned_partitions=tuple(owned[m]), generation_id=generation,
            user_data=consumer_protocol.encode_sticky_user_data(owned[m], generation) if generation else None,
        ))
    return members, counts


def outcome(assign, name: str, members, counts):
    """The result as ordered lists, or the exception's type and message."""
    try:
        result = assign(name, members, counts)
    except (AssignorError, ValueError) as error:
        return type(error).__name__, str(error)
    return [(member_id, [tuple(tp) for tp in partitions]) for member_id, partitions in result.items()]


@pytest.fixture(scope="module")
def native_assign():
    return cores.classic_assign("native")


@pytest.mark.parametrize("name", NAMES)
@PARITY
@given(round_=rounds())
def test_every_round_gives_the_references_result(native_assign, name, round_) -> None:
    members, counts = round_
    assert outcome(native_assign, name, members, counts) == outcome(cores.classic_assign("python"), name, members, counts)


@pytest.mark.parametrize("name", ("sticky", "cooperative-sticky"))
@PARITY
@given(round_=histories())
def test_every_history_gives_the_references_result(native_assign, name, round_) -> None:
    members, counts = round_
    assert outcome(native_assign, name, members, counts) == outcome(cores.classic_assign("python"), name, members, counts)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_successive_rounds_agree(native_assign, name, data) -> None:
    """Members that rejoin owning what the last round gave them, as real clients do: the sticky paths that
    keep, balance and withhold partitions."""
    members, counts = data.draw(rounds())
    python = cores.classic_assign("python")
    for generation in range(3):
        expected = outcome(python, name, members, counts)
        assert outcome(native_assign, name, members, counts) == expected
        if isinstance(expected, tuple):
            return
        owned = dict(expected)
        members = [
            MemberSubscription(
                m.member_id, m.topics, m.group_instance_id, tuple(owned[m.member_id]), generation,
                user_data=consumer_protocol.encode_sticky_user_data(
                    [TopicPartition(*tp) for tp in owned[m.member_id]], generation),
            )
            for m in members
            if data.draw(st.booleans(), label="stays") or m is members[0]
        ]


def test_a_missing_native_engine_skips_or_fails_under_ci(monkeypatch) -> None:
    monkeypatch.setattr(cores, "MISSING", "coordsim_native is not importable (test)")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI has a Rust toolchain"):
        cores.require_native()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="not importable"):
        cores.require_native()


def client_outcome(side, name, topics, previous, generation, rack, protocol):
    try:
        return (side.supported_protocols(name), side.client_user_data(name, previous, generation),
                side.client_subscription(name, "member", topics, previous_assignment=previous, generation=generation,
                                         group_instance_id="instance", rack=rack, rebalance_protocol=protocol))
    except (AssignorError, ValueError) as error:
        return type(error).__name__, str(error)


@pytest.mark.parametrize("name", NAMES + ("unknown",))
@settings(max_examples=60, deadline=None)
@given(topics=st.lists(st.sampled_from(TOPICS), max_size=4, unique=True),
       previous=st.none() | st.lists(st.builds(TopicPartition, st.sampled_from(TOPICS), st.integers(0, 5)), max_size=5),
       generation=st.integers(-2, 2**31), rack=st.none() | st.sampled_from(["", "rack-1"]),
       protocol=st.none() | st.sampled_from(RebalanceProtocol))
def test_what_a_client_sends_is_the_references(name, topics, previous, generation, rack, protocol) -> None:
    """The registry's client side: supported protocols, the userData and the JoinGroup metadata a Java
    client sends, from a first join or with a previous assignment, under either rebalance protocol."""
    expected = client_outcome(cores.client_side("python"), name, topics, previous, generation, rack, protocol)
    assert client_outcome(cores.client_side("native"), name, topics, previous, generation, rack, protocol) == expected
