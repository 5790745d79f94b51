"""The public entry points of state.assignors: the registry, rebalance protocols, what a client would send,
input checks, and the Java-compat helpers the assignors rely on."""

from __future__ import annotations

import pytest

from state.classic import consumer_protocol
from state.assignors import (
    ASSIGNORS,
    AssignorError,
    MemberSubscription,
    RebalanceProtocol,
    assign,
    client_subscription,
    client_user_data,
    supported_protocols,
)
from state.java_compat import JavaHashSet, string_hash_code, topic_partition_hash_code

from .helpers import ALL, fresh, tp, tps

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")


def test_registry_has_kafkas_four_names() -> None:
    assert tuple(ASSIGNORS) == ALL


def test_supported_protocols() -> None:
    for name in ("range", "roundrobin", "sticky"):
        assert supported_protocols(name) == (RebalanceProtocol.EAGER,)
    assert supported_protocols("cooperative-sticky") == (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)
    assert max(supported_protocols("cooperative-sticky")) is RebalanceProtocol.COOPERATIVE


def test_unknown_protocol_fails_like_the_leader() -> None:
    with pytest.raises(AssignorError, match="invalid assignment protocol: uniform"):
        assign("uniform", [fresh("c", ["t"])], {"t": 1})


@pytest.mark.parametrize("name", ALL)
def test_result_lists_every_member_in_input_order(name: str) -> None:
    members = [fresh("z", ["t"]), fresh("a", []), fresh("m", ["ghost"])]
    result = assign(name, members, {"t": 2})
    assert list(result) == ["z", "a", "m"]
    assert result["z"] == tps("t-0 t-1") and result["a"] == [] and result["m"] == []


def test_no_members_behaves_as_each_java_assignor_does() -> None:
    assert assign("range", [], {"t": 1}) == {}
    for name in ("roundrobin", "sticky", "cooperative-sticky"):  # CircularIterator / division by zero
        with pytest.raises(AssignorError):
            assign(name, [], {"t": 1})


def test_input_checks() -> None:
    with pytest.raises(ValueError, match="twice"):
        assign("range", [fresh("c", ["t"]), fresh("c", ["t"])], {"t": 1})
    with pytest.raises(ValueError, match="more than once"):
        MemberSubscription("c", ("t", "t"))
    with pytest.raises(TypeError):
        MemberSubscription("c", "t")
    with pytest.raises(ValueError, match="negative"):
        assign("range", [fresh("c", ["t"])], {"t": -1})


def test_member_subscription_normalises_sequences_and_generation() -> None:
    m = MemberSubscription("c", ["t"], owned_partitions=[("t", 0)], generation_id=-1)
    assert m.topics == ("t",) and m.owned_partitions == (tp("t", 0),)
    assert (m.has_generation, m.subscription_generation) == (False, -1)
    assert MemberSubscription("c", (), generation_id=0).has_generation


def test_member_from_join_group_metadata() -> None:
    metadata = consumer_protocol.encode_subscription(
        consumer_protocol.Subscription(("b", "a"), b"x", tps("a-1"), 3, "rack-1"), version=3
    )
    m = MemberSubscription.from_metadata("member-1", metadata, "instance-1")
    assert m == MemberSubscription("member-1", ("a", "b"), "instance-1", tps("a-1"), 3, "rack-1", b"x")


# ---- what a Java client sends ----------------------------------------------------------------------------


def test_client_user_data() -> None:
    assert client_user_data("range", tps("t-0"), 3) is None
    assert client_user_data("roundrobin", tps("t-0"), 3) is None
    assert client_user_data("sticky", None, -1) is None  # no assignment yet
    sticky = client_user_data("sticky", tps("t-0 t-1"), 3)
    assert consumer_protocol.decode_sticky_user_data(sticky).generation == 3
    assert client_user_data("cooperative-sticky", None, -1) == consumer_protocol.encode_cooperative_user_data(-1)


def test_eager_client_advertises_no_owned_partitions_but_sticky_user_data() -> None:
    m = client_subscription("sticky", "c1", ["t2", "t1"], previous_assignment=tps("t1-0 t2-1"), generation=4)
    assert m.topics == ("t1", "t2")  # the wire carries them sorted
    assert m.owned_partitions == ()
    assert m.generation_id == 4
    assert consumer_protocol.decode_sticky_user_data(m.user_data).partitions == tuple(tps("t1-0 t2-1"))


def test_cooperative_client_keeps_owned_partitions_of_topics_it_still_reads() -> None:
    m = client_subscription("cooperative-sticky", "c1", ["t1"], previous_assignment=tps("t2-1 t1-0"), generation=4)
    assert m.owned_partitions == tuple(tps("t1-0"))
    assert m.generation_id == 4
    eager = client_subscription(
        "cooperative-sticky", "c1", ["t1"], previous_assignment=tps("t1-0"), generation=4,
        rebalance_protocol=RebalanceProtocol.EAGER,
    )
    assert eager.owned_partitions == ()
    with pytest.raises(ValueError, match="COOPERATIVE"):
        client_subscription("range", "c1", ["t1"], rebalance_protocol=RebalanceProtocol.COOPERATIVE)


def test_new_client_has_no_generation() -> None:
    m = client_subscription("cooperative-sticky", "c1", ["t"], group_instance_id="i1", rack="r1")
    assert (m.generation_id, m.owned_partitions, m.group_instance_id, m.rack) == (None, (), "i1", "r1")


# ---- java_compat helpers -------------------------------------------------------------------------------------


def test_topic_partition_hash_code_matches_java() -> None:
    # new TopicPartition("topic", 0).hashCode() == 110547184 on a JVM: 31 * (31 + 0) + "topic".hashCode().
    assert topic_partition_hash_code("topic", 0) == 110547184
    assert topic_partition_hash_code("mhqwvlgi", 5) == -2147482891  # "mhqwvlgi".hashCode() = 2147483289: the sum wraps


def test_string_hash_code_matches_java() -> None:
    # Values of String.hashCode() on a JVM; "polygenelubricants" wraps to Integer.MIN_VALUE.
    assert string_hash_code("") == 0
    assert string_hash_code("hello") == 99162322
    assert string_hash_code("polygenelubricants") == -2**31
    # Outside the BMP a character is two UTF-16 code units (0xD83D, 0xDE00): 0xD83D * 31 + 0xDE00.
    assert string_hash_code("\U0001F600") == 1772899
    assert string_hash_code("\u00e9t\u00e9") == string_hash_code("\u00e9t\u00e9")  # remembered: same answer
    assert string_hash_code("\u00e9t\u00e9") == (0xE9 * 31 + ord("t")) * 31 + 0xE9


def test_string_hash_code_of_long_strings_matches_the_step_by_step_recurrence() -> None:
    # Longer than any string hashed before in the process: the powers of 31 it needs are grown on demand.
    for text in ("consumer-" * 300 + "\U0001F600\u00e9", "x" * 5_000, "a", "\uffff" * 17):
        data = text.encode("utf-16-be")
        h = 0
        for i in range(0, len(data), 2):
            h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
        assert string_hash_code(text) == (h - 2**32 if h >= 2**31 else h)


def test_java_hash_set_iterates_by_bucket_then_insertion() -> None:
    s: JavaHashSet[str] = JavaHashSet()
    for key in ("consumer1", "consumer2", "consumer3"):
        s.add(key)
    assert list(s) == ["consumer3", "consumer2", "consumer1"] and s.first() == "consumer3"
    s.discard("consumer3")
    assert s.first() == "consumer2" and len(s) == 2 and "consumer1" in s
    with pytest.raises(KeyError):
        JavaHashSet().first()
