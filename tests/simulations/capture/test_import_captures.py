"""Importing the committed captures of real librdkafka consumers: every request paired and decoded, the events
valid input, and the decoded fields consistent with what the recording did (manifest.json)."""

from __future__ import annotations

import base64
import json
import subprocess
from collections import Counter, defaultdict

from simulations.capture.importer import import_capture, write_import
from tableio.inputs import read_events
from state.classic import consumer_protocol

from .conftest import CAPTURES, MOCK_PIPELINED, needs_tshark

pytestmark = needs_tshark

# What librdkafka 2.x sends to its mock: the versions these tests decode. A new recording with another
# client may add versions; then the per-version checks below must cover them too.
EXPECTED_VERSIONS = {("FindCoordinator", 2), ("JoinGroup", 5), ("SyncGroup", 3), ("Heartbeat", 3),
                     ("LeaveGroup", 1), ("OffsetCommit", 9), ("OffsetFetch", 6)}


def test_the_captures_contain_the_versions_these_tests_check(replayed):
    seen = {(c["api"], c["api_version"]) for run in replayed.values() for c in run.imported.captured}
    assert seen == EXPECTED_VERSIONS


def test_every_request_is_paired_with_its_response(run):
    unanswered = [c for c in run.imported.captured if c["response_ts"] is None]
    # Only requests still in flight when a client died or the capture stopped may lack a response.
    assert len(unanswered) == run.imported.unanswered <= 3
    assert {r["reason"].split(":")[0] for r in run.imported.rejects} <= {"no response captured"}
    for c in run.imported.captured:
        if c["response_ts"] is not None:
            assert c["error"] is not None and c["request_ts"] <= c["response_ts"]


def test_events_are_valid_input_in_capture_order(run):
    rows = read_events([run.events_path])
    assert rows.rejects == []
    assert len(rows.events) == sum(1 for c in run.imported.captured if c["api"] != "FindCoordinator")
    seqs = [e.seq for e in rows.events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert [e.ts for e in rows.events] == sorted(e.ts for e in rows.events)
    assert len({e.request_id for e in rows.events}) == len(rows.events)
    assert {e.group_id for e in rows.events} == {run.manifest["group_id"]}


def test_find_coordinator_v2_names_a_mock_broker(run):
    found = [c for c in run.imported.captured if c["api"] == "FindCoordinator"]
    assert found and all(c["error"] == "NONE" for c in found)
    assert {int(c["coordinator"].rsplit(":", 1)[1]) for c in found} <= set(run.manifest["ports"])


def test_join_group_v5_requests_and_responses(run):
    joins = [e for e in run.imported.events if e["type"] == "JOIN_GROUP"]
    captured = {c["request_id"]: c for c in run.imported.captured}
    instance_ids = set(run.manifest.get("instance_ids", {}).values())
    for join in joins:
        assert join["api_version"] == 5 and join["protocol_type"] == "consumer"
        assert join["session_timeout_ms"] == run.manifest["session_timeout_ms"]
        assert join["rebalance_timeout_ms"] == 300_000  # librdkafka's max.poll.interval.ms default
        [protocol] = join["protocols"]
        assert protocol["name"] == run.manifest["assignor"]
        subscription = consumer_protocol.decode_subscription(base64.b64decode(protocol["metadata"]))
        assert subscription.topics == (run.manifest["topic"],)
        assert protocol["decoded"]["topics"] == [run.manifest["topic"]]
        if instance_ids:
            assert join["group_instance_id"] in instance_ids
        answer = captured[join["request_id"]]
        if answer["error"] == "NONE":
            assert answer["generation_id"] >= 2  # the mock's first generation is 2
            leader = answer["leader_id"] == answer["member_id"]
            assert bool(answer["members"]) == leader  # only the leader is handed the member list


def test_cooperative_subscriptions_carry_owned_partitions_and_sticky_user_data(replayed):
    run = replayed["cooperative-kill"]
    rejoins = [p["decoded"] for e in run.imported.events if e["type"] == "JOIN_GROUP"
               for p in e["protocols"] if p["decoded"]["owned_partitions"]]
    assert rejoins
    for view in rejoins:
        # librdkafka writes StickyAssignor userData (previous assignment + generation) under both names
        assert view["user_data_decoded"]["previous_assignment"] == view["owned_partitions"]
        assert view["user_data_decoded"]["generation"] == view["generation_id"]


def test_sync_group_v3_leader_plans_cover_each_partition_once(run):
    captured = {c["request_id"]: c for c in run.imported.captured}
    plans = [e for e in run.imported.events if e["type"] == "SYNC_GROUP" and e["assignments"]]
    assert plans
    for plan in plans:
        owned = [(t["topic"], p) for a in plan["assignments"] for t in a["decoded"]["partitions"] for p in t["partitions"]]
        assert len(owned) == len(set(owned))
        assert {p for _, p in owned} <= {0, 1, 2, 3}  # auto-created topics get 4 partitions
    for c in captured.values():
        if c["api"] == "SyncGroup" and c["error"] == "NONE":
            assert c["assignment"] is not None


def test_heartbeat_v3_and_offset_commit_v9_use_the_ids_the_broker_handed_out(run):
    handed_out = {(c["member_id"], c["generation_id"]) for c in run.imported.captured
                  if c["api"] == "JoinGroup" and c["error"] == "NONE"}
    for e in run.imported.events:
        if e["type"] in ("HEARTBEAT", "OFFSET_COMMIT"):
            assert (e["member_id"], e["generation_id"]) in handed_out, e
    commits = [e for e in run.imported.events if e["type"] == "OFFSET_COMMIT"]
    assert commits and all(o["offset"] >= 0 and o["topic"] == run.manifest["topic"]
                           for e in commits for o in e["offsets"])


def test_offset_fetch_v6_and_leave_group_v1(run):
    fetches = [e for e in run.imported.events if e["type"] == "OFFSET_FETCH"]
    assert fetches and all(e["partitions"] for e in fetches)
    leaves = [e for e in run.imported.events if e["type"] == "LEAVE_GROUP"]
    closes = sum(1 for step in run.manifest["timeline"] if step["action"] == "close")
    if not run.manifest.get("instance_ids"):  # static members do not leave when they close
        assert len(leaves) >= closes
    for leave in leaves:
        [member] = leave["members"]
        assert member["member_id"]


def test_a_tshark_json_export_imports_like_the_pcap(replayed, tmp_path):
    run = replayed["range-close"]
    pcap = CAPTURES / run.manifest["file"]
    full = tmp_path / "full.json"
    full.write_bytes(subprocess.run(["tshark", "-r", str(pcap), "-T", "json"], capture_output=True,
                                    check=True).stdout)
    fields = tmp_path / "fields.json"
    command = ["tshark", "-r", str(pcap), "-T", "json"]
    for name in ("frame.number", "frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport",
                 "tcp.stream", "tcp.seq_raw", "tcp.len", "tcp.flags.syn", "tcp.flags.ack", "tcp.payload"):
        command += ["-e", name]
    fields.write_bytes(subprocess.run(command, capture_output=True, check=True).stdout)
    for export in (full, fields):
        result = import_capture(export, run.manifest["ports"], MOCK_PIPELINED)
        assert result.kind == "tshark-json"
        assert result.events == run.imported.events
        assert result.captured == run.imported.captured


def test_our_jsonl_events_import_as_they_are(replayed, tmp_path):
    run = replayed["range-close"]
    again = import_capture(run.events_path)
    assert again.kind == "events-jsonl" and again.rejects == []
    assert again.events == [json.loads(line) for line in run.events_path.read_text().splitlines()]
    assert again.captured == []
    # rows without seq or request_id get them; invalid rows are rejected with the replay's reasons
    path = tmp_path / "mine.jsonl"
    path.write_text('{"ts": 5, "group_id": "g", "type": "HEARTBEAT", "member_id": "m", "generation_id": 1}\n'
                    '{"ts": 6, "group_id": "g", "type": "HEARTBEET"}\n')
    mine = import_capture(path)
    assert mine.events == [{"ts": 5, "group_id": "g", "type": "HEARTBEAT", "member_id": "m", "generation_id": 1,
                            "seq": 1, "request_id": "mine.jsonl:1"}]
    assert [r["line"] for r in mine.rejects] == [2]
    write_import(mine, tmp_path / "out.jsonl")
    assert read_events([tmp_path / "out.jsonl"]).events[0].request_id == "mine.jsonl:1"


def test_other_kafka_traffic_is_framed_and_skipped(run):
    assert run.imported.other_requests > 0  # ApiVersions, Metadata, Fetch, ListOffsets...
    assert Counter(c["api"] for c in run.imported.captured)["FindCoordinator"] >= 1
    per_connection = defaultdict(set)
    for c in run.imported.captured:
        per_connection[c["client_id"]].add(c["connection"])
    # librdkafka talks to its coordinator on a connection of its own, besides the bootstrap one
    assert all(len(connections) >= 2 for connections in per_connection.values())
