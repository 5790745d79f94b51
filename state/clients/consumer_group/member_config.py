"""The settings a KIP-848 consumer (`group.protocol=consumer`) runs its membership with, under Kafka's names,
and the check `ConsumerConfig.checkUnsupportedConfigsPostProcess` makes when the consumer is built: a
setting the chosen protocol does not use is an error if the user set it at all (to a non-blank value, even
its default), with Kafka's one-line message.

With group.protocol=consumer the coordinator owns the heartbeat interval, the session timeout and the
assignor, so partition.assignment.strategy, heartbeat.interval.ms and session.timeout.ms are rejected
(and the share-group-only share.acknowledgement.mode / share.acquire.mode); group.remote.assignor names
the server-side assignor instead, and max.poll.interval.ms is also sent as the rebalance timeout. The
classic protocol rejects group.remote.assignor (and the share-group settings) the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from state.config import ConfigError

GROUP_PROTOCOL_CONFIG = "group.protocol"

# ConsumerConfig.CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS / CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS, in its order
# (the message lists the offending settings in this order).
UNSUPPORTED_CONFIGS = {
    "CONSUMER": ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms",
                 "share.acknowledgement.mode", "share.acquire.mode"),
    "CLASSIC": ("group.remote.assignor", "share.acknowledgement.mode", "share.acquire.mode"),
}


def unsupported_config_error(settings: Mapping[str, Any]) -> str | None:
    """The ConfigException's message for the user's settings (as given, not defaulted), or None."""
    protocol = str(settings.get(GROUP_PROTOCOL_CONFIG, "classic")).upper()
    invalid = [name for name in UNSUPPORTED_CONFIGS.get(protocol, ())
               if settings.get(name) is not None and str(settings[name]).strip()]
    if not invalid:
        return None
    return f"{', '.join(invalid)} cannot be set when {GROUP_PROTOCOL_CONFIG}={protocol}"


@dataclass(frozen=True)
class MemberConfig:
    """What ConsumerMembershipManager and ConsumerHeartbeatRequestManager read from ConsumerConfig."""

    group_id: str
    group_instance_id: str | None = None  # set: a static member
    client_rack: str | None = None
    group_remote_assignor: str | None = None  # None: the coordinator picks (its first configured assignor)
    max_poll_interval_ms: int = 300_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    enable_auto_commit: bool = True

    @classmethod
    def from_kafka(cls, settings: Mapping[str, Any]) -> "MemberConfig":
        """From a consumer's settings under Kafka's names; settings this protocol's membership does not read
        are left to others, the ones it rejects raise ConfigError with Kafka's message."""
        error = unsupported_config_error(settings)
        if error is not None:
            raise ConfigError(error)
        if str(settings.get(GROUP_PROTOCOL_CONFIG, "classic")).lower() != "consumer":
            raise ConfigError(f"{GROUP_PROTOCOL_CONFIG} must be consumer for a KIP-848 member")
        group_id = settings.get("group.id")
        if group_id is None:  # AsyncKafkaConsumer.throwIfGroupIdNotDefined, at subscribe()
            raise ConfigError("To use the group management or offset commit APIs, you must provide a valid "
                              "group.id in the consumer configuration.")
        if group_id == "":  # AsyncKafkaConsumer.initializeGroupMetadata, at construction
            raise ConfigError("The configured group.id should not be an empty string or whitespace.")
        rack = settings.get("client.rack") or None  # GroupRebalanceConfig: an empty rack is no rack
        return cls(
            group_id=str(group_id),
            group_instance_id=settings.get("group.instance.id"),
            client_rack=rack,
            group_remote_assignor=settings.get("group.remote.assignor"),
            max_poll_interval_ms=int(settings.get("max.poll.interval.ms", cls.max_poll_interval_ms)),
            retry_backoff_ms=int(settings.get("retry.backoff.ms", cls.retry_backoff_ms)),
            retry_backoff_max_ms=int(settings.get("retry.backoff.max.ms", cls.retry_backoff_max_ms)),
            enable_auto_commit=str(settings.get("enable.auto.commit", cls.enable_auto_commit)).lower() == "true",
        )
