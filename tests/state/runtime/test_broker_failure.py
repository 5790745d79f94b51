"""Synthetic consumers when their coordinator's broker fails or the group's partition changes leader: which
broker answers (`coordinator_id`), what clients see (failed connections while the failed broker is still
named, written as NETWORK_EXCEPTION rows; COORDINATOR_NOT_AVAILABLE while no replica is live) and how they
carry on; where their lookups go (`node_id`)."""

from __future__ import annotations

import pytest

from state.events import EventError, parse_event
from tests.state.harness import GroupContext
from tests.state.clients.test_fleet import start
from tests.state.clients.test_coordinator_discovery import requests_after, stable_fleet


def led_by(broker: int, n: int = 3, live: list[int] | None = None) -> GroupContext:
    """A stable fleet whose group's partition broker `broker` leads from the start (`live`: the brokers up)."""
    ctx = GroupContext()
    ctx.fault(fault="move", coordinator_id=broker)
    if live is not None:
        ctx.fault(fault="live_brokers", brokers=live)
    start(ctx, n)
    ctx.sleep(20_000)
    assert ctx.state == "Stable"
    return ctx


def test_the_first_leader_only_names_the_coordinator():
    ctx = led_by(4)
    rows = [r for table in ("responses", "generations", "group_states", "members") for r in ctx.rows(table)]
    assert rows and {r["coordinator_id"] for r in rows} == {4}
    assert [r["cause"] for r in ctx.rows("group_states")][0] != "coordinator_load"
    assert not [r for r in ctx.rows("responses") if r["api"] == "FindCoordinator"]


def test_without_a_named_broker_rows_have_no_coordinator_id():
    ctx = stable_fleet()
    assert {r["coordinator_id"] for r in ctx.rows("responses")} == {None}


def test_a_crash_then_fencing_moves_the_group_and_every_client_follows():
    ctx = led_by(1)
    generation = ctx.group.generation_id
    crashed = ctx.time
    ctx.fault(fault="crash")
    assert ctx.group is None
    ctx.sleep(9_000)  # broker.session.timeout.ms: the controller fences broker 1
    fenced = ctx.time
    ctx.fault(fault="move", coordinator_id=3, load_delay_ms=500)
    ctx.sleep(60_000)
    assert ctx.state == "Stable" and ctx.group.generation_id == generation
    gap = [r for r in ctx.rows("responses") if crashed <= r["request_ts"] < fenced]
    # Broker 1 answers nothing once down: the lookups answered meanwhile still name it, and the heartbeats and
    # commits sent to it fail to connect (the clients' NETWORK_EXCEPTION rows, at the broker they went to).
    assert {(r["api"], r["error"], r["coordinator_id"]) for r in gap} == {
        ("FindCoordinator", "NONE", 1), ("Heartbeat", "NETWORK_EXCEPTION", 1), ("OffsetCommit", "NETWORK_EXCEPTION", 1)}
    refused = {r["request_id"] for r in gap if r["error"] == "NETWORK_EXCEPTION"}
    assert not refused & {r["request_id"] for r in ctx.rows("requests")}  # they reached no broker
    after = [r for r in ctx.rows("responses") if r["request_ts"] >= fenced + 500]
    assert {r["coordinator_id"] for r in after} == {3}
    assert sorted(requests_after(ctx, fenced + 10_000)) == ["c0", "c1", "c2"]
    assert all(c.alive and c.phase.value == "STABLE" for c in ctx.runtime.fleet.clients.values())
    states = [(r["to_state"], r["cause"], r["coordinator_id"]) for r in ctx.rows("group_states")]
    assert ("Dead", "coordinator_unload", 1) in states and ("Stable", "coordinator_load", 3) in states


def test_lookups_name_the_failed_broker_until_it_is_fenced_and_go_on_meanwhile():
    ctx = led_by(1, n=1)
    crashed = ctx.time
    ctx.fault(fault="crash")
    ctx.sleep(9_000)
    finds = [r for r in ctx.rows("responses") if r["api"] == "FindCoordinator" and r["request_ts"] >= crashed]
    times = [r["request_ts"] for r in finds]
    # Each lookup names broker 1, the connection to it fails, and the client looks up again after
    # retry.backoff.ms (the heartbeat thread's constant backoff) and a round trip.
    assert {(r["error"], r["coordinator_id"]) for r in finds} == {("NONE", 1)}
    assert len(times) >= 20 and max(b - a for a, b in zip(times, times[1:])) <= 1_200 + 100


def test_requests_to_a_down_broker_are_failed_connections_and_every_failed_commit_is_a_row():
    ctx = led_by(1, n=3)
    ctx.fault(fault="crash")
    ctx.sleep(9_000)
    ctx.fault(fault="move", coordinator_id=2, load_delay_ms=300)
    ctx.sleep(30_000)
    responses = ctx.rows("responses")
    refused = [r for r in responses if r["error"] == "NETWORK_EXCEPTION"]
    # Heartbeats and commits sent to broker 1 while down: the request's fields, the broker it went to, no answer.
    assert {r["api"] for r in refused} == {"Heartbeat", "OffsetCommit"}
    assert all(r["response_ts"] == r["request_ts"] and (r["coordinator_id"], r["node_id"]) == (1, 1)
               and r["results"] is None and r["member_id"] for r in refused)
    assert not {r["request_id"] for r in refused} & {r["request_id"] for r in ctx.rows("requests")}
    failed = [r for r in responses if r["api"] == "OffsetCommit" and r["error"] != "NONE"]
    ctx.runtime.finish()
    ctx.sleep(0)
    (metrics,) = ctx.rows("metrics")
    assert metrics["failed_commits"] == sum(r["repeat_count"] for r in failed) > 0
    assert metrics["unsent_commits"] == 0


def lookup_nodes(live_after_crash: list[int]) -> list[tuple[int, int | None]]:
    """(request_ts, node_id) of the lookups while broker 1, which led the group, is down (brokers 1-4)."""
    ctx = led_by(1, live=[1, 2, 3, 4])
    crashed = ctx.time
    ctx.fault(fault="crash")
    ctx.fault(fault="live_brokers", brokers=live_after_crash)
    ctx.sleep(9_000)
    return [(r["request_ts"], r["node_id"]) for r in ctx.rows("responses")
            if r["api"] == "FindCoordinator" and r["request_ts"] >= crashed]


def test_a_lookup_goes_to_a_broker_that_is_up_drawn_from_the_client_and_the_request():
    # NetworkClient.leastLoadedNode: a node with a ready connection, from a random offset; never one whose
    # connection was refused (in reconnect backoff). The draw is the group's and the request's: runs repeat.
    nodes = lookup_nodes([2, 3, 4])
    assert len(nodes) > 50 and {node for _, node in nodes} == {2, 3, 4}
    assert nodes == lookup_nodes([2, 3, 4])
    assert {node for _, node in lookup_nodes([3])} == {3}


def test_without_the_brokers_up_a_lookup_has_no_node():
    ctx = led_by(1, n=1)
    ctx.fault(fault="crash")
    ctx.sleep(2_000)
    finds = [r for r in ctx.rows("responses") if r["api"] == "FindCoordinator"]
    assert finds and {(r["coordinator_id"], r["node_id"]) for r in finds} == {(1, None)}


def test_joins_parked_at_a_failed_broker_fail_to_connect_and_are_sent_again():
    ctx = GroupContext()
    ctx.fault(fault="move", coordinator_id=2)
    start(ctx, 3)
    ctx.sleep(1_000)  # inside the initial rebalance delay: JoinGroups are parked at broker 2
    crashed = ctx.time
    ctx.fault(fault="crash")
    joins = [r for r in ctx.rows("responses") if r["api"] == "JoinGroup" and r["error"] != "MEMBER_ID_REQUIRED"]
    # No broker answered them: the connection they waited on dropped when broker 2 failed.
    assert len(joins) == 3 and {(r["error"], r["response_ts"], r["coordinator_id"]) for r in joins} == {
        ("NETWORK_EXCEPTION", crashed, 2)}
    assert {r["request_id"] for r in joins} <= {r["request_id"] for r in ctx.rows("requests")}  # broker 2 had them
    ctx.sleep(9_000)
    ctx.fault(fault="move", coordinator_id=1)
    ctx.sleep(60_000)
    assert ctx.state == "Stable"
    assert sorted(m.client_id for m in ctx.group.all_members()) == ["c0", "c1", "c2"]
    assert {r["coordinator_id"] for r in ctx.rows("generations")} == {1}


def test_a_partition_without_a_live_replica_has_no_coordinator_until_one_returns():
    ctx = led_by(1)
    ctx.fault(fault="crash")
    ctx.sleep(9_000)
    ctx.fault(fault="move", coordinator_id=-1)  # fenced, and no other replica in sync
    orphaned = ctx.time
    ctx.sleep(30_000)
    finds = [r for r in ctx.rows("responses") if r["api"] == "FindCoordinator" and r["request_ts"] >= orphaned]
    assert finds and {(r["error"], r["coordinator_id"]) for r in finds} == {("COORDINATOR_NOT_AVAILABLE", None)}
    # Besides the lookups, only the heartbeats the lookups answered just before the fencing sent to broker 1.
    assert {(r["api"], r["error"], r["coordinator_id"]) for r in ctx.rows("responses") if r["request_ts"] >= orphaned
            and r["api"] != "FindCoordinator"} <= {("Heartbeat", "NETWORK_EXCEPTION", 1)}
    ctx.fault(fault="move", coordinator_id=1)  # broker 1 is back and in sync: it leads again
    back = ctx.time
    ctx.sleep(60_000)
    assert ctx.state == "Stable"
    assert sorted(requests_after(ctx, back + 10_000)) == ["c0", "c1", "c2"]


def test_not_coordinator_comes_from_the_broker_that_lost_the_partition():
    ctx = led_by(1, n=1)
    ctx.fault(fault="move", coordinator_id=2, load_delay_ms=1_000)
    ctx.sleep(10_000)
    not_coordinator = [r for r in ctx.rows("responses") if r["error"] == "NOT_COORDINATOR"]
    assert not_coordinator and {r["coordinator_id"] for r in not_coordinator} == {1}
    loading = [r for r in ctx.rows("responses") if r["error"] == "COORDINATOR_LOAD_IN_PROGRESS"]
    assert {r["coordinator_id"] for r in loading} <= {2}


def test_a_close_without_a_coordinator_gives_up_after_the_close_timeout():
    ctx = led_by(1, n=1)
    ctx.fault(fault="crash")
    ctx.sleep(9_000)
    ctx.fault(fault="move", coordinator_id=-1)
    ctx.sleep(1_000)
    stopped = ctx.time
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(29_000)
    assert ctx.runtime.fleet.clients["c0"].alive
    ctx.sleep(2_000)
    client = ctx.runtime.fleet.clients["c0"]
    assert not client.alive
    assert {r["api"] for r in ctx.rows("responses") if r["request_ts"] >= stopped} == {"FindCoordinator"}


def test_a_captured_request_while_no_broker_leads_is_answered_coordinator_not_available():
    ctx = GroupContext()
    ctx.fault(fault="move", coordinator_id=-1)
    handle = ctx.join(member_id="")
    assert handle.error == "COORDINATOR_NOT_AVAILABLE"


@pytest.mark.parametrize("fields, message", [
    ({"fault": "move", "coordinator_id": -2}, "field 'coordinator_id'"),
    ({"fault": "move", "coordinator_id": "two"}, "field 'coordinator_id'"),
    ({"fault": "explode"}, "field 'fault' must be one of write_failure, move, crash, live_brokers"),
    ({"fault": "live_brokers"}, "missing required field 'brokers'"),
    ({"fault": "live_brokers", "brokers": [2, 1, 2]}, "field 'brokers' names a broker twice"),
    ({"fault": "live_brokers", "brokers": [-1]}, "field 'brokers'"),
])
def test_a_bad_coordinator_fault_is_a_reject_naming_the_field(fields, message):
    with pytest.raises(EventError, match=message):
        parse_event({"ts": 0, "group_id": "g", "type": "COORDINATOR_FAULT", **fields})
