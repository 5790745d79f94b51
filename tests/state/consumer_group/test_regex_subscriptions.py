"""Regular-expression subscriptions end to end: synthetic consumers with group.protocol=consumer subscribing
with a broker-side pattern (subscribe(SubscriptionPattern)) in closed loop with the coordinator, which
resolves it against the topics it knows (state.consumer_group.regex); and the inputs' checks."""

from __future__ import annotations

import json

import pytest

from state.events import EventError, parse_event
from tests.state.harness import GroupContext

CONSUMER = {"group.protocol": "consumer"}


def owned(ctx: GroupContext) -> dict[str, set[tuple[str, int]]]:
    return {c.client_id: {(tp.topic, tp.partition) for tp in c.owned}
            for c in ctx.runtime.fleet.clients.values() if c.alive}


def regex_records(ctx: GroupContext) -> list[dict]:
    return [r for r in ctx.rows("consumer_group_records") if r["record_type"] == "ConsumerGroupRegularExpression"]


def pattern_group(**broker) -> GroupContext:
    ctx = GroupContext(group_consumer_assignment_interval_ms=0, **broker)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders-eu", "partitions": 2}, {"topic": "orders-us", "partitions": 2},
                                       {"topic": "payments", "partitions": 2}])
    for name in ("c0", "c1"):
        ctx.send("CLIENT_START", client_id=name, topic_pattern="orders-.*", config=CONSUMER)
    ctx.sleep(30_000)
    return ctx


def test_consumer_group_subscribing_with_a_pattern_gets_the_matching_topics_and_a_new_topic_at_the_next_refresh():
    # GroupMetadataManagerTest.testConsumerGroupMemberJoinsWithNewRegex and
    # testConsumerGroupMemberJoinRefreshesExpiredRegexes, end to end.
    ctx = pattern_group()
    held = owned(ctx)
    assert set().union(*held.values()) == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0), ("orders-us", 1)}
    assert all(len(partitions) == 2 for partitions in held.values())
    [resolved] = regex_records(ctx)  # resolved once, at the first member's join
    assert json.loads(resolved["value"])["topics"] == ["orders-eu", "orders-us"]
    epoch = ctx.runtime.consumer_group.group_epoch
    # The heartbeats carried the pattern when joining (topic names empty, as SubscriptionState has none for
    # an RE2J pattern), then nothing of the subscription.
    sent = [json.loads(r["raw"]) for r in ctx.rows("requests") if r["type"] == "CONSUMER_GROUP_HEARTBEAT"]
    joins = [r for r in sent if r["member_epoch"] == 0]
    assert len(joins) == 2 and all(r["subscribed_topic_regex"] == "orders-.*" and r["subscribed_topic_names"] == []
                                   for r in joins)
    assert all("subscribed_topic_regex" not in r for r in sent if r["member_epoch"] > 0)

    # A matching topic is created: the next heartbeat after it (10 s after the last resolution have long
    # passed) resolves the regex again; the group epoch is bumped and orders-ap is assigned.
    created_at = ctx.runtime.now
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders-ap", "partitions": 2}])
    ctx.sleep(30_000)
    records = regex_records(ctx)
    assert len(records) == 2 and records[1]["write_ts"] <= created_at + 5_000 + 100
    assert json.loads(records[1]["value"])["topics"] == ["orders-ap", "orders-eu", "orders-us"]
    assert ctx.runtime.consumer_group.group_epoch == epoch + 1
    held = owned(ctx)
    assert ("orders-ap", 0) in set().union(*held.values()) and ("orders-ap", 1) in set().union(*held.values())
    assert sorted(len(partitions) for partitions in held.values()) == [3, 3]
    # A topic that does not match changes nothing.
    ctx.send("TOPIC_METADATA", topics=[{"topic": "refunds", "partitions": 2}])
    ctx.sleep(30_000)
    assert len(regex_records(ctx)) == 3 and ctx.runtime.consumer_group.group_epoch == epoch + 1


def test_the_regex_is_tombstoned_when_its_last_member_leaves():
    # GroupMetadataManagerTest.testResolvedRegularExpressionsRemovedWhenMembersLeaveOrFenced, end to end.
    ctx = pattern_group()
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(5_000)
    assert regex_records(ctx)[-1]["tombstone"] is False
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(5_000)
    assert regex_records(ctx)[-1]["tombstone"] is True
    # The record's key is the regex: each row names it, the tombstone too.
    assert {r["regex"] for r in regex_records(ctx)} == {"orders-.*"}
    assert ctx.runtime.consumer_group.resolved_regexes == {}


def test_the_periodic_refresh_resolves_the_regexes_again():
    ctx = pattern_group(group_consumer_regex_refresh_interval_ms=60_000)
    before = len(regex_records(ctx))
    ctx.sleep(70_000)
    assert len(regex_records(ctx)) == before + 1  # same topics: a new record, no epoch bump


def test_a_consumer_switches_from_topics_to_a_pattern_with_subscribe():
    ctx = GroupContext(group_consumer_assignment_interval_ms=0)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "a1", "partitions": 2}, {"topic": "b1", "partitions": 2}])
    ctx.send("CLIENT_START", client_id="c0", topics=["a1"], config=CONSUMER)
    ctx.sleep(10_000)
    assert owned(ctx)["c0"] == {("a1", 0), ("a1", 1)}
    ctx.send("SUBSCRIBE", client_id="c0", topic_pattern="b.")
    ctx.sleep(20_000)
    assert owned(ctx)["c0"] == {("b1", 0), ("b1", 1)}


def test_a_run_with_regexes_writes_the_same_rows_through_encode_and_decode():
    # state/runtime/encoding.py: the runtime is stored between micro-batches; the group's regexes, the metadata image
    # versions and the client's pattern must come back (tests/state/runtime/test_encoding.py's check).
    from state.config import CoordinatorConfig
    from state.runtime.group_runtime import GroupRuntime
    config = CoordinatorConfig(group_consumer_assignment_interval_ms=0)
    rows = [directive("TOPIC_METADATA", ts=0, client_id="", topics=[{"topic": "orders-eu", "partitions": 2}]),
            directive("CLIENT_START", ts=1, client_id="c0", topic_pattern="orders-.*", config=CONSUMER),
            directive("CLIENT_START", ts=2, client_id="c1", topic_pattern="orders-.*", config=CONSUMER),
            directive("TOPIC_METADATA", ts=30_000, client_id="", topics=[{"topic": "orders-us", "partitions": 2}])]

    def run(stops):
        runtime, tables = GroupRuntime("g", config), {}
        runtime.offer([parse_event(row, "test", line) for line, row in enumerate(rows)])
        for stop in [*stops, 120_000]:
            runtime.advance_to(stop)
            for name, written in runtime.take_output().tables.items():
                tables.setdefault(name, []).extend(written)
            if stop != 120_000:
                runtime = GroupRuntime.decode(runtime.encode(), config)
        return tables, runtime

    straight, _ = run([])
    stopped, runtime = run([3, 20_000, 30_000, 36_000, 60_000])
    assert stopped == straight
    assert len([r for r in straight["consumer_group_records"]
                if r["record_type"] == "ConsumerGroupRegularExpression"]) == 2
    assert runtime.consumer_group.resolved_regexes["orders-.*"].topics == ("orders-eu", "orders-us")


# ----------------------------------------------------------------------------------------------------------
# Inputs

def directive(etype: str, **fields) -> dict:
    return {"type": etype, "ts": 0, "group_id": "g", "client_id": "c0", **fields}


@pytest.mark.parametrize("fields, message", [
    ({"topic_pattern": "(a", "config": CONSUMER}, "field 'topic_pattern': SubscribedTopicRegex `(a` is not a valid"),
    ({"topic_pattern": r"(a)\1", "config": CONSUMER}, "backreferences are not supported"),
    ({"topic_pattern": "a.*", "topics": ["a"], "config": CONSUMER}, "either 'topics' or 'topic_pattern', not both"),
    ({"topic_pattern": "a.*"}, "field 'topic_pattern' needs config group.protocol=consumer"),
    ({"topic_pattern": "", "config": CONSUMER}, "must be a non-empty regular expression"),
])
def test_bad_patterns_are_one_clear_line(fields, message):
    with pytest.raises(EventError, match=message.replace("(", r"\(").replace("`", ".").replace("\\1", r"\\1")):
        parse_event(directive("CLIENT_START", **fields))


def test_subscribe_with_a_pattern_is_parsed():
    event = parse_event(directive("SUBSCRIBE", topic_pattern="orders-.*"))
    assert (event.topics, event.topic_pattern) == ((), "orders-.*")


def test_a_classic_client_subscribing_to_a_pattern_is_rejected():
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 2}])
    ctx.send("CLIENT_START", client_id="c0", topics=["orders"])
    ctx.sleep(5_000)
    ctx.send("SUBSCRIBE", client_id="c0", topic_pattern="orders.*")
    ctx.sleep(1_000)
    [reject] = ctx.rejected
    assert "topic_pattern" in reject["reason"] and "group.protocol=consumer" in reject["reason"]


def test_a_captured_heartbeat_with_an_invalid_regex_is_answered_invalid_regular_expression():
    # GroupMetadataManagerTest.testConsumerHeartbeatRegexValidation, through the runtime.
    ctx = GroupContext()
    handle = ctx.send("CONSUMER_GROUP_HEARTBEAT", member_id="m1", member_epoch=0, rebalance_timeout_ms=5000,
                      subscribed_topic_regex="[", topic_partitions=[], api_version=1)
    ctx.sleep(1)
    assert handle.error == "INVALID_REGULAR_EXPRESSION"


def test_elided_and_explicit_runs_of_a_group_with_regexes_write_the_same_rows():
    # state/clients/elision.py folds steady heartbeats; any heartbeat of a group with regexes may resolve them again
    # (refresh interval, new topics), so such a group stays explicit and both modes agree, a member
    # subscribing by name included.
    from state.config import CoordinatorConfig
    from tests.state.clients.test_elision import directive as at, simulate
    events = [at(0, "TOPIC_METADATA", 0, topics=[{"topic": "orders-eu", "partitions": 2, "records_per_second": 5},
                                                 {"topic": "payments", "partitions": 2, "records_per_second": 5}]),
              at(0, "CLIENT_START", 1, client_id="c0", topic_pattern="orders-.*", config=CONSUMER),
              at(0, "CLIENT_START", 2, client_id="c1", topics=["payments"], config=CONSUMER),
              at(130_000, "TOPIC_METADATA", 3, topics=[{"topic": "orders-us", "partitions": 2}]),
              at(400_000, "CLIENT_STOP", 4, client_id="c0")]
    settings = {"group_consumer_regex_refresh_interval_ms": 60_000, "group_consumer_assignment_interval_ms": 0}
    explicit, _ = simulate(CoordinatorConfig(coordsim_periodic_elision=0, **settings), events, [], 600_000)
    elided, _ = simulate(CoordinatorConfig(**settings), events, [200_000], 600_000, reencode=True)
    assert elided == explicit
    records = [r for r in explicit["consumer_group_records"] if r["record_type"] == "ConsumerGroupRegularExpression"]
    assert len(records) > 3 and records[-1]["tombstone"]
