"""Broker-side settings the coordinator obeys, under Kafka's own config names, with Kafka's defaults and bounds
(GroupCoordinatorConfig at trunk), and the simulator's own settings under `coordsim.` names.

Most settings are integers. The others take their type from their default: a list setting (a tuple here,
given as Kafka's comma-separated string or as a list) and a string setting (compared case-insensitively
where Kafka does, kept lower-case).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from state.consumer_group import SERVER_ASSIGNORS

# Kafka's hard-coded CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a member added by a join must rejoin
# within 5 minutes of being added or it is removed.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

# Kafka's ConsumerGroupMigrationPolicy values.
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


class ConfigError(ValueError):
    """A setting with an unknown name or an invalid value."""


# The consumer-group behaviours coordsim.kafka.version selects.
KAFKA_VERSIONS = ("trunk", "4.0")

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
    # Consumer groups (KIP-848). The session timeout and heartbeat interval are the broker's alone: the
    # client cannot ask for others.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = 2**31 - 1
    # The server-side assignors a member may name; the first is the default.
    group_consumer_assignors: tuple[str, ...] = tuple(SERVER_ASSIGNORS)
    group_consumer_migration_policy: str = "bidirectional"
    # Least time between two target assignment computations (KIP-1263, 4.3+); 0 computes on every change.
    group_consumer_assignment_interval_ms: int = 1_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    # How often a group's regular expressions are resolved again at the latest (an internal Kafka setting,
    # default 10 minutes, at least 10 s), checked at each heartbeat (state.consumer_group.regex).
    group_consumer_regex_refresh_interval_ms: int = 600_000
    # 1: a steady member's heartbeats and auto-commits (state/clients/elision.py) and the lookups of a client whose
    # coordinator's broker is down or has no leader (state/clients/lookup_loop.py) are computed in closed form;
    # 0: simulated one by one. The output is the same either way.
    coordsim_periodic_elision: int = 1
    # Which Kafka's consumer groups behave as: `trunk` (the default, state/consumer_group/) or `4.0` (Kafka
    # 4.0.0 where it differs in ways users see: docs/consumer-protocol.md).
    coordsim_kafka_version: str = "trunk"

    @property
    def kafka_4_0(self) -> bool:
        return self.coordsim_kafka_version == "4.0"

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @staticmethod
    def kafka_name(field_name: str) -> str:
        return field_name.replace("_", ".")

    @classmethod
    def from_kafka(cls, settings: Mapping[str, Any]) -> "CoordinatorConfig":
        """Build from Kafka config names (e.g. {"group.initial.rebalance.delay.ms": 0})."""
        by_kafka_name = {cls.kafka_name(f.name): f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in settings.items():
            if key not in by_kafka_name:
                raise ConfigError(f"unknown coordinator setting {key!r}; known: {', '.join(sorted(by_kafka_name))}")
            setting = by_kafka_name[key]
            values[setting.name] = _parse(key, value, type(setting.default))
        config = cls(**values)
        config.validate()
        return config

    def to_kafka(self) -> dict[str, int | str]:
        """Kafka name -> value, a list setting as Kafka writes it (comma-separated)."""
        return {self.kafka_name(f.name): ",".join(value) if isinstance(value := getattr(self, f.name), tuple) else value
                for f in fields(self)}

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
            (self.coordsim_kafka_version in KAFKA_VERSIONS,
             f"coordsim.kafka.version must be {' or '.join(KAFKA_VERSIONS)}, got {self.coordsim_kafka_version!r}"),
            *self._consumer_group_checks(),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    def _consumer_group_checks(self) -> list[tuple[bool, str]]:
        """Kafka's bounds on the group.consumer.* settings: each at least 1 (intervals of the assignment
        at least 0), each default within its min and max, the heartbeat interval below the session timeout."""
        checks = [(getattr(self, name) >= 1, f"{self.kafka_name(name)} must be >= 1") for name in (
            "group_consumer_session_timeout_ms", "group_consumer_min_session_timeout_ms",
            "group_consumer_max_session_timeout_ms", "group_consumer_heartbeat_interval_ms",
            "group_consumer_min_heartbeat_interval_ms", "group_consumer_max_heartbeat_interval_ms",
            "group_consumer_max_size")]
        checks += [(getattr(self, name) >= 0, f"{self.kafka_name(name)} must be >= 0") for name in (
            "group_consumer_assignment_interval_ms", "group_consumer_min_assignment_interval_ms",
            "group_consumer_max_assignment_interval_ms")]
        for setting in ("session_timeout_ms", "heartbeat_interval_ms", "assignment_interval_ms"):
            value, low, high = (f"group_consumer_{setting}", f"group_consumer_min_{setting}",
                                f"group_consumer_max_{setting}")
            checks += [
                (getattr(self, high) >= getattr(self, low),
                 f"{self.kafka_name(high)} must be >= {self.kafka_name(low)}"),
                (getattr(self, value) >= getattr(self, low),
                 f"{self.kafka_name(value)} must be >= {self.kafka_name(low)}"),
                (getattr(self, value) <= getattr(self, high),
                 f"{self.kafka_name(value)} must be <= {self.kafka_name(high)}"),
            ]
        assignors = self.group_consumer_assignors
        checks += [
            (self.group_consumer_regex_refresh_interval_ms >= 10_000,
             "group.consumer.regex.refresh.interval.ms must be >= 10000"),
            (self.group_consumer_heartbeat_interval_ms < self.group_consumer_session_timeout_ms,
             "group.consumer.heartbeat.interval.ms must be < group.consumer.session.timeout.ms"),
            (len(assignors) > 0 and len(set(assignors)) == len(assignors),
             "group.consumer.assignors must be a non-empty list without duplicates"),
            (set(assignors) <= set(SERVER_ASSIGNORS),
             f"group.consumer.assignors: the assignors modelled are {', '.join(SERVER_ASSIGNORS)} "
             "(custom assignor classes are not)"),
            (self.group_consumer_migration_policy in MIGRATION_POLICIES,
             f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}"),
        ]
        return checks


def _parse(key: str, value: Any, kind: type) -> Any:
    """A setting's value from a settings file or `--set`, as the type of its default."""
    if kind is tuple:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not all(isinstance(item, str) for item in items):
            raise ConfigError(f"setting {key} must be a comma-separated list of names, got {value!r}")
        return tuple(item.strip() for item in items if item.strip())
    if kind is str:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # YAML reads `4.0` as a number
        if not isinstance(value, str):
            raise ConfigError(f"setting {key} must be a string, got {value!r}")
        return value.strip().lower()  # Kafka validates it case-insensitively
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {key} must be an integer, got {value!r}") from None
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"setting {key} must be an integer, got {value!r}")
    return number
