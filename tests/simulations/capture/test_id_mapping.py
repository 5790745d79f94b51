"""The member-id mapping on its own: what it learns from a response pair and how it rewrites later requests;
then, end to end on a tiny hand-made capture, that a replay survives any subset of the captured requests."""

from __future__ import annotations

import base64
import dataclasses

from hypothesis import given, settings, strategies as st

from simulations.capture.captured import empty_row
from simulations.capture.replay import RETRY_SUFFIX, IdMap, replay_captured
from state.config import CoordinatorConfig
from state.events import parse_event

from .kafka_bytes import subscription

SUBSCRIPTION = base64.b64encode(subscription(["orders"])).decode()


def captured(request_id, api="JoinGroup", connection="c1", **fields):
    return {**empty_row(), "request_id": request_id, "api": api, "connection": connection, **fields}


def join(request_id, member_id="", client_id="app", instance=None, ts=0):
    return parse_event({"ts": ts, "group_id": "g", "type": "JOIN_GROUP", "request_id": request_id,
                        "client_id": client_id, "member_id": member_id, "group_instance_id": instance,
                        "protocol_type": "consumer", "session_timeout_ms": 10_000,
                        "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]})


def heartbeat(request_id, member_id, generation, client_id="app", ts=0):
    return parse_event({"ts": ts, "group_id": "g", "type": "HEARTBEAT", "request_id": request_id,
                        "client_id": client_id, "member_id": member_id, "generation_id": generation})


def response(member_id, generation=1, error="NONE"):
    return {"api": "JoinGroup", "member_id": member_id, "generation_id": generation, "error": error}


def test_a_broker_id_reused_by_another_client_maps_per_client():
    # librdkafka's mock hands out memory addresses: a dead member's id comes back for the next one
    ids = IdMap({"j1": captured("j1", connection="c1", member_id="0x1", generation_id=2, error="NONE"),
                 "j2": captured("j2", connection="c2", member_id="0x1", generation_id=3, error="NONE"),
                 "h1": captured("h1", api="Heartbeat", connection="c1"),
                 "h2": captured("h2", api="Heartbeat", connection="c2")})
    ids.learn(join("j1"), response("app-aaa", 1))
    ids.learn(join("j2"), response("app-bbb", 2))
    assert ids.rewrite(heartbeat("h1", "0x1", 2)).member_id == "app-aaa"
    assert ids.rewrite(heartbeat("h2", "0x1", 3)).member_id == "app-bbb"
    assert ids.rewrite(heartbeat("h2", "0x1", 3)).generation_id == 2


def test_unknown_captured_ids_join_as_new_members_and_stay_as_they_are_elsewhere():
    ids = IdMap({"j": captured("j"), "h": captured("h", api="Heartbeat")})
    assert ids.rewrite(join("j", member_id="0x9")).member_id == ""
    rewritten = ids.rewrite(heartbeat("h", "0x9", 4))
    assert (rewritten.member_id, rewritten.generation_id) == ("0x9", 4)  # answered on its merits


def test_requests_without_a_captured_response_pass_unchanged():
    ids = IdMap({})
    event = join("mine", member_id="app-123")
    assert ids.rewrite(event) is event


def test_the_member_id_required_round_is_retried_only_when_the_broker_skipped_it():
    skipped = IdMap({"j": captured("j", member_id="0x1", generation_id=2, error="NONE")})
    assert skipped.learn(join("j"), response("app-aaa", -1, "MEMBER_ID_REQUIRED")) == "app-aaa"
    assert skipped.learn(join("j" + RETRY_SUFFIX, "app-aaa"), response("app-aaa", -1, "MEMBER_ID_REQUIRED")) is None
    kafka = IdMap({"j": captured("j", member_id="broker-1", error="MEMBER_ID_REQUIRED")})
    assert kafka.learn(join("j"), response("app-aaa", -1, "MEMBER_ID_REQUIRED")) is None
    assert kafka.member("broker-1") == "app-aaa"  # the client's second JoinGroup will carry broker-1


def test_static_members_are_known_by_instance_id_across_connections():
    ids = IdMap({"j": captured("j", connection="c1", member_id="0x1", generation_id=2, error="NONE"),
                 "l": captured("l", api="LeaveGroup", connection="c9")})
    ids.learn(join("j", instance="i-1"), response("i-1-aaa", 1))
    leave = parse_event({"ts": 0, "group_id": "g", "type": "LEAVE_GROUP", "request_id": "l", "api_version": 3,
                         "members": [{"member_id": "0x1", "group_instance_id": "i-1"}]})
    assert ids.rewrite(leave).members[0].member_id == "i-1-aaa"


def two_member_capture():
    """Two dynamic members answered by a broker that skips MEMBER_ID_REQUIRED and numbers from 2."""
    rows, events = [], []

    def add(event, **answer):
        events.append(event)
        rows.append(captured(event.request_id, api={"JOIN_GROUP": "JoinGroup", "SYNC_GROUP": "SyncGroup",
                                                    "HEARTBEAT": "Heartbeat"}[event.type],
                             connection=event.client_id, **answer))

    add(join("a1", client_id="a", ts=0), member_id="A", generation_id=2, leader_id="A", error="NONE")
    add(join("b1", client_id="b", ts=100), member_id="B", generation_id=2, leader_id="A", error="NONE")
    plan = [{"member_id": "A", "partitions": [{"topic": "orders", "partitions": [0]}]},
            {"member_id": "B", "partitions": [{"topic": "orders", "partitions": [1]}]}]
    for member, client, ts in (("A", "a", 3000), ("B", "b", 3001)):
        add(parse_event({"ts": ts, "group_id": "g", "type": "SYNC_GROUP", "request_id": f"{client}2",
                         "client_id": client, "member_id": member, "generation_id": 2,
                         "assignments": plan if member == "A" else []}), error="NONE", generation_id=2)
    for i in range(6):
        for member, client in (("A", "a"), ("B", "b")):
            add(heartbeat(f"{client}h{i}", member, 2, client_id=client, ts=4000 + 1000 * i), error="NONE",
                generation_id=2, member_id=member)
    return events, rows


def test_a_tiny_capture_replays_cleanly():
    events, rows = two_member_capture()
    result = replay_captured(events, rows, CoordinatorConfig(group_initial_rebalance_delay_ms=1000))
    answers = {r["request_id"]: r for r in result.tables["responses"]}
    assert {answers[f"{c}h{i}"]["error"] for c in "ab" for i in range(6)} == {"NONE"}
    assert [(r["member_id"].split("-")[0], r["partition"]) for r in result.tables["assignments"]] == [("a", 0), ("b", 1)]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_subset_of_a_capture_is_answered_on_its_merits(data):
    events, rows = two_member_capture()
    kept = data.draw(st.lists(st.sampled_from(range(len(events))), unique=True))
    shift = data.draw(st.integers(-3, 3))
    chosen = [dataclasses.replace(events[i], ts=max(0, events[i].ts + shift * 700)) for i in sorted(kept)]
    result = replay_captured(chosen, rows, CoordinatorConfig(group_initial_rebalance_delay_ms=1000))
    answered = {r["request_id"].removesuffix(RETRY_SUFFIX) for r in result.tables["responses"]}
    assert answered == {e.request_id for e in chosen}
    assert result.tables["rejects"] == []
