"""state.consumer_protocol: Kafka's ConsumerProtocol bytes exactly, round trips of every version, the
sticky userData layouts, and damaged input (cases after Kafka's ConsumerProtocolTest)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.consumer_protocol import (
    HIGHEST_VERSION,
    Assignment,
    ConsumerProtocolError,
    StickyUserData,
    Subscription,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    decode_version,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)

from .helpers import tp, tps


def h(spaced_hex: str) -> bytes:
    return bytes.fromhex(spaced_hex.replace(" ", ""))


# ---- bytes produced by Kafka's ConsumerProtocol serializer ------------------------------------------------------


def test_subscription_v3_topic_only() -> None:
    assert encode_subscription(Subscription(("t1",))) == h("0003 00000001 0002 7431 ffffffff 00000000 ffffffff ffff")


def test_subscription_v3_everything() -> None:
    sub = Subscription(("t2", "t1"), None, tps("t1-1 t1-0"), 5, "r1")
    assert encode_subscription(sub) == h(
        "0003 00000002 0002 7431 0002 7432 ffffffff 00000001 0002 7431 00000002 00000000 00000001 00000005 0002 7231"
    )


def test_assignment_v3() -> None:
    assert encode_assignment(Assignment(tps("t1-0 t1-1"))) == h("0003 00000001 0002 7431 00000002 00000000 00000001 ffffffff")


def test_assignment_v0_empty() -> None:
    assert encode_assignment(Assignment(()), version=0) == h("0000 00000000 ffffffff")


# ---- round trips ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(HIGHEST_VERSION + 1))
def test_subscription_round_trip_keeps_the_fields_of_its_version(version: int) -> None:
    sub = Subscription(("foo", "bar"), b"hello", tps("foo-0 bar-0"), 1, "rack-a")
    decoded = decode_subscription(encode_subscription(sub, version))
    assert decode_version(encode_subscription(sub, version)) == version
    assert decoded.topics == ("bar", "foo")  # written sorted
    assert decoded.user_data == b"hello"
    assert decoded.owned_partitions == (tuple(tps("bar-0 foo-0")) if version >= 1 else ())
    assert decoded.generation_id == (1 if version >= 2 else None)
    assert decoded.rack_id == ("rack-a" if version >= 3 else None)


@pytest.mark.parametrize("version", range(HIGHEST_VERSION + 1))
def test_assignment_round_trip(version: int) -> None:
    asg = Assignment(tps("foo-1 bar-2"), b"hello")
    assert decode_assignment(encode_assignment(asg, version)) == asg


def test_null_and_empty_user_data_stay_distinct() -> None:
    assert decode_subscription(encode_subscription(Subscription(("a",), None))).user_data is None
    assert decode_subscription(encode_subscription(Subscription(("a",), b""))).user_data == b""
    assert decode_assignment(encode_assignment(Assignment(tps("a-0"), None))).user_data is None


def test_subscription_writer_orders_topics_and_owned_partitions() -> None:
    a = encode_subscription(Subscription(("foo", "bar"), None, tps("foo-1 bar-2")))
    b = encode_subscription(Subscription(("bar", "foo"), None, tps("bar-2 foo-1")))
    assert a == b


def test_assignment_groups_a_topic_at_its_first_appearance() -> None:
    data = encode_assignment(Assignment(tps("b-0 a-0 b-1")))
    assert data == h("0003 00000002 0001 62 00000002 00000000 00000001 0001 61 00000001 00000000 ffffffff")
    assert decode_assignment(data).partitions == tuple(tps("b-0 b-1 a-0"))


def test_generation_absent_or_negative_is_none_and_written_as_minus_one() -> None:
    assert Subscription(("a",), generation_id=-1).generation_id is None
    assert encode_subscription(Subscription(("a",)), 2)[-4:] == h("ffffffff")


def test_empty_rack_reads_as_absent() -> None:
    assert decode_subscription(encode_subscription(Subscription(("a",), rack_id=""))).rack_id is None


def test_higher_versions_are_read_as_the_highest_known_and_trailing_fields_ignored() -> None:
    # deserializeFutureSubscriptionVersion / deserializeFutureAssignmentVersion: version 100 with extra fields.
    sub = encode_subscription(Subscription(("topic",), b"", tps("bar-2"), 1, "rack-a"))
    future = h("0064") + sub[2:] + h("0003 626172")
    decoded = decode_subscription(future)
    assert (decoded.topics, decoded.owned_partitions, decoded.generation_id, decoded.rack_id) == (
        ("topic",), tuple(tps("bar-2")), 1, "rack-a")
    asg = encode_assignment(Assignment(tps("foo-1"), b""))
    assert decode_assignment(h("0064") + asg[2:] + h("0003 626172")).partitions == tuple(tps("foo-1"))


def test_newer_blob_read_as_v0_gives_only_v0_fields() -> None:
    # deserializeNewSubscriptionWithOldVersion: patch the version header of a v3 blob down to 0.
    data = encode_subscription(Subscription(("foo", "bar"), None, tps("bar-2"), 1, "rack-a"))
    decoded = decode_subscription(h("0000") + data[2:])
    assert decoded == Subscription(("bar", "foo"))


def test_writing_a_version_above_the_highest_writes_the_highest() -> None:
    assert encode_subscription(Subscription(("a",)), 7) == encode_subscription(Subscription(("a",)), HIGHEST_VERSION)


# ---- assignor userData ------------------------------------------------------------------------------------------


def test_sticky_user_data_v1_groups_topics_in_java_hash_map_order() -> None:
    # groupPartitionsByTopic uses a HashMap: "topic1" (bucket 0) before "topic0" (bucket 3).
    data = encode_sticky_user_data(tps("topic0-1 topic1-0 topic0-0"), 7)
    assert data == h("00000002 0006 746f70696331 00000001 00000000 0006 746f70696330 00000002 00000001 00000000 00000007")
    assert decode_sticky_user_data(data) == StickyUserData(tuple(tps("topic1-0 topic0-1 topic0-0")), 7)


def test_sticky_user_data_v0_has_no_generation() -> None:
    data = encode_sticky_user_data(tps("t-0"), None, version=0)
    assert decode_sticky_user_data(data) == StickyUserData((tp("t", 0),), None)


def test_cooperative_user_data_is_one_int32() -> None:
    assert encode_cooperative_user_data(10) == h("0000000a")
    assert decode_cooperative_user_data(h("ffffffff")) == -1


# ---- damaged input ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "version"),
        (h("ffff 00000000"), "Unsupported subscription version"),
        (h("0000 ffffffff"), "non-nullable field topics"),
        (h("0000 7fffffff"), "claims 2147483647 elements"),
        (h("0000 00000001 0005 61"), "topics needs 5 bytes"),
        (h("0001 00000000 ffffffff 00000001 0001 61 00000001 0000"), "owned_partitions.partitions needs 4 bytes"),
    ],
)
def test_damaged_subscriptions_raise_a_value_error(data: bytes, message: str) -> None:
    with pytest.raises(ConsumerProtocolError, match=message):
        decode_subscription(data)


def test_damaged_user_data_raises() -> None:
    with pytest.raises(ValueError):
        decode_sticky_user_data(h("00000001 0001"))
    with pytest.raises(ValueError):
        decode_cooperative_user_data(h("0001"))


def test_unencodable_values_raise_a_value_error() -> None:
    with pytest.raises(ConsumerProtocolError, match="longer than"):
        encode_subscription(Subscription(("x" * 40000,)))
    with pytest.raises(ConsumerProtocolError, match="int32"):
        encode_assignment(Assignment((tp("t", 2**31),)))
    with pytest.raises(ConsumerProtocolError, match="version"):
        encode_subscription(Subscription(("a",)), -1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_value_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment, decode_sticky_user_data, decode_cooperative_user_data):
        try:
            decode(data)
        except ValueError:
            pass


topic_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=6)
partition_lists = st.lists(st.tuples(topic_names, st.integers(-(2**31), 2**31 - 1)), max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(topic_names, max_size=5),
    st.one_of(st.none(), st.binary(max_size=8)),
    partition_lists,
    st.integers(-1, 2**31 - 1),
    st.one_of(st.none(), topic_names),
)
def test_subscription_round_trip_property(topics, user_data, owned, generation, rack) -> None:
    sub = Subscription(tuple(topics), user_data, tuple(owned), generation, rack)
    decoded = decode_subscription(encode_subscription(sub))
    assert sorted(decoded.topics) == sorted(sub.topics)
    assert sorted(decoded.owned_partitions) == sorted(sub.owned_partitions)
    assert (decoded.user_data, decoded.generation_id, decoded.rack_id) == (user_data, sub.generation_id, rack or None)
