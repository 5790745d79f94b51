"""RoundRobinAssignor: worked examples, and cases ported from Kafka's RoundRobinAssignorTest."""

from __future__ import annotations

import pytest

from state.assignors import assign
from state.java_compat import string_hash_code

from .helpers import fresh, tps

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

T1, T2 = "topic1", "topic2"


def test_two_topics_three_consumers_deal_one_by_one() -> None:
    members = [fresh(c, ["a", "b"]) for c in ("c0", "c1", "c2")]
    assert assign("roundrobin", members, {"a": 4, "b": 4}) == {
        "c0": tps("a-0 a-3 b-2"),
        "c1": tps("a-1 b-0 b-3"),
        "c2": tps("a-2 b-1"),
    }


def test_iterator_is_not_reset_between_topics_and_skips_non_subscribers() -> None:
    members = [fresh("c1", ["a", "b"]), fresh("c2", ["a"]), fresh("c3", ["a", "b"])]
    assert assign("roundrobin", members, {"a": 3, "b": 4}) == {
        "c1": tps("a-0 b-0 b-2"),
        "c2": tps("a-1"),
        "c3": tps("a-2 b-1 b-3"),
    }


def test_unequal_subscriptions_can_be_badly_unbalanced() -> None:
    # c1 alone reads "b", so it takes all of b on top of its share of a.
    members = [fresh("c1", ["a", "b"]), fresh("c2", ["a"]), fresh("c3", ["a"])]
    result = assign("roundrobin", members, {"a": 3, "b": 6})
    assert [len(result[m]) for m in ("c1", "c2", "c3")] == [7, 1, 1]


def test_partitions_are_ordered_by_topic_name_not_hash_code() -> None:
    # The old Scala consumer sorted by hashCode; the Java assignor never did. "b".hashCode() = 98 is below
    # "aa".hashCode() = 3104, yet "aa" is dealt first because it sorts first by name.
    assert string_hash_code("b") < string_hash_code("aa")
    members = [fresh("c1", ["aa", "b"]), fresh("c2", ["aa", "b"])]
    assert assign("roundrobin", members, {"aa": 1, "b": 1}) == {"c1": tps("aa-0"), "c2": tps("b-0")}


def test_member_ids_sort_like_java_string_compare_to() -> None:
    members = [fresh("consumer-2", ["t"]), fresh("consumer-10", ["t"])]
    assert assign("roundrobin", members, {"t": 3}) == {"consumer-2": tps("t-1"), "consumer-10": tps("t-0 t-2")}


# ---- ported from RoundRobinAssignorTest ----------------------------------------------------------------


def test_one_consumer_no_topic() -> None:
    assert assign("roundrobin", [fresh("consumer", [])], {}) == {"consumer": []}


def test_one_consumer_nonexistent_topic() -> None:
    assert assign("roundrobin", [fresh("consumer", ["topic"])], {}) == {"consumer": []}


def test_one_consumer_one_topic() -> None:
    assert assign("roundrobin", [fresh("consumer", ["topic"])], {"topic": 3}) == {"consumer": tps("topic-0 topic-1 topic-2")}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    result = assign("roundrobin", [fresh("consumer", ["topic"])], {"topic": 3, "other": 3})
    assert result == {"consumer": tps("topic-0 topic-1 topic-2")}


def test_one_consumer_multiple_topics() -> None:
    result = assign("roundrobin", [fresh("consumer", [T1, T2])], {T1: 1, T2: 2})
    assert result == {"consumer": tps("topic1-0 topic2-0 topic2-1")}


def test_two_consumers_one_topic_one_partition() -> None:
    result = assign("roundrobin", [fresh("consumer1", ["topic"]), fresh("consumer2", ["topic"])], {"topic": 1})
    assert result == {"consumer1": tps("topic-0"), "consumer2": []}


def test_two_consumers_one_topic_two_partitions() -> None:
    result = assign("roundrobin", [fresh("consumer1", ["topic"]), fresh("consumer2", ["topic"])], {"topic": 2})
    assert result == {"consumer1": tps("topic-0"), "consumer2": tps("topic-1")}


def test_multiple_consumers_mixed_topics() -> None:
    members = [fresh("consumer1", [T1]), fresh("consumer2", [T1, T2]), fresh("consumer3", [T1])]
    assert assign("roundrobin", members, {T1: 3, T2: 2}) == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1 topic2-0 topic2-1"),
        "consumer3": tps("topic1-2"),
    }


def test_two_dynamic_consumers_two_topics_six_partitions() -> None:
    members = [fresh("consumer1", [T1, T2]), fresh("consumer2", [T1, T2])]
    assert assign("roundrobin", members, {T1: 3, T2: 3}) == {
        "consumer1": tps("topic1-0 topic1-2 topic2-1"),
        "consumer2": tps("topic1-1 topic2-0 topic2-2"),
    }


def test_two_static_consumers_compare_instance_ids() -> None:
    members = [fresh("consumer-b", [T1, T2], "instance1"), fresh("consumer-a", [T1, T2], "instance2")]
    assert assign("roundrobin", members, {T1: 3, T2: 3}) == {
        "consumer-b": tps("topic1-0 topic1-2 topic2-1"),
        "consumer-a": tps("topic1-1 topic2-0 topic2-2"),
    }


def test_one_static_and_one_dynamic_consumer() -> None:
    members = [fresh("consumer-b", [T1, T2], "instance1"), fresh("consumer-a", [T1, T2])]
    assert assign("roundrobin", members, {T1: 3, T2: 3}) == {
        "consumer-b": tps("topic1-0 topic1-2 topic2-1"),
        "consumer-a": tps("topic1-1 topic2-0 topic2-2"),
    }


def test_static_member_assignment_persists_when_a_dynamic_member_is_replaced() -> None:
    static = [fresh(f"consumer{i}", [T1, T2], f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "consumer1": tps("topic1-0 topic2-1"),
        "consumer2": tps("topic1-1 topic2-2"),
        "consumer3": tps("topic1-2"),
    }
    counts = {T1: 3, T2: 3}
    assert assign("roundrobin", static + [fresh("consumer4", [T1, T2])], counts) == {**expected, "consumer4": tps("topic2-0")}
    assert assign("roundrobin", static + [fresh("consumer5", [T1, T2])], counts) == {**expected, "consumer5": tps("topic2-0")}


def test_static_member_assignment_persists_after_member_ids_change() -> None:
    counts = {T1: 5, T2: 5}
    members = [fresh(f"consumer{i}", [T1, T2], f"instance{i}") for i in (1, 2, 3)]
    result = assign("roundrobin", members, counts)
    by_instance = {m.group_instance_id: result[m.member_id] for m in members}
    assert by_instance == {
        "instance1": tps("topic1-0 topic1-3 topic2-1 topic2-4"),
        "instance2": tps("topic1-1 topic1-4 topic2-2"),
        "instance3": tps("topic1-2 topic2-0 topic2-3"),
    }
    renamed = [fresh("consumer1", [T1, T2], "instance1"), fresh("consumer5", [T1, T2], "instance2"),
               fresh("consumer4", [T1, T2], "instance3")]
    result = assign("roundrobin", renamed, counts)
    assert {m.group_instance_id: result[m.member_id] for m in renamed} == by_instance
