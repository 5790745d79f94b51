"""Broker events on the timeline: the controller's leadership changes computed by hand on small clusters, the
rows each group gets, load times, and the scenario errors of broker actions."""

from __future__ import annotations

import math
import textwrap

import pytest

from simulations.scenarios import ScenarioError, parse_scenario
from simulations.scenarios.brokers import (BrokerEvent, BrokerEventError, Change, ClusterTimeline, PartitionLog,
                                          formation_ms)
from simulations.scenarios.generator import AUTOMATIC_ELECTION, generate
from state.clients.config import ClientConfig
from state.cluster import NO_LEADER, Broker, BrokerHeartbeats, Cluster, ControllerSettings
from state.java_compat import coordinator_partition
from state.records.record_bytes import RECORD_BATCH_OVERHEAD
from tableio.coordinator_load import coordinator_load_rows
from tests.simulations.scenarios.helpers import MINIMAL, run, shipped_small

THREE = Cluster.of((Broker(1), Broker(2), Broker(3)), {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})


# The runs of these timelines end after an hour.
HOUR = 3_600_000


def timeline(*events: tuple, cluster: Cluster = THREE, seed: int = 0, **settings) -> dict[int, list[Change]]:
    played = ClusterTimeline(cluster, ControllerSettings(**settings), seed, HOUR)
    for at, kind, broker, restart in events:
        played.add(BrokerEvent(at, kind, broker, restart, f"timeline[{kind}]"))
    return {p: [(c.at_ms, c.fault, c.broker) for c in changes] for p, changes in played.changes().items()}


def fenced(broker: int, crash_ms: int, seed: int = 0, cluster: Cluster = THREE, **settings) -> int:
    """When the controller fences `broker` after its crash: the session timeout after its last heartbeat."""
    return BrokerHeartbeats(ControllerSettings(**settings), seed, cluster.broker_ids).fenced_at(broker, crash_ms)


def test_a_crash_moves_the_partition_once_fenced_and_the_auto_election_gives_it_back():
    # Broker 1 leads partition 0 (replicas 1,2,3). It crashes at 60 s and is fenced 7 to 9 s later, as its
    # heartbeats fell: partition 0 goes to 2, the next replica in sync. Back at 120 s, it leads nothing until
    # the imbalance check that the fence scheduled, leader.imbalance.check.interval.seconds after the fence.
    fence = fenced(1, 60_000)
    assert 67_000 <= fence <= 69_000
    assert timeline((60_000, "broker_down", 1, 60_000)) == {
        0: [(60_000, "crash", NO_LEADER), (fence, "move", 2), (fence + 300_000, "move", 1)]}


def test_the_fence_follows_each_brokers_heartbeat_phase_and_the_seed():
    fences = {(seed, broker): timeline((60_000, "broker_down", broker, None), seed=seed)[broker - 1][1][0]
              for seed in range(4) for broker in (1, 2, 3)}
    assert fences == {(seed, broker): fenced(broker, 60_000, seed) for seed in range(4) for broker in (1, 2, 3)}
    assert all(67_000 <= t <= 69_000 for t in fences.values()) and len(set(fences.values())) > 3
    # After a return (at 100 s) the broker heartbeats from its registration on: crashed again at 201.5 s, its
    # last heartbeat was at 200 s, and the fence at 209 s.
    changes = timeline((0, "broker_down", 1, 100_000), (150_000, "preferred_leader_election", None, None),
                       (201_500, "broker_down", 1, None), auto_leader_rebalance_enable=False)
    assert changes[0][-3:] == [(150_000, "move", 1), (201_500, "crash", NO_LEADER), (209_000, "move", 2)]


def test_while_imbalanced_the_check_repeats_every_interval():
    # Broker 1 is down 400 s: the check 300 s after its fence finds it still down, the next one gives its
    # partition back.
    fence = fenced(1, 0)
    assert timeline((0, "broker_down", 1, 400_000)) == {
        0: [(0, "crash", NO_LEADER), (fence, "move", 2), (fence + 600_000, "move", 1)]}


def test_a_controlled_shutdown_moves_at_once_and_without_auto_election_leadership_stays():
    assert timeline((10_000, "broker_shutdown", 2, 5_000), auto_leader_rebalance_enable=False) == {
        1: [(10_000, "move", 3)]}
    assert timeline((10_000, "broker_shutdown", 2, None), (50_000, "broker_up", 2, None),
                    (60_000, "preferred_leader_election", None, None), auto_leader_rebalance_enable=False) == {
        1: [(10_000, "move", 3), (60_000, "move", 2)]}
    # With it, the check comes the interval after the shutdown moved leadership, not after the return.
    assert timeline((10_000, "broker_shutdown", 2, 5_000)) == {1: [(10_000, "move", 3), (310_000, "move", 2)]}


def test_a_partition_whose_only_replica_fails_has_no_leader_until_it_returns():
    single = Cluster.of((Broker(1), Broker(2)), {0: [1], 1: [2]})
    fence = fenced(1, 0, cluster=single, broker_session_timeout_ms=6_000)
    assert 4_000 <= fence <= 6_000
    assert timeline((0, "broker_down", 1, 30_000), cluster=single, broker_session_timeout_ms=6_000) == {
        0: [(0, "crash", NO_LEADER), (fence, "move", NO_LEADER), (30_000, "move", 1)]}


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


def test_a_groups_log_holds_its_group_metadata_then_its_commits_from_one_interval_after_it_forms():
    # Group "g": 2 members, topic "t" of 4 partitions, auto-commit every 5 s, starts at 1 s; with the 3 s
    # initial rebalance delay it forms at 7 s (the delay, once more as its second member arrives) and commits
    # from 12 s. An OffsetCommit record of "g", topic "t" as trunk writes it: key 2+3+3+4 = 12 bytes, value v4
    # 2+8+4+1+8 and the topic id tagged 1+1+1+16 = 42 bytes, record 1 (length) + 1 + 1 + 1 + 1 + 12 + 1 + 42 + 1
    # = 61 bytes: each member's batch of its 2 partitions is 61 + 2 x 61 = 183 bytes, 366 bytes an interval.
    log = PartitionLog("g", 2, {"t": 4}, False, ClientConfig(), started_ms=1_000, initial_rebalance_delay_ms=3_000)
    assert log.formed_ms == 7_000 and log.first_commit_ms == 12_000 and log.commit_bytes == 366
    assert log.appended(1_000, []) == 0 and log.appended(5_000, []) == log.created_bytes
    assert log.appended(12_000, []) == log.created_bytes + log.formed_bytes
    assert log.appended(22_000, []) == pytest.approx(log.created_bytes + log.formed_bytes + 2 * 366)
    # No commit is appended while the partition has no answering leader (a crash until the load's end).
    assert log.appended(22_000, [(14_000, 19_000)]) == pytest.approx(log.created_bytes + log.formed_bytes + 366)
    assert log.appended(22_000, [(15_000, 16_000), (14_000, 19_000), (8_000, 9_000), (21_000, 30_000)]) == \
        pytest.approx(log.created_bytes + log.formed_bytes + 366 - 366 / 5)
    # Compaction keeps the last GroupMetadata and each member's last batch.
    assert log.compacted(22_000) == log.formed_bytes + 366 and log.compacted(5_000) == log.created_bytes
    # The empty GroupMetadata of "g": key 2+2+1 = 5 bytes, value v3 2+2+4+2+2+8+4 = 24 bytes, record
    # 1+1+1+1+1+5+1+24+1 = 36 bytes.
    assert log.created_bytes == RECORD_BATCH_OVERHEAD + 36
    assert formation_ms(ClientConfig(), 1, 3_000) == 3_000  # a lone member extends nothing
    assert formation_ms(ClientConfig.from_kafka({"group.protocol": "consumer"}), 2, 3_000) == 0
    # The partition's log: every byte appended while its active segment has not rolled; past a segment,
    # the rolled ones are compacted.
    one = Cluster.of((Broker(1),), {0: [1]})
    played = ClusterTimeline(one, ControllerSettings(load_bytes_per_second=1_000), 0, HOUR)
    played.add_group("g", log)
    appended = math.ceil(log.appended(22_000, []))
    assert played.log_bytes(0, 22_000, []) == appended and played.load_ms(0, 22_000, []) == appended
    small = ClusterTimeline(one, ControllerSettings(offsets_topic_segment_bytes=500), 0, HOUR)
    small.add_group("g", log)
    late = log.appended(10**6, [])
    rolled = late // 500 * 500
    assert small.log_bytes(0, 10**6, []) == math.ceil(late - rolled + min(rolled, log.compacted(10**6)))


def test_a_new_leader_loads_what_the_run_wrote_to_the_partition_before_the_move():
    # At 1,000 bytes a second a load takes as many milliseconds as the partition holds bytes: compare each
    # move's load time with the bytes the run's tables hold for the partition then (coordinator_load's sizes).
    r = run(shipped_small("broker-failure", sets={"*": {"groups": 12}}, cluster={
        "brokers": 6, "coordsim.offsets.load.bytes.per.second": 1_000}))
    start, loads = r.scenario.start_ms, {}
    for row in r.directives("COORDINATOR_FAULT"):
        if row.get("load_delay_ms"):
            loads[(coordinator_partition(row["group_id"], 50), row["ts"])] = row["load_delay_ms"]
    assert {t - start for _, t in loads} == {r.generated.actions[0]["fenced_ts"] - start,
                                            r.generated.actions[0]["fenced_ts"] - start + 300_000}
    for (partition, t), load_ms in loads.items():
        groups = [g for g in r.group_ids() if coordinator_partition(g, 50) == partition]
        tables = {name: [row for row in r.rows(name) if row["group_id"] in groups and row.get("write_ts", 0) < t]
                  for name in ("offsets", "group_metadata")}
        tables["offsets"] = [dict(row, repeat_count=1, repeat_interval_ms=None) for row in tables["offsets"]]
        tables.update(responses=[], consumer_group_records=[], group_states=[], members=[])
        written = sum(row["value"] for row in coordinator_load_rows(tables, t) if row["measure"] == "bytes")
        assert abs(load_ms - written) <= 0.03 * written, (partition, t - start, load_ms, written)


def test_every_group_first_learns_its_leader_and_the_brokers_up_then_the_changes_to_either():
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
        # Every group, whoever leads its partition, learns which brokers are up: its lookups go to one of them.
        live = [(f["ts"] - scenario.start_ms, f["brokers"]) for f in faults if f["fault"] == "live_brokers"]
        started = faults[0]["ts"] - scenario.start_ms
        assert faults[1]["seq"] == first + 1 and live == [(started, [1, 2]), (60_000, [2])]
        changes = [f for f in faults if f["fault"] != "live_brokers"]
        if coordinator_partition(group_id, 2) == 0:
            assert [(f["fault"], f.get("coordinator_id")) for f in changes] == [("move", 1), ("crash", None),
                                                                             ("move", 2)]
            fence = BrokerHeartbeats(ControllerSettings(), 0, (1, 2)).fenced_at(1, 60_000)
            assert changes[1]["ts"] == scenario.start_ms + 60_000 and changes[2]["ts"] == scenario.start_ms + fence
        else:
            assert [(f["fault"], f["coordinator_id"]) for f in changes] == [("move", 2)]


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
                              "  broker.heartbeat.interval.ms: 3000\n"
                              "  auto.leader.rebalance.enable: false\n" + MINIMAL, "s.yaml", "s")
    assert scenario.controller == ControllerSettings(broker_session_timeout_ms=18_000,
                                                     broker_heartbeat_interval_ms=3_000,
                                                     auto_leader_rebalance_enable=False)
    with pytest.raises(ScenarioError, match="cluster.auto.leader.rebalance.enable: must be true or false"):
        parse_scenario("cluster:\n  brokers: 3\n  auto.leader.rebalance.enable: 1\n" + MINIMAL, "s.yaml", "s")


@pytest.mark.parametrize("settings, message", [
    ("  leader.imbalance.per.broker.percentage: 10\n",
     "s.yaml:3: cluster.leader.imbalance.per.broker.percentage: a KRaft controller does not read it"),
    ("  broker.heartbeat.interval.ms: 9000\n",
     "s.yaml:3: cluster.broker.heartbeat.interval.ms: broker.heartbeat.interval.ms (9000) must be lower than "
     "broker.session.timeout.ms (9000)"),
    ("  broker.session.timeout.ms: 1500\n",
     "s.yaml:3: cluster.broker.session.timeout.ms: broker.heartbeat.interval.ms (2000) must be lower than "
     "broker.session.timeout.ms (1500)"),
])
def test_controller_settings_kafka_would_not_honour_are_errors(settings, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario("cluster:\n  brokers: 3\n" + settings + MINIMAL, "s.yaml", "s")
    assert str(error.value).startswith(message), str(error.value)
    assert "\n" not in str(error.value)


def test_a_crash_records_the_last_heartbeat_and_the_fence_with_its_action():
    text = ("seed: 7\ncluster:\n  brokers: 3\ntimeline:\n  - {at: 1m, action: broker_down, broker: 2}\n"
            "  - {at: 2m, action: broker_down, broker: 1, restart_after: 3s}\n" + MINIMAL)
    scenario = parse_scenario(text, "s.yaml", "s")
    start, heartbeats = scenario.start_ms, BrokerHeartbeats(ControllerSettings(), 7, (1, 2, 3))
    last = heartbeats.last_heartbeat(2, 60_000)
    actions = generate(scenario).actions
    assert actions[:2] == [
        {"action": "timeline[0] (broker_down, line 5)", "start_ts": start + 60_000, "end_ts": start + last + 9_000,
         "last_heartbeat_ts": start + last, "fenced_ts": start + last + 9_000},
        # Back before its fence: the controller fences the old registration as the broker registers again.
        {"action": "timeline[1] (broker_down, line 6)", "start_ts": start + 120_000, "end_ts": start + 123_000,
         "last_heartbeat_ts": start + heartbeats.last_heartbeat(1, 120_000), "fenced_ts": start + 123_000}]
    # The imbalance check 300 s after broker 2's fence gives broker 1 its partitions back (broker 2's stay
    # away: it never returns): an action of the controller's own, until its loads have ended.
    [election] = actions[2:]
    assert election["action"] == AUTOMATIC_ELECTION and election["start_ts"] == start + last + 9_000 + 300_000
    assert 0 < election["end_ts"] - election["start_ts"] < 1_000
