"""Synthetic consumers in closed loop with the coordinator: the behaviours Kafka users know."""

from __future__ import annotations

import json
from operator import itemgetter

import pytest

from state.events import EventError, parse_event
from state.quiet_run import expand_rows
from state.runtime.group_runtime import GroupRuntime
from tests.state.harness import GroupContext, check_requests_rows

SESSION = {"session.timeout.ms": 10_000}


def start(ctx: GroupContext, n: int, topics=("orders",), partitions: int = 6, config=None, static=False,
          prefix: str = "c") -> list[str]:
    ctx.send("TOPIC_METADATA", topics=[{"topic": t, "partitions": partitions, "records_per_second": 10} for t in topics])
    names = [f"{prefix}{i}" for i in range(n)]
    for name in names:
        _start_client(ctx, name, topics, config, static)
    return names


def _start_client(ctx: GroupContext, name: str, topics=("orders",), config=None, static=False) -> None:
    fields = dict(client_id=name, topics=list(topics), config=dict(SESSION, **(config or {})))
    if static:
        fields["group_instance_id"] = f"{name}-instance"
    ctx.send("CLIENT_START", **fields)


def rolling_restart(ctx: GroupContext, names: list[str], config=None, static=False) -> None:
    """Each client closes, comes back 5 s later (the same config), and the next one follows 15 s after."""
    for name in names:
        ctx.send("CLIENT_STOP", client_id=name)
        ctx.sleep(5_000)
        _start_client(ctx, name, config=config, static=static)
        ctx.sleep(15_000)


def restarted_fleet() -> GroupContext:
    """Three consumers formed; c2 closes, comes back 5 s later, and the group settles for 20 s."""
    ctx = GroupContext()
    start(ctx, 3)
    ctx.sleep(20_000)
    ctx.send("CLIENT_STOP", client_id="c2")
    ctx.sleep(5_000)
    ctx.send("CLIENT_START", client_id="c2", topics=["orders"], config=SESSION)
    ctx.sleep(20_000)
    return ctx


def owners(ctx: GroupContext) -> dict:
    """partition -> client ids owning it (live clients only)."""
    result: dict = {}
    for client in ctx.runtime.fleet.clients.values():
        if client.alive:
            for tp in client.owned:
                result.setdefault(tuple(tp), []).append(client.client_id)
    return result


def rebalances(ctx: GroupContext) -> list[str]:
    return [cause for _, to, cause in ctx.transitions() if to == "PreparingRebalance"]


def test_members_converge_to_a_stable_balanced_assignment():
    ctx = GroupContext()
    start(ctx, 3)
    ctx.sleep(20_000)
    assert ctx.state == "Stable" and ctx.group.generation_id == 1
    owned = owners(ctx)
    assert sorted(owned) == [("orders", p) for p in range(6)]
    assert all(len(v) == 1 for v in owned.values())
    assert sorted(len(c.owned) for c in ctx.runtime.fleet.clients.values()) == [2, 2, 2]
    # eager range is the default ([range, cooperative-sticky] share only EAGER)
    assert ctx.group.protocol_name == "range"


def test_heartbeats_and_auto_commits_keep_their_intervals():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(30_000)
    beats = [r["request_ts"] for r in ctx.responses("Heartbeat")]
    assert {b - a for a, b in zip(beats, beats[1:])} == {3_000}
    commits = [r["request_ts"] for r in ctx.responses("OffsetCommit")]
    assert {b - a for a, b in zip(commits, commits[1:])} == {5_000}
    assert {r["error"] for r in ctx.responses()} == {"NONE", "MEMBER_ID_REQUIRED"}


def test_a_crash_is_detected_after_the_session_timeout():
    ctx = GroupContext()
    start(ctx, 2)
    ctx.sleep(20_000)
    ctx.send("CLIENT_CRASH", client_id="c1")
    crashed_member = ctx.runtime.fleet.clients["c1"].member_id
    last_beat = max(r["request_ts"] for r in ctx.responses("Heartbeat") if r["member_id"] == crashed_member)
    ctx.sleep(20_000)
    start_ts = [r["ts"] for r in ctx.rows("group_states") if r["cause"] == "session_timeout"]
    assert start_ts == [last_beat + 10_000]
    assert owners(ctx) and all(v == ["c0"] for v in owners(ctx).values())


def test_graceful_close_commits_then_leaves_and_the_group_rebalances_at_once():
    ctx = GroupContext()
    start(ctx, 2)
    ctx.sleep(20_000)
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(10)
    apis = [r["api"] for r in ctx.responses() if r["request_ts"] >= 20_000 and r["client_id"] == "c1"]
    assert apis == ["OffsetCommit", "LeaveGroup"]
    assert rebalances(ctx)[-1] == "member_leave" and ctx.state == "PreparingRebalance"
    # the survivor learns of the rebalance from its next heartbeat (REBALANCE_IN_PROGRESS), then rejoins
    ctx.sleep(3_000)
    assert ctx.state == "Stable" and list(owners(ctx).values()) == [["c0"]] * 6


def test_static_member_restart_within_the_session_timeout_does_not_rebalance():
    ctx = GroupContext()
    start(ctx, 3, static=True)
    ctx.sleep(20_000)
    before = {c.client_id: set(c.owned) for c in ctx.runtime.fleet.clients.values()}
    generation = ctx.group.generation_id
    ctx.send("CLIENT_STOP", client_id="c1")  # static: no LeaveGroup
    ctx.sleep(5_000)
    ctx.send("CLIENT_START", client_id="c1", group_instance_id="c1-instance", topics=["orders"], config=SESSION)
    ctx.sleep(20_000)
    assert ctx.group.generation_id == generation and rebalances(ctx) == ["member_join"]
    assert {c.client_id: set(c.owned) for c in ctx.runtime.fleet.clients.values()} == before
    assert not [r for r in ctx.responses("LeaveGroup")]


def test_dynamic_rolling_restart_rebalances_about_twice_per_member():
    ctx = GroupContext()
    names = start(ctx, 4)
    ctx.sleep(20_000)
    rolling_restart(ctx, names)
    restarts = rebalances(ctx)[1:]
    assert 2 * len(names) - 1 <= len(restarts) <= 2 * len(names)
    assert ctx.state == "Stable" and all(len(v) == 1 for v in owners(ctx).values())


def test_static_rolling_restart_with_downtime_below_the_session_timeout_never_rebalances():
    ctx = GroupContext()
    names = start(ctx, 4, static=True)
    ctx.sleep(20_000)
    rolling_restart(ctx, names, static=True)
    assert rebalances(ctx) == ["member_join"]


def test_a_process_pause_longer_than_the_session_evicts_and_the_member_rejoins():
    ctx = GroupContext()
    start(ctx, 2)
    ctx.sleep(20_000)
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=15_000, scope="process")
    ctx.sleep(40_000)
    assert "session_timeout" in rebalances(ctx)
    assert ctx.state == "Stable" and sorted(len(v) for v in owners(ctx).values()) == [1] * 6
    assert {len(c.owned) for c in ctx.runtime.fleet.clients.values()} == {3}


def test_a_stalled_poll_loop_leaves_after_max_poll_interval():
    ctx = GroupContext()
    start(ctx, 2, config={"max.poll.interval.ms": 20_000})
    ctx.sleep(20_000)
    member = ctx.runtime.fleet.clients["c1"].member_id
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=30_000, scope="poll")
    ctx.sleep(25_000)
    leave = [r for r in ctx.responses("LeaveGroup") if r["client_id"] == "c1"]
    assert [r["request_ts"] for r in leave] == [20_000 + 20_000 + 1]  # detected by the heartbeat thread
    assert leave[0]["results"][0]["member_id"] == member
    ctx.sleep(30_000)
    client = ctx.runtime.fleet.clients["c1"]
    assert client.member_id != member and client.phase.value == "STABLE"


def test_cooperative_sticky_moves_fewer_partitions_than_eager_on_scale_out():
    def moved(strategy: str) -> tuple[int, int]:
        ctx = GroupContext()
        start(ctx, 2, config={"partition.assignment.strategy": [strategy]})
        ctx.sleep(20_000)
        before = {c.client_id: set(c.owned) for c in ctx.runtime.fleet.clients.values()}
        start(ctx, 1, config={"partition.assignment.strategy": [strategy]}, prefix="new")
        ctx.sleep(30_000)
        after = {c.client_id: set(c.owned) for c in ctx.runtime.fleet.clients.values()}
        revoked = sum(len(before[c] - after[c]) for c in before)
        assert all(len(v) == 1 for v in owners(ctx).values()) and len(owners(ctx)) == 6
        return revoked, len(rebalances(ctx)) - 1

    eager_moved, eager_rounds = moved("range")
    coop_moved, coop_rounds = moved("cooperative-sticky")
    assert coop_moved < eager_moved or coop_moved == 2
    assert coop_rounds == 2 and eager_rounds == 1  # the cooperative follow-up rebalance


def test_leader_notices_a_partition_increase_at_its_metadata_refresh():
    ctx = GroupContext()
    start(ctx, 2, config={"metadata.max.age.ms": 30_000})
    ctx.sleep(20_000)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 8}])
    ctx.sleep(40_000)
    assert rebalances(ctx)[1:] == ["leader_rejoin"]
    assert len(owners(ctx)) == 8


def test_replaying_the_requests_table_reproduces_the_run():
    ctx = GroupContext()
    names = start(ctx, 3, config={"partition.assignment.strategy": ["cooperative-sticky"]})
    ctx.sleep(20_000)
    ctx.send("CLIENT_STOP", client_id=names[0])
    ctx.send("CLIENT_CRASH", client_id=names[1])
    ctx.sleep(30_000)
    ctx.runtime.finish()
    ctx.sleep(0)
    written = ctx.written("requests")
    assert any(r["repeat_count"] > 1 for r in written if r["type"] == "OFFSET_COMMIT")
    replay = GroupRuntime(ctx.group_id, ctx.config)
    replay.offer([parse_event(json.loads(r["raw"]), "requests", i) for i, r in enumerate(written)])
    replay.advance_to(ctx.time)
    replay.finish()
    out = replay.take_output().tables

    # The requests carry no production rate (TOPIC_METADATA is a directive, not a request): a replay of them
    # alone knows no log-end offsets.
    def strip(rows, drop=("out_seq", "log_end_offset")):
        return [{k: v for k, v in r.items() if k not in drop} for r in rows]

    for table in ("generations", "assignments", "group_states"):
        assert strip(out[table]) == strip(ctx.rows(table)), table
    # A replayed run is written when it ends; offsets are compared commit by commit.
    by_commit = ("write_ts", "topic", "partition")
    assert sorted(strip(expand_rows("offsets", out["offsets"])), key=itemgetter(*by_commit)) == \
        sorted(strip(ctx.rows("offsets")), key=itemgetter(*by_commit))


@pytest.mark.parametrize("strategy,static", [("range", False), ("cooperative-sticky", True)])
def test_every_synthetic_request_is_the_event_its_requests_row_parses_to(monkeypatch, strategy, static):
    """The clients build their requests' events directly (they are trusted); a replay of the `requests`
    table must read the same events back."""
    sent = check_requests_rows(monkeypatch)
    ctx = GroupContext()
    config = {"partition.assignment.strategy": [strategy], "max.poll.interval.ms": 20_000,
              "enable.auto.commit": strategy == "range"}
    names = start(ctx, 3, topics=("orders", "audit"), config=config, static=static)
    ctx.sleep(20_000)
    ctx.fault(fault="move", load_delay_ms=2_000)
    ctx.sleep(10_000)
    ctx.send("CLIENT_PAUSE", client_id=names[1], duration_ms=30_000, scope="poll")
    ctx.sleep(40_000)
    rolling_restart(ctx, names[:1], config=config, static=static)
    ctx.send("CLIENT_STOP", client_id=names[2])
    ctx.sleep(20_000)
    assert set(sent) == {"JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "OFFSET_COMMIT", "OFFSET_FETCH",
                         "FIND_COORDINATOR"} | ({"LEAVE_GROUP"} if not static else set())


def test_client_directives_are_validated():
    with pytest.raises(EventError, match="client_id"):
        parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "topics": ["t"]})
    with pytest.raises(EventError, match="unknown assignor"):
        parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": "c", "topics": ["t"],
                     "config": {"partition.assignment.strategy": ["fancy"]}})
    with pytest.raises(EventError, match="heartbeat.interval.ms"):
        parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": "c", "topics": ["t"],
                     "config": {"session.timeout.ms": 1000, "heartbeat.interval.ms": 3000}})
    with pytest.raises(EventError, match="scope"):
        parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_PAUSE", "client_id": "c", "duration_ms": 5,
                     "scope": "thread"})


def test_directives_for_clients_that_do_not_run_are_rejected_not_lost():
    ctx = GroupContext()
    ctx.send("CLIENT_STOP", client_id="ghost")
    assert [r["reason"] for r in ctx.rejected] == ["client 'ghost' is not running"]


def end_metrics(ctx: GroupContext) -> dict:
    ctx.runtime.finish()
    ctx.sleep(0)
    (row,) = ctx.rows("metrics")
    return row


def test_a_crash_costs_the_records_processed_since_the_last_commit():
    ctx = GroupContext()
    start(ctx, 2)
    ctx.sleep(20_000)
    crashed = ctx.runtime.fleet.clients["c1"]
    owned = list(crashed.owned)
    committed = {(r["topic"], r["partition"]): r["offset"] for r in ctx.rows("offsets")}
    ctx.sleep(1_000)
    crash_ts = ctx.time
    ctx.send("CLIENT_CRASH", client_id="c1")
    ctx.sleep(30_000)
    m = end_metrics(ctx)
    # 10 records/s per partition since t=0: what was processed after the last commit is processed again
    assert m["duplicate_records"] == sum(crash_ts * 10 // 1000 - committed[tuple(tp)] for tp in owned) > 0
    assert m["partitions_moved"] == len(owned)
    reassigned = max(r["assign_ts"] for r in ctx.rows("assignments"))
    assert m["unconsumed_partition_ms"] >= len(owned) * (reassigned - crash_ts)
    assert m["skipped_records"] == 0 and m["failed_commits"] == 0


def test_a_graceful_eager_restart_commits_before_revoking_so_nothing_is_processed_twice():
    ctx = restarted_fleet()
    m = end_metrics(ctx)
    assert m["duplicate_records"] == 0 and m["skipped_records"] == 0
    assert m["rebalances"] == 3 and [c["cause"] for c in m["rebalance_causes"]] == ["member_join", "member_leave"]
    assert m["generations"] == 3 and m["rebalance_ms_max"] >= m["rebalance_ms_p99"] >= m["rebalance_ms_p50"] > 0


def test_a_static_restart_leaves_its_partitions_unconsumed_for_the_downtime_only():
    ctx = GroupContext()
    start(ctx, 2, static=True)
    ctx.sleep(20_000)
    owned = len(ctx.runtime.fleet.clients["c1"].owned)
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(4_000)
    ctx.send("CLIENT_START", client_id="c1", group_instance_id="c1-instance", topics=["orders"], config=SESSION)
    ctx.sleep(10_000)
    m = end_metrics(ctx)
    assert m["partitions_moved"] == 0 and m["duplicate_records"] == 0 and m["rebalances"] == 1
    # down for 4 s, then one round trip plus the join/sync of the restarted process
    assert owned * 4_000 <= m["unconsumed_partition_ms"] <= owned * 4_100


@pytest.mark.parametrize("reset, duplicates, skipped", [("earliest", True, False), ("latest", False, True)])
def test_without_commits_a_handoff_follows_auto_offset_reset(reset, duplicates, skipped):
    ctx = GroupContext()
    start(ctx, 2, config={"enable.auto.commit": False, "coordsim.manual.commit": "none",
                         "auto.offset.reset": reset})
    ctx.sleep(20_000)
    ctx.send("CLIENT_CRASH", client_id="c1")
    ctx.sleep(30_000)
    m = end_metrics(ctx)
    assert (m["duplicate_records"] > 0) is duplicates and (m["skipped_records"] > 0) is skipped


def test_groups_without_synthetic_clients_report_no_client_side_figures():
    ctx = GroupContext()
    ctx.stable_group(2)
    m = end_metrics(ctx)
    assert m["rebalances"] == 1 and m["generations"] == 1 and m["time_to_stable_ms"] == 6_000
    assert m["unconsumed_partition_ms"] is None and m["duplicate_records"] is None


def test_partitions_of_a_group_closed_on_purpose_stop_counting_as_unconsumed():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(20_000)
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(3_600_000)
    assert end_metrics(ctx)["unconsumed_partition_ms"] == 0


def test_partitions_of_a_crashed_consumer_count_as_unconsumed_until_the_end():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(20_000)
    ctx.send("CLIENT_CRASH", client_id="c0")
    ctx.sleep(60_000)
    assert end_metrics(ctx)["unconsumed_partition_ms"] == 6 * 60_000


@pytest.mark.parametrize("end", [25_000, 25_001, 25_002, 26_000, 26_001])
def test_every_request_in_the_requests_table_was_answered_whatever_ms_the_run_ends(end):
    ctx = GroupContext()
    start(ctx, 2)
    ctx.sleep(end)
    answered = {r["request_id"] for r in ctx.responses()}
    assert {r["request_id"] for r in ctx.rows("requests")} <= answered


# -- enable.auto.commit=false: the application commits ------------------------------------------------------

MANUAL = {"enable.auto.commit": False}


def requests_of(ctx: GroupContext, client_id: str, since: int = 0) -> list[tuple[int, str, list | None]]:
    """(ts, type, committed partitions) of the client's requests reaching the coordinator from `since` on."""
    rows = []
    for r in ctx.rows("requests"):
        if r["client_id"] == client_id and r["ts"] >= since:
            offsets = json.loads(r["raw"]).get("offsets")
            rows.append((r["ts"], r["type"], None if offsets is None else sorted(p["partition"] for p in offsets)))
    return rows


@pytest.mark.parametrize("settings, period", [({}, 100),
                                              ({"coordsim.manual.commit.interval.ms": 1_000,
                                                "coordsim.poll.interval.ms": 300}, 1_200),
                                              ({"coordsim.manual.commit": "async"}, 100)])
def test_manual_commits_follow_the_poll_loop_as_offset_commit_requests(settings, period):
    ctx = GroupContext()
    start(ctx, 1, config=dict(MANUAL, **settings))
    ctx.sleep(30_000)
    client = ctx.runtime.fleet.clients["c0"]
    commits = ctx.responses("OffsetCommit")
    ts = [r["request_ts"] for r in commits]
    assert {b - a for a, b in zip(ts, ts[1:])} == {period}
    assert {(r["member_id"], r["generation_id"], r["error"]) for r in commits} == {
        (client.member_id, ctx.group.generation_id, "NONE")}
    requests = [r for r in ctx.rows("requests") if r["type"] == "OFFSET_COMMIT"]
    assert len(requests) == len(commits)
    assert all(json.loads(r["raw"])["member_id"] == client.member_id for r in requests)


@pytest.mark.parametrize("mode, period", [("sync", 300), ("async", 100)])
def test_commit_sync_holds_the_poll_loop_until_its_answer_and_commit_async_does_not(mode, period):
    ctx = GroupContext()
    start(ctx, 1, config=dict(MANUAL, **{"coordsim.manual.commit": mode, "coordsim.network.rtt.ms": 250,
                                         "session.timeout.ms": 10_000}))
    ctx.sleep(30_000)
    ts = [r["request_ts"] for r in ctx.responses("OffsetCommit")]
    assert ts and {b - a for a, b in zip(ts, ts[1:])} == {period}


def test_manual_none_never_commits_not_even_on_revoke_or_close():
    ctx = GroupContext()
    start(ctx, 2, config=dict(MANUAL, **{"coordsim.manual.commit": "none"}))
    ctx.sleep(20_000)
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(20_000)
    assert not ctx.responses("OffsetCommit") and not ctx.rows("offsets")


def test_eager_commit_on_revoke_commits_every_owned_partition_before_the_join_group():
    config = dict(MANUAL, **{"coordsim.manual.commit.interval.ms": 60_000})
    ctx = GroupContext()
    start(ctx, 2, config=config)
    ctx.sleep(20_000)
    owned = sorted(tp.partition for tp in ctx.runtime.fleet.clients["c0"].owned)
    start(ctx, 1, config=config, prefix="new")
    ctx.sleep(20_000)
    # no cadence commit in this window: the only commit is onPartitionsRevoked's, answered before the rejoin
    sent = requests_of(ctx, "c0", since=20_001)
    types = [t for _, t, _ in sent if t != "HEARTBEAT"]
    assert types[:2] == ["OFFSET_COMMIT", "JOIN_GROUP"] and types.count("OFFSET_COMMIT") == 1
    (commit,) = [s for s in sent if s[1] == "OFFSET_COMMIT"]
    assert commit[2] == owned
    (answer,) = [r for r in ctx.responses("OffsetCommit") if r["request_ts"] == commit[0] and r["client_id"] == "c0"]
    join = next(s for s in sent if s[1] == "JOIN_GROUP")
    assert answer["error"] == "NONE" and answer["response_ts"] < join[0]
    m = end_metrics(ctx)
    assert m["partitions_moved"] > 0 and m["duplicate_records"] == 0 and m["skipped_records"] == 0


def test_cooperative_commit_on_revoke_commits_only_the_revoked_partitions_after_sync_group():
    config = dict(MANUAL, **{"coordsim.manual.commit.interval.ms": 60_000,
                             "partition.assignment.strategy": "cooperative-sticky"})
    ctx = GroupContext()
    start(ctx, 2, config=config)
    ctx.sleep(20_000)
    before = {tp.partition for tp in ctx.runtime.fleet.clients["c0"].owned}
    before_c1 = {tp.partition for tp in ctx.runtime.fleet.clients["c1"].owned}
    start(ctx, 1, config=config, prefix="new")
    ctx.sleep(20_000)
    after = {tp.partition for tp in ctx.runtime.fleet.clients["c0"].owned}
    after_c1 = {tp.partition for tp in ctx.runtime.fleet.clients["c1"].owned}
    sent = [s for s in requests_of(ctx, "c0", since=20_001) if s[1] != "HEARTBEAT"]
    # the first rejoin keeps every partition (nothing committed); SyncGroup withholds the moving one, which
    # is committed before the follow-up JoinGroup
    assert [t for _, t, _ in sent] == ["JOIN_GROUP", "SYNC_GROUP", "OFFSET_COMMIT", "JOIN_GROUP", "SYNC_GROUP"]
    assert sent[2][2] == sorted(before - after) != []
    m = end_metrics(ctx)
    assert m["partitions_moved"] == len(before - after) + len(before_c1 - after_c1)
    assert m["duplicate_records"] == 0 and m["skipped_records"] == 0


def fetching_offsets(ctx: GroupContext, client_id: str) -> None:
    """Sleep until the client owns partitions whose committed offsets are still being fetched."""
    for _ in range(300):
        if ctx.runtime.fleet.clients[client_id].unpositioned:
            return
        ctx.sleep(100)
    raise AssertionError(f"{client_id} never fetched offsets")


def non_heartbeats(ctx: GroupContext, client_id: str) -> list[tuple[int, str, list | None]]:
    return [r for r in requests_of(ctx, client_id) if r[1] != "HEARTBEAT"]


def test_a_rejoin_while_the_offset_fetch_is_out_commits_nothing_of_the_partitions_without_a_position():
    # ConsumerCoordinator.onJoinPrepare commits subscriptions.allConsumed(): the partitions whose committed
    # offsets are still being fetched have no position, and commitOffsetsSync of nothing sends no request.
    ctx = GroupContext()
    start(ctx, 1, config={"coordsim.network.rtt.ms": 3_000})
    fetching_offsets(ctx, "c0")
    ctx.send("SUBSCRIBE", client_id="c0", topics=["orders", "other"])
    ctx.sleep(20_000)
    types = [t for _, t, _ in non_heartbeats(ctx, "c0")]
    assert types[:6] == ["JOIN_GROUP", "JOIN_GROUP", "SYNC_GROUP", "OFFSET_FETCH", "JOIN_GROUP", "SYNC_GROUP"]


def test_a_close_while_the_offset_fetch_is_out_leaves_without_an_empty_offset_commit():
    ctx = GroupContext()
    start(ctx, 1, config={"coordsim.network.rtt.ms": 3_000})
    fetching_offsets(ctx, "c0")
    ctx.send("CLIENT_STOP", client_id="c0")
    ctx.sleep(20_000)
    assert [t for _, t, _ in non_heartbeats(ctx, "c0")] == ["JOIN_GROUP", "JOIN_GROUP", "SYNC_GROUP", "OFFSET_FETCH",
                                                             "LEAVE_GROUP"]


def test_a_close_during_the_loops_commit_sync_commits_again_where_processing_stopped_then_leaves():
    ctx = GroupContext()
    start(ctx, 2, config=MANUAL)
    ctx.sleep(20_001)  # c1's commit of the 20 s poll is on the wire
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(20_000)
    sent = [(ts, t) for ts, t, _ in requests_of(ctx, "c1", since=20_001)]
    assert sent == [(20_001, "OFFSET_COMMIT"), (20_003, "OFFSET_COMMIT"), (20_005, "LEAVE_GROUP")]
    m = end_metrics(ctx)
    assert m["partitions_moved"] == 3 and m["duplicate_records"] == 0 and m["skipped_records"] == 0


@pytest.mark.parametrize("settings, handoff", [({}, "committed"),
                                               ({"coordsim.commit.on.revoke": False}, "cadence"),
                                               ({"coordsim.manual.commit": "none"}, "reset")])
def test_a_graceful_eager_rolling_restart_in_manual_mode(settings, handoff):
    config = dict(MANUAL, **{"coordsim.manual.commit.interval.ms": 5_000}, **settings)
    ctx = GroupContext()
    names = start(ctx, 3, config=config)
    ctx.sleep(20_050)
    rolling_restart(ctx, names, config=config)
    m = end_metrics(ctx)
    assert m["partitions_moved"] > 0
    if handoff == "committed":  # onPartitionsRevoked commits what was processed: nothing twice, nothing lost
        assert m["duplicate_records"] == 0 and m["skipped_records"] == 0
    elif handoff == "cadence":  # what was processed since the last cadence commit is processed again
        assert m["duplicate_records"] > 0 and m["skipped_records"] == 0
    else:  # no committed offsets: auto.offset.reset=latest skips what the previous owner had not processed
        assert m["skipped_records"] > 0 and m["duplicate_records"] == 0 and not ctx.rows("offsets")


def test_a_crash_in_manual_mode_costs_the_records_processed_since_the_last_manual_commit():
    ctx = GroupContext()
    start(ctx, 2, config=dict(MANUAL, **{"coordsim.manual.commit.interval.ms": 2_000}))
    ctx.sleep(20_000)
    crashed = ctx.runtime.fleet.clients["c1"]
    owned = list(crashed.owned)
    ctx.sleep(1_500)
    committed = {(r["topic"], r["partition"]): r["offset"] for r in ctx.rows("offsets")}
    crash_ts = ctx.time
    ctx.send("CLIENT_CRASH", client_id="c1")
    ctx.sleep(30_000)
    m = end_metrics(ctx)
    assert m["duplicate_records"] == sum(crash_ts * 10 // 1000 - committed[tuple(tp)] for tp in owned) > 0
    assert m["skipped_records"] == 0 and m["failed_commits"] == 0


def test_the_late_commit_after_a_poll_stall_past_max_poll_interval_fails():
    ctx = GroupContext()
    start(ctx, 2, config=dict(MANUAL, **{"max.poll.interval.ms": 20_000}))
    ctx.sleep(20_000)
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=30_000, scope="poll")
    ctx.sleep(29_000)
    assert ctx.runtime.metrics.unsent_commits == 0  # still processing the stalled batch
    ctx.sleep(20_000)
    # the heartbeat thread left the group at 40 s: the commit of the batch that took 30 s is refused by the
    # client itself (CommitFailedException), before any request; then the loop rejoins and commits again
    assert not [r for r in ctx.responses("OffsetCommit") if r["client_id"] == "c1" and r["error"] != "NONE"]
    assert ctx.runtime.fleet.clients["c1"].phase.value == "STABLE"
    # no request, so no failed commit request: a figure of its own
    metrics = end_metrics(ctx)
    assert (metrics["failed_commits"], metrics["unsent_commits"]) == (0, 1)


def test_a_commit_after_a_process_pause_past_the_session_fails_with_unknown_member_id():
    ctx = GroupContext()
    start(ctx, 2, config=MANUAL)
    ctx.sleep(20_000)
    member = ctx.runtime.fleet.clients["c1"].member_id
    ctx.send("CLIENT_PAUSE", client_id="c1", duration_ms=15_000, scope="process")
    ctx.sleep(30_000)
    failed = [r for r in ctx.responses("OffsetCommit") if r["error"] != "NONE"]
    assert [(r["member_id"], r["error"]) for r in failed] == [(member, "UNKNOWN_MEMBER_ID")]
    assert end_metrics(ctx)["failed_commits"] == 1


def test_manual_commit_settings_are_validated():
    for config, message in (({"coordsim.manual.commit": "later"}, "coordsim.manual.commit must be one of"),
                            ({"coordsim.manual.commit.interval.ms": -1}, "coordsim.manual.commit.interval.ms"),
                            ({"coordsim.commit.on.revoke": "yes"}, "coordsim.commit.on.revoke")):
        with pytest.raises(EventError, match=message):
            parse_event({"ts": 0, "group_id": "g", "type": "CLIENT_START", "client_id": "c", "topics": ["t"],
                         "config": config})
