"""The scenario format: what it accepts, and errors that name the file, line and key path."""

from __future__ import annotations

import textwrap

import pytest

from simulations import scenarios
from simulations.scenarios import ScenarioError, parse_scenario
from simulations.scenarios.schema import ALL, Crash, Distribution, Pause, RollingRestart, Share, merged_config
from tests.simulations.scenarios.helpers import MINIMAL



def parse(text: str):
    return parse_scenario(textwrap.dedent(text), "s.yaml", "s")


def test_groups_are_staggered_over_the_longer_of_the_heartbeat_and_commit_intervals_by_default():
    for config, stagger in (("{}", 5_000), ("{heartbeat.interval.ms: 8000}", 8_000),
                            ("{enable.auto.commit: false, coordsim.manual.commit.interval.ms: 0}", 3_000)):
        text = MINIMAL.replace("members: 3", f"members: 3\n    config: {config}")
        assert text != MINIMAL
        assert parse(text).group_sets[0].stagger_ms == stagger


def test_a_minimal_scenario_and_its_defaults():
    scenario = parse(MINIMAL)
    assert scenario.name == "s" and scenario.seed == 0 and scenario.broker == {} and scenario.timeline == ()
    assert scenario.start_ms == 1_767_225_600_000  # 2026-01-01T00:00:00Z
    assert scenario.until_ms == scenario.start_ms + 600_000
    [group_set] = scenario.group_sets
    assert (group_set.groups, group_set.members, group_set.static, group_set.config) == (1, 3, False, {})
    assert group_set.topics[0].records_per_second == 100.0 and group_set.stagger_ms == 5_000


def test_a_full_scenario():
    scenario = parse(MINIMAL.replace("duration: 10m", """\
name: full
start: 2026-03-02T09:00:00+01:00
duration: 1h30m
seed: storm
broker:
  group.initial.rebalance.delay.ms: 0""") + """\
    groups: 12
    assignors: [cooperative-sticky, range]
    membership: static
    config: {session.timeout.ms: 60000, enable.auto.commit: false}
    stagger: 250ms
timeline:
  - {at: 1m, action: rolling_restart, downtime: 15s, gap: 1m, batch: 2, jitter: 2s, mode: crash, members: 50%}
  - {action: crash, groups: 3, members: 2, restart_after: {distribution: uniform, min: 10s, max: 1m}}
  - {action: slow_poll, duration: {distribution: exponential, mean: 20s, max: 2m}, seed: 9}
  - {action: idle, duration: 5m}
  - {action: partition_increase, partitions: 12}
""")
    assert (scenario.name, scenario.seed, scenario.duration_ms) == ("full", "storm", 5_400_000)
    assert scenario.start_ms == 1_772_438_400_000
    assert scenario.broker == {"group.initial.rebalance.delay.ms": 0}
    group_set = scenario.group_sets[0]
    assert group_set.static and group_set.groups == 12 and group_set.stagger_ms == 250
    assert group_set.config == {"session.timeout.ms": 60000, "enable.auto.commit": False,
                                "partition.assignment.strategy": ["cooperative-sticky", "range"]}
    restart, crash, slow, idle, increase = scenario.timeline
    assert restart == RollingRestart("rolling_restart", 60_000, ("orders",), ALL, Share(fraction=0.5), None,
                                     "timeline[0]", 18, 15_000, 60_000, 2, 2_000, True)
    assert isinstance(crash, Crash) and crash.at_ms is None and crash.groups == Share(count=3)
    assert crash.restart_after == Distribution("uniform", 10_000, 60_000)
    assert isinstance(slow, Pause) and slow.scope == "poll" and slow.seed == "9"
    assert slow.duration == Distribution("exponential", 20_000, 120_000)
    assert idle.duration_ms == 300_000 and increase.topic == "orders" and increase.partitions == 12


@pytest.mark.parametrize("text, duration_ms", [("500ms", 500), ("30s", 30_000), ("1h30m", 5_400_000),
                                               ("7d 2h", 612_000_000), ("1.5s", 1_500), (250, 250)])
def test_durations(text, duration_ms):
    assert parse(MINIMAL.replace("10m", str(text))).duration_ms == duration_ms


def test_shares_round_up_and_never_exceed_the_whole():
    assert Share(fraction=0.1).of(6) == 1 and Share(fraction=0.5).of(5) == 3 and Share(fraction=1.0).of(7) == 7
    assert ALL.of(4) == 4 and Share(count=2).of(9) == 2


def test_every_shipped_scenario_loads_and_generates_without_notes():
    assert {"default", "rolling-restart-dynamic-eager", "rolling-restart-static", "rolling-restart-cooperative",
            "crash", "gc-pause", "slow-consumer", "flapping", "scale-out", "partition-increase",
            "offsets-expiry", "rolling-restart-consumer-protocol",
            "protocol-comparison", "upgrade-to-consumer-protocol"} <= set(scenarios.shipped())
    for name, path in scenarios.shipped().items():
        generated = scenarios.generate(scenarios.load_scenario(path))
        assert generated.rows and generated.notes == [], name


def test_yaml_anchors_and_merge_keys_work():
    scenario = parse("""\
        duration: 1m
        group_sets:
          - &base {name: a, members: 2, topics: [{name: t, partitions: 2}]}
          - {<<: *base, name: b, members: 4}
        """)
    assert [(s.name, s.members) for s in scenario.group_sets] == [("a", 2), ("b", 4)]


@pytest.mark.parametrize("text, message", [
    ("", "s.yaml:1: the scenario is empty"),
    ("- 1\n", "s.yaml:1: a scenario is a mapping"),
    ("duration: [1\n", "s.yaml:2: not valid YAML"),
    (MINIMAL.replace("duration: 10m\n", ""), "s.yaml:1: missing required key 'duration' (the scenario)"),
    (MINIMAL.replace("duration", "duraton"), "s.yaml:1: duraton: unknown key 'duraton' in the scenario "
                                             "(did you mean 'duration'?)"),
    (MINIMAL.replace("10m", "ten minutes"), "s.yaml:1: duration: must be a duration such as 500ms"),
    (MINIMAL.replace("10m", "0s"), "s.yaml:1: duration: must be > 0"),
    ("start: 2026-01-01T00:00:00\n" + MINIMAL, "s.yaml:1: start: has no time zone"),
    ("start: tomorrow\n" + MINIMAL, "s.yaml:1: start: must be an ISO-8601 time with a zone"),
    ("seed: [1]\n" + MINIMAL, "s.yaml:1: seed: must be an integer or text"),
    (MINIMAL.replace("{name: orders,", "{name: " + "o" * 250 + ","),
     "s.yaml:6: group_sets[0].topics[0].name: is 250 characters long; Kafka's topic names have at most 249"),
    (MINIMAL.replace("members: 3", "members: three"), "s.yaml:4: group_sets[0].members: must be an integer, "
                                                     "got str 'three'"),
    (MINIMAL.replace("members: 3", "members: 0"), "s.yaml:4: group_sets[0].members: must be >= 1, got 0"),
    (MINIMAL.replace("partitions: 6", "partitions: -1"), "s.yaml:6: group_sets[0].topics[0].partitions: must be >= 1"),
    (MINIMAL.replace("partitions: 6}", "partitions: 6, records_per_second: fast}"),
     "s.yaml:6: group_sets[0].topics[0].records_per_second: must be a number"),
    (MINIMAL.replace("name: orders\n", "name: orders/eu\n"), "s.yaml:3: group_sets[0].name: 'orders/eu' is not "
                                                            "allowed here"),
    (MINIMAL + "    membership: sticky\n", "s.yaml:7: group_sets[0].membership: must be one of dynamic, static"),
    (MINIMAL + "    memebrs: 3\n", "s.yaml:7: group_sets[0].memebrs: unknown key 'memebrs' in a group set "
                                   "(did you mean 'members'?)"),
    (MINIMAL + "    members: 4\n", "s.yaml:7: group_sets[0]: duplicate key 'members'"),
    (MINIMAL + "    config:\n      session.timeout.ms: 10000\n      heartbeat.interval.ms: 20000\n",
     "s.yaml:7: group_sets[0].config: heartbeat.interval.ms must be > 0 and lower than session.timeout.ms"),
    (MINIMAL + "    config:\n      group.protocol: consumer\n      session.timeout.ms: 10000\n",
     "s.yaml:7: group_sets[0].config: session.timeout.ms cannot be set when group.protocol=CONSUMER"),
    (MINIMAL + "    config:\n      coordsim.consume.records.per.second: -5\n",
     "s.yaml:8: group_sets[0].config.coordsim.consume.records.per.second: coordsim.consume.records.per.second "
     "must be >= 0"),
    (MINIMAL + "    config:\n      coordsim.consume.records.per.second: fast\n",
     "s.yaml:8: group_sets[0].config.coordsim.consume.records.per.second: coordsim.consume.records.per.second "
     "must be an integer"),
    (MINIMAL + "    config:\n      coordsim.manual.commit: later\n",
     "s.yaml:8: group_sets[0].config.coordsim.manual.commit: coordsim.manual.commit must be one of sync, async, "
     "none, got 'later'"),
    (MINIMAL + "    config:\n      coordsim.manual.commit.interval.ms: -1\n",
     "s.yaml:8: group_sets[0].config.coordsim.manual.commit.interval.ms: coordsim.manual.commit.interval.ms "
     "must be >= 0"),
    (MINIMAL + "    config:\n      coordsim.commit.on.revoke: sometimes\n",
     "s.yaml:8: group_sets[0].config.coordsim.commit.on.revoke: coordsim.commit.on.revoke must be true or false, "
     "got 'sometimes'"),
    (MINIMAL + "    config:\n      session.timeout: 10000\n",
     "s.yaml:8: group_sets[0].config.session.timeout: unknown consumer setting 'session.timeout'"),
    # Derived from coordsim.network.rtt.ms, not settings of their own.
    (MINIMAL + "    config:\n      request.latency.ms: 5\n",
     "s.yaml:8: group_sets[0].config.request.latency.ms: unknown consumer setting 'request.latency.ms'"),
    (MINIMAL + "    assignors: [range, fancy]\n", "s.yaml:7: group_sets[0].assignors: partition.assignment.strategy: "
                                                  "unknown assignor 'fancy'"),
    (MINIMAL + "    assignors: [range]\n    config: {partition.assignment.strategy: range}\n",
     "s.yaml:7: group_sets[0].assignors: give the assignors either here or as config.partition.assignment."
     "strategy, not both"),
    (MINIMAL + "  - name: orders\n    members: 1\n    topics: [{name: t, partitions: 1}]\n",
     "s.yaml:7: group_sets[1].name: group set name 'orders' is used twice"),
    ("broker:\n  group.initial.rebalance.delay: 0\n" + MINIMAL,
     "s.yaml:2: broker.group.initial.rebalance.delay: unknown coordinator setting"),
    ("broker:\n  group.min.session.timeout.ms: 10\n  group.max.session.timeout.ms: 5\n" + MINIMAL,
     "s.yaml:3: broker.group.max.session.timeout.ms: group.max.session.timeout.ms must be >= group.min"),
    (MINIMAL + "timeline:\n  - {action: restart}\n", "s.yaml:8: timeline[0].action: must be one of "
                                                     "rolling_restart, crash"),
    (MINIMAL + "timeline:\n  - {action: rolling_restart}\n", "s.yaml:8: timeline[0]: missing required key "
                                                             "'downtime' (a timeline action)"),
    (MINIMAL + "timeline:\n  - {action: rolling_restart, downtime: 1s, gap: 1s, batchsize: 2}\n",
     "s.yaml:8: timeline[0].batchsize: unknown key 'batchsize' in a timeline action (did you mean 'batch'?)"),
    (MINIMAL + "timeline:\n  - {action: crash, target: payments}\n",
     "s.yaml:8: timeline[0].target: no group set named 'payments'; the scenario has orders"),
    (MINIMAL + "timeline:\n  - {action: crash, at: 10m}\n", "s.yaml:8: timeline[0].at: is at or after the end "
                                                            "of the run"),
    (MINIMAL + "timeline:\n  - {action: crash, members: 150%}\n", "s.yaml:8: timeline[0].members: must be a "
                                                                  "count (2), a percentage ('25%') or all"),
    (MINIMAL + "timeline:\n  - {action: scale_out, members: all}\n", "s.yaml:8: timeline[0].members: must be a "
                                                                     "count (2), a percentage ('25%'), got"),
    (MINIMAL + "timeline:\n  - action: pause\n    duration: {distribution: normal, mean: 1s}\n",
     "s.yaml:9: timeline[0].duration.distribution: must be one of fixed, uniform, exponential"),
    (MINIMAL + "timeline:\n  - action: pause\n    duration: {distribution: uniform, min: 1m, max: 1s}\n",
     "s.yaml:9: timeline[0].duration.max: must be >= min (60000 ms), got 1000 ms"),
    (MINIMAL + "timeline:\n  - {action: partition_increase, members: 1, partitions: 9}\n",
     "s.yaml:8: timeline[0].members: partition_increase applies to whole groups: remove 'members'"),
    (MINIMAL + "timeline:\n  - {action: partition_increase, topic: payments, partitions: 9}\n",
     "s.yaml:8: timeline[0].topic: group set 'orders' has no topic 'payments'"),
    (MINIMAL + "timeline:\n  - {action: idle, duration: 1m, target: orders}\n",
     "s.yaml:8: timeline[0].target: an idle period applies to the whole scenario: remove it"),
    # A restart's config: the group set's keys and checks, merged over the set's config.
    (MINIMAL + "timeline:\n  - action: rolling_restart\n    downtime: 1s\n    config:\n      group.protocol: kafka\n",
     "s.yaml:11: timeline[0].config.group.protocol: group.protocol must be one of classic, consumer"),
    (MINIMAL + "timeline:\n  - action: rolling_restart\n    downtime: 1s\n    config:\n      sesion.timeout.ms: 1\n",
     "s.yaml:11: timeline[0].config.sesion.timeout.ms: unknown consumer setting 'sesion.timeout.ms'"),
    (MINIMAL + "timeline:\n  - {action: rolling_restart, downtime: 1s, config: [group.protocol]}\n",
     "s.yaml:8: timeline[0].config: consumer settings must be a mapping"),
    (MINIMAL + "timeline:\n  - {action: rolling_restart, downtime: 1s, config: {group.protocol: {a: 1}}}\n",
     "s.yaml:8: timeline[0].config.group.protocol: must be a value, got"),
    (MINIMAL + "    config: {heartbeat.interval.ms: 20000}\ntimeline:\n"
               "  - {action: rolling_restart, downtime: 1s, config: {session.timeout.ms: 15000}}\n",
     "s.yaml:9: timeline[0].config: heartbeat.interval.ms must be > 0 and lower than session.timeout.ms"),
    (MINIMAL + "    assignors: [cooperative-sticky]\ntimeline:\n"
               "  - {action: rolling_restart, downtime: 1s, config: {group.protocol: consumer}}\n",
     "s.yaml:9: timeline[0].config: partition.assignment.strategy cannot be set when group.protocol=CONSUMER "
     "(over the config of group set 'orders': drop its partition.assignment.strategy with "
     "`partition.assignment.strategy: null`)"),
    (MINIMAL + "timeline:\n  - {action: crash, config: {group.protocol: consumer}}\n",
     "s.yaml:8: timeline[0].config: a crashed member without restart_after never comes back"),
    (MINIMAL + "timeline:\n  - {action: pause, duration: 1s, config: {group.protocol: consumer}}\n",
     "s.yaml:8: timeline[0].config: unknown key 'config' in a timeline action"),
])
def test_errors_name_the_line_and_the_key_path(text, message):
    with pytest.raises(ScenarioError) as error:
        parse(text)
    assert str(error.value).startswith(message), str(error.value)


def test_a_restart_may_bring_clients_back_with_other_settings_over_their_sets():
    scenario = parse(MINIMAL + """\
    assignors: [range]
    config: {session.timeout.ms: 30000}
  - {name: payments, members: 2, topics: [{name: payments, partitions: 2}], config: {session.timeout.ms: 30000}}
timeline:
  - at: 1m
    action: rolling_restart
    downtime: 5s
    config:
      group.protocol: consumer
      group.remote.assignor: range
      partition.assignment.strategy: null
      session.timeout.ms: null
  - {action: crash, target: payments, restart_after: 10s, config: {max.poll.interval.ms: 60000}}
  - {action: crash, restart_after: 10s}
""")
    restart, crash, plain = scenario.timeline
    # The settings as given (null: drop the set's); the generator merges them over each member's set.
    assert restart.config == {"group.protocol": "consumer", "group.remote.assignor": "range",
                              "partition.assignment.strategy": None, "session.timeout.ms": None}
    assert isinstance(crash, Crash) and crash.config == {"max.poll.interval.ms": 60000}
    assert plain.config is None
    # Checked over every target set: payments sets session.timeout.ms, which the consumer protocol refuses.
    with pytest.raises(ScenarioError, match=r"^s\.yaml:12: timeline\[0\]\.config: session\.timeout\.ms cannot be "
                                            r"set when group\.protocol=CONSUMER \(over the config of group set "
                                            r"'payments'"):
        parse(MINIMAL + "  - {name: payments, members: 2, topics: [{name: p, partitions: 2}], "
                        "config: {session.timeout.ms: 30000}}\ntimeline:\n  - at: 1m\n    action: rolling_restart\n"
                        "    downtime: 5s\n    config: {group.protocol: consumer}\n")
    assert merged_config({"a": 1, "b": 2}, {"b": None, "c": 3}) == {"a": 1, "c": 3}


def test_errors_found_while_generating_name_the_action():
    shrink = parse(MINIMAL + "timeline:\n  - {action: partition_increase, partitions: 6}\n")
    with pytest.raises(ScenarioError, match=r"^s\.yaml:8: timeline\[0\]: partitions: topic 'orders' of group "
                                            r"orders-0 has 6 partitions by then"):
        scenarios.generate(shrink)
    late = parse(MINIMAL.replace("10m", "9m") + "timeline:\n  - {action: idle, duration: 9m}\n  - {action: crash}\n")
    with pytest.raises(ScenarioError, match=r"^s\.yaml:9: timeline\[1\]: starts at 540000 ms \(when the previous "
                                            r"action ends\), at or after the end of the run"):
        scenarios.generate(late)


def test_settings_that_are_only_valid_together_are_accepted():
    scenario = parse("broker:\n  group.min.session.timeout.ms: 100\n  group.max.session.timeout.ms: 5000\n" + MINIMAL
                     + "    config:\n      session.timeout.ms: 2000\n      heartbeat.interval.ms: 500\n")
    assert scenario.broker["group.max.session.timeout.ms"] == 5000
    assert scenario.group_sets[0].config == {"session.timeout.ms": 2000, "heartbeat.interval.ms": 500}


def test_the_scenarios_in_docs_scenarios_md_are_valid():
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text()
    examples = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S) if "group_sets:" in block]
    assert len(examples) == 2
    for example in examples:
        assert scenarios.generate(parse_scenario(example, "docs/scenarios.md")).notes == []


def test_a_group_set_subscribing_with_a_topic_pattern():
    scenario = parse(MINIMAL.replace("members: 3", "members: 3\n    topic_pattern: 'ord.*'\n"
                                                    "    config: {group.protocol: consumer}"))
    assert scenario.group_sets[0].topic_pattern == "ord.*"
    assert parse(MINIMAL).group_sets[0].topic_pattern is None


@pytest.mark.parametrize("pattern, config, message", [
    ("'ord('", "{group.protocol: consumer}", r"s\.yaml:5: group_sets\[0\]\.topic_pattern: SubscribedTopicRegex "),
    ("'(?=o)o'", "{group.protocol: consumer}", "lookahead"),
    ("'ord.*'", "{}", r"topic_pattern: needs config group\.protocol: consumer"),
])
def test_a_bad_topic_pattern_is_one_line(pattern, config, message):
    text = MINIMAL.replace("members: 3", f"members: 3\n    topic_pattern: {pattern}\n    config: {config}")
    with pytest.raises(ScenarioError, match=message):
        parse(text)
