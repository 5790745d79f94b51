"""RangeAssignor: worked examples, and cases ported from Kafka's RangeAssignorTest (the rack-free ones),
with the exact lists Kafka expects."""

from __future__ import annotations

import pytest

from state.assignors import assign

from .helpers import fresh, tps

# Each case runs on the Python reference and on the native engine (tests/state/conftest.py).
pytestmark = pytest.mark.usefixtures("core")

T1, T2 = "topic1", "topic2"


def test_one_topic_ten_partitions_three_consumers_is_4_3_3() -> None:
    members = [fresh(c, ["t"]) for c in ("c0", "c1", "c2")]
    assert assign("range", members, {"t": 10}) == {
        "c0": tps("t-0 t-1 t-2 t-3"),
        "c1": tps("t-4 t-5 t-6"),
        "c2": tps("t-7 t-8 t-9"),
    }


def test_two_topics_give_the_first_consumer_both_extras() -> None:
    members = [fresh(c, ["a", "b"]) for c in ("c0", "c1", "c2")]
    result = assign("range", members, {"a": 10, "b": 10})
    assert {m: len(p) for m, p in result.items()} == {"c0": 8, "c1": 6, "c2": 6}
    assert result["c0"] == tps("a-0 a-1 a-2 a-3 b-0 b-1 b-2 b-3")


def test_member_ids_sort_like_java_string_compare_to() -> None:
    # "consumer-10" < "consumer-2" in String.compareTo, so it gets the extra partition.
    members = [fresh("consumer-2", ["t"]), fresh("consumer-10", ["t"])]
    assert assign("range", members, {"t": 3}) == {"consumer-2": tps("t-2"), "consumer-10": tps("t-0 t-1")}


def test_static_members_first_ordered_by_instance_id() -> None:
    members = [
        fresh("a-dynamic", ["t"]),
        fresh("z-static", ["t"], instance="instance-1"),
        fresh("b-static", ["t"], instance="instance-2"),
    ]
    result = assign("range", members, {"t": 6})
    assert result == {"a-dynamic": tps("t-4 t-5"), "z-static": tps("t-0 t-1"), "b-static": tps("t-2 t-3")}


def test_member_list_follows_kafkas_topic_map_order() -> None:
    # partitionsPerTopic is a HashMap: "topic1" (bucket 0) iterates before "topic0" (bucket 3) at capacity 16.
    members = [fresh("c", ["topic0", "topic1"])]
    assert assign("range", members, {"topic0": 1, "topic1": 1}) == {"c": tps("topic1-0 topic0-0")}


def test_unknown_and_empty_topics_are_skipped() -> None:
    members = [fresh("c1", ["t", "ghost", "empty"]), fresh("c2", [])]
    assert assign("range", members, {"t": 2, "empty": 0}) == {"c1": tps("t-0 t-1"), "c2": []}


# ---- ported from RangeAssignorTest ----------------------------------------------------------------------


def test_one_consumer_no_topic() -> None:
    assert assign("range", [fresh("consumer1", [])], {}) == {"consumer1": []}


def test_one_consumer_nonexistent_topic() -> None:
    assert assign("range", [fresh("consumer1", [T1])], {}) == {"consumer1": []}


def test_one_consumer_one_topic() -> None:
    assert assign("range", [fresh("consumer1", [T1])], {T1: 3}) == {"consumer1": tps("topic1-0 topic1-1 topic1-2")}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    result = assign("range", [fresh("consumer1", [T1])], {T1: 3, "other": 3})
    assert result == {"consumer1": tps("topic1-0 topic1-1 topic1-2")}


def test_one_consumer_multiple_topics() -> None:
    result = assign("range", [fresh("consumer1", [T1, T2])], {T1: 1, T2: 2})
    assert sorted(result["consumer1"]) == tps("topic1-0 topic2-0 topic2-1")


def test_two_consumers_one_topic_one_partition() -> None:
    result = assign("range", [fresh("consumer1", [T1]), fresh("consumer2", [T1])], {T1: 1})
    assert result == {"consumer1": tps("topic1-0"), "consumer2": []}


def test_two_consumers_one_topic_two_partitions() -> None:
    result = assign("range", [fresh("consumer1", [T1]), fresh("consumer2", [T1])], {T1: 2})
    assert result == {"consumer1": tps("topic1-0"), "consumer2": tps("topic1-1")}


def test_multiple_consumers_mixed_topics() -> None:
    members = [fresh("consumer1", [T1]), fresh("consumer2", [T1, T2]), fresh("consumer3", [T1])]
    result = assign("range", members, {T1: 3, T2: 2})
    assert result == {
        "consumer1": tps("topic1-0"),
        "consumer2": tps("topic1-1 topic2-0 topic2-1"),
        "consumer3": tps("topic1-2"),
    }


def test_two_consumers_two_topics_six_partitions() -> None:
    members = [fresh("consumer1", [T1, T2]), fresh("consumer2", [T1, T2])]
    result = assign("range", members, {T1: 3, T2: 3})
    assert result == {
        "consumer1": tps("topic1-0 topic1-1 topic2-0 topic2-1"),
        "consumer2": tps("topic1-2 topic2-2"),
    }


def test_two_static_consumers_compare_instance_ids_not_member_ids() -> None:
    members = [fresh("consumer-b", [T1, T2], "instance1"), fresh("consumer-a", [T1, T2], "instance2")]
    result = assign("range", members, {T1: 3, T2: 3})
    assert result == {
        "consumer-b": tps("topic1-0 topic1-1 topic2-0 topic2-1"),
        "consumer-a": tps("topic1-2 topic2-2"),
    }


def test_static_consumer_beats_dynamic_consumer() -> None:
    members = [fresh("consumer-b", [T1, T2], "instance1"), fresh("consumer-a", [T1, T2])]
    result = assign("range", members, {T1: 3, T2: 3})
    assert result["consumer-b"] == tps("topic1-0 topic1-1 topic2-0 topic2-1")


def test_static_member_assignment_persists_when_a_dynamic_member_is_replaced() -> None:
    static = [fresh(f"consumer{i}", [T1, T2], f"instance{i}") for i in (1, 2, 3)]
    expected = {
        "consumer1": tps("topic1-0 topic1-1 topic2-0"),
        "consumer2": tps("topic1-2 topic2-1"),
        "consumer3": tps("topic1-3 topic2-2"),
    }
    counts = {T1: 5, T2: 4}
    first = assign("range", static + [fresh("consumer4", [T1, T2])], counts)
    assert first == {**expected, "consumer4": tps("topic1-4 topic2-3")}
    second = assign("range", static + [fresh("consumer5", [T1, T2])], counts)
    assert second == {**expected, "consumer5": tps("topic1-4 topic2-3")}


def test_static_member_assignment_persists_after_member_ids_change() -> None:
    counts = {T1: 5, T2: 5}
    members = [fresh(f"consumer{i}", [T1, T2], f"instance{i}") for i in (1, 2, 3)]
    by_instance = {m.group_instance_id: assign("range", members, counts)[m.member_id] for m in members}
    assert {k: sorted(v) for k, v in by_instance.items()} == {
        "instance1": tps("topic1-0 topic1-1 topic2-0 topic2-1"),
        "instance2": tps("topic1-2 topic1-3 topic2-2 topic2-3"),
        "instance3": tps("topic1-4 topic2-4"),
    }
    renamed = [fresh("consumer1", [T1, T2], "instance1"), fresh("consumer5", [T1, T2], "instance2"),
               fresh("consumer4", [T1, T2], "instance3")]
    result = assign("range", renamed, counts)
    assert {m.group_instance_id: result[m.member_id] for m in renamed} == by_instance
