"""ConsumerConfig.checkUnsupportedConfigsPostProcess for the two group protocols (ConsumerConfigTest's
testUnsupportedConfigsWithConsumerGroupProtocol / testRemoteAssignorWithClassicGroupProtocol)."""

from __future__ import annotations

import pytest

from state.config import ConfigError
from state.clients.consumer_group.member_config import MemberConfig, unsupported_config_error


@pytest.mark.parametrize("name, value", [
    ("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor"),
    ("heartbeat.interval.ms", 3000),
    ("session.timeout.ms", 45000),
    ("share.acknowledgement.mode", "implicit"),
    ("share.acquire.mode", "batch_optimized"),
])
def test_unsupported_configs_with_consumer_group_protocol(name, value):
    # ConsumerConfigTest.testUnsupportedConfigsWithConsumerGroupProtocol
    settings = {"group.protocol": "consumer", "group.id": "g", name: value}
    assert unsupported_config_error(settings) == f"{name} cannot be set when group.protocol=CONSUMER"
    with pytest.raises(ConfigError, match=name):
        MemberConfig.from_kafka(settings)


def test_all_offending_settings_are_named_in_kafka_order():
    settings = {"group.protocol": "CONSUMER", "session.timeout.ms": 45000, "partition.assignment.strategy": "x"}
    assert unsupported_config_error(settings) == (
        "partition.assignment.strategy, session.timeout.ms cannot be set when group.protocol=CONSUMER")


def test_blank_values_count_as_unset():
    assert unsupported_config_error({"group.protocol": "consumer", "session.timeout.ms": "  "}) is None
    assert unsupported_config_error({"group.protocol": "consumer", "session.timeout.ms": None}) is None


def test_remote_assignor_with_classic_group_protocol():
    # ConsumerConfigTest.testRemoteAssignorWithClassicGroupProtocol
    assert unsupported_config_error({"group.remote.assignor": "uniform"}) == (
        "group.remote.assignor cannot be set when group.protocol=CLASSIC")
    assert unsupported_config_error({"group.protocol": "classic", "session.timeout.ms": 10}) is None


def test_allowed_consumer_protocol_settings():
    config = MemberConfig.from_kafka({
        "group.protocol": "consumer", "group.id": "g", "group.remote.assignor": "range", "group.instance.id": "i1",
        "client.rack": "", "max.poll.interval.ms": "1000", "retry.backoff.ms": 50, "enable.auto.commit": "false",
    })
    assert config == MemberConfig("g", group_instance_id="i1", client_rack=None, group_remote_assignor="range",
                                  max_poll_interval_ms=1000, retry_backoff_ms=50, enable_auto_commit=False)


@pytest.mark.parametrize("group_id, message", [
    (None, "must provide a valid group.id"),
    ("", "should not be an empty string"),
])
def test_a_member_needs_a_group_id(group_id, message):
    # AsyncKafkaConsumer: InvalidGroupIdException without a group.id (at subscribe) or with an empty one
    settings = {"group.protocol": "consumer"} | ({} if group_id is None else {"group.id": group_id})
    with pytest.raises(ConfigError, match=message):
        MemberConfig.from_kafka(settings)
