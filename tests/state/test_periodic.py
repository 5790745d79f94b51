"""Quiet runs and periodic elision: the same rows whether a steady member's heartbeats and commits are
simulated one by one or computed in closed form, and a quiet hour that costs O(members) work."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.config import ConfigError, CoordinatorConfig
from state.events import EventError, parse_event
from state.quiet_run import expand_row, expand_rows
from state.runtime import GroupRuntime

HOUR = 3_600_000
EXPLICIT = CoordinatorConfig(coordsim_periodic_elision=0)
ELIDED = CoordinatorConfig()


def directive(ts: int, etype: str, line: int, **fields):
    return parse_event({"ts": ts, "group_id": "g", "type": etype, **fields}, "test", line)


def simulate(config: CoordinatorConfig, events, stops, end: int, reencode: bool = False):
    """Run `events` to `end`, advancing to each of `stops` on the way (micro-batch boundaries), optionally
    through encode/decode at each stop as the Spark engine does; returns the rows (and, under "drain", where
    a finite run would drain to at `end`) and the runtime."""
    runtime = GroupRuntime("g", config)
    runtime.offer(events)
    rows: dict[str, list] = {}
    for t in sorted(set(stops)) + [end]:
        runtime.advance_to(t)
        for table, produced in runtime.take_output().tables.items():
            rows.setdefault(table, []).extend(produced)
        if reencode:
            runtime = GroupRuntime.decode(runtime.encode(), config)
    rows["drain"] = [runtime.max_pending_deadline()]
    runtime.finish()
    for table, produced in runtime.take_output().tables.items():
        rows.setdefault(table, []).extend(produced)
    return rows, runtime


def stable_group(members: int, rate: float = 10.0, **config):
    events = [directive(0, "TOPIC_METADATA", 0, topics=[{"topic": "t", "partitions": 2 * members,
                                                       "records_per_second": rate}])]
    events += [directive(0, "CLIENT_START", i + 1, client_id=f"c{i}", topics=["t"], config=config)
               for i in range(members)]
    return events


@pytest.mark.parametrize("config, api, interval, runs", [
    ({}, "Heartbeat", 3_000, 4),
    # group.protocol=consumer: group.consumer.heartbeat.interval.ms, 5 s; the joining and reconciling
    # heartbeats are written on their own
    ({"group.protocol": "consumer"}, "ConsumerGroupHeartbeat", 5_000, 8)])
def test_a_quiet_hour_is_a_handful_of_rows_and_steps_in_both_modes(config, api, interval, runs):
    events = stable_group(10, **config)
    explicit, slow = simulate(EXPLICIT, events, [], HOUR)
    elided, fast = simulate(ELIDED, events, [], HOUR)
    assert explicit == elided
    beats = [r for r in elided["responses"] if r["api"] == api]
    assert sum(r["repeat_count"] for r in beats) > 10 * HOUR // interval * 0.99
    assert len(beats) <= runs * 10  # a run per member, bar the first rebalance's beats
    assert len(elided["offsets"]) < 200
    # Explicit mode applies every heartbeat, commit and answer; elided mode a number of steps independent
    # of the length of the quiet period.
    assert slow.steps > 10 * HOUR // interval * 3
    assert fast.steps < 1_000
    _, day = simulate(ELIDED, events, [], 24 * HOUR)
    assert day.steps == fast.steps


def test_static_consumer_protocol_members_are_elided_around_a_crash_and_a_restart():
    # The crashed member's session expires (its heartbeats no longer come), the group epoch goes up, and the
    # restarted one takes its instance back: each step gives the elided members back their explicit state.
    config = {"group.protocol": "consumer"}
    events = [directive(0, "TOPIC_METADATA", 0, topics=[{"topic": "t", "partitions": 6, "records_per_second": 10}])]
    events += [directive(0, "CLIENT_START", i + 1, client_id=f"c{i}", group_instance_id=f"i{i}", topics=["t"],
                         config=config) for i in range(3)]
    events += [directive(200_000, "CLIENT_CRASH", 9, client_id="c1"),
               directive(230_000, "CLIENT_START", 10, client_id="c1", group_instance_id="i1", topics=["t"],
                         config=config)]
    explicit, slow = simulate(EXPLICIT, events, [], 600_000)
    elided, fast = simulate(ELIDED, events, [100_000, 215_000], 600_000, reencode=True)
    assert elided == explicit
    assert fast.steps < slow.steps // 5


@pytest.mark.parametrize("config", [{}, {"enable.auto.commit": False, "coordsim.manual.commit": "sync"},
                                    {"partition.assignment.strategy": ["cooperative-sticky"]}])
def test_a_member_is_elided_as_soon_as_it_is_steady(monkeypatch, config):
    # Its heartbeat and commit runs open in closed form: no request of theirs is applied step by step, not
    # even the first after the rebalance.
    applied = []
    handle_periodic = GroupRuntime.handle_periodic
    monkeypatch.setattr(GroupRuntime, "handle_periodic",
                        lambda self, event, *args: applied.append(event) or handle_periodic(self, event, *args))
    events = stable_group(10, **config)
    elided, fast = simulate(ELIDED, events, [], 120_000)
    assert applied == []
    explicit, _ = simulate(EXPLICIT, events, [], 120_000)
    assert elided == explicit
    assert fast.steps < 150


@pytest.mark.parametrize("at", range(4_000, 20_001, 500))
def test_a_rebalance_before_the_first_elided_request_arrives_gives_it_back(at):
    # A member elided before its runs opened, then a join (or a leave, or a crash) before their first
    # requests were sent or while they are on the wire: those go out one by one and get the answers the
    # rebalance gives.
    events = stable_group(3, **{"coordsim.network.rtt.ms": 2_000})
    for line, (kind, fields) in enumerate((("CLIENT_START", {"client_id": "late", "topics": ["t"]}),
                                           ("CLIENT_STOP", {"client_id": "c1"}),
                                           ("CLIENT_CRASH", {"client_id": "c2"})), start=10):
        changed = events + [directive(at + line, kind, line, **fields)]
        assert simulate(ELIDED, changed, [], 60_000)[0] == simulate(EXPLICIT, changed, [], 60_000)[0]


@pytest.mark.parametrize("mode, interval", [("sync", 0), ("async", 0), ("sync", 1_000)])
def test_manual_commits_at_a_fixed_cadence_are_elided_like_auto_commits(mode, interval):
    config = {"enable.auto.commit": False, "coordsim.manual.commit": mode,
              "coordsim.manual.commit.interval.ms": interval}
    events = stable_group(3, **config)
    explicit, slow = simulate(EXPLICIT, events, [], 600_000)
    elided, fast = simulate(ELIDED, events, [], 600_000)
    assert explicit == elided
    runs = [r for r in elided["responses"] if r["api"] == "OffsetCommit" and r["repeat_count"] > 1]
    # after every 100 ms poll, or at the first poll at least 1 s after the previous commit
    assert {r["repeat_interval_ms"] for r in runs} == {100 if interval == 0 else 1_000}
    assert sum(r["repeat_count"] for r in runs) > 3 * 600_000 // (100 if interval == 0 else 1_000) * 0.98
    assert fast.steps < 1_000 < slow.steps


def test_a_consumer_behind_after_a_pause_is_elided_only_once_it_caught_up():
    # 10 records/s processed, 3.3 produced: a 500 ms pause leaves it a record behind for a while, and the
    # commit it sends then carries its own position, not the log end.
    events = stable_group(1, rate=3.3, **{"coordsim.consume.records.per.second": 10})
    events.append(directive(297_500, "CLIENT_PAUSE", 2, client_id="c0", duration_ms=500, scope="process"))
    explicit, _ = simulate(EXPLICIT, events, [], 400_000)
    elided, _ = simulate(ELIDED, events, [], 400_000)
    assert explicit == elided
    assert any(r["offset"] < r["log_end_offset"] for r in elided["offsets"] if r["commit_ts"] > 297_500)


def test_runs_expand_to_the_requests_simulated_one_by_one():
    events = stable_group(2, rate=7.3)
    rows, _ = simulate(EXPLICIT, events, [], 120_000)
    commits = expand_rows("offsets", [r for r in rows["offsets"] if r["partition"] == 0])
    assert [c["commit_ts"] for c in commits] == sorted({c["commit_ts"] for c in commits})
    # A consuming member commits what was produced when it sent the commit (7.3 records/s).
    for c in commits:
        assert c["offset"] == int(7.3 * (c["commit_ts"] - 1) / 1000)
    runs = [r for r in rows["responses"] if r["repeat_count"] > 1]
    assert runs and all(r["error"] == "NONE" for r in runs)
    expanded = expand_row("responses", runs[0])
    assert [r["request_ts"] for r in expanded] == [runs[0]["request_ts"] + i * runs[0]["repeat_interval_ms"]
                                                   for i in range(runs[0]["repeat_count"])]
    assert len({r["request_id"] for r in expanded}) == len(expanded)


def test_a_requests_row_with_a_repeat_replays_as_its_run():
    events = stable_group(3, rate=3.3)
    rows, _ = simulate(ELIDED, events, [], 600_000)
    replayed = [parse_event(json.loads(r["raw"]), "requests", i) for i, r in enumerate(rows["requests"])]
    assert any(getattr(e, "repeat_count", 1) > 1 for e in replayed)
    again, _ = simulate(EXPLICIT, replayed, [], 600_000)

    def commits(table):
        return sorted((r["write_ts"], r["topic"], r["partition"], r["offset"], r["commit_ts"])
                      for r in expand_rows("offsets", table))

    assert commits(again["offsets"]) == commits(rows["offsets"])
    assert [dict(r, out_seq=0) for r in again["generations"]] == [dict(r, out_seq=0) for r in rows["generations"]]


def test_repeat_fields_are_validated():
    base = {"ts": 0, "group_id": "g", "type": "HEARTBEAT", "member_id": "m", "generation_id": 1}
    with pytest.raises(EventError, match="repeat_interval_ms"):
        parse_event(dict(base, repeat_count=3))
    with pytest.raises(EventError, match="repeat_count"):
        parse_event(dict(base, repeat_count=0, repeat_interval_ms=5))
    commit = {"ts": 0, "group_id": "g", "type": "OFFSET_COMMIT", "member_id": "m", "generation_id": 1,
              "repeat_count": 2, "repeat_interval_ms": 5}
    with pytest.raises(EventError, match="records_per_second"):
        parse_event(dict(commit, offsets=[{"topic": "t", "partition": 0, "offset": 1, "records_per_second": -1}]))
    with pytest.raises(EventError, match="rate_origin_ts"):
        parse_event(dict(commit, offsets=[{"topic": "t", "partition": 0, "offset": 1, "records_per_second": 2}]))
    heartbeat = {"ts": 0, "group_id": "g", "type": "CONSUMER_GROUP_HEARTBEAT", "member_id": "m", "member_epoch": 1}
    with pytest.raises(EventError, match="repeat_interval_ms"):
        parse_event(dict(heartbeat, repeat_count=2))
    with pytest.raises(EventError, match="repeat_count"):
        parse_event(dict(heartbeat, repeat_count="many", repeat_interval_ms=5_000))
    assert parse_event(dict(heartbeat, repeat_count=3, repeat_interval_ms=5_000)).repeat_count == 3
    with pytest.raises(ConfigError, match="coordsim.periodic.elision"):
        CoordinatorConfig.from_kafka({"coordsim.periodic.elision": 2})


# -- explicit == elided over random timelines ----------------------------------------------------------------

CLIENT_CONFIGS = st.fixed_dictionaries({}, optional={
    "heartbeat.interval.ms": st.sampled_from([1_000, 3_000, 2_500]),
    "session.timeout.ms": st.sampled_from([10_000, 45_000]),
    "auto.commit.interval.ms": st.sampled_from([1_000, 5_000, 7_777]),
    "enable.auto.commit": st.booleans(),
    # The application's own commits, used when enable.auto.commit is false.
    "coordsim.manual.commit": st.sampled_from(["sync", "async", "none"]),
    "coordsim.manual.commit.interval.ms": st.sampled_from([0, 250, 1_000]),
    "coordsim.commit.on.revoke": st.booleans(),
    "coordsim.network.rtt.ms": st.sampled_from([0, 1, 2, 9, 3_500]),
    "coordsim.poll.interval.ms": st.sampled_from([100, 333]),
    "metadata.max.age.ms": st.sampled_from([20_000, 300_000]),
    "partition.assignment.strategy": st.sampled_from([["range"], ["cooperative-sticky"], ["roundrobin"]]),
    # Slower and faster than the production rates below: behind for good, or catching up after a move.
    "coordsim.consume.records.per.second": st.sampled_from([0, 2, 10, 40]),
})


# group.protocol=consumer (KIP-848): the heartbeat interval is the coordinator's, the session too.
CONSUMER_CLIENT_CONFIGS = st.fixed_dictionaries({"group.protocol": st.just("consumer")}, optional={
    "auto.commit.interval.ms": st.sampled_from([1_000, 5_000, 7_777]),
    "enable.auto.commit": st.booleans(),
    "coordsim.manual.commit": st.sampled_from(["sync", "async", "none"]),
    "coordsim.manual.commit.interval.ms": st.sampled_from([0, 250, 1_000]),
    "coordsim.network.rtt.ms": st.sampled_from([1, 2, 9, 3_500]),
    "coordsim.poll.interval.ms": st.sampled_from([100, 333]),
    "max.poll.interval.ms": st.sampled_from([20_000, 300_000]),
    "group.remote.assignor": st.sampled_from(["uniform", "range"]),
    "coordsim.consume.records.per.second": st.sampled_from([0, 2, 10, 40]),
})


MOVE, WRITE_FAILURE = {"fault": "move", "load_delay_ms": 2_000}, {"fault": "write_failure", "count": 2}


@st.composite
def timelines(draw, configs=CLIENT_CONFIGS, faults=(MOVE, WRITE_FAILURE)):
    clients = draw(st.integers(1, 4))
    rate = draw(st.sampled_from([0, 10, 3.3]))
    rows = [("TOPIC_METADATA", 0, {"topics": [{"topic": "t", "partitions": draw(st.integers(1, 6)),
                                               "records_per_second": rate}]})]
    for i in range(clients):
        fields = {"client_id": f"c{i}", "topics": ["t"], "config": draw(configs)}
        if draw(st.booleans()):
            fields["group_instance_id"] = f"i{i}"
        rows.append(("CLIENT_START", draw(st.integers(0, 5_000)), fields))
    for _ in range(draw(st.integers(0, 6))):
        ts = draw(st.integers(0, 400_000))
        kind = draw(st.sampled_from(["CLIENT_CRASH", "CLIENT_STOP", "CLIENT_START", "CLIENT_PAUSE", "CLIENT_PAUSE",
                                     "TOPIC_METADATA", "COORDINATOR_FAULT", "SUBSCRIBE"]))
        client = f"c{draw(st.integers(0, clients - 1))}"
        if kind == "CLIENT_START":
            fields = {"client_id": client, "topics": ["t"], "config": draw(configs)}
        elif kind == "CLIENT_PAUSE":
            fields = {"client_id": client, "duration_ms": draw(st.sampled_from([500, 20_000, 400_000])),
                      "scope": draw(st.sampled_from(["process", "poll"]))}
        elif kind == "TOPIC_METADATA":
            fields = {"topics": [{"topic": "t", "partitions": draw(st.integers(1, 8)),
                                  "records_per_second": draw(st.sampled_from([0, 10, 3.3]))}]}
        elif kind == "COORDINATOR_FAULT":
            fields = draw(st.sampled_from(faults))
        elif kind == "SUBSCRIBE":
            fields = {"client_id": client, "topics": draw(st.sampled_from([["t"], ["t", "u"]]))}
        else:
            fields = {"client_id": client}
        rows.append((kind, ts, fields))
    stops = draw(st.lists(st.integers(0, 500_000), max_size=4))
    return [directive(ts, kind, line, **fields) for line, (kind, ts, fields) in enumerate(rows)], stops


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timelines(), st.booleans())
def test_explicit_and_elided_runs_write_the_same_rows(timeline, reencode):
    events, stops = timeline
    explicit, _ = simulate(EXPLICIT, events, [], 500_000)
    elided, _ = simulate(ELIDED, events, stops, 500_000, reencode=reencode)
    assert elided == explicit



@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timelines(CONSUMER_CLIENT_CONFIGS), st.booleans())
def test_explicit_and_elided_consumer_protocol_runs_write_the_same_rows(timeline, reencode):
    # The same timelines with KIP-848 clients: joins and leaves bump the group epoch, so every member's next
    # heartbeat gets a new assignment, and its runs end where the explicit rows change.
    events, stops = timeline
    explicit, _ = simulate(EXPLICIT, events, [], 500_000)
    elided, _ = simulate(ELIDED, events, stops, 500_000, reencode=reencode)
    assert elided == explicit
