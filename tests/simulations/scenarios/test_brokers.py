"""Broker events on the timeline: the controller's leadership changes computed by hand on small clusters, the
rows each group gets, load times, and the scenario errors of broker actions."""

from __future__ import annotations

import textwrap

import pytest

from simulations.scenarios import ScenarioError, parse_scenario
from simulations.scenarios.brokers import BrokerEvent, BrokerEventError, Change, ClusterTimeline, PartitionLog
from simulations.scenarios.generator import generate
from state.client_config import ClientConfig
from state.cluster import NO_LEADER, Broker, Cluster, ControllerSettings
from state.java_compat import coordinator_partition
from tests.simulations.scenarios.helpers import MINIMAL

THREE = Cluster.of((Broker(1), Broker(2), Broker(3)), {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})


def timeline(*events: tuple, cluster: Cluster = THREE, **settings) -> dict[int, list[Change]]:
    played = ClusterTimeline(cluster, ControllerSettings(**settings))
    for at, kind, broker, restart in events:
        played.add(BrokerEvent(at, kind, broker, restart, f"timeline[{kind}]"))
    return {p: [(c.at_ms, c.fault, c.broker) for c in changes] for p, changes in played.changes().items()}


def test_a_crash_moves_the_partition_once_fenced_and_the_auto_election_gives_it_back():
    # Broker 1 leads partition 0 (replicas 1,2,3). It crashes at 60 s and is fenced 9 s later: partition 0 goes
    # to 2, the next replica in sync. Back at 120 s, it leads nothing until the election 300 s later.
    assert timeline((60_000, "broker_down", 1, 60_000)) == {
        0: [(60_000, "crash", NO_LEADER), (69_000, "move", 2), (420_000, "move", 1)]}


def test_a_controlled_shutdown_moves_at_once_and_without_auto_election_leadership_stays():
    assert timeline((10_000, "broker_shutdown", 2, 5_000), auto_leader_rebalance_enable=False) == {
        1: [(10_000, "move", 3)]}
    assert timeline((10_000, "broker_shutdown", 2, None), (50_000, "broker_up", 2, None),
                    (60_000, "preferred_leader_election", None, None), auto_leader_rebalance_enable=False) == {
        1: [(10_000, "move", 3), (60_000, "move", 2)]}


def test_a_partition_whose_only_replica_fails_has_no_leader_until_it_returns():
    single = Cluster.of((Broker(1), Broker(2)), {0: [1], 1: [2]})
    assert timeline((0, "broker_down", 1, 30_000), cluster=single, broker_session_timeout_ms=6_000) == {
        0: [(0, "crash", NO_LEADER), (6_000, "move", NO_LEADER), (30_000, "move", 1)]}


def test_a_restart_before_fencing_fences_the_old_registration_first():
    assert timeline((0, "broker_down", 3, 2_000), auto_leader_rebalance_enable=False) == {
        2: [(0, "crash", NO_LEADER), (2_000, "move", 1)]}


@pytest.mark.parametrize("events, message", [
    (((0, "broker_down", 1, None), (5_000, "broker_shutdown", 1, None)), "broker 1 is already down at 5 s"),
    (((0, "broker_up", 2, None),), "broker 2 is not down at 0 s"),
])
def test_impossible_broker_events_are_errors(events, message):
    with pytest.raises(BrokerEventError, match=message):
        timeline(*events)


def test_load_time_is_the_partitions_bytes_over_the_load_rate():
    log = PartitionLog("g", 2, {"t": 4}, False, ClientConfig(), started_ms=1_000)
    assert log.bytes_at(0) == (0, 0.0)
    compacted, active = log.bytes_at(11_000)
    # An OffsetCommit record of group "g", topic "t" as trunk writes it: key 2+3+3+4 = 12 bytes, value v4
    # 2+8+4+1+8 and the topic id tagged 1+1+1+16 = 42 bytes, record 1 (length) + 1 + 1 + 1 + 1 + 12 + 1 + 42 + 1
    # = 61 bytes. In 10 s, two auto-commit intervals, each of the two members commits its 2 partitions in one
    # batch: 2 x (2 x 61 + 4 x 61) = 732 bytes.
    assert active == pytest.approx(732)
    played = ClusterTimeline(Cluster.of((Broker(1),), {0: [1]}), ControllerSettings(load_bytes_per_second=1_000))
    played.add_group("g", log)
    assert played.load_ms(0, 11_000) == -(-(compacted + active) * 1000 // 1_000)
    capped = ClusterTimeline(Cluster.of((Broker(1),), {0: [1]}),
                             ControllerSettings(load_bytes_per_second=1_000, offsets_topic_segment_bytes=10))
    capped.add_group("g", log)
    assert capped.load_ms(0, 10**9) == compacted + 10


def test_every_group_first_learns_its_leader_then_the_changes_to_its_partition():
    scenario = parse_scenario(textwrap.dedent("""\
        cluster:
          replicas: {0: [1, 2], 1: [2, 1]}
        timeline:
          - {at: 1m, action: broker_down, broker: 1}
        """) + MINIMAL.replace("members: 3", "members: 3\n    groups: 4"), "s.yaml", "s")
    rows = generate(scenario).rows
    for group_id in ("orders-0", "orders-1", "orders-2", "orders-3"):
        faults = [r for r in rows if r["group_id"] == group_id and r["type"] == "COORDINATOR_FAULT"]
        first = min(r["seq"] for r in rows if r["group_id"] == group_id)
        assert faults[0]["seq"] == first and faults[0]["fault"] == "move" and faults[0]["load_delay_ms"] == 0
        if coordinator_partition(group_id, 2) == 0:
            assert [(f["fault"], f.get("coordinator_id")) for f in faults] == [("move", 1), ("crash", None),
                                                                            ("move", 2)]
            assert faults[1]["ts"] == scenario.start_ms + 60_000 and faults[2]["ts"] == scenario.start_ms + 69_000
        else:
            assert [(f["fault"], f["coordinator_id"]) for f in faults] == [("move", 2)]


@pytest.mark.parametrize("timeline_text, message", [
    ("  - {at: 1m, action: broker_down, broker: 1}\n",
     "s.yaml:2: timeline[0]: broker_down needs the brokers: add a 'cluster:' section to the scenario"),
])
def test_broker_actions_need_a_cluster(timeline_text, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario("timeline:\n" + timeline_text + MINIMAL, "s.yaml", "s")
    assert str(error.value).startswith(message), str(error.value)


@pytest.mark.parametrize("action, message", [
    ("{at: 1m, action: broker_down, broker: 7}", "s.yaml:4: timeline[0].broker: no broker 7 in the cluster "
                                                 "(brokers: 1, 2, 3)"),
    ("{at: 1m, action: broker_down}", "s.yaml:4: timeline[0]: missing required key 'broker'"),
    ("{at: 1m, action: broker_up, broker: 1, target: orders}",
     "s.yaml:4: timeline[0].target: broker_up applies to the whole cluster: remove it"),
    ("{at: 1m, action: broker_down, broker: 1, restart_after: 0s}", "s.yaml:4: timeline[0].restart_after:"),
    ("{at: 1m, action: preferred_leader_election, broker: 1}", "s.yaml:4: timeline[0].broker: unknown key"),
])
def test_broker_action_errors_name_the_line_and_key(action, message):
    text = f"cluster:\n  brokers: 3\ntimeline:\n  - {action}\n" + MINIMAL
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text, "s.yaml", "s")
    assert str(error.value).startswith(message), str(error.value)
    assert "\n" not in str(error.value)


def test_an_impossible_broker_event_is_a_scenario_error():
    text = ("cluster:\n  brokers: 3\ntimeline:\n  - {at: 1m, action: broker_down, broker: 1}\n"
            "  - {at: 2m, action: broker_down, broker: 1}\n" + MINIMAL)
    with pytest.raises(ScenarioError, match=r"timeline\[1\] \(broker_down, line 5\): broker 1 is already down "
                                            r"at 120 s"):
        generate(parse_scenario(text, "s.yaml", "s"))


def test_controller_settings_are_read_from_the_cluster_section():
    scenario = parse_scenario("cluster:\n  brokers: 3\n  broker.session.timeout.ms: 18000\n"
                              "  auto.leader.rebalance.enable: false\n" + MINIMAL, "s.yaml", "s")
    assert scenario.controller == ControllerSettings(broker_session_timeout_ms=18_000,
                                                     auto_leader_rebalance_enable=False)
    with pytest.raises(ScenarioError, match="cluster.auto.leader.rebalance.enable: must be true or false"):
        parse_scenario("cluster:\n  brokers: 3\n  auto.leader.rebalance.enable: 1\n" + MINIMAL, "s.yaml", "s")
