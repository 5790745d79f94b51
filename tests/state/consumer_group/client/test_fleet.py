"""Synthetic consumers with group.protocol=consumer (state/consumer_group/client/fleet.py) in closed loop with the
consumer group's coordinator: a group forms, members close, crash, pause and meet a coordinator move."""

from __future__ import annotations

import json

import pytest

from state.config import ConfigError
from state.client_config import ClientConfig
from state.consumer_group.client.member_state import ClientMemberState
from state.events import parse_event
from state.quiet_run import expand_rows
from state.runtime import GroupRuntime
from tests.state.harness import GroupContext, check_requests_rows

CONSUMER = {"group.protocol": "consumer"}


def start(ctx: GroupContext, n: int, config=None) -> list[str]:
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 6, "records_per_second": 10}])
    names = [f"c{i}" for i in range(n)]
    for name in names:
        ctx.send("CLIENT_START", client_id=name, topics=["orders"], config=dict(CONSUMER, **(config or {})))
    return names


def formed(n: int = 3) -> GroupContext:
    ctx = GroupContext()
    start(ctx, n)
    ctx.sleep(20_000)
    return ctx


def owners(ctx: GroupContext) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    for client in ctx.runtime.fleet.clients.values():
        if client.alive:
            for tp in client.owned:
                result.setdefault(tp.partition, []).append(client.client_id)
    return result


def assigned_at(ctx: GroupContext) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(client, partition) -> (assign_ts, member epoch) of each assignments row naming it."""
    result: dict = {}
    for row in ctx.rows("assignments"):
        result.setdefault((row["client_id"], row["partition"]), []).append((row["assign_ts"], row["generation_id"]))
    return result


def test_three_consumers_form_a_stable_group_with_consumer_group_heartbeats():
    ctx = formed()
    apis = {r["api"] for r in ctx.rows("responses")}
    assert apis == {"ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch"}
    assert all(r["error"] == "NONE" for r in ctx.rows("responses")) and ctx.runtime.metrics.failed_commits == 0
    # Each partition owned by exactly one client, two each.
    assert sorted(owners(ctx)) == list(range(6)) and all(len(o) == 1 for o in owners(ctx).values())
    assert sorted(len(c.owned) for c in ctx.runtime.fleet.clients.values()) == [2, 2, 2]
    states = [(f, t) for f, t, _ in ctx.transitions()]
    assert states[-2:] == [("Assigning", "Reconciling"), ("Reconciling", "Stable")]
    (epoch,) = {c.membership.member_epoch for c in ctx.runtime.fleet.clients.values()}
    assert all(c.membership.state is ClientMemberState.STABLE for c in ctx.runtime.fleet.clients.values())
    final = [g for g in ctx.rows("generations") if g["generation_id"] == epoch]
    assert len(final) == 1 and final[0]["member_count"] == 3 and final[0]["stable_ts"] is not None
    # The first member held every partition; the others got theirs only once it had given them up: in
    # `assignments`, a partition reaches c1 or c2 no earlier than c0's last row without it.
    rows = ctx.rows("assignments")
    for client in ("c1", "c2"):
        for row in (r for r in rows if r["client_id"] == client):
            released = [r["assign_ts"] for r in rows if r["client_id"] == "c0" and r["assign_ts"] <= row["assign_ts"]]
            last_c0 = {r["partition"] for r in rows if r["client_id"] == "c0" and r["assign_ts"] == max(released)}
            assert row["partition"] not in last_c0


def test_requests_carry_the_member_epoch_and_read_back_as_the_events_sent(monkeypatch):
    sent = check_requests_rows(monkeypatch)
    ctx = formed()
    ctx.fault(fault="move", load_delay_ms=1_000)
    ctx.sleep(10_000)
    ctx.send("CLIENT_STOP", client_id="c2")
    ctx.sleep(5_000)
    assert set(sent) == {"CONSUMER_GROUP_HEARTBEAT", "OFFSET_COMMIT", "OFFSET_FETCH", "FIND_COORDINATOR"}
    epochs = {r["request_id"]: r["generation_id"] for r in ctx.rows("responses") if r["api"] == "ConsumerGroupHeartbeat"}
    commits = [r for r in ctx.rows("responses") if r["api"] == "OffsetCommit"]
    accepted = [r for r in commits if r["error"] == "NONE"]
    assert accepted and all(r["generation_id"] in set(epochs.values()) for r in accepted)
    # OffsetFetch v9 carries the member id and epoch too (CommitRequestManager, once the member has an epoch).
    fetches = [r for r in ctx.rows("responses") if r["api"] == "OffsetFetch"]
    assert fetches and all(r["member_id"] and r["generation_id"] in set(epochs.values()) for r in fetches)


def test_the_requests_table_with_the_runs_topic_metadata_replays_the_run():
    """The coordinator assigns a consumer group's partitions from the cluster's metadata, which no request
    carries: the `requests` table replays the run together with its TOPIC_METADATA rows (without them every
    assignment is empty and the member epochs differ from the first heartbeat on)."""
    ctx = formed()
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(30_000)
    ctx.finish()
    written = ctx.written("requests")
    assert any(r["repeat_count"] > 1 for r in written if r["type"] == "CONSUMER_GROUP_HEARTBEAT")
    metadata = {"ts": 0, "group_id": ctx.group_id, "type": "TOPIC_METADATA",
                "topics": [{"topic": "orders", "partitions": 6, "records_per_second": 10}]}

    def replay(with_metadata: bool) -> dict[str, list[dict]]:
        runtime = GroupRuntime(ctx.group_id, ctx.config)
        rows = ([metadata] if with_metadata else []) + [json.loads(r["raw"]) for r in written]
        runtime.offer([parse_event(row, "requests", line) for line, row in enumerate(rows)])
        runtime.advance_to(ctx.time)
        runtime.finish()
        return runtime.take_output().tables

    def strip(rows):  # a replayed quiet run is written when it ends: rows are compared by request
        return sorted(({k: v for k, v in r.items() if k != "out_seq"} for r in rows),
                      key=lambda r: (r.get("request_ts"), r.get("request_id") or "", json.dumps(r, sort_keys=True)))

    replayed = replay(with_metadata=True)
    assert strip(expand_rows("responses", replayed["responses"])) == strip(ctx.rows("responses"))
    for table in ("consumer_group_records", "group_states", "assignments"):
        assert strip(replayed[table]) == strip(ctx.rows(table)), table
    first = replay(with_metadata=False)["responses"][0]
    assert first["api"] == "ConsumerGroupHeartbeat" and first["assignment"] == []


def test_close_commits_then_leaves_with_epoch_minus_one_and_the_others_take_its_partitions():
    ctx = formed()
    before = ctx.runtime.fleet.clients["c2"].owned
    ctx.send("CLIENT_STOP", client_id="c2")
    ctx.sleep(10_000)
    c2 = [json.loads(r["raw"]) for r in ctx.rows("requests") if r["client_id"] == "c2" and r["ts"] >= 20_000]
    assert [r["type"] for r in c2] == ["OFFSET_COMMIT", "CONSUMER_GROUP_HEARTBEAT"]
    assert c2[1]["member_epoch"] == -1
    assert ("Stable", "Assigning", "member_leave") in ctx.transitions()
    assert sorted(owners(ctx)) == list(range(6)) and all(len(o) == 1 for o in owners(ctx).values())
    assert not ctx.runtime.fleet.clients["c2"].alive and before


def test_a_crash_is_noticed_at_the_session_timeout_and_partitions_move_after_revocation():
    ctx = formed()
    crashed = {tp.partition for tp in ctx.runtime.fleet.clients["c1"].owned}
    ctx.send("CLIENT_CRASH", client_id="c1")
    ctx.sleep(40_000)
    assert all(owner != ["c1"] for owner in owners(ctx).values()) and len(owners(ctx)) == 4
    ctx.sleep(20_000)  # the session (45 s) has expired
    assert ("Stable", "Assigning", "session_timeout") in ctx.transitions()
    assert sorted(owners(ctx)) == list(range(6)) and all(len(o) == 1 for o in owners(ctx).values())
    # The crashed member's partitions reached the others only after the coordinator fenced it.
    fenced = min(r["ts"] for r in ctx.rows("group_states") if r["cause"] == "session_timeout")
    taken_over = [min(after) for (client, partition), rows in assigned_at(ctx).items()
                  if partition in crashed and client != "c1" and (after := [ts for ts, _ in rows if ts >= 20_000])]
    assert taken_over and min(taken_over) >= fenced


def test_a_process_pause_longer_than_the_session_fences_the_member_and_it_rejoins():
    ctx = formed(2)
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=60_000, scope="process")
    ctx.sleep(90_000)
    errors = [r["error"] for r in ctx.rows("responses") if r["client_id"] == "c1"]
    assert "UNKNOWN_MEMBER_ID" in errors
    assert sorted(len(c.owned) for c in ctx.runtime.fleet.clients.values()) == [3, 3]


def test_an_unknown_remote_assignor_is_fatal_as_the_broker_answers():
    ctx = GroupContext()
    start(ctx, 1, {"group.remote.assignor": "nope"})
    ctx.sleep(5_000)
    client = ctx.runtime.fleet.clients["c0"]
    assert [r["error"] for r in ctx.rows("responses")] == ["UNSUPPORTED_ASSIGNOR"]
    assert not client.alive and client.fatal_error == "UNSUPPORTED_ASSIGNOR"
    assert client.membership.state is ClientMemberState.FATAL


@pytest.mark.parametrize("setting", ["partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms"])
def test_settings_the_consumer_protocol_refuses_are_an_error_naming_them(setting):
    value = "range" if setting == "partition.assignment.strategy" else 3_000
    with pytest.raises(ConfigError, match=rf"^{setting} cannot be set when group.protocol=CONSUMER$"):
        ClientConfig.from_kafka(dict(CONSUMER, **{setting: value}))
    with pytest.raises(ConfigError, match=r"^group.remote.assignor cannot be set when group.protocol=CLASSIC$"):
        ClientConfig.from_kafka({"group.remote.assignor": "range"})


def test_the_consumer_protocol_needs_a_network_round_trip():
    # A joining member resends at once on an error answer; a round trip of 0 would repeat it forever at one instant.
    with pytest.raises(ConfigError, match=r"^coordsim.network.rtt.ms must be >= 1 with group.protocol=consumer$"):
        ClientConfig.from_kafka(dict(CONSUMER, **{"coordsim.network.rtt.ms": 0}))
    ClientConfig.from_kafka({"coordsim.network.rtt.ms": 0})


@pytest.mark.parametrize("rtt", [1, 2])
def test_a_member_joining_while_the_coordinator_loads_resends_its_join_at_each_round_trip(rtt):
    # AbstractHeartbeatRequestManager.poll: a JOINING member heartbeats now, whatever the backoff, so each
    # COORDINATOR_LOAD_IN_PROGRESS answer is followed by the next full heartbeat one round trip later.
    ctx = GroupContext()
    ctx.fault(fault="move", load_delay_ms=2_000)
    ctx.sleep(500)
    start(ctx, 1, {"coordsim.network.rtt.ms": rtt})
    ctx.sleep(5_000)
    joins = [r for r in ctx.rows("responses") if r["api"] == "ConsumerGroupHeartbeat"]
    loading = [r for r in joins if r["error"] == "COORDINATOR_LOAD_IN_PROGRESS"]
    gaps = {b["request_ts"] - a["request_ts"] for a, b in zip(loading, loading[1:])}
    assert gaps == {rtt} and abs(len(loading) - 1_500 // rtt) <= 1
    assert joins[len(loading)]["error"] == "NONE" and joins[len(loading)]["request_ts"] >= 2_000
    assert ctx.runtime.fleet.clients["c0"].membership.state is ClientMemberState.STABLE


def test_a_stalled_poll_loop_leaves_at_max_poll_interval_and_rejoins_at_epoch_zero():
    ctx = GroupContext()
    start(ctx, 2, {"max.poll.interval.ms": 20_000})
    ctx.sleep(20_000)
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=40_000, scope="poll")
    ctx.sleep(60_000)
    c1 = [(r["ts"], json.loads(r["raw"])) for r in ctx.rows("requests") if r["client_id"] == "c1" and r["ts"] > 20_000]
    heartbeats = [(ts, raw["member_epoch"]) for ts, raw in c1 if raw["type"] == "CONSUMER_GROUP_HEARTBEAT"]
    leave = next(ts for ts, epoch in heartbeats if epoch == -1)
    assert 40_000 <= leave < 41_000
    assert next(ts for ts, epoch in heartbeats if epoch == 0) >= 60_000  # back at its first poll after the stall
    # Between the two it neither heartbeats nor commits: it gave its partitions up with the leave.
    assert not [ts for ts, _ in c1 if leave < ts < 60_000]
    assert {r["error"] for r in ctx.rows("responses") if r["client_id"] == "c1"} == {"NONE"}
    assert sorted(len(c.owned) for c in ctx.runtime.fleet.clients.values()) == [3, 3]


def test_a_commit_before_revocation_is_retried_on_retriable_errors_until_its_deadline():
    # CommitRequestManager.maybeAutoCommitSyncBeforeRebalance: c1 commits before revoking a partition for the
    # newcomer just as the coordinator moves. NOT_COORDINATOR: it looks the coordinator up, then retries;
    # COORDINATOR_LOAD_IN_PROGRESS: it retries with the offsets of then after retry.backoff.ms, doubling up to
    # retry.backoff.max.ms; at the deadline (max.poll.interval.ms after the first attempt) it gives up and the
    # reconciliation goes on.
    ctx, config = GroupContext(), {"max.poll.interval.ms": 3_000}
    start(ctx, 2, config)
    ctx.sleep(20_000)
    ctx.send("CLIENT_START", client_id="c2", topics=["orders"], config=dict(CONSUMER, **config))
    ctx.sleep(250)
    ctx.fault(fault="move", load_delay_ms=10_000)
    ctx.sleep(5_000)
    c1 = [r for r in ctx.rows("requests") if r["client_id"] == "c1" and r["ts"] > 20_250]
    first = c1[0]["ts"]
    retrying = [r for r in c1 if r["ts"] < first + 3_000]
    answers = {r["request_id"]: r["error"] for r in ctx.rows("responses")}
    assert [(r["type"], answers[r["request_id"]]) for r in retrying] == [
        ("OFFSET_COMMIT", "NOT_COORDINATOR"), ("FIND_COORDINATOR", "NONE")] + [
        ("OFFSET_COMMIT", "COORDINATOR_LOAD_IN_PROGRESS")] * 5
    commits = [r["ts"] for r in retrying if r["type"] == "OFFSET_COMMIT"]
    waits = [b - a - 2 for a, b in zip(commits[1:], commits[2:])]  # less the round trip (1 ms each way)
    assert len(waits) == 4 and all(0.8 * backoff <= wait <= 1.2 * backoff
                                   for wait, backoff in zip(waits, (200, 400, 800, 1_000)))
    offsets = [json.loads(r["raw"])["offsets"][0]["offset"] for r in retrying if r["type"] == "OFFSET_COMMIT"]
    assert offsets == sorted(offsets) and offsets[0] < offsets[-1]
    # Given up at the deadline: the next request is the heartbeat acknowledging the reconciled assignment.
    ack = json.loads(c1[len(retrying)]["raw"])
    assert c1[len(retrying)]["ts"] == first + 3_000 and ack["type"] == "CONSUMER_GROUP_HEARTBEAT"
    assert ack["topic_partitions"] == [{"topic": "orders", "partitions": [3, 4]}]
