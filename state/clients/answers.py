"""The answers a synthetic client gets, typed: what its network layer parses from a response that reached it
(Kafka's client turns the bytes into JoinGroupResponseData, SyncGroupResponseData, ... the same way).

A response travels back as its `responses` row, the form the coordinator wrote it in (a row the run's tables
hold, or one the closed-form work put back on its way: state/clients/elision.py, state/clients/lookup_loop.py).
This module alone reads that form; the client's handlers (state/clients/fleet.py,
state/clients/consumer_group/async_consumer.py) read the typed answer. The request's own context, which
Kafka's response handler keeps from the time it sent the request (the generation a heartbeat or commit was
sent with), comes with the answer as `sent_generation`.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.classic.consumer_protocol import TopicPartition
from state.events import PartitionList


@dataclass(slots=True)
class Answer:
    """What every answer carries: the request it answers (its id, as the correlation id pairs them) and its
    top-level error (NETWORK_EXCEPTION when the connection failed and no broker answered)."""

    api: str
    request_id: str
    error: str


@dataclass(slots=True)
class FindCoordinatorAnswer(Answer):
    coordinator: int | None  # the coordinator epoch the node it names leads (the simulation's node identity)


@dataclass(slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinGroupAnswer(Answer):
    member_id: str
    generation_id: int
    protocol_name: str | None
    leader_id: str
    skip_assignment: bool
    members: tuple[JoinMember, ...]


@dataclass(slots=True)
class SyncGroupAnswer(Answer):
    assignment: tuple[TopicPartition, ...]


@dataclass(slots=True)
class HeartbeatAnswer(Answer):
    sent_generation: int


@dataclass(slots=True)
class OffsetCommitAnswer(Answer):
    sent_generation: int
    partition_errors: tuple[str, ...]  # each partition's error, in the request's order


@dataclass(slots=True)
class OffsetFetchAnswer(Answer):
    offsets: dict[TopicPartition, int]  # the partitions answered without error: their committed offset (-1: none)


@dataclass(slots=True)
class ConsumerGroupHeartbeatAnswer(Answer):
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: tuple[PartitionList, ...] | None  # by topic name; None: nothing new for the member


def parse_answer(row: dict) -> Answer:
    """The typed answer of a response, from the row it travels as."""
    return _PARSERS[row["api"]](row)


def _answer(row: dict) -> Answer:
    """LeaveGroup's: the client only needs to know it was answered."""
    return Answer(row["api"], row["request_id"], row["error"])


def _find_coordinator(row: dict) -> FindCoordinatorAnswer:
    return FindCoordinatorAnswer(row["api"], row["request_id"], row["error"], row.get("coordinator"))


def _join_group(row: dict) -> JoinGroupAnswer:
    members = tuple(JoinMember(m["member_id"], m["group_instance_id"], m["metadata"]) for m in row["members"] or ())
    return JoinGroupAnswer(row["api"], row["request_id"], row["error"], row["member_id"], row["generation_id"],
                           row["protocol_name"], row["leader_id"], bool(row["skip_assignment"]), members)


def _sync_group(row: dict) -> SyncGroupAnswer:
    return SyncGroupAnswer(row["api"], row["request_id"], row["error"], tuple(
        TopicPartition(p["topic"], n) for p in row["assignment"] or () for n in p["partitions"]))


def _heartbeat(row: dict) -> HeartbeatAnswer:
    return HeartbeatAnswer(row["api"], row["request_id"], row["error"], row["generation_id"])


def _offset_commit(row: dict) -> OffsetCommitAnswer:
    return OffsetCommitAnswer(row["api"], row["request_id"], row["error"], row["generation_id"],
                              tuple([result["error"] for result in row["results"] or ()]))


def _offset_fetch(row: dict) -> OffsetFetchAnswer:
    return OffsetFetchAnswer(row["api"], row["request_id"], row["error"], {
        TopicPartition(result["topic"], result["partition"]): result["offset"]
        for result in row["results"] or () if result["error"] == "NONE"})


def _consumer_group_heartbeat(row: dict) -> ConsumerGroupHeartbeatAnswer:
    assignment = row["assignment"]
    return ConsumerGroupHeartbeatAnswer(
        row["api"], row["request_id"], row["error"], row["member_id"], row["generation_id"] or 0,
        row["heartbeat_interval_ms"] or 0,
        None if assignment is None else tuple(PartitionList(p["topic"], tuple(p["partitions"])) for p in assignment))


_PARSERS = {
    "LeaveGroup": _answer,
    "FindCoordinator": _find_coordinator,
    "JoinGroup": _join_group,
    "SyncGroup": _sync_group,
    "Heartbeat": _heartbeat,
    "OffsetCommit": _offset_commit,
    "OffsetFetch": _offset_fetch,
    "ConsumerGroupHeartbeat": _consumer_group_heartbeat,
}
