"""The committed capture of KIP-848 consumers (librdkafka, group.protocol=consumer, against librdkafka's mock):
ConsumerGroupHeartbeat v1 decoded into events and captured answers, the topic ids named from the capture's
Metadata responses, and the replay mapping the member epochs the clients echo to the group's own.

The mock's group had members before the capture began, so its epochs run 4 above a fresh group's: replayed
as captured (open loop), nearly every heartbeat is answered FENCED_MEMBER_EPOCH and every commit
STALE_MEMBER_EPOCH; mapped, every answer is NONE and the heartbeats that still differ show where the mock is not
Kafka (it answers a join with epoch 0 until it has an assignment, bumps epochs at other moments, and its
uniform assignor places partitions otherwise)."""

from __future__ import annotations

import dataclasses
from collections import Counter

from simulations.capture.compare import compare_captured
from simulations.engines.local import run_local
from tableio.captured_answers import attach_captured, captured_answers
from tableio.inputs import read_events

from .conftest import CONSUMER_MOCK_CONFIG, needs_tshark

pytestmark = needs_tshark

HEARTBEAT = "ConsumerGroupHeartbeat"


def test_heartbeats_and_commits_are_decoded_and_paired(consumer_capture):
    imported = consumer_capture.imported
    assert imported.rejects == []
    assert {(c["api"], c["api_version"]) for c in imported.captured} == {
        ("FindCoordinator", 2), (HEARTBEAT, 1), ("OffsetCommit", 9), ("OffsetFetch", 6)}
    assert all(c["error"] is not None for c in imported.captured)
    assert Counter(e["type"] for e in imported.events)["CONSUMER_GROUP_HEARTBEAT"] == imported.requests[HEARTBEAT] == 45


def test_the_group_learns_its_topic_from_the_metadata_responses_before_its_first_heartbeat(consumer_capture):
    events = [e for e in consumer_capture.events if e.group_id == consumer_capture.manifest["group_id"]]
    first = events[0]
    assert first.type == "TOPIC_METADATA" and first.topics == ((consumer_capture.manifest["topic"], 4),)
    assert events[1].type == "CONSUMER_GROUP_HEARTBEAT" and first.ts == events[1].ts
    [topic_id] = first.topic_ids.values()
    owned = [e for e in consumer_capture.imported.events
             if e["type"] == "CONSUMER_GROUP_HEARTBEAT" and e["topic_partitions"]]
    assert owned and {(p["topic"], p["topic_id"]) for e in owned for p in e["topic_partitions"]} == {
        ("orders", topic_id)}
    given = [c["assignment"] for c in consumer_capture.imported.captured if c["api"] == HEARTBEAT and c["assignment"]]
    assert given and {p["topic"] for a in given for p in a} == {"orders"}


def test_joins_leaves_and_the_static_members_return_are_captured(consumer_capture):
    heartbeats = [e for e in consumer_capture.imported.events if e["type"] == "CONSUMER_GROUP_HEARTBEAT"]
    joins = [e for e in heartbeats if e["member_epoch"] == 0]
    assert {e["client_id"] for e in joins} == {"orders-1", "orders-2", "orders-3", "orders-4"}
    assert all(e["subscribed_topic_names"] == ["orders"] and e["server_assignor"] == "uniform" for e in joins)
    leaves = Counter((e["client_id"], e["member_epoch"]) for e in heartbeats if e["member_epoch"] < 0)
    # k2 leaves for good; the static k3 leaves for now twice (the close before its restart, the end), and
    # comes back with a new member id
    assert leaves == {("orders-2", -1): 1, ("orders-1", -1): 1, ("orders-4", -1): 1, ("orders-3", -2): 2}
    static = {e["member_id"] for e in heartbeats if e["instance_id"] == "instance-3"}
    assert len(static) == 2


def _heartbeat_kinds(divergences) -> Counter:
    return Counter(divergences[divergences["api"] == HEARTBEAT]["divergence"])


def test_mapped_member_epochs_agree_on_nearly_every_heartbeat(consumer_capture):
    divergences = consumer_capture.divergences
    assert _heartbeat_kinds(divergences) == {"none": 34, "assignment": 6, "generation": 5}
    assert (divergences["simulated_error"] == "NONE").all()
    commits = divergences[divergences["api"] == "OffsetCommit"]
    assert len(commits) == 58 and (commits["divergence"] == "none").all()
    shifts = Counter(divergences[(divergences["api"] == HEARTBEAT) & (divergences["captured_generation"] > 0)
                                 & (divergences["simulated_generation"] > 0)].eval(
        "captured_generation - simulated_generation"))
    assert shifts == {4: 35, 3: 2}  # the mock's group was 4 epochs on; twice it had not bumped yet
    joins_answered_0 = divergences[(divergences["api"] == HEARTBEAT) & (divergences["captured_generation"] == 0)]
    assert len(joins_answered_0) == 3 and (joins_answered_0["divergence"] == "generation").all()


def test_replayed_open_loop_the_echoed_epochs_are_fenced(consumer_capture):
    """The same capture without the epochs of the captured answers: the group learns no mapping, and the
    clients' epochs, the mock's, reach it as captured."""
    answers = {request_id: dataclasses.replace(answer, generation_id=None)
               for request_id, answer in captured_answers(consumer_capture.captured_path).items()}
    events = read_events([consumer_capture.events_path]).events
    result = run_local(attach_captured(events, answers), CONSUMER_MOCK_CONFIG)
    divergences = compare_captured(result.tables, consumer_capture.captured_path)
    assert _heartbeat_kinds(divergences) == {"error": 33, "none": 6, "generation": 3, "assignment": 3}
    errors = Counter(divergences["simulated_error"])
    assert errors["FENCED_MEMBER_EPOCH"] > 20 and errors["STALE_MEMBER_EPOCH"] > 20
