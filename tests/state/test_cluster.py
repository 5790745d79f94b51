"""The cluster model: replica placement as Kafka's StripedReplicaPlacer (cases ported from Kafka's
StripedReplicaPlacerTest, under the same names), java.util.Random, leaders, the describe parser, validation,
and the controller's timing (fences from the brokers' heartbeats, the leader imbalance check)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from state.java_compat import JavaRandom
from state.cluster import (Broker, BrokerHeartbeats, Cluster, ClusterError, ControllerSettings, ImbalanceCheck,
                           Leadership, _BrokerList, _RackList, heartbeat_phase, parse_topic_description,
                           place_replicas)
from state.java_compat import coordinator_partition, to_int32

DESCRIBE = Path(__file__).resolve().parents[1] / "data" / "cluster" / "consumer-offsets-describe.txt"


class MockRandom(JavaRandom):
    """org.apache.kafka.server.util.MockRandom: java.util.Random with its own next(bits)."""

    def __init__(self, state: int = 17) -> None:
        self.state = state

    def next(self, bits: int) -> int:
        self.state = (self.state * 2862933555777941757 + 3037000493) & (2**64 - 1)
        return to_int32(self.state >> (64 - bits))


def unfenced(*ids, rack=None):
    return [(i, rack, False) for i in ids]


# ----------------------------------------------------------------------------------------------------------
# java.util.Random, checked against a JDK 21: new Random(42), then Collections.shuffle(0..9, same random)

def test_java_random_matches_the_jdk():
    random = JavaRandom(42)
    draws = [random.next_int(100) for _ in range(5)] + [random.next_int(7) for _ in range(5)]
    draws += [random.next_int(1 << 30) for _ in range(3)]  # a power of two: the high-bits rule
    assert draws == [30, 63, 48, 84, 70, 4, 1, 3, 6, 3, 969988591, 484533751, 395977638]
    items = list(range(10))
    random.shuffle(items)
    assert items == [1, 7, 9, 4, 3, 6, 0, 5, 8, 2]
    assert JavaRandom(0).next(32) == -1155484576  # new Random(0).nextInt()


# ----------------------------------------------------------------------------------------------------------
# Ported from StripedReplicaPlacerTest

def test_broker_list():
    brokers = _BrokerList()
    assert brokers.next(1) == -1
    brokers.brokers = [0, 1, 2, 3]
    assert [brokers.next(0) for _ in range(6)] == [0, 1, 2, 3, -1, -1]
    assert [brokers.next(1) for _ in range(5)] == [1, 2, 3, 0, -1]


def test_avoid_fenced_replica_if_possible_on_single_rack():
    rack_list = _RackList(MockRandom(), [(3, None, False), (1, None, True), (0, None, False), (4, None, False),
                                         (2, None, False)])
    assert (rack_list.num_total, rack_list.num_unfenced, rack_list.rack_names) == (5, 4, [None])
    for factor in (0, -1):
        with pytest.raises(ClusterError):
            rack_list.place(factor)
    assert [rack_list.place(4) for _ in range(5)] == [[3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0],
                                                      [0, 4, 3, 2]]


def test_multi_partition_topic_placement_on_single_unfenced_broker():
    assert place_replicas([(0, None, False), (1, None, True)], 3, 1, MockRandom()) == [[0], [0], [0]]


def test_placement_on_fenced_replica_on_single_rack():
    rack_list = _RackList(MockRandom(), [(3, None, False), (1, None, True), (2, None, False)])
    assert (rack_list.num_total, rack_list.num_unfenced) == (3, 2)
    assert [rack_list.place(3) for _ in range(4)] == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_rack_list_with_multiple_racks():
    rack_list = _RackList(MockRandom(), [(11, "1", False), (10, "1", False), (30, "3", False), (31, "3", False),
                                         (21, "2", False), (20, "2", True)])
    assert (rack_list.num_total, rack_list.num_unfenced, rack_list.rack_names) == (6, 5, ["1", "2", "3"])
    assert [rack_list.place(4) for _ in range(3)] == [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]


def test_rack_list_with_invalid_racks():
    rack_list = _RackList(MockRandom(), [(11, "1", False), (10, "1", False), (30, "3", True), (31, "3", True),
                                         (20, "2", True), (21, "2", True), (41, "4", False), (40, "4", True)])
    assert (rack_list.num_total, rack_list.num_unfenced, rack_list.rack_names) == (8, 3, ["1", "2", "3", "4"])
    assert [rack_list.place(4) for _ in range(3)] == [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]


@pytest.mark.parametrize("usable, factor, message", [
    ([(11, "1", True), (10, "1", True)], 1, "All brokers are currently fenced."),  # testAllBrokersFenced
    (unfenced(11, 10, rack="1"), 3, "The target replication factor of 3 cannot be reached because only 2 "
                                    "broker(s) are registered."),  # testNotEnoughBrokers
    (unfenced(11, 10, rack="1"), 0, "Invalid replication factor 0: the replication factor must be positive."),
    ([(0, None, True), (1, None, True), (2, None, True)], 3, "All brokers are currently fenced."),
])
def test_all_brokers_fenced_not_enough_brokers_non_positive_replication_factor(usable, factor, message):
    with pytest.raises(ClusterError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        place_replicas(usable, 1, factor, MockRandom())


def test_successful_placement():
    assert place_replicas(unfenced(0, 3, 2, 1), 5, 3, MockRandom()) == [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3],
                                                                       [1, 0, 2]]


def test_even_distribution():
    counts = Counter(tuple(r) for r in place_replicas(unfenced(0, 1, 2, 3), 200, 2, MockRandom()))
    assert counts == {(0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16, (2, 0): 13,
                      (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11}


# ----------------------------------------------------------------------------------------------------------
# The cluster

SIX = [Broker(i) for i in range(1, 7)]


def test_placement_is_deterministic_per_seed_and_spreads_leaders():
    cluster = Cluster.placed(SIX, 50, 3, seed=0)
    assert cluster == Cluster.placed(SIX, 50, 3, seed=0) != Cluster.placed(SIX, 50, 3, seed=1)
    assert (cluster.num_partitions, cluster.replication_factor) == (50, 3)
    led = {broker: len(parts) for broker, parts in cluster.partitions_led(cluster.broker_ids).items()}
    assert sorted(led.values()) == [8, 8, 8, 8, 9, 9] and sum(led.values()) == 50
    for replicas in cluster.replicas:
        assert len(set(replicas)) == 3


def test_racks_spread_each_partitions_replicas():
    brokers = [Broker(i, rack) for i, rack in ((1, "a"), (2, "b"), (3, "c"), (4, "a"), (5, "b"), (6, "c"))]
    racks = {b.id: b.rack for b in brokers}
    for replicas in Cluster.placed(brokers, 50, 3, seed=3).replicas:
        assert sorted(racks[r] for r in replicas) == ["a", "b", "c"]


def test_the_leader_is_the_first_live_replica():
    cluster = Cluster.of(SIX[:3], {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    assert [cluster.leader(p, {1, 2, 3}) for p in range(3)] == [1, 2, 3]
    assert [cluster.leader(p, {2, 3}) for p in range(3)] == [2, 2, 3]
    assert [cluster.leader(p, {3}) for p in range(3)] == [3, 3, 3]
    assert [cluster.leader(p, set()) for p in range(3)] == [None, None, None]
    group = "payments"
    partition = coordinator_partition(group, 3)
    assert cluster.coordinator_of(group, {1, 2, 3}) == cluster.replicas[partition][0]
    assert cluster.partitions_led({1, 3}) == {1: [0], 2: [], 3: [1, 2]}


def test_leadership_follows_the_isr_through_failures_returns_and_preferred_election():
    cluster = Cluster.of(SIX[:3], {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    leadership = Leadership(cluster)
    assert leadership.broker_removed(1) == [0] and leadership.leader(0) == 2
    assert leadership.broker_unfenced(1) == [] and leadership.leader(0) == 2  # back, not yet in sync
    leadership.caught_up(1)
    assert leadership.isr[0] == [1, 2, 3] and leadership.leader(0) == 2  # in sync, still not leading
    assert leadership.preferred_leader_election() == [0] and leadership.leader(0) == 1


def test_a_partition_whose_last_in_sync_replica_fails_waits_for_that_replica():
    cluster = Cluster.of(SIX[:3], {0: [1, 2, 3]})
    leadership = Leadership(cluster)
    leadership.broker_removed(1)
    leadership.broker_removed(2)
    assert leadership.broker_removed(3) == [0] and leadership.leader(0) is None
    assert leadership.isr[0] == [3]  # the ISR is never emptied
    assert leadership.broker_unfenced(1) == [] and leadership.leader(0) is None  # not in the ISR: no clean leader
    assert leadership.broker_unfenced(3) == [0] and leadership.leader(0) == 3
    assert leadership.coordinator_of("any") == 3


# ----------------------------------------------------------------------------------------------------------
# Validation

def test_has_valid_session():
    # BrokerHeartbeatManagerTest.testHasValidSession: the controller fences a broker the session timeout after
    # the last heartbeat it received. Broker 1 registers at 10 s and heartbeats at 10, 12, 14, ... s.
    heartbeats = BrokerHeartbeats(ControllerSettings(), seed=0, broker_ids=[1])
    heartbeats.register(1, 10_000)
    assert heartbeats.last_heartbeat(1, 15_000) == 14_000 and heartbeats.fenced_at(1, 15_000) == 23_000
    # A heartbeat due at the crash's millisecond is not sent; one a millisecond before it was.
    assert heartbeats.fenced_at(1, 14_000) == 21_000 and heartbeats.fenced_at(1, 14_001) == 23_000
    # A crash at its registration: the registration is the last contact.
    assert heartbeats.fenced_at(1, 10_000) == 19_000


def test_the_fence_falls_7_to_9_seconds_after_a_crash_by_each_brokers_heartbeat_phase():
    settings = ControllerSettings()
    phases = {(seed, b): heartbeat_phase(seed, b, 2_000) for seed in (0, 1, "x") for b in range(1, 7)}
    assert all(0 <= phase < 2_000 for phase in phases.values()) and len(set(phases.values())) > 10
    assert phases == {(seed, b): heartbeat_phase(seed, b, 2_000) for seed in (0, 1, "x") for b in range(1, 7)}
    heartbeats = BrokerHeartbeats(settings, seed=0, broker_ids=range(1, 7))
    for crash in range(60_000, 62_000, 7):
        for broker in range(1, 7):
            last = heartbeats.last_heartbeat(broker, crash)
            assert (last - phases[(0, broker)]) % 2_000 == 0 and crash - 2_000 <= last < crash
            assert 7_000 <= heartbeats.fenced_at(broker, crash) - crash <= 8_999


def test_the_imbalance_check_is_scheduled_by_the_write_that_imbalances_and_repeats_while_imbalanced():
    # QuorumController.maybeScheduleNextBalancePartitionLeaders after each write event.
    check = ImbalanceCheck(ControllerSettings())
    assert check.after_write(5_000, imbalanced=False) is None
    assert check.after_write(9_000, imbalanced=True) == 309_000  # the fence
    assert check.after_write(60_000, imbalanced=True) is None     # the broker's return: already scheduled
    check.ran()
    assert check.after_write(309_000, imbalanced=True) == 609_000  # still off its preferred leader
    check.ran()
    assert check.after_write(609_000, imbalanced=False) is None
    off = ImbalanceCheck(ControllerSettings(auto_leader_rebalance_enable=False))
    assert off.after_write(9_000, imbalanced=True) is None


def test_balance_partition_leaders_counts_a_single_partition_off_its_preferred_leader():
    # QuorumControllerTest.testBalancePartitionLeaders: one partition of three off its preferred leader is an
    # imbalance (no leader.imbalance.per.broker.percentage in KRaft); a leaderless partition is one too.
    cluster = Cluster.of((Broker(1), Broker(2), Broker(3)), {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    leadership = Leadership(cluster)
    assert not leadership.imbalanced()
    leadership.broker_removed(3)
    assert leadership.imbalanced()
    leadership.broker_unfenced(3)
    leadership.caught_up(3)
    assert leadership.imbalanced() and leadership.preferred_leader_election() == [2]
    assert not leadership.imbalanced()
    single = Leadership(Cluster.of((Broker(1), Broker(2)), {0: [1], 1: [2]}))
    single.broker_removed(1)
    assert single.leader(0) is None and single.imbalanced()


@pytest.mark.parametrize("brokers, replicas, message", [
    (SIX[:3], {0: [1, 2, 9]}, "partition 0: unknown broker id 9 (brokers: 1, 2, 3)"),
    (SIX[:3], {0: [1, 2], 2: [2, 3]}, "the partition map misses partition(s) 1 (partitions are numbered from 0"),
    (SIX[:3], {0: [1, 1]}, "partition 0: duplicate replica in 1,1"),
    (SIX[:3], {0: [1, 2], 1: [1]}, "partition 1 has 1 replicas, the partitions before it 2"),
    (SIX[:3], {}, "the partition map is empty"),
    ([Broker(1), Broker(1)], {0: [1]}, "broker id 1 is listed twice"),
])
def test_a_bad_partition_map_is_one_line_naming_what_is_wrong(brokers, replicas, message):
    with pytest.raises(ClusterError) as error:
        Cluster.of(brokers, replicas)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


@pytest.mark.parametrize("partitions, factor, message", [
    (50, 4, "offsets.topic.replication.factor must be between 1 and the number of brokers (3), got 4"),
    (50, 0, "offsets.topic.replication.factor must be between 1 and the number of brokers (3), got 0"),
    (0, 3, "offsets.topic.num.partitions must be >= 1, got 0"),
])
def test_a_bad_placement_names_the_setting(partitions, factor, message):
    with pytest.raises(ClusterError) as error:
        Cluster.placed(SIX[:3], partitions, factor)
    assert str(error.value) == message


# ----------------------------------------------------------------------------------------------------------
# kafka-topics.sh --describe

def test_the_describe_output_of_a_4x_cluster():
    description = parse_topic_description(DESCRIBE.read_text())
    assert (description.partition_count, description.replication_factor) == (50, 3)
    replicas = description.replicas()
    assert len(replicas) == 50 and replicas[0] == (1, 2, 3) and replicas[7] == (2, 1, 3)
    partition_7 = description.partitions[7]
    assert (partition_7.leader, partition_7.isr, partition_7.line) == (1, (1, 3), 9)
    cluster = Cluster.of([Broker(1), Broker(2), Broker(3)], replicas)
    assert cluster.leader(7, {1, 2, 3}) == 2  # the preferred leader, which the live cluster has not restored yet


def test_the_describe_output_of_older_versions_and_other_topics():
    text = ("Topic:__consumer_offsets\tPartitionCount:2\tReplicationFactor:2\tConfigs:segment.bytes=104857600\n"
            "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
            "Topic: orders\tPartition: 0\tLeader: 2\tReplicas: 2,1\tIsr: 2\n"
            "Topic: __consumer_offsets  Partition: 1  Leader: none  Replicas: 2,1  Isr: 2\n")
    description = parse_topic_description(text)
    assert description.replicas() == {0: (1, 2), 1: (2, 1)} and description.partitions[1].leader is None


@pytest.mark.parametrize("text, message", [
    ("Topic: orders\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n", "no partition lines of topic "
                                                                    "__consumer_offsets"),
    ("\n\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1;2\tIsr: 1\n",
     "line 2: Replicas: not a comma-separated list of broker ids: '1;2'"),
    ("\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tIsr: 1\n", "line 1: no 'Replicas:' field"),
    ("\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
     "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n",
     "line 2: partition 0 is described twice (also line 1)"),
    ("Topic: __consumer_offsets\tPartitionCount: 3\tReplicationFactor: 1\n"
     "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n",
     "line 1: PartitionCount is 3 but 1 partition lines follow"),
])
def test_describe_errors_name_the_line(text, message):
    with pytest.raises(ClusterError) as error:
        parse_topic_description(text)
    assert str(error.value).startswith(message), str(error.value)
