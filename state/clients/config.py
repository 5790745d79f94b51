"""Settings of a synthetic consumer, under the Java consumer's config names, with its defaults, plus the
few simulation knobs (`coordsim.*`) that a real client's behaviour depends on but no config expresses."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from state.config import ConfigError
from state.clients.consumer_group.member_config import unsupported_config_error

# Kafka's assignor class names, as users write them in partition.assignment.strategy.
ASSIGNOR_CLASSES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
MANUAL_COMMIT_MODES = ("sync", "async", "none")
GROUP_PROTOCOLS = ("classic", "consumer")
# KafkaConsumer.close()'s default timeout: how long a close keeps looking for the coordinator to commit and
# leave before it gives up.
CLOSE_TIMEOUT_MS = 30_000
# CommonClientConfigs.RETRY_BACKOFF_JITTER: a backoff is scaled by a factor drawn from [1 - jitter, 1 + jitter].
RETRY_BACKOFF_JITTER = 0.2


@dataclass(frozen=True)
class ClientConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    partition_assignment_strategy: tuple[str, ...] = ("range", "cooperative-sticky")
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    metadata_max_age_ms: int = 300_000
    internal_leave_group_on_close: bool = True
    auto_offset_reset: str = "latest"
    # classic: JoinGroup/SyncGroup/Heartbeat (state/clients/fleet.py); consumer: KIP-848's ConsumerGroupHeartbeat
    # (state/clients/consumer_group/async_consumer.py), the assignment made by the coordinator's group.remote.assignor
    # ("": the coordinator's first configured one).
    group_protocol: str = "classic"
    group_remote_assignor: str = ""
    # Simulation knobs. Half of the round trip is spent on the way to the coordinator, half on the way back.
    coordsim_network_rtt_ms: int = 2
    # Time the leader's assignor takes between the JoinGroup response and its SyncGroup.
    coordsim_assignment_time_ms: int = 0
    # Time between two poll() calls of a healthy application (its per-batch processing time).
    coordsim_poll_interval_ms: int = 100
    # Records per second the application processes from each partition it owns; 0: as fast as they are
    # produced (it is never behind while it polls).
    coordsim_consume_records_per_second: int = 0
    # With enable.auto.commit=false, how the application commits what it processed: commitSync from its poll
    # loop (`sync`), commitAsync (`async`), or never (`none`).
    coordsim_manual_commit: str = "sync"
    # The application's commit cadence: 0 commits after every poll, >0 at the first poll at least that long
    # after its previous commit.
    coordsim_manual_commit_interval_ms: int = 0
    # The application's ConsumerRebalanceListener commits synchronously in onPartitionsRevoked.
    coordsim_commit_on_revoke: bool = True
    # Derived, not settings: half of the round trip each way (the request the lower half). Read on every client
    # step, so computed once.
    request_latency_ms: int = field(init=False, repr=False, compare=False)
    response_latency_ms: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "request_latency_ms", self.coordsim_network_rtt_ms // 2)
        object.__setattr__(self, "response_latency_ms", self.coordsim_network_rtt_ms - self.request_latency_ms)

    @staticmethod
    def kafka_name(field_name: str) -> str:
        return field_name.replace("coordsim_", "coordsim.").replace("_", ".")

    @classmethod
    def from_kafka(cls, settings: Mapping[str, Any] | None) -> "ClientConfig":
        """The configuration of a client's settings under Kafka's names. A fleet's clients share a few
        distinct settings: each is parsed once (the instances are immutable)."""
        try:
            text = json.dumps(settings or {}, sort_keys=True)
        except (TypeError, ValueError):
            return cls._parse(settings)
        return _parsed_config(text)

    @classmethod
    def _parse(cls, settings: Mapping[str, Any] | None) -> "ClientConfig":
        # ConsumerConfig refuses, naming them, the settings the chosen protocol does not use, even at their
        # defaults: checked on the settings as given.
        refused = unsupported_config_error(settings or {})
        if refused is not None:
            raise ConfigError(refused)
        by_name = _fields_by_kafka_name()
        values: dict[str, Any] = {}
        for key, value in (settings or {}).items():
            f = by_name.get(key)
            if f is None:
                raise ConfigError(f"unknown consumer setting {key!r}; known: {', '.join(sorted(by_name))}")
            values[f.name] = _convert(key, f.type, value)
        if "group_protocol" in values:  # Kafka reads group.protocol case-insensitively
            values["group_protocol"] = values["group_protocol"].lower()
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        if self.heartbeat_interval_ms <= 0 or self.heartbeat_interval_ms >= self.session_timeout_ms:
            # The Java client refuses this too: heartbeats must come more often than the session expires.
            raise ConfigError("heartbeat.interval.ms must be > 0 and lower than session.timeout.ms")
        for name in ("max_poll_interval_ms", "auto_commit_interval_ms", "metadata_max_age_ms",
                     "coordsim_poll_interval_ms"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{self.kafka_name(name)} must be > 0")
        for name in ("retry_backoff_ms", "retry_backoff_max_ms", "coordsim_network_rtt_ms", "coordsim_assignment_time_ms",
                     "coordsim_consume_records_per_second", "coordsim_manual_commit_interval_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{self.kafka_name(name)} must be >= 0")
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise ConfigError("auto.offset.reset must be earliest or latest")
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise ConfigError(f"group.protocol must be one of {', '.join(GROUP_PROTOCOLS)}, got {self.group_protocol!r}")
        if self.group_protocol == "consumer" and self.coordsim_network_rtt_ms < 1:
            # The new consumer resends a joining member's heartbeat as soon as an error answer comes back
            # (COORDINATOR_LOAD_IN_PROGRESS from a loading coordinator): it repeats at the network's round trip,
            # and with none at all it would repeat forever within one millisecond.
            raise ConfigError("coordsim.network.rtt.ms must be >= 1 with group.protocol=consumer")
        if self.coordsim_manual_commit not in MANUAL_COMMIT_MODES:
            raise ConfigError(f"coordsim.manual.commit must be one of {', '.join(MANUAL_COMMIT_MODES)}, "
                              f"got {self.coordsim_manual_commit!r}")
        if not self.partition_assignment_strategy:
            raise ConfigError("partition.assignment.strategy needs at least one assignor")

    def retry_backoff(self, attempts: int, jitter_seed: str) -> int:
        """The wait before retry number `attempts` (0 first) as the Java client's ExponentialBackoff computes it
        (KIP-580): retry.backoff.ms doubled per attempt up to retry.backoff.max.ms, times a random factor in
        [0.8, 1.2]. The factor is drawn from `jitter_seed` instead of a random source, so runs repeat."""
        initial = self.retry_backoff_ms
        ceiling = max(self.retry_backoff_max_ms, initial)
        if initial == 0:
            return 0
        exp_max = math.log(ceiling / initial, 2)
        term = initial * 2 ** min(attempts, exp_max)
        draw = int.from_bytes(hashlib.blake2b(jitter_seed.encode(), digest_size=8).digest(), "big") / 2**64
        return int((1 - RETRY_BACKOFF_JITTER + 2 * RETRY_BACKOFF_JITTER * draw) * term)

    @property
    def commits_periodically(self) -> bool:
        """The poll loop commits at a cadence: auto-commit, or an application committing by itself."""
        return self.enable_auto_commit or self.coordsim_manual_commit != "none"

    @property
    def commit_interval_ms(self) -> int:
        """The least time between two commits of the poll loop: a commit is due at the first poll at or after
        the previous commit plus this (1 ms when the application commits after every poll)."""
        if self.enable_auto_commit:
            return self.auto_commit_interval_ms
        return max(1, self.coordsim_manual_commit_interval_ms)

    @property
    def commit_blocks_poll(self) -> bool:
        """commitSync: the application polls again only once its commit is answered."""
        return not self.enable_auto_commit and self.coordsim_manual_commit == "sync"

    @property
    def commits_on_revoke(self) -> bool:
        """Offsets are committed before partitions are given up in a rebalance or a close: auto-commit's
        onJoinPrepare and close, or the application's onPartitionsRevoked."""
        return self.enable_auto_commit or (self.coordsim_manual_commit != "none" and self.coordsim_commit_on_revoke)



@functools.lru_cache(maxsize=256)
def _parsed_config(text: str) -> ClientConfig:
    return ClientConfig._parse(json.loads(text))


@functools.cache
def _fields_by_kafka_name() -> dict:
    return {ClientConfig.kafka_name(f.name): f for f in fields(ClientConfig) if f.init}


def _convert(key: str, kind: Any, value: Any) -> Any:
    kind = str(kind)
    if "tuple" in kind:
        items = value.split(",") if isinstance(value, str) else value
        try:
            names = tuple(ASSIGNOR_CLASSES.get(str(v).strip(), str(v).strip()) for v in items)
        except TypeError:
            raise ConfigError(f"{key} must be a list of assignor names") from None
        unknown = [n for n in names if n not in ASSIGNOR_NAMES]
        if unknown:
            raise ConfigError(f"{key}: unknown assignor {unknown[0]!r}; known: {', '.join(ASSIGNOR_NAMES)}")
        return names
    if kind == "str":
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}")
        return value
    if "bool" in kind:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    return number
