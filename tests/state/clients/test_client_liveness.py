"""Synthetic consumers are never left silent by the coordinator (Hypothesis RuleBasedStateMachine).

Random histories of a small fleet of synthetic consumers (starts, graceful stops, crashes, pauses, topic
changes) interleaved with coordinator moves, unloads with a load delay, broker failures (the coordinator's
broker crashing, the partition going to another broker or to none), and failed `__consumer_offsets` appends.
After every step:

* every running client has something ahead of it: a timer of its own, a request or answer on the wire, or
  its periodic requests or its coordinator lookup loop computed in closed form (state/clients/elision.py,
  state/clients/lookup_loop.py); the coordinator's unload never takes that away (clients learn of a move only from error
  codes);
* once the history is left alone for a while with a live coordinator, every running, unpaused client has had
  a successful answer recently: it found the coordinator again and carries on.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from state.events import INJECTABLE_WRITE_ERRORS
from tests.state.harness import GroupContext

CLIENTS = ("c0", "c1", "c2", "c3")
SLEEPS = (0, 1, 2, 50, 100, 1000, 2999, 3000, 10_000, 46_000)
# Longer than a heartbeat interval plus the longest backoff and a lookup's round trip.
QUIET_AFTER_MS = 3_000 + 1_200 + 100
SETTLE_MS = 120_000


class FleetMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ctx = GroupContext()
        self.ctx.send("TOPIC_METADATA", topics=[{"topic": "orders", "partitions": 4, "records_per_second": 5},
                                                {"topic": "audit", "partitions": 2, "records_per_second": 1}])

    @property
    def runtime(self):
        return self.ctx.runtime

    def running(self):
        return [c for c in self.runtime.fleet.clients.values() if c.alive]

    @rule(name=st.sampled_from(CLIENTS), static=st.booleans(), cooperative=st.booleans())
    def start(self, name, static, cooperative):
        config = {"session.timeout.ms": 10_000}
        if cooperative:
            config["partition.assignment.strategy"] = ["cooperative-sticky"]
        fields = dict(client_id=name, topics=["orders"], config=config)
        if static:
            fields["group_instance_id"] = f"{name}-instance"
        self.ctx.send("CLIENT_START", **fields)

    @rule(name=st.sampled_from(CLIENTS), kind=st.sampled_from(["CLIENT_STOP", "CLIENT_CRASH"]))
    def stop(self, name, kind):
        self.ctx.send(kind, client_id=name)

    @rule(name=st.sampled_from(CLIENTS), scope=st.sampled_from(["process", "poll"]),
          duration=st.sampled_from([500, 5_000, 15_000]))
    def pause(self, name, scope, duration):
        self.ctx.send("CLIENT_PAUSE", client_id=name, scope=scope, duration_ms=duration)

    @rule(name=st.sampled_from(CLIENTS), topics=st.sampled_from([["orders"], ["orders", "audit"]]))
    def subscribe(self, name, topics):
        self.ctx.send("SUBSCRIBE", client_id=name, topics=topics)

    @rule(delay=st.sampled_from([0, 1, 2_000, 20_000]))
    def move(self, delay):
        self.ctx.fault(fault="move", load_delay_ms=delay)

    @rule()
    def crash(self):
        self.ctx.fault(fault="crash")

    @rule(broker=st.sampled_from([1, 2, -1]), delay=st.sampled_from([0, 2_000]))
    def elect(self, broker, delay):
        self.ctx.fault(fault="move", coordinator_id=broker, load_delay_ms=delay)

    @rule(error=st.sampled_from(INJECTABLE_WRITE_ERRORS), count=st.integers(1, 3))
    def write_failure(self, error, count):
        self.ctx.fault(fault="write_failure", error=error, count=count)

    @rule(ms=st.sampled_from(SLEEPS))
    def sleep(self, ms):
        self.ctx.sleep(ms)

    @rule()
    def settle(self):
        """Leave the fleet alone: every running client that is not paused talks to the coordinator."""
        runtime = self.runtime
        if runtime.leaderless or runtime.coordinator_epoch in runtime.down_epochs:
            self.ctx.fault(fault="move", coordinator_id=3)  # a live broker leads the partition again
        self.ctx.sleep(SETTLE_MS)
        now = self.ctx.time
        last: dict[str, int] = {}
        for r in self.ctx.rows("responses"):
            if r["error"] != "NONE":
                continue
            last[r["client_id"]] = max(last.get(r["client_id"], -1), r["response_ts"])
        for client in self.running():
            if client.fatal_error is not None or client.paused_until > now - QUIET_AFTER_MS:
                continue
            assert last.get(client.client_id, -1) >= now - QUIET_AFTER_MS, (
                f"{client.client_id} silent since {last.get(client.client_id)} (now {now}); "
                f"phase {client.phase}, coordinator {client.coordinator}")

    @invariant()
    def every_running_client_has_something_ahead(self) -> None:
        runtime = self.runtime
        queued = {t.args[0] for t in runtime.fleet.timers.pending()}
        for client in self.running():
            assert (client.client_id in queued or client.in_flight or client.awaiting
                    or client.client_id in runtime.elision.elided or client.client_id in runtime.lookups.loops), (
                f"{client.client_id} has nothing ahead of it")


FleetMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                          suppress_health_check=[HealthCheck.too_slow])
TestFleet = FleetMachine.TestCase
