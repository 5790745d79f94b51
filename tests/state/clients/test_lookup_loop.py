"""The lookup loop while a group's coordinator is a down broker that FindCoordinator still names: the same rows
(the lookups at the brokers they went to, the failed connections to the down broker) whether each lookup,
failed connection and timer is simulated one by one or the loop runs in closed form (state/clients/lookup_loop.py),
and a fraction of the steps."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.clients.lookup_loop import LookupLoops
from state.runtime.group_runtime import GroupRuntime
from tests.state.clients.test_elision import ELIDED, EXPLICIT, directive, simulate

CRASH = 60_000
FENCED = CRASH + 9_000  # broker.session.timeout.ms


def crashed_group(members: int, crash: int = CRASH, fenced: int = FENCED, **config) -> list:
    """A stable group led by broker 1 of brokers 1-3, which fails at `crash` and is fenced at `fenced`: broker 2
    loads it."""
    events = [directive(0, "COORDINATOR_FAULT", 0, fault="move", coordinator_id=1),
              directive(0, "COORDINATOR_FAULT", 80, fault="live_brokers", brokers=[1, 2, 3]),
              directive(0, "TOPIC_METADATA", 1, topics=[{"topic": "t", "partitions": 2 * members,
                                                         "records_per_second": 10}])]
    events += [directive(0, "CLIENT_START", i + 2, client_id=f"c{i}", topics=["t"], config=config)
               for i in range(members)]
    return events + [directive(crash, "COORDINATOR_FAULT", 90, fault="crash"),
                     directive(crash, "COORDINATOR_FAULT", 92, fault="live_brokers", brokers=[2, 3]),
                     directive(fenced, "COORDINATOR_FAULT", 91, fault="move", coordinator_id=2,
                               load_delay_ms=300)]


def test_a_crashed_coordinators_lookups_are_the_same_rows_for_a_fraction_of_the_steps():
    events = crashed_group(5)
    explicit, slow = simulate(EXPLICIT, events, [], 120_000)
    elided, fast = simulate(ELIDED, events, [], 120_000)
    assert elided == explicit
    finds = [r for r in elided["responses"] if r["api"] == "FindCoordinator" and CRASH <= r["request_ts"] < FENCED]
    # every client looks the coordinator up about every other retry.backoff.ms for the 9 s, told broker 1, at
    # brokers 2 and 3
    assert len(finds) > 5 * 9_000 // 250 and {(r["error"], r["coordinator_id"]) for r in finds} == {("NONE", 1)}
    assert {r["node_id"] for r in finds} == {2, 3}
    # and between two lookups sends a heartbeat or a commit to broker 1, which fails to connect: a row each
    refused = [r for r in elided["responses"] if r["error"] == "NETWORK_EXCEPTION"]
    assert {r["api"] for r in refused} == {"Heartbeat", "OffsetCommit"} and len(refused) > len(finds) // 2
    failed = [r for r in elided["responses"] if r["api"] == "OffsetCommit" and r["error"] != "NONE"]
    assert elided["metrics"][0]["failed_commits"] == len(failed) > 0
    # Explicit mode applies a lookup, a failed heartbeat and their answers and timers for every one of them;
    # in closed form the crash costs the steps of its first failed requests and of the move.
    _, quiet = simulate(ELIDED, crashed_group(5, crash=10**9, fenced=10**9 + 1), [], 120_000)
    assert slow.steps - quiet.steps > 6 * len(finds)
    assert fast.steps - quiet.steps < len(finds) // 4


def test_without_a_leader_lookups_back_off_with_their_jitter_the_same_in_closed_form():
    # Fenced with no other replica in sync: no coordinator for 30 s, every lookup answered
    # COORDINATOR_NOT_AVAILABLE, the poll loop's lookups after a growing, jittered backoff.
    events = crashed_group(3) + [directive(FENCED + 1, "COORDINATOR_FAULT", 92, fault="move", coordinator_id=-1),
                                 directive(FENCED + 30_000, "COORDINATOR_FAULT", 93, fault="move", coordinator_id=1)]
    explicit, slow = simulate(EXPLICIT, events, [], 150_000)
    elided, fast = simulate(ELIDED, events, [FENCED + 10_001], 150_000, reencode=True)
    assert elided == explicit
    orphaned = [r for r in elided["responses"] if FENCED + 1 < r["request_ts"] < FENCED + 30_000]
    assert len(orphaned) > 3 * 30_000 // 250
    assert {(r["api"], r["error"], r["coordinator_id"]) for r in orphaned} == {
        ("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", None)}
    assert fast.steps < slow.steps // 5


def test_the_loop_stands_for_every_client_while_the_broker_is_down(monkeypatch):
    seen: dict[int, int] = {}
    advance_to = GroupRuntime.advance_to

    def watched(self, t):
        advance_to(self, t)
        seen[t] = len(self.lookups.loops)

    monkeypatch.setattr(GroupRuntime, "advance_to", watched)
    stops = list(range(CRASH + 1_000, FENCED, 1_000))
    simulate(ELIDED, crashed_group(4), stops, 90_000)
    assert [seen[t] for t in stops] == [4] * len(stops)
    assert seen[90_000] == 0  # the move put every client back


# -- explicit == elided over random crashes --------------------------------------------------------------------

CLIENT_CONFIGS = st.fixed_dictionaries({}, optional={
    "heartbeat.interval.ms": st.sampled_from([1_000, 3_000]),
    "retry.backoff.ms": st.sampled_from([1, 100, 250]),
    "auto.commit.interval.ms": st.sampled_from([1_000, 5_000]),
    "enable.auto.commit": st.booleans(),
    "coordsim.manual.commit": st.sampled_from(["sync", "async", "none"]),
    "coordsim.network.rtt.ms": st.sampled_from([0, 1, 2, 9, 301, 3_500]),
    "coordsim.poll.interval.ms": st.sampled_from([100, 333]),
    "metadata.max.age.ms": st.sampled_from([4_000, 300_000]),
})


@st.composite
def crashes(draw):
    members = draw(st.integers(1, 4))
    crash = draw(st.integers(30_000, 40_000))
    fenced = crash + draw(st.sampled_from([9_000, 1, 20_000]))
    events = crashed_group(members, crash, fenced, **draw(CLIENT_CONFIGS))
    # Whatever else happens meanwhile: to one client (it stops, crashes, pauses, restarts) or to the group.
    for line in range(draw(st.integers(0, 3))):
        ts = crash + draw(st.integers(-50, 12_000))
        kind = draw(st.sampled_from(["CLIENT_STOP", "CLIENT_CRASH", "CLIENT_PAUSE", "CLIENT_START",
                                     "TOPIC_METADATA", "COORDINATOR_FAULT"]))
        client = f"c{draw(st.integers(0, members - 1))}"
        fields = {"client_id": client}
        if kind == "CLIENT_PAUSE":
            fields.update(duration_ms=draw(st.sampled_from([500, 5_000])), scope=draw(st.sampled_from(["process", "poll"])))
        elif kind == "CLIENT_START":
            fields.update(topics=["t"])
        elif kind == "TOPIC_METADATA":
            fields = {"topics": [{"topic": "t", "partitions": draw(st.integers(1, 8)), "records_per_second": 10}]}
        elif kind == "COORDINATOR_FAULT":
            fields = draw(st.sampled_from([{"fault": "crash"}, {"fault": "move", "coordinator_id": -1},
                                           {"fault": "move", "coordinator_id": 3, "load_delay_ms": 0},
                                           {"fault": "live_brokers", "brokers": [3]}]))
        events.append(directive(ts, kind, 100 + line, **fields))
    stops = draw(st.lists(st.integers(crash - 1_000, fenced + 2_000), max_size=4))
    return events, stops


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crashes(), st.booleans())
def test_explicit_and_closed_form_lookups_write_the_same_rows(crash, reencode):
    events, stops = crash
    explicit, _ = simulate(EXPLICIT, events, [], 80_000)
    elided, _ = simulate(ELIDED, events, stops, 80_000, reencode=reencode)
    assert elided == explicit


@pytest.mark.parametrize("rtt", [2, 301])
def test_a_loop_is_put_back_with_its_requests_on_the_wire_and_its_answers_on_their_way(monkeypatch, rtt):
    # A directive to one client at every few milliseconds of its loop: it is put back whatever it has pending
    # (with a round trip longer than the heartbeat thread's backoff, a request on the wire or an answer on its
    # way back nearly always).
    pending = []
    end_loop = LookupLoops._end_loop
    monkeypatch.setattr(LookupLoops, "_end_loop",
                        lambda self, fleet, brokers, client, loop: pending.append(set(loop.flying))
                        or end_loop(self, fleet, brokers, client, loop))
    for at in range(CRASH + 3_000, CRASH + 3_700, 53):
        events = crashed_group(2, **{"coordsim.network.rtt.ms": rtt})
        events.append(directive(at, "CLIENT_PAUSE", 99, client_id="c0", duration_ms=50, scope="poll"))
        assert simulate(ELIDED, events, [], 75_000)[0] == simulate(EXPLICIT, events, [], 75_000)[0]
    assert {"find", "heartbeat"} <= set().union(*pending)


def test_the_group_wakes_up_when_a_looping_client_has_something_due():
    # The Spark engine visits a group at its next wakeup: the same instants either way while the broker is
    # down, so each micro-batch writes the same lookups. (A steady client's periodic requests set no wakeup:
    # they are written as runs when those close.)
    def wakeups(config):
        runtime = GroupRuntime("g", config)
        runtime.offer(crashed_group(3, **{"coordsim.network.rtt.ms": 9}))
        found = []
        for t in range(CRASH, FENCED, 97):
            runtime.advance_to(t)
            found.append((runtime.next_wakeup(), len(runtime.take_output().tables["responses"])))
        return found, runtime

    (explicit, _), (elided, runtime) = wakeups(EXPLICIT), wakeups(ELIDED)
    assert elided == explicit
    assert runtime.lookups.loops and runtime.steps < 150
