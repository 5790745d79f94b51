"""The Kafka cluster under the coordinators: its brokers (ids, racks), the `__consumer_offsets` partitions and
their replicas, and which broker leads each partition, so which broker coordinates each group.

A group's coordinator is the leader of `__consumer_offsets` partition `abs(hashCode(group.id)) % partitions`
(java_compat.coordinator_partition). Replicas are placed as a KRaft controller places a new topic's partitions
(StripedReplicaPlacer, ported below), or given as a map, e.g. read from `kafka-topics.sh --describe` output
(`parse_topic_description`). Leaders follow the controller's election rules (PartitionChangeBuilder):
`Cluster.leader` answers for a set of live brokers all in sync, `Leadership` follows the ISR through broker
failures, returns and preferred-leader elections. The controller's timing: when it fences a crashed broker
(`BrokerHeartbeats`, from the broker's heartbeat phase) and when it checks leader imbalance (`ImbalanceCheck`).
Bad input is a `ClusterError` with a one-line message that names the setting.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from state.java_compat import JavaHashMap, JavaRandom, coordinator_partition, java_string_sort_key, string_hash_code

OFFSETS_TOPIC = "__consumer_offsets"
NUM_PARTITIONS = "offsets.topic.num.partitions"
REPLICATION_FACTOR = "offsets.topic.replication.factor"
DEFAULT_NUM_PARTITIONS = 50
DEFAULT_REPLICATION_FACTOR = 3
NO_LEADER = -1


class ClusterError(ValueError):
    """Cluster input Kafka would refuse. `partition`: the partition the message is about, when there is one."""

    def __init__(self, message: str, partition: int | None = None) -> None:
        super().__init__(message)
        self.partition = partition


# ----------------------------------------------------------------------------------------------------------
# StripedReplicaPlacer (metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java)

class _BrokerList:
    """Brokers handed out round-robin from an offset; each new epoch starts one further along."""

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, random: JavaRandom) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = random.next_int(len(self.brokers))

    def next(self, epoch: int) -> int:
        size = len(self.brokers)
        if size == 0:
            return NO_LEADER
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return NO_LEADER
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Rack:
    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _optional_hash_code(rack: str | None) -> int:
    """Optional<String>.hashCode(): the string's, or 0 when empty."""
    return 0 if rack is None else string_hash_code(rack)


class _RackList:
    """Racks taken round-robin from a random starting rack, advanced by one per partition."""

    def __init__(self, random: JavaRandom, usable: Iterable[tuple[int, str | None, bool]]) -> None:
        self.random = random
        # A HashMap<Optional<String>, Rack> in Kafka: its iteration order decides which rack draws first.
        self.racks: JavaHashMap[str | None, _Rack] = JavaHashMap(_optional_hash_code)
        self.num_total = self.num_unfenced = 0
        for broker_id, rack_name, fenced in usable:
            rack = self.racks.get(rack_name)
            if rack is None:
                rack = self.racks[rack_name] = _Rack()
            (rack.fenced if fenced else rack.unfenced).brokers.append(broker_id)
            self.num_unfenced += not fenced
            self.num_total += 1
        for rack in self.racks.values():
            rack.fenced.initialize(random)
            rack.unfenced.initialize(random)
        # OptionalStringComparator: the empty rack first, then String.compareTo order.
        self.rack_names = sorted(self.racks.keys(), key=lambda r: (r is not None, java_string_sort_key(r or "")))
        self.offset = random.next_int(len(self.rack_names)) if self.rack_names else 0
        self.epoch = 0

    def place(self, replication_factor: int) -> list[int]:
        _check_placement(replication_factor, self.num_total, self.num_unfenced)
        # Once as many partitions as unfenced brokers are placed, shuffle to avoid repeating the same sets.
        if self.epoch == self.num_unfenced and self.num_unfenced > 1:
            self.random.shuffle(self.rack_names)
            for rack in self.racks.values():
                self.random.shuffle(rack.fenced.brokers)
                self.random.shuffle(rack.unfenced.brokers)
            self.epoch = 0
        if self.offset == len(self.rack_names):
            self.offset = 0
        names, n = self.rack_names, len(self.rack_names)
        first_rack = self.offset
        while True:  # the leader: the first unfenced broker from the starting rack on
            leader = self.racks[names[first_rack]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % n
        brokers = [leader]
        rack_index = self.offset
        for _ in range(1, replication_factor):
            result = NO_LEADER
            while result < 0:
                if rack_index == first_rack:  # skipped once: the leader's rack had its turn
                    first_rack = NO_LEADER
                else:
                    result = self.racks[names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % n
            brokers.append(result)
        self.epoch += 1
        self.offset += 1
        return brokers


def _check_placement(replication_factor: int, num_total: int, num_unfenced: int) -> None:
    """StripedReplicaPlacer's InvalidReplicationFactorException messages, verbatim."""
    if replication_factor <= 0:
        raise ClusterError(f"Invalid replication factor {replication_factor}: the replication factor must be "
                           "positive.")
    if replication_factor > num_total:
        raise ClusterError(f"The target replication factor of {replication_factor} cannot be reached because "
                           f"only {num_total} broker(s) are registered.")
    if num_unfenced == 0:
        raise ClusterError("All brokers are currently fenced.")


def place_replicas(usable: Sequence[tuple[int, str | None, bool]], num_partitions: int, replication_factor: int,
                   random: JavaRandom) -> list[list[int]]:
    """StripedReplicaPlacer.place: each partition's replicas, for (broker id, rack, fenced) in the order the
    controller iterates its brokers."""
    rack_list = _RackList(random, usable)
    _check_placement(replication_factor, rack_list.num_total, rack_list.num_unfenced)
    return [rack_list.place(replication_factor) for _ in range(num_partitions)]


# ----------------------------------------------------------------------------------------------------------
# The cluster

@dataclass(frozen=True)
class Broker:
    id: int
    rack: str | None = None


@dataclass(frozen=True)
class Cluster:
    """Brokers and `__consumer_offsets` replicas (replicas[p]: partition p's, the preferred leader first)."""

    brokers: tuple[Broker, ...]
    replicas: tuple[tuple[int, ...], ...]

    @classmethod
    def placed(cls, brokers: Sequence[Broker], num_partitions: int = DEFAULT_NUM_PARTITIONS,
               replication_factor: int = DEFAULT_REPLICATION_FACTOR, seed: int = 0) -> "Cluster":
        """The topic as a controller with every broker registered and unfenced creates it; `seed` seeds the
        Random the controller would draw from unseeded."""
        _check_brokers(brokers)
        if num_partitions < 1:
            raise ClusterError(f"{NUM_PARTITIONS} must be >= 1, got {num_partitions}")
        if not 1 <= replication_factor <= len(brokers):
            raise ClusterError(f"{REPLICATION_FACTOR} must be between 1 and the number of brokers "
                               f"({len(brokers)}), got {replication_factor}")
        # The controller iterates a HashMap<Integer, BrokerHeartbeatState>: Integer.hashCode is the id itself.
        registered: JavaHashMap[int, Broker] = JavaHashMap(lambda broker_id: broker_id)
        for broker in brokers:
            registered[broker.id] = broker
        usable = [(b.id, b.rack, False) for b in registered.values()]
        placement = place_replicas(usable, num_partitions, replication_factor, JavaRandom(seed))
        return cls(tuple(brokers), tuple(tuple(r) for r in placement))

    @classmethod
    def of(cls, brokers: Sequence[Broker], replicas: Mapping[int, Sequence[int]]) -> "Cluster":
        """A cluster with an explicit partition -> replicas map, checked as Kafka checks a manual assignment."""
        _check_brokers(brokers)
        known = {b.id for b in brokers}
        if not replicas:
            raise ClusterError("the partition map is empty")
        size = None
        for partition in sorted(replicas):
            ids = list(replicas[partition])
            if partition < 0:
                raise ClusterError(f"partition {partition} is negative", partition)
            if not ids:
                raise ClusterError(f"partition {partition} has no replicas", partition)
            unknown = [r for r in ids if r not in known]
            if unknown:
                raise ClusterError(f"partition {partition}: unknown broker id {unknown[0]} (brokers: "
                                   f"{', '.join(str(b.id) for b in brokers)})", partition)
            if len(set(ids)) != len(ids):
                raise ClusterError(f"partition {partition}: duplicate replica in {_ids(ids)}", partition)
            if size is not None and len(ids) != size:
                raise ClusterError(f"partition {partition} has {len(ids)} replicas, the partitions before it "
                                   f"{size}: every partition needs the same replication factor", partition)
            size = len(ids)
        missing = sorted(set(range(max(replicas) + 1)) - set(replicas))
        if missing:
            raise ClusterError(f"the partition map misses partition(s) {_ids(missing[:5])}"
                               f"{'...' if len(missing) > 5 else ''} (partitions are numbered from 0, with no gap)")
        return cls(tuple(brokers), tuple(tuple(replicas[p]) for p in range(len(replicas))))

    @property
    def num_partitions(self) -> int:
        return len(self.replicas)

    @property
    def replication_factor(self) -> int:
        return len(self.replicas[0])

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    def preferred_leader(self, partition: int) -> int:
        return self.replicas[partition][0]

    def leader(self, partition: int, live: Iterable[int]) -> int | None:
        """The leader with every live replica in sync, after a preferred-leader election: the first live
        replica in assignment order; None when no replica is live. `Leadership` follows the ISR instead."""
        live = set(live)
        return next((r for r in self.replicas[partition] if r in live), None)

    def coordinator_of(self, group_id: str, live: Iterable[int]) -> int | None:
        return self.leader(coordinator_partition(group_id, self.num_partitions), live)

    def partitions_led(self, live: Iterable[int]) -> dict[int, list[int]]:
        """Broker id -> the partitions it leads (every broker of the cluster, in cluster order)."""
        live = set(live)
        led: dict[int, list[int]] = {b.id: [] for b in self.brokers}
        for partition in range(self.num_partitions):
            leader = self.leader(partition, live)
            if leader is not None:
                led[leader].append(partition)
        return led


def _check_brokers(brokers: Sequence[Broker]) -> None:
    if not brokers:
        raise ClusterError("a cluster needs at least one broker")
    seen: set[int] = set()
    for broker in brokers:
        if broker.id < 0:
            raise ClusterError(f"broker id {broker.id} is negative")
        if broker.id in seen:
            raise ClusterError(f"broker id {broker.id} is listed twice")
        seen.add(broker.id)


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


# ----------------------------------------------------------------------------------------------------------
# Leadership through broker failures (ReplicationControlManager + PartitionChangeBuilder, clean elections)

class Leadership:
    """The controller's view of each partition: leader and ISR, changed as the controller changes them.

    A broker that is fenced (its heartbeats stopped for broker.session.timeout.ms) or enters controlled
    shutdown leaves every ISR, except that the last ISR member stays (the ISR is never emptied, without ELR),
    and where it led, the first replica in assignment order that is still in the ISR and active takes over,
    or the partition has no leader. An unfenced broker leads only partitions without a leader whose ISR it is
    in; it rejoins other ISRs once it has caught up (`caught_up`), and leads again only after a preferred-
    leader election. Unclean election (off by default) and eligible leader replicas (KIP-966) are not modelled.
    Each change returns the partitions whose leader changed.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.active = set(cluster.broker_ids)
        self.isr = [list(r) for r in cluster.replicas]
        self.leaders = [r[0] for r in cluster.replicas]

    def leader(self, partition: int) -> int | None:
        leader = self.leaders[partition]
        return None if leader == NO_LEADER else leader

    def coordinator_of(self, group_id: str) -> int | None:
        return self.leader(coordinator_partition(group_id, self.cluster.num_partitions))

    def broker_removed(self, broker_id: int) -> list[int]:
        """Fenced or in controlled shutdown (handleBrokerFenced / handleBrokerInControlledShutdown)."""
        self.active.discard(broker_id)
        changed = []
        for partition, isr in enumerate(self.isr):
            if broker_id not in isr:
                continue
            if len(isr) > 1:
                isr.remove(broker_id)
            if self.leaders[partition] == broker_id:
                self.leaders[partition] = self._first_in_sync(partition, broker_id)
                changed.append(partition)
        return changed

    def broker_unfenced(self, broker_id: int) -> list[int]:
        """handleBrokerUnfenced: elect a leader where there is none and the broker is in the ISR."""
        self.active.add(broker_id)
        changed = []
        for partition, isr in enumerate(self.isr):
            if self.leaders[partition] == NO_LEADER:
                self.leaders[partition] = self._first_in_sync(partition)
                if self.leaders[partition] != NO_LEADER:
                    changed.append(partition)
        return changed

    def caught_up(self, broker_id: int) -> None:
        """The broker's replicas have caught up with their leaders: the leaders add it back to the ISR
        (AlterPartition), in replica order. No leader changes."""
        if broker_id not in self.active:
            raise ValueError(f"broker {broker_id} is not active")
        for partition, replicas in enumerate(self.cluster.replicas):
            isr = self.isr[partition]
            if broker_id in replicas and broker_id not in isr and self.leaders[partition] != NO_LEADER:
                isr.append(broker_id)
                isr.sort(key=replicas.index)

    def preferred_leader_election(self) -> list[int]:
        """Leadership goes back to the first replica where it is active and in the ISR."""
        changed = []
        for partition, replicas in enumerate(self.cluster.replicas):
            preferred = replicas[0]
            if self.leaders[partition] != preferred and preferred in self.active and preferred in self.isr[partition]:
                self.leaders[partition] = preferred
                changed.append(partition)
        return changed

    def imbalanced(self) -> bool:
        """Some partition is not led by its preferred replica, leaderless ones included
        (ReplicationControlManager.arePartitionLeadersImbalanced: any partition counts, whatever
        leader.imbalance.per.broker.percentage says, a setting only the ZooKeeper controller read)."""
        return any(leader != replicas[0] for leader, replicas in zip(self.leaders, self.cluster.replicas))

    def _first_in_sync(self, partition: int, excluded: int = NO_LEADER) -> int:
        isr = self.isr[partition]
        return next((r for r in self.cluster.replicas[partition]
                     if r in isr and r in self.active and r != excluded), NO_LEADER)


# ----------------------------------------------------------------------------------------------------------
# `kafka-topics.sh --describe` output (tools/src/main/java/org/apache/kafka/tools/TopicCommand.java)

@dataclass(frozen=True)
class PartitionDescription:
    partition: int
    leader: int | None  # `Leader: none`
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    line: int


@dataclass(frozen=True)
class TopicDescription:
    partition_count: int | None  # from the header line, when present
    replication_factor: int | None
    partitions: tuple[PartitionDescription, ...]

    def replicas(self) -> dict[int, tuple[int, ...]]:
        return {p.partition: p.replicas for p in self.partitions}


_FIELD = re.compile(r"([A-Za-z][A-Za-z ]*?):\s*([^\t]*)")


def _fields(line: str) -> dict[str, str]:
    """`Key: value` fields separated by tabs (or, in pasted output, runs of spaces before a known key)."""
    parts = re.split(r"\t+|\s{2,}(?=[A-Z][A-Za-z ]*:)", line.strip())
    found: dict[str, str] = {}
    for part in parts:
        match = _FIELD.fullmatch(part.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def parse_topic_description(text: str, topic: str = OFFSETS_TOPIC) -> TopicDescription:
    """The partitions of `topic` in `kafka-topics.sh --describe` output (2.x to 4.x: with or without TopicId,
    Elr and LastKnownElr). Lines of other topics and lines that are not `Key: value` fields (warnings, log
    lines) are skipped. Errors name the line: `line 7: Replicas: ...`."""
    header: dict[str, str] = {}
    header_line = 0
    partitions: list[PartitionDescription] = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = _fields(line)
        if fields.get("Topic") != topic:
            continue
        if "Partition" not in fields:
            header, header_line = fields, number
            continue
        for key in ("Leader", "Replicas", "Isr"):
            if key not in fields:
                raise ClusterError(f"line {number}: no '{key}:' field in the partition line")
        partition = _int(fields["Partition"], "Partition", number)
        leader = None if fields["Leader"] in ("none", "-1") else _int(fields["Leader"], "Leader", number)
        partitions.append(PartitionDescription(partition, leader, _int_list(fields["Replicas"], "Replicas", number),
                                               _int_list(fields["Isr"], "Isr", number), number))
    if not partitions:
        raise ClusterError(f"no partition lines of topic {topic} (expected lines such as 'Topic: {topic}\t"
                           "Partition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3')")
    seen: dict[int, int] = {}
    for p in partitions:
        if p.partition in seen:
            raise ClusterError(f"line {p.line}: partition {p.partition} is described twice (also line "
                               f"{seen[p.partition]})", p.partition)
        seen[p.partition] = p.line
    count, factor = (_int(header[key], key, header_line) if key in header else None
                     for key in ("PartitionCount", "ReplicationFactor"))
    if count is not None and count != len(partitions):
        raise ClusterError(f"line {header_line}: PartitionCount is {count} but {len(partitions)} partition lines "
                           "follow")
    return TopicDescription(count, factor, tuple(sorted(partitions, key=lambda p: p.partition)))


def _int(text: str, key: str, line: int) -> int:
    if not re.fullmatch(r"-?\d+", text):
        raise ClusterError(f"line {line}: {key}: not an integer: {text!r}")
    return int(text)


def _int_list(text: str, key: str, line: int) -> tuple[int, ...]:
    if not re.fullmatch(r"(\d+(,\d+)*)?", text):
        raise ClusterError(f"line {line}: {key}: not a comma-separated list of broker ids: {text!r}")
    return tuple(int(x) for x in text.split(",")) if text else ()


# ----------------------------------------------------------------------------------------------------------
# The controller's timing (KRaft controller settings, Kafka's defaults)

SESSION_TIMEOUT = "broker.session.timeout.ms"
HEARTBEAT_INTERVAL = "broker.heartbeat.interval.ms"
AUTO_LEADER_REBALANCE = "auto.leader.rebalance.enable"
IMBALANCE_CHECK_INTERVAL = "leader.imbalance.check.interval.seconds"
IMBALANCE_PERCENTAGE = "leader.imbalance.per.broker.percentage"
SEGMENT_BYTES = "offsets.topic.segment.bytes"
LOAD_RATE = "coordsim.offsets.load.bytes.per.second"


@dataclass(frozen=True)
class ControllerSettings:
    """When leadership changes after a broker event, and how long a new leader takes to load a partition.

    `broker_heartbeat_interval_ms` / `broker_session_timeout_ms`: a broker heartbeats to the controller every
    interval; once its heartbeats stop, the controller fences it the session timeout after the last one it
    received (its leaderships move then). `auto_leader_rebalance_enable` / `leader_imbalance_check_interval_s`:
    the controller checks the interval after leadership first left a preferred leader, and every interval
    while some partition is still off its preferred leader (`ImbalanceCheck`). `offsets_topic_segment_bytes`:
    a `__consumer_offsets` segment rolls at this size, and only rolled segments are compacted.
    `load_bytes_per_second`: coordsim's assumption of how fast a new leader reads the partition's log to load
    its groups (docs/scenarios.md, "Broker events")."""

    broker_session_timeout_ms: int = 9_000
    broker_heartbeat_interval_ms: int = 2_000
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_s: int = 300
    offsets_topic_segment_bytes: int = 104_857_600
    load_bytes_per_second: int = 50_000_000


def heartbeat_phase(seed: int | str, broker_id: int, interval_ms: int) -> int:
    """Where in its heartbeat interval a broker that was up before the scenario began heartbeats: brokers
    start at unrelated times, so each gets its own phase in [0, interval), drawn from the scenario's seed and
    its id (text `SEED/broker ID/heartbeat`, like every other draw)."""
    return random.Random(f"{seed}/broker {broker_id}/heartbeat").randrange(interval_ms)


class BrokerHeartbeats:
    """When each broker's heartbeats reach the controller, and so when a crashed broker is fenced.

    A broker heartbeats every `broker.heartbeat.interval.ms` (BrokerLifecycleManager schedules the next one an
    interval after each answer; the round trip is not modelled): at its phase plus multiples of the interval,
    or, once it has registered again after a return, at its registration plus multiples of the interval. The
    controller fences it when `broker.session.timeout.ms` has passed since the last heartbeat it received
    (BrokerHeartbeatManager.hasValidSession): a heartbeat due at the crash's millisecond is not sent, so the
    fence falls between the session timeout less one interval and the session timeout after the crash
    (7 to 9 s with Kafka's defaults)."""

    def __init__(self, settings: ControllerSettings, seed: int | str, broker_ids: Iterable[int]) -> None:
        self.interval = settings.broker_heartbeat_interval_ms
        self.session_timeout = settings.broker_session_timeout_ms
        self.anchor = {b: heartbeat_phase(seed, b, self.interval) for b in broker_ids}
        self.registered: dict[int, int] = {}

    def register(self, broker_id: int, t: int) -> None:
        """The broker registers again at t (a return) and heartbeats from then on."""
        self.anchor[broker_id] = self.registered[broker_id] = t

    def last_heartbeat(self, broker_id: int, crash_ms: int) -> int:
        """The last heartbeat the controller received from a broker that crashed at `crash_ms`."""
        anchor = self.anchor[broker_id]
        last = anchor + (crash_ms - 1 - anchor) // self.interval * self.interval
        return max(last, self.registered.get(broker_id, last))  # its registration counts as one

    def fenced_at(self, broker_id: int, crash_ms: int) -> int:
        return self.last_heartbeat(broker_id, crash_ms) + self.session_timeout


class ImbalanceCheck:
    """When the controller's automatic preferred-leader election runs
    (QuorumController.maybeScheduleNextBalancePartitionLeaders).

    After every event the controller writes (a fence, a controlled shutdown, a registration, an election),
    when leadership is imbalanced (`Leadership.imbalanced`) and no check is scheduled, it schedules one
    `leader.imbalance.check.interval.seconds` later; the check elects each preferred leader that is active
    and in sync, and, being a write too, schedules the next check when some partition is still off its
    preferred leader. So the first election follows the event that first moved leadership off a preferred
    leader (a fence, not a broker's return) by the interval, and the next ones come every interval while
    imbalanced. Kafka elects at most 1,000 partitions per check and goes on 10 ms later; the
    `__consumer_offsets` partitions are taken as fewer."""

    def __init__(self, settings: ControllerSettings) -> None:
        self.enabled = settings.auto_leader_rebalance_enable
        self.interval_ms = settings.leader_imbalance_check_interval_s * 1000
        self.scheduled: int | None = None

    def after_write(self, t: int, imbalanced: bool) -> int | None:
        """The time of the check a controller write at t schedules, if it schedules one."""
        if not self.enabled or self.scheduled is not None or not imbalanced:
            return None
        self.scheduled = t + self.interval_ms
        return self.scheduled

    def ran(self) -> None:
        self.scheduled = None
