"""Broker-side settings the coordinator obeys, under Kafka's own config names, with Kafka's defaults, and the
simulator's own settings under `coordsim.` names."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

# Kafka's hard-coded CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a member added by a join must rejoin
# within 5 minutes of being added or it is removed.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


class ConfigError(ValueError):
    """A setting with an unknown name or an invalid value."""


@dataclass(frozen=True)
class CoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2**31 - 1
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    # 1: a steady member's heartbeats and auto-commits are computed in closed form (state/periodic.py);
    # 0: simulated one by one. The output is the same either way.
    coordsim_periodic_elision: int = 1

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @staticmethod
    def kafka_name(field_name: str) -> str:
        return field_name.replace("_", ".")

    @classmethod
    def from_kafka(cls, settings: Mapping[str, Any]) -> "CoordinatorConfig":
        """Build from Kafka config names (e.g. {"group.initial.rebalance.delay.ms": 0})."""
        by_kafka_name = {cls.kafka_name(f.name): f.name for f in fields(cls)}
        values: dict[str, int] = {}
        for key, value in settings.items():
            if key not in by_kafka_name:
                raise ConfigError(f"unknown coordinator setting {key!r}; known: {', '.join(sorted(by_kafka_name))}")
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise ConfigError(f"setting {key} must be an integer, got {value!r}") from None
            if isinstance(value, float) and not value.is_integer():
                raise ConfigError(f"setting {key} must be an integer, got {value!r}")
            values[by_kafka_name[key]] = number
        config = cls(**values)
        config.validate()
        return config

    def to_kafka(self) -> dict[str, int]:
        return {self.kafka_name(f.name): getattr(self, f.name) for f in fields(self)}

    def validate(self) -> None:
        checks = [
            (self.group_min_session_timeout_ms >= 0, "group.min.session.timeout.ms must be >= 0"),
            (self.group_max_session_timeout_ms >= self.group_min_session_timeout_ms,
             "group.max.session.timeout.ms must be >= group.min.session.timeout.ms"),
            (self.group_initial_rebalance_delay_ms >= 0, "group.initial.rebalance.delay.ms must be >= 0"),
            (self.group_max_size >= 1, "group.max.size must be >= 1"),
            (self.offsets_topic_num_partitions >= 1, "offsets.topic.num.partitions must be >= 1"),
            (self.offsets_retention_minutes >= 1, "offsets.retention.minutes must be >= 1"),
            (self.offsets_retention_check_interval_ms >= 1, "offsets.retention.check.interval.ms must be >= 1"),
            (self.offset_metadata_max_bytes >= 0, "offset.metadata.max.bytes must be >= 0"),
            (self.coordsim_periodic_elision in (0, 1), "coordsim.periodic.elision must be 0 or 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
