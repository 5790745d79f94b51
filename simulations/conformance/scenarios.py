"""The conformance scenarios: scripts of real consumers against a real cluster, with known committed offsets.
Each runs its steps as a Kafka user would (start a consumer, wait until the group has settled, commit, close,
kill), waiting for the clients' own callbacks rather than for fixed times, so that the capture, not the script,
holds the timing. `broker` settings go to every broker and to the replay alike (Kafka's names)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from simulations.conformance import ConformanceError
from simulations.conformance.driver import Consumer, Java, settle

GROUP = "conformance"
TOPIC = "orders"
PARTITIONS = 4
ALL = {f"{TOPIC}-{p}" for p in range(PARTITIONS)}


class Context:
    """What a script works with: consumers of the scenario's group on the cluster, the cluster, the broker
    leading the group's `__consumer_offsets` partition, and the brokers the script killed ((time ms, node))."""

    def __init__(self, java: Java, cluster, consumer_config: dict[str, object], coordinator: int) -> None:
        self.java, self.cluster, self.config, self.coordinator = java, cluster, consumer_config, coordinator
        self.consumers: dict[str, Consumer] = {}
        self.kills: list[tuple[int, int]] = []

    def start(self, name: str, **config) -> Consumer:
        settings = {"group.id": GROUP, "client.id": name, "topics": TOPIC} | self.config | config
        consumer = self.java.consumer(name, self.cluster.bootstrap, settings)
        consumer.expect("ready")
        self.consumers[name] = consumer
        return consumer

    def live(self) -> list[Consumer]:
        return [c for c in self.consumers.values() if c.alive]

    def settle(self, partitions: set[str] = ALL) -> None:
        settle(self.live(), partitions)

    def commit_all(self, offset: int) -> None:
        """Each live consumer commits; a commit that fails is sent once more, as an application would (under the
        consumer protocol a commit sent behind the heartbeat that moves the member to a new epoch carries the
        old one: STALE_MEMBER_EPOCH, seen against 4.0.0). A second failure ends the suite in one line."""
        for consumer in self.live():
            line = consumer.commit(offset)
            if line.startswith("commit-failed"):
                line = consumer.commit(offset)
            if not line.startswith("committed"):
                raise ConformanceError(f"the script of the scenario could not go on: {consumer.name}: {line}")

    def close_all(self) -> None:
        for consumer in self.live():
            consumer.close()

    def finish(self) -> None:
        """Every consumer left closes; a second more lets the capture take the last answers."""
        self.close_all()
        time.sleep(1)

    def kill_coordinator(self) -> None:
        """The group's coordinator crashes: its broker is killed (SIGKILL, no controlled shutdown)."""
        self.kills.append((int(time.time() * 1000), self.coordinator))
        self.cluster.kill(self.coordinator)


@dataclass(frozen=True)
class Scenario:
    name: str
    protocol: str  # the group.protocol its consumers use: "classic", "consumer", or first one then the other
    description: str
    script: Callable[[Context], None]
    broker: dict[str, object] = field(default_factory=dict)
    consumer: dict[str, object] = field(default_factory=dict)
    nodes: int = 1
    topics: tuple[str, ...] = (f"{TOPIC}:{PARTITIONS}",)


def join_leave(ctx: Context) -> None:
    """Three consumers join one by one, commit, one leaves (LeaveGroup / leave heartbeat), the others close."""
    first = ctx.start("c1")
    ctx.settle()
    ctx.commit_all(10)
    ctx.start("c2")
    ctx.settle()
    ctx.commit_all(20)
    ctx.start("c3")
    ctx.settle()
    ctx.commit_all(30)
    ctx.consumers["c2"].close()
    ctx.settle()
    ctx.commit_all(40)
    first.close()
    ctx.settle()
    ctx.finish()


def rolling_restart(ctx: Context, static: bool = False) -> None:
    """Three consumers join together and commit; then each in turn closes and starts again, the others
    committing in between, all committing after each restart. Dynamic members: the close is a LeaveGroup (a
    rebalance) and the restart a new member. Static members (`group.instance.id` the consumer's name): the
    close leaves no group and the restart takes the instance's place back within the session timeout, no
    rebalance either way."""
    three(ctx, static)
    for offset, name in zip((20, 30, 40), ("c1", "c2", "c3")):
        ctx.consumers[name].close()
        if not static:
            ctx.settle()
            ctx.commit_all(offset - 5)
        ctx.start(name, **_instance(name, static))
        ctx.settle()
        ctx.commit_all(offset)
    ctx.finish()


def static_rolling_restart(ctx: Context) -> None:
    rolling_restart(ctx, static=True)


def upgrade(ctx: Context) -> None:
    """A classic group's three consumers are restarted one by one with group.protocol=consumer: the first
    consumer-protocol member turns the group into a consumer group holding classic members (KIP-848's online
    upgrade), the last classic member's leave leaves it a plain consumer group."""
    three(ctx)
    for offset, name in zip((20, 30, 40), ("c1", "c2", "c3")):
        ctx.consumers[name].close()
        ctx.settle()
        ctx.start(name, **{"group.protocol": "consumer"})
        ctx.settle()
        ctx.commit_all(offset)
    ctx.finish()


def three(ctx: Context, static: bool = False) -> None:
    """Three consumers join together (static members: `group.instance.id` the consumer's name), settle and
    commit 10."""
    for name in ("c1", "c2", "c3"):
        ctx.start(name, **_instance(name, static))
    ctx.settle()
    ctx.commit_all(10)


def _instance(name: str, static: bool) -> dict[str, object]:
    return {"group.instance.id": name} if static else {}


def session_timeout(ctx: Context) -> None:
    """The leader's JVM is killed (SIGKILL: no LeaveGroup); the coordinator expires its session, the two left
    rebalance and commit, then close."""
    three(ctx)
    ctx.consumers["c1"].crash()
    ctx.settle()
    ctx.commit_all(20)
    ctx.finish()


def zombie_commit(ctx: Context) -> None:
    """A consumer's JVM is stopped (SIGSTOP) past its session; the coordinator expires it and the two others
    take its partitions and commit. Thawed (SIGCONT), it commits at once with its old member id and
    generation: Kafka fences the commit (the consumer sees a CommitFailedException), and the consumer joins
    again as a new member."""
    three(ctx)
    zombie = ctx.consumers["c3"]
    zombie.freeze()
    others = [ctx.consumers["c1"], ctx.consumers["c2"]]
    settle(others, ALL)
    for consumer in others:
        consumer.commit(20)
    zombie.send("commit 30")  # waiting in its stdin when it wakes
    zombie.thaw()
    zombie.expect("commit")
    ctx.settle()
    ctx.commit_all(40)
    ctx.finish()


def slow_poll(ctx: Context) -> None:
    """A consumer does not poll for longer than max.poll.interval.ms: its heartbeat thread sends LeaveGroup
    (reason: the poll timeout), the two others take its partitions; when it polls again it joins as a new
    member."""
    three(ctx)
    slow = ctx.consumers["c3"]
    slow.send(f"stall {SLOW_POLL_MS * 2}")
    settle([ctx.consumers["c1"], ctx.consumers["c2"]], ALL)
    slow.expect("stalled")
    ctx.settle()
    ctx.commit_all(20)
    ctx.finish()


def coordinator_failover(ctx: Context) -> None:
    """Three consumers join and commit; the broker leading the group's __consumer_offsets partition is killed.
    The controller fences it and elects another replica, which loads the group (Stable, fresh sessions);
    the consumers find it, commit there and close."""
    three(ctx)
    ctx.kill_coordinator()
    ctx.commit_all(20)  # commitSync looks the new coordinator up and waits for it
    ctx.finish()


def offsets_expiry(ctx: Context) -> None:
    """A consumer commits and closes: the group is Empty, and once its offsets are older than
    offsets.retention.minutes (1, the least Kafka allows) the coordinator's next expiry sweep deletes them
    (tombstones) and then the group (its tombstone). A consumer of the group afterwards finds no committed
    offset, commits and closes."""
    ctx.start("c1")
    ctx.settle()
    ctx.commit_all(10)
    ctx.close_all()
    time.sleep(RETENTION_S + 5)
    ctx.start("c2")
    ctx.settle()
    ctx.commit_all(20)
    ctx.finish()


# A killed broker is fenced 3 s after its last heartbeat (Kafka's default broker.session.timeout.ms: 9 s).
FAST_FENCING = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 1000}

# offsets.retention.minutes at its least, swept every second.
RETENTION_S = 60
SHORT_RETENTION = {"offsets.retention.minutes": RETENTION_S // 60, "offsets.retention.check.interval.ms": 1000}

# Three consumers starting together meet no initial rebalance delay: its timer against a join a few
# milliseconds after it runs out is a race a loaded broker's late timer decides (docs/conformance.md).
NO_DELAY = {"group.initial.rebalance.delay.ms": 0}

# The smallest session Kafka's default group.min.session.timeout.ms allows, a heartbeat a second: a crash is
# detected in 6 s.
SHORT_SESSION = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}
SLOW_POLL_MS = 5000

# Java's classic assignors by class name: range alone (the eager protocol), cooperative-sticky alone.
RANGE = {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"}
COOPERATIVE = {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}

# A consumer group's heartbeat interval down to 1 s (Kafka's default 5 s, its minimum too), so that
# reconciliation takes seconds, not tens of seconds.
FAST_CONSUMER_GROUP = {"group.consumer.heartbeat.interval.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 1000}

SCENARIOS = {s.name: s for s in (
    Scenario("classic-join-leave", "classic", "three consumers join one by one, one leaves, the rest close",
             join_leave),
    Scenario("consumer-join-leave", "consumer", "the same under group.protocol=consumer", join_leave,
             broker=FAST_CONSUMER_GROUP, consumer={"group.protocol": "consumer"}),
    Scenario("classic-rolling-restart-eager", "classic",
             "three consumers (range, eager), each closed and started again in turn", rolling_restart,
             consumer=RANGE, broker=NO_DELAY),
    Scenario("classic-rolling-restart-cooperative", "classic",
             "the same with cooperative-sticky (incremental rebalances)", rolling_restart, consumer=COOPERATIVE,
             broker=NO_DELAY),
    Scenario("classic-static-restart", "classic",
             "three static members (group.instance.id), each closed and started again within the session timeout",
             static_rolling_restart, broker=NO_DELAY),
    Scenario("classic-session-timeout", "classic", "the leader's JVM killed, its session expires",
             session_timeout, consumer=SHORT_SESSION, broker=NO_DELAY),
    Scenario("classic-zombie-commit", "classic",
             "a consumer stopped past its session, then committing with its old member id and generation",
             zombie_commit, consumer=SHORT_SESSION, broker=NO_DELAY),
    Scenario("classic-slow-poll", "classic", "a consumer not polling for longer than max.poll.interval.ms leaves",
             slow_poll, consumer=SHORT_SESSION | {"max.poll.interval.ms": SLOW_POLL_MS}, broker=NO_DELAY),
    Scenario("classic-coordinator-failover", "classic",
             "the broker leading the group's __consumer_offsets partition killed on a three-node cluster",
             coordinator_failover, broker=FAST_FENCING | NO_DELAY, nodes=3),
    Scenario("classic-offsets-expiry", "classic",
             "an Empty group's offsets expire after offsets.retention.minutes (1), and then the group",
             offsets_expiry, broker=SHORT_RETENTION),
    Scenario("consumer-rolling-restart", "consumer", "three consumers, each closed and started again in turn",
             rolling_restart, broker=FAST_CONSUMER_GROUP, consumer={"group.protocol": "consumer"}),
    Scenario("consumer-static-restart", "consumer",
             "three static members, each closed (leaving for now, epoch -2) and started again", static_rolling_restart,
             broker=FAST_CONSUMER_GROUP, consumer={"group.protocol": "consumer"}),
    Scenario("consumer-regex", "consumer",
             "join and leave subscribed to a SubscriptionPattern the broker resolves, beside a topic it does not match",
             join_leave, broker=FAST_CONSUMER_GROUP, consumer={"group.protocol": "consumer", "regex": "ord.*"},
             topics=(f"{TOPIC}:{PARTITIONS}", "audit:2")),
    Scenario("consumer-upgrade", "classic, then consumer",
             "a classic group's consumers restarted one by one with group.protocol=consumer", upgrade,
             broker=FAST_CONSUMER_GROUP | NO_DELAY),
)}

# The short subset scripts/test runs: one classic and one consumer-protocol scenario.
CI_SUBSET = ("classic-join-leave", "consumer-join-leave")
