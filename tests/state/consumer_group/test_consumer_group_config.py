"""The group.consumer.* broker settings of state.config: Kafka's names, defaults and bounds
(GroupCoordinatorConfigTest, trunk)."""

from __future__ import annotations

import pytest

from state.config import ConfigError, CoordinatorConfig


def test_defaults_are_kafkas():
    # GroupCoordinatorConfigTest.testConfigs (defaults of GroupCoordinatorConfig)
    settings = CoordinatorConfig().to_kafka()
    assert {name: value for name, value in settings.items() if name.startswith("group.consumer.")} == {
        "group.consumer.session.timeout.ms": 45000,
        "group.consumer.min.session.timeout.ms": 45000,
        "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.heartbeat.interval.ms": 5000,
        "group.consumer.min.heartbeat.interval.ms": 5000,
        "group.consumer.max.heartbeat.interval.ms": 15000,
        "group.consumer.max.size": 2**31 - 1,
        "group.consumer.assignors": "uniform,range",
        "group.consumer.migration.policy": "bidirectional",
        "group.consumer.assignment.interval.ms": 1000,
        "group.consumer.min.assignment.interval.ms": 0,
        "group.consumer.max.assignment.interval.ms": 15000,
        "group.consumer.regex.refresh.interval.ms": 600000,
    }


def test_list_and_string_settings_round_trip():
    config = CoordinatorConfig.from_kafka({"group.consumer.assignors": "range, uniform",
                                           "group.consumer.migration.policy": "UPGRADE"})
    assert config.group_consumer_assignors == ("range", "uniform")
    assert config.group_consumer_migration_policy == "upgrade"
    assert CoordinatorConfig.from_kafka(config.to_kafka()) == config
    assert CoordinatorConfig.from_kafka({"group.consumer.assignors": ["range"]}).group_consumer_assignors == ("range",)


@pytest.mark.parametrize("settings, message", [
    # GroupCoordinatorConfigTest: CONSUMER_GROUP_REGEX_REFRESH_INTERVAL_MS_CONFIG is atLeast(10 * 1000)
    ({"group.consumer.regex.refresh.interval.ms": 9999}, "group.consumer.regex.refresh.interval.ms must be >= 10000"),
    # GroupCoordinatorConfigTest.testInvalidConfigs, consumer group part
    ({"group.consumer.max.heartbeat.interval.ms": 4000}, "group.consumer.max.heartbeat.interval.ms must be >= "),
    ({"group.consumer.heartbeat.interval.ms": 4000}, "group.consumer.heartbeat.interval.ms must be >= "),
    ({"group.consumer.heartbeat.interval.ms": 16000}, "group.consumer.heartbeat.interval.ms must be <= "),
    ({"group.consumer.max.session.timeout.ms": 40000}, "group.consumer.max.session.timeout.ms must be >= "),
    ({"group.consumer.session.timeout.ms": 40000}, "group.consumer.session.timeout.ms must be >= "),
    ({"group.consumer.session.timeout.ms": 70000}, "group.consumer.session.timeout.ms must be <= "),
    ({"group.consumer.min.session.timeout.ms": 10000, "group.consumer.session.timeout.ms": 10000,
      "group.consumer.heartbeat.interval.ms": 10000, "group.consumer.max.heartbeat.interval.ms": 10000},
     "group.consumer.heartbeat.interval.ms must be < group.consumer.session.timeout.ms"),
    ({"group.consumer.assignment.interval.ms": 20000}, "group.consumer.assignment.interval.ms must be <= "),
    ({"group.consumer.min.assignment.interval.ms": -1}, "group.consumer.min.assignment.interval.ms must be >= 0"),
    ({"group.consumer.max.size": 0}, "group.consumer.max.size must be >= 1"),
    ({"group.consumer.assignors": ""}, "group.consumer.assignors must be a non-empty list"),
    ({"group.consumer.assignors": "range,range"}, "group.consumer.assignors must be a non-empty list"),
    ({"group.consumer.assignors": "org.example.MyAssignor"}, "custom assignor classes are not"),
    ({"group.consumer.migration.policy": "sideways"}, "group.consumer.migration.policy must be one of"),
    ({"group.consumer.assignors": 3}, "must be a comma-separated list"),
    ({"coordsim.kafka.version": "3.9"}, "coordsim.kafka.version must be trunk or 4.0, got '3.9'"),
])
def test_invalid_settings(settings, message):
    with pytest.raises(ConfigError, match=message):
        CoordinatorConfig.from_kafka(settings)


def test_kafka_version_4_0_reads_from_yaml_as_a_number_too():
    assert CoordinatorConfig.from_kafka({"coordsim.kafka.version": 4.0}).kafka_4_0
    assert not CoordinatorConfig().kafka_4_0
