"""Broker events on a scenario's timeline, played on the cluster (state.cluster.Leadership), and what each
group sees of them: the COORDINATOR_FAULT rows that tell its runtime which broker leads its
`__consumer_offsets` partition, when that broker fails, and how long a new leader takes to load it.

The controller's rules (KRaft, Kafka 4.x; docs/scenarios.md, "Broker events"):
- `broker_down` (a crash): the broker's connections fail at once (`crash` for the groups it coordinates).
  The controller fences it `broker.session.timeout.ms` later; each partition it led goes to the first replica
  still in sync (`move`, loading), or has no leader (`move` to -1).
- `broker_shutdown` (controlled): the controller moves the broker's leaderships at once (`move`); the
  broker answers NOT_COORDINATOR meanwhile, then stops.
- `broker_up`: the broker is unfenced; partitions without a leader whose ISR holds it get it. It catches up
  (at once: the partitions are small) and leads its preferred partitions again only after a preferred-leader
  election: an explicit `preferred_leader_election`, or with `auto.leader.rebalance.enable`
  `leader.imbalance.check.interval.seconds` after its return.
A group that starts after broker events starts with the cluster as they left it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from state.client_config import ClientConfig
from state.cluster import NO_LEADER, Cluster, ControllerSettings, Leadership
from state.consumer_group.topic_id import derived_topic_id
from state.consumer_protocol import (Assignment, Subscription, TopicPartition, encode_assignment,
                                     encode_subscription)
from state.java_compat import coordinator_partition
from state.record_bytes import RECORD_BATCH_OVERHEAD, record_size
from state.records import GroupMetadataRecord, OffsetCommitRecord

# The member id a broker gives: client id, "-", a UUID (36 characters).
UUID_LENGTH = 36


class BrokerEventError(ValueError):
    """A broker event that cannot happen where the timeline has put it (e.g. a broker already down)."""


@dataclass(frozen=True)
class BrokerEvent:
    at_ms: int  # scenario time
    kind: str   # broker_down | broker_shutdown | broker_up | preferred_leader_election
    broker: int | None
    restart_after_ms: int | None
    label: str  # where the scenario says it, for errors


@dataclass(frozen=True)
class Change:
    """What one group's partition goes through at `at_ms`: `crash` of its leader, or `move` to `broker`
    (NO_LEADER: none) loading for `load_ms`."""

    at_ms: int
    fault: str
    broker: int = NO_LEADER
    load_ms: int = 0

    def row(self) -> dict:
        if self.fault == "crash":
            return {"fault": "crash"}
        return {"fault": "move", "coordinator_id": self.broker, "load_delay_ms": self.load_ms}


class PartitionLog:
    """How many bytes a group's share of its `__consumer_offsets` partition holds by a given time: its last
    GroupMetadata and one offset per partition (what compaction keeps), plus the commits appended since the
    run started, which sit in the active segment until it rolls (at most `offsets.topic.segment.bytes`)."""

    def __init__(self, group_id: str, members: int, topics: dict[str, int], static: bool, client: ClientConfig,
                 started_ms: int) -> None:
        self.started_ms = started_ms
        partitions = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
        # Sized as trunk writes them (with the topic id): the events are made before a run's settings.
        offsets = [OffsetCommitRecord(tp.topic, tp.partition, {"offset": 0, "leader_epoch": None, "metadata": "",
                                                               "commit_ts": 0, "expire_ts": None,
                                                               "topic_id": str(derived_topic_id(tp.topic))})
                   for tp in partitions]
        offset_bytes = sum(record_size(r, group_id) for r in offsets)
        subscription = encode_subscription(Subscription(tuple(topics)))
        value_members = []
        for k in range(members):
            client_id = f"{group_id}-c{k}"
            value_members.append({
                "member_id": f"{client_id}-{'0' * UUID_LENGTH}", "group_instance_id": f"{group_id}-i{k}" if static
                else None, "client_id": client_id, "client_host": "", "rebalance_timeout_ms": 0,
                "session_timeout_ms": 0, "subscription": subscription,
                "assignment": encode_assignment(Assignment(tuple(partitions[k::members])))})
        metadata = GroupMetadataRecord({"protocol_type": "consumer", "generation_id": 1, "protocol_name": "range",
                                        "leader_id": value_members[0]["member_id"] if members else None,
                                        "current_state_ts": 0, "members": value_members})
        self.compacted = record_size(metadata, group_id) + offset_bytes
        # Each member commits its share of the partitions in one batch per commit interval.
        self.commit_bytes_per_ms = (0.0 if not client.commits_periodically or not members else
                                    (members * RECORD_BATCH_OVERHEAD + offset_bytes) / client.commit_interval_ms)

    def bytes_at(self, t: int) -> tuple[int, float]:
        """(compacted bytes, active-segment bytes) at scenario time t; nothing before the group starts."""
        if t < self.started_ms:
            return 0, 0.0
        return self.compacted, self.commit_bytes_per_ms * (t - self.started_ms)


class ClusterTimeline:
    """The broker events of a timeline, played in time order into each partition's leadership changes."""

    def __init__(self, cluster: Cluster, settings: ControllerSettings) -> None:
        self.cluster = cluster
        self.settings = settings
        self.events: list[BrokerEvent] = []
        self.logs: dict[int, list[PartitionLog]] = {}  # partition -> the logs of its groups

    def add(self, event: BrokerEvent) -> None:
        self.events.append(event)

    def add_group(self, group_id: str, log: PartitionLog) -> None:
        self.logs.setdefault(coordinator_partition(group_id, self.cluster.num_partitions), []).append(log)

    def load_ms(self, partition: int, t: int) -> int:
        compacted, active = 0, 0.0
        for log in self.logs.get(partition, ()):
            c, a = log.bytes_at(t)
            compacted, active = compacted + c, active + a
        total = compacted + min(active, self.settings.offsets_topic_segment_bytes)
        return math.ceil(total * 1000 / self.settings.load_bytes_per_second)

    def changes(self) -> dict[int, list[Change]]:
        """Partition -> its changes in time order (partitions that never change are absent)."""
        leadership = Leadership(self.cluster)
        down: set[int] = set()
        pending_fence: dict[int, int] = {}  # broker -> when the controller fences it
        changes: dict[int, list[Change]] = {}
        # (time, order, kind, broker, label, restart after): the timeline's events and those they cause
        queue: list[tuple[int, int, str, int | None, str, int | None]] = []
        for order, event in enumerate(self.events):
            heapq.heappush(queue, (event.at_ms, order, event.kind, event.broker, event.label, event.restart_after_ms))
        order = len(self.events)
        next_election: int | None = None

        def moved(partitions: list[int], t: int) -> None:
            for p in partitions:
                leader = leadership.leader(p)
                changes.setdefault(p, []).append(
                    Change(t, "move", NO_LEADER if leader is None else leader, 0 if leader is None else
                           self.load_ms(p, t)))

        def fence(broker: int, t: int) -> None:
            del pending_fence[broker]
            moved(leadership.broker_removed(broker), t)

        while queue:
            t, _, kind, broker, label, restart = heapq.heappop(queue)
            if kind == "fence":
                if pending_fence.get(broker) == t:
                    fence(broker, t)
                continue
            if kind in ("broker_down", "broker_shutdown"):
                if broker in down:
                    raise BrokerEventError(f"{label}: broker {broker} is already down at {t / 1000:g} s")
                down.add(broker)
                if kind == "broker_down":
                    for p in range(self.cluster.num_partitions):
                        if leadership.leader(p) == broker:
                            changes.setdefault(p, []).append(Change(t, "crash"))
                    pending_fence[broker] = t + self.settings.broker_session_timeout_ms
                    heapq.heappush(queue, (pending_fence[broker], order, "fence", broker, label, None))
                else:
                    moved(leadership.broker_removed(broker), t)
                order += 1
                if restart is not None:
                    heapq.heappush(queue, (t + restart, order, "broker_up", broker, f"{label} (its restart)", None))
                    order += 1
            elif kind == "broker_up":
                if broker not in down:
                    raise BrokerEventError(f"{label}: broker {broker} is not down at {t / 1000:g} s")
                if broker in pending_fence:
                    fence(broker, t)  # it registers again: the controller fences the old registration first
                down.discard(broker)
                moved(leadership.broker_unfenced(broker), t)
                leadership.caught_up(broker)
                if self.settings.auto_leader_rebalance_enable:
                    at = t + self.settings.leader_imbalance_check_interval_s * 1000
                    if next_election is None or next_election <= t:
                        next_election = at
                        heapq.heappush(queue, (at, order, "preferred_leader_election", None, "auto", None))
                        order += 1
            else:  # preferred_leader_election
                moved(leadership.preferred_leader_election(), t)
        return changes

    def rows(self, group_id: str, started_ms: int, changes: dict[int, list[Change]]) -> list[tuple[int, dict]]:
        """The group's COORDINATOR_FAULT rows as (scenario time, fields): first its partition's leader as the
        group starts (the changes before then, without their load times), then each later change."""
        partition = coordinator_partition(group_id, self.cluster.num_partitions)
        rows = [(started_ms, {"fault": "move", "coordinator_id": self.cluster.preferred_leader(partition),
                              "load_delay_ms": 0})]
        for change in changes.get(partition, ()):
            if change.at_ms < started_ms:
                rows.append((started_ms, dict(change.row(), load_delay_ms=0) if change.fault == "move"
                             else change.row()))
            else:
                rows.append((change.at_ms, change.row()))
        return rows
