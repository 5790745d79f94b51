"""Broker events on a scenario's timeline, played on the cluster (state.cluster.Leadership), and what each
group sees of them: the COORDINATOR_FAULT rows that tell its runtime which broker leads its
`__consumer_offsets` partition, when that broker fails, how long a new leader takes to load it, and which
brokers are up (`live_brokers`: where its clients' FindCoordinator requests can go).

The controller's rules (KRaft, Kafka 4.x; docs/scenarios.md, "Broker events"):
- `broker_down` (a crash): the broker's connections fail at once (`crash` for the groups it coordinates).
  The controller fences it `broker.session.timeout.ms` after the last heartbeat it received from it
  (state.cluster.BrokerHeartbeats: 7 to 9 s after the crash with Kafka's defaults); each partition it led goes
  to the first replica still in sync (`move`, loading), or has no leader (`move` to -1).
- `broker_shutdown` (controlled): the controller moves the broker's leaderships at once (`move`); the
  broker answers NOT_COORDINATOR meanwhile, then stops.
- `broker_up`: the broker registers and is unfenced; partitions without a leader whose ISR holds it get it.
  It catches up (at once: the partitions are small) and leads its preferred partitions again only after a
  preferred-leader election: an explicit `preferred_leader_election`, or with `auto.leader.rebalance.enable`
  the controller's imbalance check (state.cluster.ImbalanceCheck), `leader.imbalance.check.interval.seconds`
  after the write that first moved leadership off a preferred leader (the fence), then every interval while
  some partition is off its preferred leader.
A new leader loads the partition for the time its log takes at `coordsim.offsets.load.bytes.per.second`
(`ClusterTimeline.log_bytes`, over the groups' `PartitionLog`s). A group that starts after broker events
starts with the cluster as they left it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, replace

from state.clients.config import ClientConfig
from state.cluster import (NO_LEADER, BrokerHeartbeats, Cluster, ControllerSettings, ImbalanceCheck,
                           Leadership)
from state.consumer_group.topic_id import derived_topic_id
from state.classic.consumer_protocol import (Assignment, Subscription, TopicPartition, encode_assignment,
                                     encode_subscription)
from state.java_compat import coordinator_partition
from state.records.record_bytes import batch_size
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord

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
    """What one group has appended to its `__consumer_offsets` partition by a given time (the load-time rule,
    docs/scenarios.md "Broker events", is `ClusterTimeline.log_bytes`).

    A classic group writes an empty GroupMetadata record when its first JoinGroup creates it, and the full one
    (its members, their subscriptions and assignments) when it forms: the delayed first join takes
    `group.initial.rebalance.delay.ms`, once more when members arrive during it (InitialDelayedJoin; the
    generator starts a group's members within a few milliseconds). From one commit interval after that, each
    member with partitions commits them in one batch per interval (a member without partitions sends no
    commit), except while its partition has no leader that answers. A consumer group (KIP-848) forms on its
    members' first heartbeats; its records are sized as a classic group's. Rebalances the timeline causes
    add records this leaves out."""

    def __init__(self, group_id: str, members: int, topics: dict[str, int], static: bool, client: ClientConfig,
                 started_ms: int, initial_rebalance_delay_ms: int) -> None:
        self.started_ms = started_ms
        partitions = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
        # Sized as trunk writes them (with the topic id): the events are made before a run's settings.
        offsets = [OffsetCommitRecord(tp.topic, tp.partition, {"offset": 0, "leader_epoch": None, "metadata": "",
                                                               "commit_ts": 0, "expire_ts": None,
                                                               "topic_id": str(derived_topic_id(tp.topic))})
                   for tp in partitions]
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
        empty = GroupMetadataRecord({"protocol_type": "", "generation_id": 0, "protocol_name": None,
                                     "leader_id": None, "current_state_ts": 0, "members": []})
        self.created_bytes = batch_size([empty], group_id)
        self.formed_bytes = batch_size([metadata], group_id)
        self.formed_ms = started_ms + formation_ms(client, members, initial_rebalance_delay_ms)
        # One interval's commits: each member's share of the partitions, one batch each.
        self.commit_bytes = sum(batch_size(offsets[k::members], group_id) for k in range(min(members, len(offsets))))
        self.first_commit_ms = (self.formed_ms + client.commit_interval_ms if client.commits_periodically
                                and self.commit_bytes else None)
        self.commit_interval_ms = client.commit_interval_ms

    def appended(self, t: int, outages: list[tuple[int, int]]) -> float:
        """The bytes the group appended before t; no commit is appended during the outages of its partition
        ([begin, end) spans, which may overlap)."""
        appended = (self.created_bytes if t > self.started_ms else 0) + (self.formed_bytes if t > self.formed_ms
                                                                           else 0)
        if self.first_commit_ms is None or t <= self.first_commit_ms:
            return appended
        committing, cursor = t - self.first_commit_ms, self.first_commit_ms
        for begin, end in sorted(outages):
            begin, end = max(begin, cursor), min(end, t)
            if end > begin:
                committing, cursor = committing - (end - begin), end
        return appended + self.commit_bytes * committing / self.commit_interval_ms

    def compacted(self, t: int) -> int:
        """What compaction keeps of it at t: the last GroupMetadata and each member's last commit batch."""
        kept = self.formed_bytes if t > self.formed_ms else self.created_bytes if t > self.started_ms else 0
        return kept + (self.commit_bytes if self.first_commit_ms is not None and t > self.first_commit_ms else 0)


def formation_ms(client: ClientConfig, members: int, initial_rebalance_delay_ms: int) -> int:
    """How long after its start a group's members have their first assignment: a classic group's delayed
    first join (GroupMetadataManager.tryCompleteInitialRebalanceElseSchedule: the delay, extended once by at
    most the delay while the rebalance timeout allows when members arrive during it); a consumer group's
    first heartbeats (none of the delays)."""
    if client.group_protocol == "consumer":
        return 0
    delay = initial_rebalance_delay_ms
    extension = min(delay, max(client.max_poll_interval_ms - delay, 0)) if members > 1 else 0
    return delay + extension


@dataclass(frozen=True)
class Fence:
    """A crashed broker fenced by the controller: its last heartbeat the controller received, and the fence."""

    broker: int
    last_heartbeat_ms: int
    fenced_ms: int
    label: str


class ClusterTimeline:
    """The broker events of a timeline, played in time order into each partition's leadership changes, up to
    the end of the run (`until_ms`, scenario time: the engines leave later events out, and the imbalance
    check of a broker that never returns would repeat without end)."""

    def __init__(self, cluster: Cluster, settings: ControllerSettings, seed: int | str, until_ms: int) -> None:
        self.cluster = cluster
        self.settings = settings
        self.seed = seed
        self.until_ms = until_ms
        self.events: list[BrokerEvent] = []
        self.logs: dict[int, list[PartitionLog]] = {}  # partition -> the logs of its groups
        self.fences: list[Fence] = []  # filled by `changes`
        # The imbalance checks that moved partitions: (when, its longest load), filled by `changes`.
        self.elections: list[tuple[int, int]] = []
        # (time, the brokers up from then on) at each broker going down or coming up, as `changes` plays them
        self.live: list[tuple[int, tuple[int, ...]]] = []

    def add(self, event: BrokerEvent) -> None:
        self.events.append(event)

    def add_group(self, group_id: str, log: PartitionLog) -> None:
        self.logs.setdefault(coordinator_partition(group_id, self.cluster.num_partitions), []).append(log)

    def log_bytes(self, partition: int, t: int, outages: list[tuple[int, int]]) -> int:
        """The partition's log at t: what its groups appended, its segments rolled every
        `offsets.topic.segment.bytes`, the rolled ones compacted to at most the last record of each key."""
        appended = sum(log.appended(t, outages) for log in self.logs.get(partition, ()))
        compacted = sum(log.compacted(t) for log in self.logs.get(partition, ()))
        rolled = appended // self.settings.offsets_topic_segment_bytes * self.settings.offsets_topic_segment_bytes
        return math.ceil(appended - rolled + min(rolled, compacted))

    def load_ms(self, partition: int, t: int, outages: list[tuple[int, int]]) -> int:
        return math.ceil(self.log_bytes(partition, t, outages) * 1000 / self.settings.load_bytes_per_second)

    def changes(self) -> dict[int, list[Change]]:
        """Partition -> its changes in time order (partitions that never change are absent); the fences go to
        `fences`, the brokers that are up after each broker event to `live`."""
        leadership = Leadership(self.cluster)
        heartbeats = BrokerHeartbeats(self.settings, self.seed, self.cluster.broker_ids)
        check = ImbalanceCheck(self.settings)
        down: set[int] = set()
        pending_fence: dict[int, Fence] = {}  # broker -> its fence to come
        self.live = []
        changes: dict[int, list[Change]] = {}
        # Per partition: when no leader answered its groups (a crash or a leaderless spell until the next
        # leader has loaded it, a load), and since when it has none, while that lasts.
        outages: dict[int, list[tuple[int, int]]] = {}
        unanswered: dict[int, int] = {}
        self.fences, self.elections = [], []
        # (time, order, kind, broker, label, restart after): the timeline's events and those they cause
        queue: list[tuple[int, int, str, int | None, str, int | None]] = []
        for order, event in enumerate(self.events):
            heapq.heappush(queue, (event.at_ms, order, event.kind, event.broker, event.label, event.restart_after_ms))
        order = len(self.events)

        def push(t: int, kind: str, broker: int | None, label: str, restart: int | None = None) -> None:
            nonlocal order
            heapq.heappush(queue, (t, order, kind, broker, label, restart))
            order += 1

        def moved(partitions: list[int], t: int) -> int:
            """The partitions' leaders changed at t: each is loaded by its new one. Returns the longest load."""
            longest = 0
            for p in partitions:
                leader = leadership.leader(p)
                past = outages.setdefault(p, [])
                since = unanswered.pop(p, t)
                load = 0 if leader is None else self.load_ms(p, t, past + [(since, t)])
                changes.setdefault(p, []).append(Change(t, "move", NO_LEADER if leader is None else leader, load))
                if leader is None:
                    unanswered[p] = since
                else:
                    past.append((since, t + load))
                longest = max(longest, load)
            return longest

        def written(t: int) -> None:
            """A controller write at t: it may schedule the imbalance check."""
            at = check.after_write(t, leadership.imbalanced())
            if at is not None:
                push(at, "imbalance_check", None, "auto")

        def fence(broker: int, t: int) -> None:
            self.fences.append(replace(pending_fence.pop(broker), fenced_ms=t))
            moved(leadership.broker_removed(broker), t)
            written(t)

        while queue and queue[0][0] <= self.until_ms:
            t, _, kind, broker, label, restart = heapq.heappop(queue)
            if kind == "fence":
                if broker in pending_fence and pending_fence[broker].fenced_ms == t:
                    fence(broker, t)
                continue
            if kind in ("broker_down", "broker_shutdown"):
                if broker in down:
                    raise BrokerEventError(f"{label}: broker {broker} is already down at {t / 1000:g} s")
                down.add(broker)
                self.live.append((t, tuple(b for b in self.cluster.broker_ids if b not in down)))
                if kind == "broker_down":
                    for p in range(self.cluster.num_partitions):
                        if leadership.leader(p) == broker:
                            changes.setdefault(p, []).append(Change(t, "crash"))
                            unanswered.setdefault(p, t)
                    last = heartbeats.last_heartbeat(broker, t)
                    pending_fence[broker] = Fence(broker, last, heartbeats.fenced_at(broker, t), label)
                    push(pending_fence[broker].fenced_ms, "fence", broker, label)
                else:
                    moved(leadership.broker_removed(broker), t)
                    written(t)
                if restart is not None:
                    push(t + restart, "broker_up", broker, f"{label} (its restart)")
            elif kind == "broker_up":
                if broker not in down:
                    raise BrokerEventError(f"{label}: broker {broker} is not down at {t / 1000:g} s")
                if broker in pending_fence:
                    fence(broker, t)  # it registers again: the controller fences the old registration first
                down.discard(broker)
                heartbeats.register(broker, t)
                self.live.append((t, tuple(b for b in self.cluster.broker_ids if b not in down)))
                moved(leadership.broker_unfenced(broker), t)
                leadership.caught_up(broker)
                written(t)
            elif kind == "imbalance_check":
                check.ran()
                elected = leadership.preferred_leader_election()
                if elected:
                    self.elections.append((t, moved(elected, t)))
                written(t)
            else:  # preferred_leader_election
                moved(leadership.preferred_leader_election(), t)
                written(t)
        return changes

    def rows(self, group_id: str, started_ms: int, changes: dict[int, list[Change]]) -> list[tuple[int, dict]]:
        """The group's COORDINATOR_FAULT rows as (scenario time, fields): first its partition's leader and the
        brokers up as the group starts (the changes before then, without their load times), then each later
        change, and each later change to the brokers up (`changes` has played the timeline)."""
        partition = coordinator_partition(group_id, self.cluster.num_partitions)
        up = [live for t, live in self.live if t < started_ms][-1:] or [self.cluster.broker_ids]
        rows = [(started_ms, {"fault": "move", "coordinator_id": self.cluster.preferred_leader(partition),
                              "load_delay_ms": 0}),
                (started_ms, _live_brokers(up[0]))]
        for change in changes.get(partition, ()):
            if change.at_ms < started_ms:
                rows.append((started_ms, dict(change.row(), load_delay_ms=0) if change.fault == "move"
                             else change.row()))
            else:
                rows.append((change.at_ms, change.row()))
        rows += [(t, _live_brokers(live)) for t, live in self.live if t >= started_ms]
        return sorted(rows, key=lambda row: row[0])


def _live_brokers(brokers: tuple[int, ...]) -> dict:
    return {"fault": "live_brokers", "brokers": list(brokers)}
