"""Replayed captured requests: the id map on its own (what it learns from an answer, how it rewrites later
requests), then the runtime doing the mapping and the MEMBER_ID_REQUIRED round by itself, across encodes,
for any subset of a tiny hand-made capture."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given, settings, strategies as st

from state.runtime.captured_ids import RETRY_SUFFIX, IdMap
from state.config import CoordinatorConfig
from state.events import CapturedAnswer, parse_event
from state.runtime.group_runtime import GroupRuntime

CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=1000)


def answer(connection="c1", error="NONE", member_id=None, generation_id=None):
    return CapturedAnswer(connection=connection, error=error, member_id=member_id, generation_id=generation_id)


def join(request_id, member_id="", client_id="app", instance=None, ts=0, captured=None):
    event = parse_event({"ts": ts, "group_id": "g", "type": "JOIN_GROUP", "request_id": request_id,
                         "client_id": client_id, "member_id": member_id, "group_instance_id": instance,
                         "protocol_type": "consumer", "session_timeout_ms": 10_000,
                         "protocols": [{"name": "range", "topics": ["orders"]}]}, source="capture", line=ts)
    return dataclasses.replace(event, captured=captured)


def heartbeat(request_id, member_id, generation, client_id="app", ts=0, captured=None):
    event = parse_event({"ts": ts, "group_id": "g", "type": "HEARTBEAT", "request_id": request_id,
                         "client_id": client_id, "member_id": member_id, "generation_id": generation},
                        source="capture", line=ts)
    return dataclasses.replace(event, captured=captured)


def response(member_id, generation=1, error="NONE"):
    return {"api": "JoinGroup", "member_id": member_id, "generation_id": generation, "error": error}


# -- the map on its own --------------------------------------------------------------------------------------

def test_a_broker_id_reused_by_another_client_maps_per_client():
    # librdkafka's mock hands out memory addresses: a dead member's id comes back for the next one
    ids = IdMap()
    ids.learn(join("j1", captured=answer("c1", member_id="0x1", generation_id=2)), response("app-aaa", 1))
    ids.learn(join("j2", captured=answer("c2", member_id="0x1", generation_id=3)), response("app-bbb", 2))
    assert ids.rewrite(heartbeat("h1", "0x1", 2, captured=answer("c1"))).member_id == "app-aaa"
    second = ids.rewrite(heartbeat("h2", "0x1", 3, captured=answer("c2")))
    assert (second.member_id, second.generation_id) == ("app-bbb", 2)


def test_unknown_captured_ids_join_as_new_members_and_stay_as_they_are_elsewhere():
    ids = IdMap()
    assert ids.rewrite(join("j", member_id="0x9", captured=answer())).member_id == ""
    rewritten = ids.rewrite(heartbeat("h", "0x9", 4, captured=answer()))
    assert (rewritten.member_id, rewritten.generation_id) == ("0x9", 4)  # answered on its merits


def test_the_member_id_required_round_is_sent_only_when_the_broker_skipped_it():
    skipped = IdMap()
    first = join("j", captured=answer(member_id="0x1", generation_id=2))
    retry = skipped.learn(first, response("app-aaa", -1, "MEMBER_ID_REQUIRED"))
    assert retry == dataclasses.replace(first, member_id="app-aaa", request_id="j" + RETRY_SUFFIX)
    assert skipped.learn(retry, response("app-aaa", -1, "MEMBER_ID_REQUIRED")) is None
    kafka = IdMap()
    assert kafka.learn(join("j", captured=answer(member_id="broker-1", error="MEMBER_ID_REQUIRED")),
                       response("app-aaa", -1, "MEMBER_ID_REQUIRED")) is None
    assert kafka.member("broker-1") == "app-aaa"  # the client's second JoinGroup will carry broker-1


def test_error_answers_teach_nothing():
    ids = IdMap()
    fenced = join("j", instance="i-1", captured=answer(member_id="0x1", generation_id=2))
    assert ids.learn(fenced, response("i-1-old", -1, "FENCED_INSTANCE_ID")) is None
    assert ids.member("0x1") is None


def test_static_members_are_known_by_instance_id_across_connections():
    ids = IdMap()
    ids.learn(join("j", instance="i-1", captured=answer("c1", member_id="0x1", generation_id=2)),
              response("i-1-aaa", 1))
    leave = parse_event({"ts": 0, "group_id": "g", "type": "LEAVE_GROUP", "request_id": "l", "api_version": 3,
                         "members": [{"member_id": "0x1", "group_instance_id": "i-1"}]})
    leave = dataclasses.replace(leave, captured=answer("c9"))
    assert ids.rewrite(leave).members[0].member_id == "i-1-aaa"


def consumer_heartbeat(request_id, member_id, epoch, ts=0, captured=None, **fields):
    event = parse_event({"ts": ts, "group_id": "g", "type": "CONSUMER_GROUP_HEARTBEAT", "request_id": request_id,
                         "client_id": "app", "member_id": member_id, "member_epoch": epoch, "api_version": 1,
                         **fields}, source="capture", line=ts)
    return dataclasses.replace(event, captured=captured)


def heartbeat_response(member_id, epoch, error="NONE"):
    return {"api": "ConsumerGroupHeartbeat", "member_id": member_id, "generation_id": epoch, "error": error}


def test_a_consumer_echoing_the_brokers_member_epochs_is_sent_the_groups():
    ids = IdMap()
    ids.learn(consumer_heartbeat("h1", "M", 0, captured=answer(member_id="M", generation_id=7)),
              heartbeat_response("M", 2))
    assert ids.rewrite(consumer_heartbeat("h2", "M", 7, captured=answer())).member_epoch == 2
    ids.learn(consumer_heartbeat("h2", "M", 2, captured=answer(member_id="M", generation_id=7)),
              heartbeat_response("M", 3))  # the group bumped where the broker did not: the latest pair counts
    assert ids.rewrite(consumer_heartbeat("h3", "M", 7, captured=answer())).member_epoch == 3
    commit = parse_event({"ts": 0, "group_id": "g", "type": "OFFSET_COMMIT", "request_id": "c", "client_id": "app",
                          "member_id": "M", "generation_id": 7, "offsets": [{"topic": "t", "partition": 0,
                                                                              "offset": 1}]})
    assert ids.rewrite(dataclasses.replace(commit, captured=answer())).generation_id == 3
    fetch = parse_event({"ts": 0, "group_id": "g", "type": "OFFSET_FETCH", "request_id": "f", "client_id": "app",
                         "member_id": "M", "member_epoch": 7})
    assert ids.rewrite(dataclasses.replace(fetch, captured=answer())).member_epoch == 3
    # joins and leaves go as they are
    assert [ids.rewrite(consumer_heartbeat("h", "M", e, captured=answer())).member_epoch for e in (0, -1, -2)] == [
        0, -1, -2]


def test_a_v0_join_maps_the_member_id_the_broker_handed_out():
    ids = IdMap()
    ids.learn(consumer_heartbeat("h1", "", 0, api_version=0, captured=answer(member_id="broker-id", generation_id=4)),
              heartbeat_response("own-id", 1))
    rewritten = ids.rewrite(consumer_heartbeat("h2", "broker-id", 4, captured=answer()))
    assert (rewritten.member_id, rewritten.member_epoch) == ("own-id", 1)


def test_an_epoch_0_answer_is_echoed_until_the_broker_answers_the_member_with_an_error():
    """librdkafka's mock answers a join it has no assignment for with epoch 0, and its client sends 0 again:
    an echo, not a join. After an error answer, the client's 0 is a join again."""
    ids = IdMap()
    ids.learn(consumer_heartbeat("h1", "M", 0, captured=answer(member_id="M", generation_id=0)),
              heartbeat_response("M", 2))
    assert ids.rewrite(consumer_heartbeat("h2", "M", 0, captured=answer())).member_epoch == 2
    assert ids.rewrite(consumer_heartbeat("h2", "N", 0, captured=answer())).member_epoch == 0  # another member
    ids.learn(consumer_heartbeat("h3", "M", 2, captured=answer(error="FENCED_MEMBER_EPOCH", member_id="M")),
              heartbeat_response("M", 2))
    assert ids.rewrite(consumer_heartbeat("h4", "M", 0, captured=answer())).member_epoch == 0


def test_the_groups_error_answers_and_leaves_teach_no_epoch():
    ids = IdMap()
    ids.learn(consumer_heartbeat("h1", "M", 4, captured=answer(member_id="M", generation_id=5)),
              heartbeat_response("M", None, "FENCED_MEMBER_EPOCH"))
    ids.learn(consumer_heartbeat("h2", "M", -1, captured=answer(member_id="M", generation_id=-1)),
              heartbeat_response("M", -1))
    assert ids.rewrite(consumer_heartbeat("h3", "M", 5, captured=answer())).member_epoch == 5


# -- the runtime ---------------------------------------------------------------------------------------------

def two_member_capture():
    """Two dynamic members answered by a broker that skips MEMBER_ID_REQUIRED and numbers from 2: the leader A
    joins at 0, B at 100, both sync at 3000 with the leader's plan, then heartbeat every second."""
    events = [join("a1", client_id="a", ts=0, captured=answer("a", member_id="A", generation_id=2)),
              join("b1", client_id="b", ts=100, captured=answer("b", member_id="B", generation_id=2))]
    plan = [{"member_id": "A", "partitions": [{"topic": "orders", "partitions": [0]}]},
            {"member_id": "B", "partitions": [{"topic": "orders", "partitions": [1]}]}]
    for member, client, ts in (("A", "a", 3000), ("B", "b", 3001)):
        sync = parse_event({"ts": ts, "group_id": "g", "type": "SYNC_GROUP", "request_id": f"{client}2",
                            "client_id": client, "member_id": member, "generation_id": 2,
                            "assignments": plan if member == "A" else []}, source="capture", line=ts)
        events.append(dataclasses.replace(sync, captured=answer(client, member_id=member, generation_id=2)))
    for i in range(6):
        for member, client in (("A", "a"), ("B", "b")):
            ts = 4000 + 1000 * i + (client == "b")
            events.append(heartbeat(f"{client}h{i}", member, 2, client_id=client, ts=ts,
                                    captured=answer(client, member_id=member, generation_id=2)))
    return events


def run(events, encode_between: bool = False) -> dict[str, list[dict]]:
    """The group's tables; with `encode_between`, the runtime goes through encode/decode after every event,
    as the Spark engine's state does between micro-batches."""
    runtime, tables = GroupRuntime("g", CONFIG), {}

    def collect():
        for name, rows in runtime.take_output().tables.items():
            tables.setdefault(name, []).extend(rows)

    end = max((e.ts for e in events), default=0) + 60_000
    if encode_between:
        for event in sorted(events, key=lambda e: e.sort_key):
            runtime.offer([event])
            runtime.advance_to(event.ts)
            collect()
            runtime = GroupRuntime.decode(runtime.encode(), CONFIG)
    else:
        runtime.offer(events)
    runtime.advance_to(end)
    runtime.finish()
    collect()
    return tables


def test_the_runtime_maps_ids_and_sends_the_member_id_round_itself():
    tables = run(two_member_capture())
    responses = tables["responses"]
    answers = {r["request_id"]: r for r in responses}
    for client in "ab":
        first, retry = answers[f"{client}1"], answers[f"{client}1" + RETRY_SUFFIX]
        assert first["error"] == "MEMBER_ID_REQUIRED"
        assert retry["member_id"] == first["member_id"] and retry["request_ts"] == first["request_ts"]
        assert retry["error"] == "NONE" and retry["generation_id"] == 1
    own = {"A": answers["a1"]["member_id"], "B": answers["b1"]["member_id"]}
    leader = answers["a1" + RETRY_SUFFIX]
    assert leader["leader_id"] == own["A"] and sorted(m["member_id"] for m in leader["members"]) == sorted(own.values())
    assert own["A"].startswith("a-") and own["B"].startswith("b-")
    for i in range(6):
        for member, client in (("A", "a"), ("B", "b")):
            beat = answers[f"{client}h{i}"]
            assert (beat["error"], beat["member_id"], beat["generation_id"]) == ("NONE", own[member], 1)
    assert [(r["member_id"], r["partition"]) for r in tables["assignments"]] == [(own["A"], 0), (own["B"], 1)]


def test_the_map_is_part_of_the_encoded_state():
    events = two_member_capture()
    assert run(events, encode_between=True) == run(events)


def test_requests_without_a_captured_answer_are_not_rewritten():
    first = join("mine", client_id="a", ts=0)
    tables = run([first, heartbeat("beat", "a-unknown", 2, client_id="a", ts=10)])
    answers = {r["request_id"]: r for r in tables["responses"]}
    assert answers["mine"]["error"] == "MEMBER_ID_REQUIRED" and "mine" + RETRY_SUFFIX not in answers
    assert (answers["beat"]["member_id"], answers["beat"]["generation_id"]) == ("a-unknown", 2)


def test_a_late_captured_request_is_rejected_as_it_was_read():
    runtime = GroupRuntime("g", CONFIG)
    runtime.advance_to(1000)
    late = heartbeat("h", "0x1", 2, ts=10, captured=answer())
    runtime.offer([late])
    [reject] = runtime.take_output().rejects
    raw = json.loads(reject["raw"])
    assert (raw["request_id"], raw["member_id"]) == ("h", "0x1") and "captured" not in raw


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_subset_of_a_capture_is_answered_on_its_merits(data):
    events = two_member_capture()
    kept = data.draw(st.lists(st.sampled_from(range(len(events))), unique=True))
    shift = data.draw(st.integers(-3, 3))
    chosen = [dataclasses.replace(events[i], ts=max(0, events[i].ts + shift * 700)) for i in sorted(kept)]
    tables = run(chosen, encode_between=data.draw(st.booleans()))
    answered = {r["request_id"].removesuffix(RETRY_SUFFIX) for r in tables["responses"]}
    assert answered == {e.request_id for e in chosen}


# Member ids as a Kafka broker hands them out (client id, "-", a UUID); in java.util.HashMap order C comes
# before B, against their join order.
KAFKA_IDS = {"a": "a-00000000-0000-4000-8000-000000000001", "b": "b-00000000-0000-4000-8000-000000001ef0",
             "c": "c-00000000-0000-4000-8000-00000001991c"}


def test_a_kafka_brokers_member_ids_are_handed_out_as_captured_and_pick_the_leader_kafka_picks():
    """Kafka re-picks a leaving leader's successor as the first key of its member HashMap (ClassicGroup), an
    order its member ids decide: the replay takes the captured ids, so the successor is the captured one."""
    events = []
    for i, (client, member_id) in enumerate(KAFKA_IDS.items()):
        events += [join(f"{client}1", client_id=client, ts=10 * i,
                        captured=answer(client, "MEMBER_ID_REQUIRED", member_id=member_id)),
                   join(f"{client}2", member_id=member_id, client_id=client, ts=10 * i + 1,
                        captured=answer(client, member_id=member_id, generation_id=1))]
    leave = parse_event({"ts": 5000, "group_id": "g", "type": "LEAVE_GROUP", "request_id": "l", "api_version": 3,
                         "client_id": "a", "members": [{"member_id": KAFKA_IDS["a"]}]}, source="capture", line=99)
    runtime = GroupRuntime("g", CONFIG)
    runtime.offer([*events, dataclasses.replace(leave, captured=answer("a"))])
    runtime.advance_to(5000)
    answers = {r["request_id"]: r for r in runtime.take_output().tables["responses"]}
    assert {c: answers[f"{c}2"]["member_id"] for c in KAFKA_IDS} == KAFKA_IDS
    assert answers["a2"]["leader_id"] == KAFKA_IDS["a"]
    assert runtime.group.leader_id == KAFKA_IDS["c"]
