"""Each shipped scenario, shrunk to a few groups, shows the behaviour Kafka users know from production."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.console import Console

from simulations.scenarios.generator import AUTOMATIC_ELECTION, to_jsonl
from simulations.scenarios.summary import render, summarize
from simulations.validation import validate
from simulations.views.rebalances import rebalance_starts
from tableio.parquet import write_tables

from .helpers import Run, run, shipped_small

SESSION_MS, HEARTBEAT_MS = 45_000, 3_000  # the Java consumer's defaults
INITIAL_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms's default: the formation's window


def after_the_first(rebalances: list[tuple[int, str]]) -> list[str]:
    """Causes of every rebalance after the group's first one (its formation)."""
    return [cause for _, cause in rebalances[1:]]


def formation_and_later_rebalances(r: Run, group_id: str, starts: list[int]) -> tuple[int | None, int, list[int]]:
    """The formation's end, the rebalances after it and their durations, read from the tables by the metrics
    table's definition (docs/tables.md#metrics): a rebalance is the formation's when it starts before the
    group was Stable after the formation's previous ones, or within the initial delay of the previous one; a
    later one lasts until the group is next Stable (a `group_states` row, or a generation Stable in the write
    that bumped it) and has no duration if the group goes Empty or Dead first. (A rebalance is put before the
    rows of its millisecond: not so for a consumer group's first epoch after an online upgrade, whose
    conversion rows come first.)"""
    states = [(row["ts"], row["to_state"]) for row in r.rows("group_states", group_id)]
    states += [(row["stable_ts"], "Stable") for row in r.rows("generations", group_id) if row["stable_ts"] is not None]
    # At the same ms a rebalance starts before the group is Stable at it.
    timeline = sorted([(ts, 0, None) for ts in starts] + [(ts, 1, state) for ts, state in states])
    formed, previous, later, waiting, durations = None, None, 0, [], []
    for ts, is_state, state in timeline:
        if not is_state and (formed is None or (previous is not None and ts - previous < INITIAL_DELAY_MS)):
            formed, previous = None, ts
        elif not is_state:
            later += 1
            waiting.append(ts)
        elif state == "Stable":
            formed = ts if formed is None else formed
            durations += [ts - start for start in waiting]
            waiting = []
        elif state in ("Empty", "Dead"):
            waiting = []
    return formed, later, sorted(durations)


def assigned_partitions(r: Run, group_id: str) -> set[tuple[str, int]]:
    last = max(row["generation_id"] for row in r.rows("assignments", group_id))
    return {(row["topic"], row["partition"]) for row in r.rows("assignments", group_id) if row["generation_id"] == last}


def test_default_and_dynamic_rolling_restarts_cost_two_rebalances_per_member():
    for name in ("default", "rolling-restart-dynamic-eager"):
        r = run(shipped_small(name, sets={"*": {"groups": 2, "members": 4}}))
        for group_id in r.group_ids():
            causes = after_the_first(r.rebalances(group_id))
            assert causes == ["member_leave", "member_join"] * 4, (name, group_id)
            metrics = r.metrics(group_id)
            assert metrics["rebalances_after_formation"] == 8
            assert metrics["end_state"] == "Stable" and metrics["end_members"] == 4
            assert len(assigned_partitions(r, group_id)) == r.scenario.group_sets[0].topics[0].partitions


def moves_between_staying_members(r, group_id: str) -> int:
    """Partitions a rolling restart hands from one member to another where neither is the member leaving nor
    the one coming back in that step (from a member's leave to the next one's), by the assignments rows."""
    members = r.rows("members", group_id)
    steps = []  # (out_seq of the leave, {the leaving member, the member that joins next})
    for i, row in enumerate(members):
        if row["change"] == "removed" and row["cause"] == "member_leave":
            back = next((m["member_id"] for m in members[i + 1:] if m["change"] == "added"), None)
            steps.append((row["out_seq"], {row["member_id"], back}))
    last_owner, moves = {}, 0
    for row in r.rows("assignments", group_id):
        partition, owner = (row["topic"], row["partition"]), row["member_id"]
        involved = [members for seq, members in steps if seq < row["out_seq"]]
        previous = last_owner.get(partition)
        if previous not in (None, owner) and involved and not {previous, owner} & involved[-1]:
            moves += 1
        last_owner[partition] = owner
    return moves


@pytest.mark.parametrize("assignor, sticky", [("range", False), ("uniform", True)])
def test_consumer_protocol_rolling_restart_moves_partitions_between_staying_members_only_under_range(
        assignor, sticky):
    """range gives each member a contiguous range in member id order, so a leave or a return also moves
    partitions between the members that stay; uniform is sticky: only the restarted member's move."""
    config = {"group.protocol": "consumer", "group.remote.assignor": assignor}
    r = run(shipped_small("rolling-restart-consumer-protocol", sets={"*": {"groups": 2, "members": 4,
                                                                          "config": config}}))
    partitions = r.scenario.group_sets[0].topics[0].partitions
    for group_id in r.group_ids():
        assert (moves_between_staying_members(r, group_id) == 0) == sticky
        assert {row["api"] for row in r.rows("responses", group_id)} == {"ConsumerGroupHeartbeat", "OffsetCommit",
                                                                       "OffsetFetch"}
        # After the formation, one group epoch for each leave and each join of a restarted member (a join
        # that moves partitions from members who keep running: Stable -> Reconciling, no Assigning).
        causes = [row["cause"] for row in r.rows("generations", group_id)]
        assert causes[-8:] == ["member_leave", "member_join"] * 4, (group_id, causes)
        metrics = r.metrics(group_id)
        # The formation's joins, one epoch each, are not later rebalances: the same 8 as a classic fleet's.
        assert metrics["rebalances_after_formation"] == 8 and metrics["rebalances"] == len(causes) > 8
        assert metrics["end_state"] == "Stable" and metrics["end_members"] == 4 and metrics["failed_commits"] == 0
        leaves = [json.loads(row["raw"]) for row in r.rows("requests", group_id)
                  if row["type"] == "CONSUMER_GROUP_HEARTBEAT" and json.loads(row["raw"])["member_epoch"] == -1]
        assert len(leaves) == 4
        assert len(assigned_partitions(r, group_id)) == partitions


def test_static_rolling_restart_within_the_session_timeout_never_rebalances():
    r = run(shipped_small("rolling-restart-static", sets={"*": {"groups": 2, "members": 4}}))
    for group_id in r.group_ids():
        assert after_the_first(r.rebalances(group_id)) == []
        assert r.metrics(group_id)["partitions_moved"] == 0
        assert not [row for row in r.rows("responses", group_id) if row["api"] == "LeaveGroup"]
    # ...but with a session timeout shorter than the downtime, every restarted member is expired first
    short = run(shipped_small("rolling-restart-static", sets={"*": {"groups": 1, "members": 4,
                                                                    "config": {"session.timeout.ms": 10_000}}}))
    causes = after_the_first(short.rebalances(short.group_ids()[0]))
    assert causes.count("session_timeout") == 4 and set(causes) <= {"session_timeout", "static_member_rejoin",
                                                                    "member_join"}


def test_cooperative_rolling_restart_moves_fewer_partitions_than_eager():
    r = run(shipped_small("rolling-restart-cooperative", sets={"*": {"groups": 2, "members": 4}}))
    moved = {name: sum(r.metrics(g)["partitions_moved"] for g in r.group_ids(name)) for name in ("eager", "cooperative")}
    assert 0 < moved["cooperative"] < moved["eager"]
    eager_causes = {c for g in r.group_ids("eager") for c in after_the_first(r.rebalances(g))}
    cooperative_causes = {c for g in r.group_ids("cooperative") for c in after_the_first(r.rebalances(g))}
    assert eager_causes == {"member_leave", "member_join"}
    assert "member_metadata_update" in cooperative_causes  # the follow-up rebalance after a revocation


def test_a_crash_is_detected_after_the_session_timeout_and_the_member_comes_back():
    r = run(shipped_small("crash", sets={"*": {"groups": 2}}))
    for group_id in r.group_ids():
        [crash] = r.directives("CLIENT_CRASH", group_id)
        last_heartbeat = max(row["request_ts"] for row in r.rows("responses", group_id)
                             if row["api"] == "Heartbeat" and row["request_id"].startswith(f"{crash['client_id']}#0/"))
        assert last_heartbeat <= crash["ts"]
        expired = [row["ts"] for row in r.rows("group_states", group_id) if row["cause"] == "session_timeout"]
        assert expired == [last_heartbeat + SESSION_MS]
        restart = crash["ts"] + 120_000 - r.scenario.start_ms
        assert [cause for ts, cause in r.rebalances(group_id) if ts >= restart] == ["member_join"]
        assert r.metrics(group_id)["end_members"] == 4 and r.metrics(group_id)["unconsumed_partition_ms"] > 0


def test_a_pause_longer_than_the_session_timeout_evicts_and_the_member_rejoins():
    r = run(shipped_small("gc-pause", sets={"*": {"groups": 8}}))
    session = r.client_config("session.timeout.ms", SESSION_MS)
    evicted = kept = 0
    for pause in r.directives("CLIENT_PAUSE"):
        start, end = pause["ts"] - r.scenario.start_ms, pause["ts"] + pause["duration_ms"] - r.scenario.start_ms
        during = [cause for ts, cause in r.rebalances(pause["group_id"]) if start < ts <= end]
        if pause["duration_ms"] > session:
            assert during == ["session_timeout"], pause
            rejoin = [cause for ts, cause in r.rebalances(pause["group_id"]) if end <= ts <= end + HEARTBEAT_MS]
            assert rejoin == ["member_join"], pause
            evicted += 1
        elif pause["duration_ms"] < session - HEARTBEAT_MS:
            assert during == [], pause
            kept += 1
    assert evicted and kept
    assert all(r.metrics(g)["end_members"] == 4 for g in r.group_ids())


def test_a_poll_stall_longer_than_max_poll_interval_leaves_the_group_and_rejoins():
    r = run(shipped_small("slow-consumer", sets={"*": {"groups": 10}}))
    max_poll = r.client_config("max.poll.interval.ms", 300_000)
    left = stayed = 0
    for stall in r.directives("CLIENT_PAUSE"):
        assert stall["scope"] == "poll"
        leaves = [row["request_ts"] - stall["ts"] for row in r.rows("responses", stall["group_id"])
                  if row["api"] == "LeaveGroup" and row["client_id"] == stall["client_id"]]
        if stall["duration_ms"] > max_poll:
            assert len(leaves) == 1 and max_poll <= leaves[0] <= max_poll + 10, stall
            joins = [row for row in r.rows("responses", stall["group_id"]) if row["api"] == "JoinGroup"
                     and row["client_id"] == stall["client_id"] and row["request_ts"] >= stall["ts"] + stall["duration_ms"]]
            assert joins and joins[-1]["error"] == "NONE"
            left += 1
        else:
            assert leaves == [], stall
            stayed += 1
    assert left and stayed


def test_a_flapping_member_costs_two_rebalances_per_cycle():
    r = run(shipped_small("flapping", sets={"*": {"groups": 1}}))
    [group_id] = r.group_ids()
    assert after_the_first(r.rebalances(group_id)) == ["member_leave", "member_join"] * 5


def test_scale_out_eager_rebalances_once_cooperative_twice_and_moves_more():
    r = run(shipped_small("scale-out", sets={"*": {"groups": 2}}))
    for name, rounds in (("eager", ["member_join"]), ("cooperative", ["member_join", "member_metadata_update"])):
        for group_id in r.group_ids(name):
            scale_out = [cause for ts, cause in r.rebalances(group_id) if 60_000 <= ts < 180_000]
            assert scale_out == rounds, (name, group_id)
            assert r.metrics(group_id)["end_members"] == 4
    moved = {name: sum(r.metrics(g)["partitions_moved"] for g in r.group_ids(name)) for name in ("eager", "cooperative")}
    assert moved["cooperative"] < moved["eager"]


def test_a_partition_increase_is_noticed_at_the_leaders_next_metadata_refresh():
    r = run(shipped_small("partition-increase", sets={"*": {"groups": 2}}))
    for group_id in r.group_ids():
        first = r.rows("generations", group_id)[0]
        [increase] = [row for row in r.directives("TOPIC_METADATA", group_id) if row["seq"] > 1]
        [(rejoin, cause)] = r.rebalances(group_id)[1:]
        assert cause == "leader_rejoin"
        refresh = first["join_complete_ts"] + 300_000 - r.scenario.start_ms  # metadata.max.age.ms after assigning
        assert increase["ts"] - r.scenario.start_ms < refresh <= rejoin <= refresh + 200
        assert len(assigned_partitions(r, group_id)) == 24


def test_offsets_expire_after_the_retention_once_the_group_is_empty():
    r = run(shipped_small("offsets-expiry", sets={"*": {"groups": 1}}))
    [group_id] = r.group_ids()
    retention, check = 7 * 24 * 3_600_000, 600_000  # Kafka's defaults
    [empty] = [row["ts"] for row in r.rows("group_states", group_id) if row["to_state"] == "Empty"
               and row["cause"] != "group_created"]
    tombstones = [row for row in r.rows("offsets", group_id) if row["offset"] is None]
    assert len(tombstones) == 12
    assert {row["write_ts"] for row in tombstones} == {(empty + retention + check - 1) // check * check}
    dead = r.rows("group_states", group_id)[-1]
    assert (dead["to_state"], dead["cause"], dead["ts"]) == ("Dead", "group_expired", tombstones[0]["write_ts"])
    assert r.metrics(group_id)["end_state"] is None  # deleted


def test_manual_commits_on_revocation_hand_partitions_over_without_duplicates():
    r = run(shipped_small("manual-commit", sets={"*": {"groups": 2}}))
    figures = {name: [r.metrics(g) for g in r.group_ids(name)] for name in ("on-revoke", "batched", "never")}
    assert all(m["partitions_moved"] > 0 and m["failed_commits"] == 0 for ms in figures.values() for m in ms)
    assert all(m["duplicate_records"] == 0 and m["skipped_records"] == 0 for m in figures["on-revoke"])
    assert all(m["duplicate_records"] > 0 and m["skipped_records"] == 0 for m in figures["batched"])
    assert all(m["skipped_records"] > 0 and m["duplicate_records"] == 0 for m in figures["never"])
    assert not [row for g in r.group_ids("never") for row in r.rows("offsets", g)]


def test_a_coordinator_move_is_rediscovered_and_only_a_move_mid_rebalance_costs_a_rebalance():
    r = run(shipped_small("coordinator-move", sets={"*": {"groups": 2}}))
    for group_id in r.group_ids():
        states = [(row["to_state"], row["cause"]) for row in r.rows("group_states", group_id)]
        assert states.count(("Dead", "coordinator_unload")) == 2 and states.count(("Stable", "coordinator_load")) == 2
        # The steady move costs nothing; the one while a restarted member joins makes it join once more.
        assert after_the_first(r.rebalances(group_id)) == ["member_leave", "member_join", "member_join"] + \
            ["member_leave", "member_join"] * 3
        responses = r.rows("responses", group_id)
        errors = {(row["api"], row["error"]) for row in responses}
        assert {("Heartbeat", "NOT_COORDINATOR"), ("FindCoordinator", "NONE"),
                ("OffsetCommit", "COORDINATOR_LOAD_IN_PROGRESS"), ("JoinGroup", "UNKNOWN_MEMBER_ID")} <= errors
        metrics = r.metrics(group_id)
        assert metrics["failed_commits"] == 4 and metrics["end_state"] == "Stable" and metrics["end_members"] == 4


def test_a_broker_failure_moves_its_groups_after_fencing_and_the_election_gives_them_back():
    r = run(shipped_small("broker-failure", sets={"*": {"groups": 12}}))
    start = r.scenario.start_ms
    # Broker 3's last heartbeat reached the controller before the crash; the fence came 9 s after it, the
    # imbalance check leader.imbalance.check.interval.seconds after the fence.
    action, election = r.generated.actions
    crash, fenced = start + 180_000, action["fenced_ts"]
    assert action["start_ts"] == crash and action["end_ts"] == start + 300_000
    assert fenced == action["last_heartbeat_ts"] + 9_000 and crash - 2_000 <= action["last_heartbeat_ts"] < crash
    back = fenced + 300_000
    # The hand-back is an action of the controller's own, until its loads have ended.
    assert election["action"] == AUTOMATIC_ELECTION and election["start_ts"] == back < election["end_ts"]
    moved = 0
    for group_id in r.group_ids():
        states = [(row["ts"], row["to_state"], row["cause"], row["coordinator_id"])
                  for row in r.rows("group_states", group_id)]
        first = states[0][3]
        assert after_the_first(r.rebalances(group_id)) == []  # a move never rebalances a steady group
        if first != 3:
            assert {s[3] for s in states} == {first} and not [s for s in states if s[2] == "coordinator_unload"]
            continue
        moved += 1
        moves = [s for s in states if s[2] in ("coordinator_unload", "coordinator_load")]
        (t1, _, _, b1), (t2, _, _, b2), (t3, _, _, b3), (t4, _, _, b4) = moves
        assert (t1, b1) == (crash, 3) and t2 > fenced and b2 not in (3, None)
        assert (t3, b3) == (back, b2) and t4 > back and b4 == 3
        responses = r.rows("responses", group_id)
        # While broker 3 was down but not fenced, only lookups were answered, by the other brokers, naming it;
        # the heartbeats and commits sent to it are the clients' failed connections (no broker answered).
        gap = [row for row in responses if crash <= row["request_ts"] < fenced]
        assert {(row["api"], row["error"], row["coordinator_id"]) for row in gap} == {
            ("FindCoordinator", "NONE", 3), ("Heartbeat", "NETWORK_EXCEPTION", 3),
            ("OffsetCommit", "NETWORK_EXCEPTION", 3)}
        assert {row["node_id"] for row in gap if row["api"] == "FindCoordinator"} <= {1, 2, 4, 5, 6}
        assert ("Heartbeat", "NOT_COORDINATOR", b2) in {(row["api"], row["error"], row["coordinator_id"])
                                                        for row in responses if row["request_ts"] >= back}
        # Every failed commit is a row: the commits sent to broker 3 while it was down among them.
        failed = [row for row in responses if row["api"] == "OffsetCommit" and row["error"] != "NONE"]
        assert r.metrics(group_id)["failed_commits"] == len(failed) > 0
        assert r.metrics(group_id)["end_state"] == "Stable"
    assert moved >= 1
    finds = [row for row in r.rows("responses") if row["api"] == "FindCoordinator"]
    assert finds and None not in {row["node_id"] for row in finds}


def test_protocol_comparison_summarizes_each_protocol_by_one_definition_of_its_figures():
    r = run(shipped_small("protocol-comparison", sets={"*": {"groups": 1, "members": 3}}))
    started = rebalance_starts(*(pd.DataFrame(r.rows(table)) for table in ("group_states", "generations")))
    later = {}
    for set_name, protocol in (("classic", "classic"), ("consumer", "consumer")):
        [group_id] = r.group_ids(set_name)
        metrics, generations = r.metrics(group_id), r.rows("generations", group_id)
        mine = started[started["group_id"] == group_id]
        assert set(mine["protocol"]) == {protocol} and len(mine) == metrics["rebalances"]
        if protocol == "consumer":  # every group epoch is a rebalance, reconciled to or superseded
            assert metrics["rebalances"] == len(generations)
        formed, later[set_name], durations = formation_and_later_rebalances(r, group_id, sorted(mine["ts"]))
        first_event = min(row["ts"] for row in r.generated.rows if row["group_id"] == group_id)
        assert metrics["time_to_stable_ms"] == formed - first_event
        assert metrics["rebalances_after_formation"] == later[set_name]
        assert sorted(e["ms"] for e in metrics["rebalance_durations"] for _ in range(e["count"])) == durations
        assert metrics["end_state"] == "Stable" and metrics["partitions_moved"] > 0
    # The same restarts and crash: as many rebalances after formation for either protocol (2 per restart,
    # 2 for the crash), whatever each protocol's formation counted.
    assert later["classic"] == later["consumer"] == 2 * 3 + 2
    console = Console(file=io.StringIO(), width=120)
    render(console, summarize(r.scenario, r.generated.groups, r.result.tables))
    lines = {line.split("  ", 1)[0].strip(): line.split() for line in console.file.getvalue().splitlines()}
    assert lines["group set"][-2:] == ["classic", "consumer"]
    assert lines["group.protocol"][-2:] == ["classic", "consumer"]
    totals = [sum(r.metrics(g)["rebalances"] for g in r.group_ids(name)) for name in ("classic", "consumer")]
    assert lines["rebalances"][-2:] == [str(n) for n in totals]
    assert lines["rebalances after formation"][-2:] == [str(later["classic"]), str(later["consumer"])]


def test_a_rolling_restart_to_group_protocol_consumer_converts_each_group_and_leaves_only_consumer_members(
        tmp_path):
    r = run(shipped_small("upgrade-to-consumer-protocol", sets={"*": {"groups": 1}}))
    for group_id in r.group_ids():
        starts = r.directives("CLIENT_START", group_id)
        [first] = [s for s in starts if s.get("config", {}).get("group.protocol") == "consumer"][:1]
        states = r.rows("group_states", group_id)
        converted = [(row["from_state"], row["to_state"]) for row in states if row["cause"] == "group_converted"]
        assert converted == [("Stable", "Dead"), ("Empty", "Stable")], group_id
        [at] = {row["ts"] for row in states if row["cause"] == "group_converted"}
        # ...at the first consumer-protocol member's first heartbeat, which joins it.
        [heartbeat] = [row for row in r.rows("responses", group_id) if row["api"] == "ConsumerGroupHeartbeat"][:1]
        assert heartbeat["client_id"] == first["client_id"] and heartbeat["request_ts"] == at >= first["ts"]
        # The classic members went on consuming inside the consumer group until their own restart.
        assert any(row["api"] == "JoinGroup" and row["request_ts"] > at for row in r.rows("responses", group_id))
        # At the end: a Stable consumer group whose members all use the consumer protocol.
        members: dict[str, dict | None] = {}
        for record in r.rows("consumer_group_records", group_id):
            if record["record_type"] == "ConsumerGroupMemberMetadata":
                members[record["member_id"]] = None if record["tombstone"] else json.loads(record["value"])
        alive = [m for m in members.values() if m is not None]
        assert len(alive) == 4 and all(m["classic_member_metadata"] is None for m in alive), group_id
        metrics = r.metrics(group_id)
        assert metrics["end_state"] == "Stable" and metrics["end_members"] == 4 and metrics["failed_commits"] == 0
        last = max(s["ts"] for s in starts)
        assert {row["api"] for row in r.rows("responses", group_id) if row["request_ts"] > last + 60_000} <= {
            "ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch"}
    console = Console(file=io.StringIO(), width=160)
    render(console, summarize(r.scenario, r.generated.groups, r.result.tables))
    assert "classic → consumer" in console.file.getvalue()
    # The run's tables pass `coordsim validate` (suites, invariants, every input row accounted for).
    out = write_tables(tmp_path / "run", r.result.tables)
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(r.generated.rows))
    result = validate(out, events=[events], until=r.generated.until_ms)
    assert result.success, result.summary()


def test_a_second_rolling_restart_back_to_classic_downgrades_each_group_again(tmp_path):
    # The rollback docs/scenarios.md describes: the last member using the consumer protocol leaving converts
    # the group back (the online downgrade, default migration policy).
    rollback = {"at": "4m", "action": "rolling_restart", "downtime": "10s", "gap": "20s", "jitter": "5s",
                "config": {"group.protocol": "classic"}}
    r = run(shipped_small("upgrade-to-consumer-protocol", sets={"*": {"groups": 1}}, then=[rollback],
                          duration="8m"))
    for group_id in r.group_ids():
        states = r.rows("group_states", group_id)
        assert [(row["group_type"], row["from_state"], row["to_state"]) for row in states
                if row["cause"] == "group_converted"] == [
            ("classic", "Stable", "Dead"), ("consumer", "Empty", "Stable"),
            ("consumer", "Stable", "Dead"), ("classic", None, "Stable"), ("classic", "Stable", "PreparingRebalance")]
        assert (states[-1]["group_type"], states[-1]["to_state"], states[-1]["member_count"]) == ("classic", "Stable", 4)
    out = write_tables(tmp_path / "run", r.result.tables)
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(r.generated.rows))
    assert validate(out, events=[events], until=r.generated.until_ms).success

