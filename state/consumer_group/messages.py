"""ConsumerGroupHeartbeat (API key 68) as the coordinator and the client exchange it: the request and
response fields of Kafka's `ConsumerGroupHeartbeatRequest.json` / `ConsumerGroupHeartbeatResponse.json`
(v0-v1, flexible) and the member epochs with a meaning of their own. The broker side
(`state.consumer_group.heartbeat`) answers these requests; the client side (`state.clients.consumer_group.member`)
builds them and reads the responses: neither reaches into the other.

`None` in a request field means what Kafka's null means there: "unchanged since my last heartbeat" (a full
request carries every field, a partial one only what changed). Partitions travel by topic id, as on the
wire: `(topic id, ascending partitions)` pairs in topic id order.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.consumer_group.topic_id import TopicId

API_KEY = 68
VERSIONS = (0, 1)  # v1 (KIP-1082): the client generates its member id; a blank one is INVALID_REQUEST

JOIN_EPOCH = 0  # a member joining (or rejoining after being fenced)
LEAVE_EPOCH = -1  # leaving the group for good
STATIC_LEAVE_EPOCH = -2  # a static member leaving for now: it keeps its partitions until its session ends
UNCHANGED_REBALANCE_TIMEOUT = -1

# A topic's partitions in a request or response: (topic id, partitions ascending), topics in TopicId order.
TopicPartitions = tuple[tuple[TopicId, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = UNCHANGED_REBALANCE_TIMEOUT
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+; "" clears the member's regex
    server_assignor: str | None = None
    topic_partitions: TopicPartitions | None = None  # the partitions the member owns now
    api_version: int = VERSIONS[-1]


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    error: str = "NONE"  # Kafka's error name, as every response row carries it
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: TopicPartitions | None = None  # None: nothing new to tell the member
    throttle_time_ms: int = 0
