"""Broker settings: conf/coordinator.yaml holds Kafka's defaults; --conf and --set layer over it."""

from __future__ import annotations

import pytest

from tableio import coordinator_settings as settings
from tableio.coordinator_settings import load_config, read_conf_file
from state.config import ConfigError, CoordinatorConfig


def test_defaults_file_is_kafkas_defaults():
    assert settings.DEFAULTS_FILE.is_file()
    assert read_conf_file(settings.DEFAULTS_FILE) == CoordinatorConfig().to_kafka()
    assert load_config() == CoordinatorConfig()


def test_missing_defaults_file_falls_back_to_built_in_defaults(monkeypatch, tmp_path):
    monkeypatch.setattr(settings, "DEFAULTS_FILE", tmp_path / "absent.yaml")
    assert load_config() == CoordinatorConfig()


def test_conf_file_then_overrides(tmp_path):
    conf = tmp_path / "broker.yaml"
    conf.write_text("coordinator:\n  group.initial.rebalance.delay.ms: 0\n  offsets.topic.num.partitions: 10\n")
    config = load_config(conf, ["offsets.topic.num.partitions=7"])
    assert config.group_initial_rebalance_delay_ms == 0
    assert config.offsets_topic_num_partitions == 7
    assert config.group_min_session_timeout_ms == 6_000


@pytest.mark.parametrize("text, overrides, message", [
    ("coordinator:\n  group.initial.rebalance.delay: 0\n", [], "unknown coordinator setting 'group.initial"),
    ("group.initial.rebalance.delay.ms: 0\n", [], "broker settings go under 'coordinator:'"),
    ("coordinator: [1, 2]\n", [], "must be a mapping"),
    ("coordinator: {a: [\n", [], "not valid YAML"),
    ("", ["group.max.size"], "--set expects name=value"),
    ("", ["group.max.size=lots"], "setting group.max.size must be an integer"),
    ("", ["group.min.session.timeout.ms=10", "group.max.session.timeout.ms=5"], "must be >= group.min"),
])
def test_bad_settings_are_config_errors(tmp_path, text, overrides, message):
    conf = tmp_path / "broker.yaml"
    conf.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        load_config(conf, overrides)


def test_missing_conf_file(tmp_path):
    with pytest.raises(ConfigError, match="absent.yaml: cannot read"):
        load_config(tmp_path / "absent.yaml")
