"""state/clients/answers.py: a response reaches its client as the row the coordinator wrote; the client's
handlers read the typed answer parsed from it."""

from __future__ import annotations

from state.classic.consumer_protocol import TopicPartition
from state.clients.answers import (Answer, JoinGroupAnswer, JoinMember, OffsetCommitAnswer, OffsetFetchAnswer,
                                   SyncGroupAnswer, parse_answer)
from tests.state.harness import GroupContext


def test_a_join_answer_carries_the_members_the_leader_assigns_from():
    row = dict(api="JoinGroup", request_id="c1#0/2", error="NONE", member_id="m1", generation_id=3,
               protocol_name="range", leader_id="m1", skip_assignment=False,
               members=[{"member_id": "m1", "group_instance_id": None, "metadata": b"\x00"}])
    assert parse_answer(row) == JoinGroupAnswer("JoinGroup", "c1#0/2", "NONE", "m1", 3, "range", "m1", False,
                                                (JoinMember("m1", None, b"\x00"),))


def test_partition_results_become_the_errors_and_offsets_the_client_acts_on():
    results = [{"topic": "t", "partition": 0, "error": "NONE", "offset": 7},
               {"topic": "t", "partition": 1, "error": "UNKNOWN_TOPIC_OR_PARTITION", "offset": -1}]
    commit = parse_answer(dict(api="OffsetCommit", request_id="r", error="NONE", generation_id=2, results=results))
    assert commit == OffsetCommitAnswer("OffsetCommit", "r", "NONE", 2, ("NONE", "UNKNOWN_TOPIC_OR_PARTITION"))
    fetch = parse_answer(dict(api="OffsetFetch", request_id="r", error="NONE", results=results))
    assert fetch == OffsetFetchAnswer("OffsetFetch", "r", "NONE", {TopicPartition("t", 0): 7})


def test_every_answer_a_run_routes_to_its_clients_parses():
    """Rows of every kind a run routes (answers, errors without their fields, failed connections) parse."""
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 4, "records_per_second": 10}])
    for name in ("c0", "c1"):
        ctx.send("CLIENT_START", client_id=name, topics=["orders"], config={"session.timeout.ms": 10_000})
    ctx.sleep(15_000)
    ctx.fault(fault="crash", load_delay_ms=2_000)
    ctx.sleep(15_000)
    answers = [parse_answer(row) for row in ctx.rows("responses")]
    assert {type(a) for a in answers} >= {JoinGroupAnswer, SyncGroupAnswer, OffsetCommitAnswer, OffsetFetchAnswer}
    assert all(isinstance(a, Answer) and a.request_id and a.error for a in answers)
