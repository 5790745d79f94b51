"""The conformance scenarios: scripts of real consumers against a real cluster, with known committed offsets.
Each runs its steps as a Kafka user would (start a consumer, wait until the group has settled, commit, close,
kill), waiting for the clients' own callbacks rather than for fixed times, so that the capture, not the script,
holds the timing. `broker` settings go to every broker and to the replay alike (Kafka's names)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from simulations.conformance.driver import Consumer, Java, settle

GROUP = "conformance"
TOPIC = "orders"
PARTITIONS = 4
ALL = {f"{TOPIC}-{p}" for p in range(PARTITIONS)}


class Context:
    """What a script works with: consumers of the scenario's group on the cluster, and the cluster."""

    def __init__(self, java: Java, cluster, consumer_config: dict[str, object]) -> None:
        self.java, self.cluster, self.config = java, cluster, consumer_config
        self.consumers: dict[str, Consumer] = {}

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
        for consumer in self.live():
            line = consumer.commit(offset)
            if not line.startswith("committed"):
                raise AssertionError(f"{consumer.name}: {line}")

    def close_all(self) -> None:
        for consumer in self.live():
            consumer.close()


@dataclass(frozen=True)
class Scenario:
    name: str
    protocol: str  # "classic" or "consumer": the group.protocol its consumers use
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
    ctx.close_all()
    time.sleep(1)


# A consumer group's heartbeat interval down to 1 s (Kafka's default 5 s, its minimum too), so that
# reconciliation takes seconds, not tens of seconds.
FAST_CONSUMER_GROUP = {"group.consumer.heartbeat.interval.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 1000}

SCENARIOS = {s.name: s for s in (
    Scenario("classic-join-leave", "classic", "three consumers join one by one, one leaves, the rest close",
             join_leave),
    Scenario("consumer-join-leave", "consumer", "the same under group.protocol=consumer", join_leave,
             broker=FAST_CONSUMER_GROUP, consumer={"group.protocol": "consumer"}),
)}

# The short subset scripts/test runs: one classic and one consumer-protocol scenario.
CI_SUBSET = ("classic-join-leave", "consumer-join-leave")
