"""The input contract: typed events and the validation that turns one raw row (a dict decoded from JSONL or
Parquet) into an event or an `EventError` naming what is wrong.

Pure: no I/O. Both engines validate through `parse_event`, so a row is rejected for the same reason
whichever engine reads it. docs/events.md documents the same contract for users.

Events are values: equal and hashed by their fields, and never changed once built (`dataclasses.replace`
makes a changed copy). They are not `frozen=True`: a frozen dataclass sets each field through
`object.__setattr__`, which made building an event about ten times dearer, and the synthetic clients build
one per request (about a tenth of a storm's CPU).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as _dt
import difflib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from state import consumer_protocol
from state.client_config import ClientConfig
from state.config import ConfigError
from state.consumer_group.regex import InvalidRegularExpression, compile_regex
from state.quiet_run import grown, request_time

# The newest request versions the simulator models (Kafka 4.x's classic group APIs).
NEWEST_API_VERSION = {
    "JOIN_GROUP": 9,
    "SYNC_GROUP": 5,
    "HEARTBEAT": 4,
    "LEAVE_GROUP": 5,
    "OFFSET_COMMIT": 9,
    "OFFSET_FETCH": 9,
    "FIND_COORDINATOR": 6,
    "CONSUMER_GROUP_HEARTBEAT": 1,
}

API_NAMES = {
    "JOIN_GROUP": "JoinGroup",
    "SYNC_GROUP": "SyncGroup",
    "HEARTBEAT": "Heartbeat",
    "LEAVE_GROUP": "LeaveGroup",
    "OFFSET_COMMIT": "OffsetCommit",
    "OFFSET_FETCH": "OffsetFetch",
    "FIND_COORDINATOR": "FindCoordinator",
    "CONSUMER_GROUP_HEARTBEAT": "ConsumerGroupHeartbeat",
}

FAULT_KINDS = ("write_failure", "move", "crash", "live_brokers")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class EventError(ValueError):
    """A row that does not satisfy the input contract; the message is the reject reason."""


@dataclass(slots=True, unsafe_hash=True)
class Protocol:
    name: str
    metadata: bytes
    # The consumer-protocol topics, parsed once; None when the metadata is not a consumer Subscription.
    topics: tuple[str, ...] | None = None


@dataclass(slots=True, unsafe_hash=True)
class PartitionList:
    topic: str
    partitions: tuple[int, ...]


def group_partitions(partitions) -> tuple[PartitionList, ...]:
    """Flat (topic, partition) pairs as PartitionLists, one per topic in first-appearance order."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return tuple(PartitionList(t, tuple(ps)) for t, ps in by_topic.items())


@dataclass(slots=True, unsafe_hash=True)
class MemberAssignment:
    member_id: str
    assignment: bytes
    partitions: tuple[PartitionList, ...] | None = None  # decoded consumer Assignment, None if opaque


@dataclass(slots=True, unsafe_hash=True)
class LeaveIdentity:
    member_id: str
    group_instance_id: str | None
    reason: str | None


@dataclass(slots=True, unsafe_hash=True)
class CommitPartition:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int  # v1 only; -1 = use the coordinator's clock
    # A repeated commit's offsets rule: repeat k commits the offset grown by what `rate` records/s from
    # `origin` produced since the first (state.quiet_run.grown). None: the same offset every time.
    records_per_second: float | None = None
    rate_origin_ts: int | None = None


@dataclass(slots=True, unsafe_hash=True)
class CapturedAnswer:
    """What a captured broker answered to a replayed request, as much as the runtime's id mapping needs
    (state/captured_ids.py). Never read from an input row: the engines attach it from a captured-responses
    file (docs/captures.md). `error` is None when the capture holds no response."""

    connection: str | None
    error: str | None
    member_id: str | None
    generation_id: int | None


@dataclass(slots=True, unsafe_hash=True)
class Event:
    """Fields every event carries. `seq` orders events of equal `ts`; `line` is the row's position in its
    source and breaks the remaining ties, so the order is total and independent of how rows are batched."""

    ts: int
    group_id: str
    type: str
    seq: int
    source: str = ""
    line: int = 0
    request_id: str | None = None
    client_id: str = ""
    api_version: int = 0
    # Set on requests a synthetic client made: the client that gets the response.
    origin: str | None = None
    # Set on replayed captured requests: the captured broker's answer, whose ids the runtime maps to its own.
    captured: CapturedAnswer | None = None
    # Set on periodic requests (a synthetic client's heartbeats and auto-commits, an input row's repeats):
    # the chain whose quiet requests are written as one run (state/periodic.py).
    run: str | None = None
    # Set on the events of a sweep: the variant whose groups they belong to (state/variants.py).
    variant: str | None = None

    @property
    def sort_key(self) -> tuple[int, int, str, int]:
        return (self.ts, self.seq, self.source, self.line)


@dataclass(slots=True, unsafe_hash=True)
class JoinGroup(Event):
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str = ""
    protocols: tuple[Protocol, ...] = ()
    session_timeout_ms: int = 0
    rebalance_timeout_ms: int = 0
    client_host: str = ""
    reason: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class SyncGroup(Event):
    member_id: str = ""
    group_instance_id: str | None = None
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[MemberAssignment, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class Heartbeat(Event):
    member_id: str = ""
    group_instance_id: str | None = None
    generation_id: int = -1
    repeat_count: int = 1           # the row stands for this many requests...
    repeat_interval_ms: int = 0     # ...this far apart


@dataclass(slots=True, unsafe_hash=True)
class LeaveGroup(Event):
    members: tuple[LeaveIdentity, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class OffsetCommit(Event):
    member_id: str = ""
    group_instance_id: str | None = None
    generation_id: int = -1
    retention_time_ms: int = -1
    offsets: tuple[CommitPartition, ...] = ()
    repeat_count: int = 1
    repeat_interval_ms: int = 0


@dataclass(slots=True, unsafe_hash=True)
class OffsetFetch(Event):
    partitions: tuple[PartitionList, ...] | None = None  # None = all committed partitions
    require_stable: bool = False
    # v9+ (KIP-848): a consumer-protocol member's id and epoch; null and -1 (Kafka's defaults) from an admin
    # client, a classic consumer or an older version.
    member_id: str | None = None
    member_epoch: int = -1

    @property
    def generation_id(self) -> int | None:
        """The `generation_id` column: the member epoch of a fetch that names a member."""
        return None if self.member_id is None else self.member_epoch


@dataclass(slots=True, unsafe_hash=True)
class ConsumerGroupHeartbeat(Event):
    """A KIP-848 consumer's heartbeat (ConsumerGroupHeartbeat, API key 68), its fields named as Kafka's
    request names them. None means what Kafka's null means: unchanged since the member's last heartbeat.
    Partitions are by topic name here; the coordinator maps them to topic ids (TOPIC_METADATA)."""

    member_id: str = ""
    member_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None  # v1+
    server_assignor: str | None = None
    topic_partitions: tuple[PartitionList, ...] | None = None
    client_host: str = ""  # not a request field: the address the broker saw, as for JoinGroup
    repeat_count: int = 1  # a steady member's heartbeats, alike but for their time, as one row
    repeat_interval_ms: int = 0

    @property
    def group_instance_id(self) -> str | None:
        """The classic requests' name for the same thing (the `group_instance_id` column)."""
        return self.instance_id


@dataclass(slots=True, unsafe_hash=True)
class FindCoordinator(Event):
    """A lookup of the group's coordinator (key type GROUP, the key being `group_id`). Any broker answers it
    from its metadata, so it is never refused for being sent to the wrong one."""


@dataclass(slots=True, unsafe_hash=True)
class CoordinatorFault(Event):
    """`write_failure`: the next `count` appends of this group's records fail with `error`.
    `move`: the group's partition gets a new leader, broker `coordinator_id` (None: unnamed; -1: no leader),
    which loads the group from its records for `load_delay_ms`; requests in between get
    COORDINATOR_LOAD_IN_PROGRESS. `crash`: the coordinator's broker fails; a `move` follows once the
    controller has fenced it. `live_brokers`: the cluster's brokers that are up from now on (`brokers`, sorted):
    the ones a synthetic client's FindCoordinator can go to."""

    fault: str = "write_failure"
    count: int = 1
    error: str = "NOT_ENOUGH_REPLICAS"
    load_delay_ms: int = 0
    coordinator_id: int | None = None
    brokers: tuple[int, ...] | None = None


@dataclass(slots=True, unsafe_hash=True)
class ClientStart(Event):
    """A synthetic consumer process starts (again, if `client_id` ran before) and subscribes to `topics`, or
    (group.protocol=consumer only) to the broker-side pattern `topic_pattern` (subscribe(SubscriptionPattern))."""

    group_instance_id: str | None = None
    topics: tuple[str, ...] = ()
    config: ClientConfig = field(default_factory=ClientConfig)
    topic_pattern: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class ClientStop(Event):
    """Graceful close: commit (with auto-commit), then LeaveGroup unless the member is static."""


@dataclass(slots=True, unsafe_hash=True)
class ClientCrash(Event):
    """The process dies: no more requests, nothing answered reaches it."""


@dataclass(slots=True, unsafe_hash=True)
class ClientPause(Event):
    """`process`: the whole process stalls (no heartbeats either, e.g. a long GC pause); `poll`: the
    application stops calling poll() while the heartbeat thread goes on (a slow consumer)."""

    duration_ms: int = 0
    scope: str = "process"


@dataclass(slots=True, unsafe_hash=True)
class Subscribe(Event):
    """The application subscribes to `topics`, or to the broker-side pattern `topic_pattern`."""

    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class TopicMetadata(Event):
    """The cluster's topics as clients see them in metadata: partition counts, and optionally how many
    records per second each partition of a topic receives (log-end offsets grow at that rate)."""

    topics: tuple[tuple[str, int], ...] = ()
    records_per_second: dict[str, float] = field(default_factory=dict)
    # The topic ids a row gives (Kafka's base64 Uuid text); other topics get one derived from their name
    # (state.consumer_group.topic_id.derived_topic_id).
    topic_ids: dict[str, str] = field(default_factory=dict)


CLIENT_DIRECTIVE_CLASSES: dict[str, type[Event]] = {
    "CLIENT_START": ClientStart,
    "CLIENT_STOP": ClientStop,
    "CLIENT_CRASH": ClientCrash,
    "CLIENT_PAUSE": ClientPause,
    "SUBSCRIBE": Subscribe,
    "TOPIC_METADATA": TopicMetadata,
}
PAUSE_SCOPES = ("process", "poll")


@dataclass(slots=True, unsafe_hash=True)
class EndOfRun(Event):
    """Made by the engines, never read from input: the run ends at `ts` for this group. Rows that are only
    written once their outcome is known (a generation still completing) are written then."""


_REQUIRED = object()


EVENT_CLASSES: dict[str, type[Event]] = {
    "JOIN_GROUP": JoinGroup,
    "SYNC_GROUP": SyncGroup,
    "HEARTBEAT": Heartbeat,
    "LEAVE_GROUP": LeaveGroup,
    "OFFSET_COMMIT": OffsetCommit,
    "OFFSET_FETCH": OffsetFetch,
    "FIND_COORDINATOR": FindCoordinator,
    "CONSUMER_GROUP_HEARTBEAT": ConsumerGroupHeartbeat,
    "COORDINATOR_FAULT": CoordinatorFault,
    **CLIENT_DIRECTIVE_CLASSES,
}

# Append errors a COORDINATOR_FAULT may inject (what a failed __consumer_offsets append raises).
INJECTABLE_WRITE_ERRORS = (
    "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT",
    "UNKNOWN_TOPIC_OR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "KAFKA_STORAGE_ERROR",
    "MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_FETCH_SIZE", "UNKNOWN_SERVER_ERROR",
)


# ----------------------------------------------------------------------------------------------------------
# Field readers: each names the offending field in its error, so a reject reason points at the fix.

def _missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return value != value  # NaN from a Parquet null in a float column
    except Exception:  # noqa: BLE001 - arrays and other objects are not "missing"
        return False


def _int(raw: Mapping, name: str, default: Any = _REQUIRED, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    value = raw.get(name)
    if type(value) is int and lo <= value <= hi:
        return value  # the common case first: every field of every input row is read through here
    if _missing(value):
        if default is _REQUIRED:
            raise EventError(f"missing required field '{name}'")
        return default
    return _as_int(value, name, lo, hi)


def _as_int(value: Any, name: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    if type(value) is int and lo <= value <= hi:
        return value
    if isinstance(value, bool):
        raise EventError(f"field '{name}' must be an integer, got a boolean")
    if isinstance(value, float):
        if not value.is_integer():
            raise EventError(f"field '{name}' must be an integer, got {value!r}")
        value = int(value)
    elif not isinstance(value, int):
        try:
            import numbers

            if isinstance(value, numbers.Integral):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise EventError(f"field '{name}' must be an integer, got {type(value).__name__} {value!r}") from None
    if not lo <= value <= hi:
        raise EventError(f"field '{name}' = {value} is out of range [{lo}, {hi}]")
    return value


def _str(raw: Mapping, name: str, default: Any = _REQUIRED) -> Any:
    value = raw.get(name)
    if type(value) is str:
        return value
    if _missing(value):
        if default is _REQUIRED:
            raise EventError(f"missing required field '{name}'")
        return default
    if not isinstance(value, str):
        raise EventError(f"field '{name}' must be a string, got {type(value).__name__} {value!r}")
    return value


def _opt_str(raw: Mapping, name: str) -> str | None:
    return _str(raw, name, default=None)


def _bool(raw: Mapping, name: str, default: bool) -> bool:
    value = raw.get(name)
    if _missing(value):
        return default
    if not isinstance(value, bool):
        try:
            import numpy as np  # Parquet booleans may arrive as numpy.bool_

            if isinstance(value, np.bool_):
                return bool(value)
        except ImportError:  # pragma: no cover - numpy ships with pandas
            pass
        raise EventError(f"field '{name}' must be a boolean, got {value!r}")
    return value


def _list(raw: Mapping, name: str, default: Any = _REQUIRED) -> list:
    value = raw.get(name)
    if value is None:
        if default is _REQUIRED:
            raise EventError(f"missing required field '{name}'")
        return default
    if isinstance(value, (str, bytes, Mapping)):
        raise EventError(f"field '{name}' must be a list, got {type(value).__name__}")
    try:
        return list(value)
    except TypeError:
        raise EventError(f"field '{name}' must be a list, got {type(value).__name__}") from None


def _obj(value: Any, name: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise EventError(f"each entry of '{name}' must be an object, got {type(value).__name__} {value!r}")
    return value


def _bytes(value: Any, name: str) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise EventError(f"field '{name}' must be base64 bytes") from None
    raise EventError(f"field '{name}' must be base64 bytes, got {type(value).__name__}")


def parse_ts(value: Any, name: str = "ts") -> int:
    """Epoch milliseconds, or ISO-8601 text with a zone (JSONL)."""
    if _missing(value):
        raise EventError(f"missing required field '{name}'")
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return _as_int(int(text), name, 0)
        try:
            moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise EventError(f"field '{name}' must be epoch milliseconds or ISO-8601 with a zone, got {value!r}") from None
        if moment.tzinfo is None:
            raise EventError(f"field '{name}' has no time zone: {value!r} (add Z or +00:00)")
        return _epoch_ms(moment, name)
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise EventError(f"field '{name}' has no time zone")
        return _epoch_ms(value, name)
    return _as_int(value, name, 0)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
DURATION_HINT = "a duration such as 500ms, 30s, 5m, 1h30m, 7d, or whole milliseconds"


def duration_ms(text: str) -> int | None:
    """`500ms`, `30s`, `5m`, `2h`, `7d`, combinations (`1h30m`) or whole milliseconds (`1500`) as
    milliseconds; None if `text` is none of these (the caller names the field in its own error)."""
    if text.strip().isdigit():
        return int(text)
    if not re.fullmatch(rf"\s*(?:{_DURATION.pattern}\s*)+", text):
        return None
    return round(sum(float(n) * _UNIT_MS[u] for n, u in _DURATION.findall(text)))


def _epoch_ms(moment: _dt.datetime, name: str) -> int:
    ms = int(round(moment.timestamp() * 1000))
    if ms < 0:
        raise EventError(f"field '{name}' is before 1970-01-01T00:00:00Z")
    return ms


def _partition_lists(entries: list, name: str) -> tuple[PartitionList, ...]:
    out = []
    for entry in entries:
        entry = _obj(entry, name)
        topic = _str(entry, "topic")
        parts = tuple(_as_int(p, f"{name}.partitions", 0, INT32_MAX) for p in _list(entry, "partitions"))
        out.append(PartitionList(topic, parts))
    return tuple(out)


# A run's joins repeat a few protocols, nearly always in the plain form (a name and its topics), and their
# Subscription encoding is the costliest part of reading a JoinGroup: each distinct plain one is built once.
_PLAIN_PROTOCOLS: dict[tuple[str, ...], Protocol] = {}
_PLAIN_PROTOCOLS_MAX = 4_096


def _protocol(entry: Mapping, protocol_type: str) -> Protocol:
    if type(entry) is dict and entry.keys() <= {"name", "topics"}:
        name, topics = entry.get("name"), entry.get("topics")
        if type(name) is str and type(topics) is list and all(type(t) is str for t in topics):
            key = (name, *topics)
            protocol = _PLAIN_PROTOCOLS.get(key)
            if protocol is None:
                if len(_PLAIN_PROTOCOLS) >= _PLAIN_PROTOCOLS_MAX:
                    _PLAIN_PROTOCOLS.clear()
                protocol = _PLAIN_PROTOCOLS[key] = _read_protocol(entry, protocol_type)
            return protocol
    return _read_protocol(entry, protocol_type)


def _read_protocol(entry: Mapping, protocol_type: str) -> Protocol:
    entry = _obj(entry, "protocols")
    name = _str(entry, "name")
    if entry.get("metadata") is not None:
        metadata = _bytes(entry["metadata"], "protocols.metadata")
        topics = None
        if protocol_type == consumer_protocol.PROTOCOL_TYPE:
            try:
                topics = tuple(sorted(set(consumer_protocol.decode_subscription(metadata).topics)))
            except ValueError:
                topics = None  # opaque to the coordinator, as for a client with a broken serializer
        return Protocol(name, metadata, topics)
    topics = tuple(_str({"t": t}, "t") for t in _list(entry, "topics", []))
    owned = _partition_lists(_list(entry, "owned_partitions", []), "protocols.owned_partitions")
    user_data = entry.get("user_data")
    generation = _int(entry, "generation_id", -1, INT32_MIN, INT32_MAX)
    rack = _opt_str(entry, "rack")
    version = _int(entry, "version", consumer_protocol.HIGHEST_VERSION, 0, consumer_protocol.HIGHEST_VERSION)
    return subscription_protocol(name, topics, owned, generation,
                                 None if user_data is None else _bytes(user_data, "protocols.user_data"), rack, version)


def subscription_protocol(name: str, topics: tuple[str, ...], owned: tuple[PartitionList, ...], generation: int,
                          user_data: bytes | None, rack: str | None = None,
                          version: int = consumer_protocol.HIGHEST_VERSION) -> Protocol:
    """A consumer-protocol JoinGroup protocol from its plain form (its Subscription encoded as metadata)."""
    subscription = consumer_protocol.Subscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=[(p.topic, q) for p in owned for q in p.partitions],
        generation_id=generation,
        rack_id=rack,
    )
    metadata = consumer_protocol.encode_subscription(subscription, version)
    return Protocol(name, metadata, tuple(sorted(set(topics))))


def _protocols(entries: list, protocol_type: str) -> tuple[Protocol, ...]:
    protocols = tuple(_protocol(p, protocol_type) for p in entries)
    names = [p.name for p in protocols]
    for name in names:
        if names.count(name) > 1:
            # Kafka clients refuse duplicate assignor names; a broker fed one cannot select a protocol.
            raise EventError(f"protocols lists {name!r} more than once")
    return protocols


def _assignment(entry: Mapping) -> MemberAssignment:
    entry = _obj(entry, "assignments")
    member_id = _str(entry, "member_id")
    if entry.get("assignment") is not None:
        data = _bytes(entry["assignment"], "assignments.assignment")
        try:
            parts = group_partitions(consumer_protocol.decode_assignment(data).partitions)
        except ValueError:
            parts = None
        return MemberAssignment(member_id, data, parts)
    parts = _partition_lists(_list(entry, "partitions", []), "assignments.partitions")
    user_data = entry.get("user_data")
    return member_assignment(member_id, parts,
                             None if user_data is None else _bytes(user_data, "assignments.user_data"))


def member_assignment(member_id: str, parts: tuple[PartitionList, ...],
                      user_data: bytes | None = None) -> MemberAssignment:
    """A SyncGroup assignment from its plain form (a consumer Assignment encoded as bytes)."""
    data = consumer_protocol.encode_assignment(consumer_protocol.Assignment(
        partitions=[(p.topic, q) for p in parts for q in p.partitions], user_data=user_data))
    return MemberAssignment(member_id, data, parts)


def _commit_partition(entry: Any, api_version: int) -> CommitPartition:
    entry = _obj(entry, "offsets")
    return CommitPartition(
        topic=_str(entry, "topic"),
        partition=_int(entry, "partition", lo=0, hi=INT32_MAX),
        offset=_int(entry, "offset"),
        leader_epoch=_int(entry, "leader_epoch", -1, INT32_MIN, INT32_MAX) if api_version >= 6 else -1,
        metadata=_opt_str(entry, "metadata"),
        # Only OffsetCommit v1 carries a client-chosen commit timestamp.
        commit_timestamp=_int(entry, "commit_timestamp", -1) if api_version == 1 else -1,
        records_per_second=_commit_rate(entry),
        rate_origin_ts=_int(entry, "rate_origin_ts") if entry.get("records_per_second") else None,
    )


def _commit_rate(entry: Mapping) -> float | None:
    rate = entry.get("records_per_second")
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < float("inf"):
        raise EventError(f"field 'offsets.records_per_second' must be a number >= 0, got {rate!r}")
    return float(rate) or None


def _repeat(raw: Mapping) -> dict:
    """A periodic request row may stand for a run of identical requests (docs/events.md, "Repeated requests")."""
    count = _int(raw, "repeat_count", 1, 1, INT32_MAX)
    interval = _int(raw, "repeat_interval_ms", 0, 0)
    if count > 1 and interval < 1:
        raise EventError("field 'repeat_interval_ms' must be >= 1 when repeat_count > 1")
    return dict(repeat_count=count, repeat_interval_ms=interval if count > 1 else 0)


def expand_repeats(event: Event) -> list[Event]:
    """The requests a row with `repeat_count` stands for, all in the row's run (`source:line`), at the times
    and (offsets) with the offsets `state.quiet_run`'s rules give."""
    count = getattr(event, "repeat_count", 1)
    if count == 1:
        return [event]
    run, first, interval = f"{event.source}:{event.line}", event.ts, event.repeat_interval_ms
    expanded = []
    for k in range(count):
        ts = request_time(first, interval, k)
        fields = dict(ts=ts, repeat_count=1, repeat_interval_ms=0, run=run)
        if isinstance(event, OffsetCommit):
            fields["offsets"] = tuple(
                p if not p.records_per_second else dataclasses.replace(
                    p, offset=grown(p.offset, p.records_per_second, p.rate_origin_ts, first, ts))
                for p in event.offsets)
        expanded.append(dataclasses.replace(event, **fields))
    return expanded


def parse_event(raw: Mapping, source: str = "", line: int = 0, origin: str | None = None,
                run: str | None = None, variants: Collection[str] | None = None) -> Event:
    """Validate one raw row. `line` is the row's index in its source; it stands in for a missing `seq`.
    `origin` marks a synthetic client's own request, `run` its periodic chain. `variants`: the variants of
    a sweep, one of which each row names; None for a run that is not a sweep, whose rows name none. Raises
    EventError, whose message is the reject reason."""
    try:
        event = _parse_event(raw, source, line, origin, run)
    except EventError:
        raise
    except consumer_protocol.ConsumerProtocolError as e:
        # e.g. a topic name longer than the wire format's 32767 bytes
        raise EventError(f"cannot be encoded as Kafka would send it: {e}") from None
    _check_variant(event.variant, variants)
    return event


def _check_variant(variant: str | None, variants: Collection[str] | None) -> None:
    if variants is None:
        if variant is not None:
            raise EventError(f"field 'variant' names variant {variant!r}, but the run is not a sweep")
    elif variant is None:
        raise EventError(f"missing required field 'variant' (the run is a sweep of {len(variants)} variants)")
    elif variant not in variants:
        close = difflib.get_close_matches(variant, list(variants), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise EventError(f"field 'variant': {variant!r} is not a variant of the sweep{hint}")


def _request_id(raw: Mapping) -> str | None:
    value = raw.get("request_id")
    if _missing(value):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise EventError(f"field 'request_id' must be a string or an integer, got {type(value).__name__}")
    return str(value)


def _parse_event(raw: Mapping, source: str, line: int, origin: str | None, run: str | None) -> Event:
    if not isinstance(raw, Mapping):
        raise EventError(f"a row must be a JSON object, got {type(raw).__name__}")
    ts = parse_ts(raw.get("ts"))
    group_id = raw.get("group_id")
    if _missing(group_id):
        raise EventError("missing required field 'group_id'")
    if not isinstance(group_id, str):
        raise EventError(f"field 'group_id' must be a string, got {type(group_id).__name__} {group_id!r}")
    etype = _str(raw, "type")
    cls = EVENT_CLASSES.get(etype)
    if cls is None:
        raise EventError(f"unknown type {etype!r}; expected one of {', '.join(EVENT_CLASSES)}")
    newest = NEWEST_API_VERSION.get(etype, 0)
    header = dict(
        ts=ts,
        group_id=group_id,
        type=etype,
        seq=_int(raw, "seq", line),
        source=source,
        line=line,
        request_id=_request_id(raw),
        client_id=_str(raw, "client_id", ""),
        api_version=_int(raw, "api_version", newest, 0, newest),
        origin=origin,
        run=run,
        variant=_opt_str(raw, "variant"),
    )
    if etype == "JOIN_GROUP":
        protocol_type = _str(raw, "protocol_type", "")
        session = _int(raw, "session_timeout_ms", lo=INT32_MIN, hi=INT32_MAX)
        rebalance = _int(raw, "rebalance_timeout_ms", -1, INT32_MIN, INT32_MAX)
        return JoinGroup(
            **header,
            member_id=_str(raw, "member_id", ""),
            group_instance_id=_opt_str(raw, "group_instance_id") if header["api_version"] >= 5 else None,
            protocol_type=protocol_type,
            protocols=_protocols(_list(raw, "protocols"), protocol_type),
            session_timeout_ms=session,
            # v0 has no rebalance timeout: the session timeout stands in for it (KIP-62).
            rebalance_timeout_ms=session if header["api_version"] == 0 or rebalance == -1 else rebalance,
            client_host=_str(raw, "client_host", ""),
            reason=_opt_str(raw, "reason"),
        )
    if etype == "SYNC_GROUP":
        return SyncGroup(
            **header,
            member_id=_str(raw, "member_id"),
            group_instance_id=_opt_str(raw, "group_instance_id") if header["api_version"] >= 3 else None,
            generation_id=_int(raw, "generation_id", lo=INT32_MIN, hi=INT32_MAX),
            protocol_type=_opt_str(raw, "protocol_type") if header["api_version"] >= 5 else None,
            protocol_name=_opt_str(raw, "protocol_name") if header["api_version"] >= 5 else None,
            assignments=tuple(_assignment(a) for a in _list(raw, "assignments", [])),
        )
    if etype == "HEARTBEAT":
        return Heartbeat(
            **header,
            member_id=_str(raw, "member_id"),
            group_instance_id=_opt_str(raw, "group_instance_id") if header["api_version"] >= 3 else None,
            generation_id=_int(raw, "generation_id", lo=INT32_MIN, hi=INT32_MAX),
            **_repeat(raw),
        )
    if etype == "LEAVE_GROUP":
        if raw.get("members") is None and raw.get("member_id") is not None:
            members = [{"member_id": raw.get("member_id")}]
        else:
            members = _list(raw, "members")
        identities = []
        for m in members:
            m = _obj(m, "members")
            identities.append(LeaveIdentity(
                _str(m, "member_id", ""),
                _opt_str(m, "group_instance_id") if header["api_version"] >= 3 else None,
                _opt_str(m, "reason") if header["api_version"] >= 5 else None))
        if header["api_version"] < 3 and len(identities) != 1:
            raise EventError("LeaveGroup v0-v2 carries exactly one member_id (batch leave needs api_version >= 3)")
        return LeaveGroup(**header, members=tuple(identities))
    if etype == "OFFSET_COMMIT":
        v = header["api_version"]
        return OffsetCommit(
            **header,
            # v0 has neither member id nor generation: Kafka treats it as a standalone commit.
            member_id=_str(raw, "member_id", "") if v >= 1 else "",
            group_instance_id=_opt_str(raw, "group_instance_id") if v >= 7 else None,
            generation_id=_int(raw, "generation_id", -1, INT32_MIN, INT32_MAX) if v >= 1 else -1,
            retention_time_ms=_int(raw, "retention_time_ms", -1) if 2 <= header["api_version"] <= 4 else -1,
            offsets=tuple(_commit_partition(o, header["api_version"]) for o in _list(raw, "offsets")),
            **_repeat(raw),
        )
    if etype == "OFFSET_FETCH":
        parts = raw.get("partitions")
        return OffsetFetch(
            **header,
            partitions=None if parts is None else _partition_lists(_list(raw, "partitions"), "partitions"),
            require_stable=_bool(raw, "require_stable", False),
            member_id=_opt_str(raw, "member_id") if header["api_version"] >= 9 else None,
            member_epoch=_int(raw, "member_epoch", -1, INT32_MIN, INT32_MAX) if header["api_version"] >= 9 else -1,
        )
    if etype == "FIND_COORDINATOR":
        return FindCoordinator(**header)
    if etype == "CONSUMER_GROUP_HEARTBEAT":
        return _consumer_group_heartbeat(raw, header)
    if etype in CLIENT_DIRECTIVE_CLASSES:
        return _client_directive(etype, raw, header)
    fault = _str(raw, "fault", "write_failure")
    if fault not in FAULT_KINDS:
        raise EventError(f"field 'fault' must be one of {', '.join(FAULT_KINDS)}, got {fault!r}")
    error = _str(raw, "error", "NOT_ENOUGH_REPLICAS")
    if error not in INJECTABLE_WRITE_ERRORS:
        raise EventError(f"field 'error' must be one of {', '.join(INJECTABLE_WRITE_ERRORS)}, got {error!r}")
    return CoordinatorFault(
        **header,
        fault=fault,
        count=_int(raw, "count", 1, 0, INT32_MAX),
        error=error,
        load_delay_ms=_int(raw, "load_delay_ms", 0, 0),
        coordinator_id=_int(raw, "coordinator_id", None, -1, INT32_MAX),
        brokers=_broker_ids(raw) if fault == "live_brokers" else None,
    )


def _broker_ids(raw: Mapping) -> tuple[int, ...]:
    """A `live_brokers` fault's `brokers`: distinct broker ids, sorted (an empty list: none is up)."""
    ids = [_as_int(value, "brokers", 0, INT32_MAX) for value in _list(raw, "brokers")]
    if len(set(ids)) != len(ids):
        raise EventError(f"field 'brokers' names a broker twice: {ids}")
    return tuple(sorted(ids))


TOPIC_MAX_LENGTH = 249  # Kafka's Topic.MAX_NAME_LENGTH
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


def _topic_name(raw: Mapping, name: str) -> str:
    """A topic a synthetic client or the cluster names: legal as Kafka's Topic.validate has it (a topic the
    broker could not have created is refused here, not when a client's request fails to encode)."""
    topic = _str(raw, name)
    if topic in ("", ".", ".."):
        raise EventError(f"field '{name}': topic name {topic!r} is illegal")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise EventError(f"field '{name}': topic name is illegal, it can't be longer than {TOPIC_MAX_LENGTH} "
                         f"characters ({len(topic)})")
    if not _LEGAL_TOPIC.fullmatch(topic):
        raise EventError(f"field '{name}': topic name {topic!r} is illegal, it contains a character other than "
                         f"ASCII alphanumerics, '.', '_' and '-'")
    return topic


def _topic_names(raw: Mapping, name: str) -> tuple[str, ...]:
    topics = tuple(_topic_name({name: t}, name) for t in _list(raw, name))
    if len(set(topics)) != len(topics):
        raise EventError(f"field '{name}' lists a topic more than once")
    return topics


def _subscription(raw: Mapping) -> tuple[tuple[str, ...], str | None]:
    """A directive's `topics`, or its `topic_pattern` (a broker-side RE2J pattern, checked as the coordinator
    checks one: state.consumer_group.regex), never both."""
    pattern = _opt_str(raw, "topic_pattern")
    if pattern is None:
        return _topic_names(raw, "topics"), None
    if raw.get("topics"):
        raise EventError("give either 'topics' or 'topic_pattern', not both")
    if pattern == "":
        raise EventError("field 'topic_pattern' must be a non-empty regular expression")
    try:
        compile_regex(pattern)
    except InvalidRegularExpression as error:
        raise EventError(f"field 'topic_pattern': {error}") from None
    return (), pattern


def _opt_strings(raw: Mapping, name: str) -> tuple[str, ...] | None:
    if raw.get(name) is None:
        return None
    return tuple(_str({name: t}, name) for t in _list(raw, name))


def _consumer_group_heartbeat(raw: Mapping, header: dict) -> ConsumerGroupHeartbeat:
    """The request's fields as given: what Kafka checks itself (blank ids, the fields a join must carry) is
    left to the coordinator, which answers INVALID_REQUEST as Kafka does."""
    partitions = raw.get("topic_partitions")
    return ConsumerGroupHeartbeat(
        **header,
        member_id=_str(raw, "member_id", ""),
        member_epoch=_int(raw, "member_epoch", lo=INT32_MIN, hi=INT32_MAX),
        instance_id=_opt_str(raw, "instance_id"),
        rack_id=_opt_str(raw, "rack_id"),
        rebalance_timeout_ms=_int(raw, "rebalance_timeout_ms", -1, INT32_MIN, INT32_MAX),
        subscribed_topic_names=_opt_strings(raw, "subscribed_topic_names"),
        # v0 has no regex field.
        subscribed_topic_regex=_opt_str(raw, "subscribed_topic_regex") if header["api_version"] >= 1 else None,
        server_assignor=_opt_str(raw, "server_assignor"),
        topic_partitions=None if partitions is None else _partition_lists(
            _list(raw, "topic_partitions"), "topic_partitions"),
        client_host=_str(raw, "client_host", ""),
        **_repeat(raw),
    )


def _topic_id(entry: Mapping) -> str | None:
    """A topic id as Kafka prints one (Uuid.toString: 22 characters of URL-safe base64), not the zero Uuid,
    which Kafka reserves for "no id"."""
    text = _opt_str(entry, "topic_id")
    if text is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)) if len(text) == 22 else b""
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text:
        raise EventError(f"field 'topics.topic_id' must be a Kafka topic id (22 characters of URL-safe base64, "
                         f"e.g. 'Xq6LK8SnRkGxz7Da8ZvqLA'), got {text!r}")
    if not any(raw):
        raise EventError("field 'topics.topic_id' is the zero Uuid, which Kafka reserves for no topic id")
    return text


def _client_directive(etype: str, raw: Mapping, header: dict) -> Event:
    if not header["client_id"] and etype != "TOPIC_METADATA":
        raise EventError(f"{etype} needs a non-empty 'client_id' (it names the synthetic client)")
    if etype == "CLIENT_START":
        settings = raw.get("config")
        if settings is not None and not isinstance(settings, Mapping):
            raise EventError("field 'config' must be an object of consumer settings (Kafka names)")
        try:
            config = ClientConfig.from_kafka(settings)
        except ConfigError as e:
            raise EventError(f"config: {e}") from None
        instance = _opt_str(raw, "group_instance_id")
        if instance == "":
            raise EventError("field 'group_instance_id' must be non-empty when set (as the Java client requires)")
        topics, pattern = _subscription(raw)
        if pattern is not None and config.group_protocol != "consumer":
            raise EventError("field 'topic_pattern' needs config group.protocol=consumer: the classic consumer "
                             "refuses subscribe(SubscriptionPattern) (UnsupportedOperationException); a client-side "
                             "java.util.regex.Pattern subscription is not modelled")
        return ClientStart(**header, group_instance_id=instance, topics=topics, config=config, topic_pattern=pattern)
    if etype == "CLIENT_PAUSE":
        scope = _str(raw, "scope", "process")
        if scope not in PAUSE_SCOPES:
            raise EventError(f"field 'scope' must be one of {', '.join(PAUSE_SCOPES)}, got {scope!r}")
        return ClientPause(**header, duration_ms=_int(raw, "duration_ms", lo=0), scope=scope)
    if etype == "SUBSCRIBE":
        topics, pattern = _subscription(raw)
        return Subscribe(**header, topics=topics, topic_pattern=pattern)
    if etype == "TOPIC_METADATA":
        topics, rates, topic_ids = [], {}, {}
        for entry in _list(raw, "topics"):
            entry = _obj(entry, "topics")
            topic = _topic_name(entry, "topic")
            topics.append((topic, _int(entry, "partitions", lo=0, hi=INT32_MAX)))
            topic_id = _topic_id(entry)
            if topic_id is not None:
                topic_ids[topic] = topic_id
            rate = entry.get("records_per_second")
            if rate is not None:
                if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0 or rate != rate:
                    raise EventError(f"field 'topics.records_per_second' must be a number >= 0, got {rate!r}")
                rates[topic] = float(rate)
        if len({t for t, _ in topics}) != len(topics):
            raise EventError("field 'topics' lists a topic more than once")
        if len(set(topic_ids.values())) != len(topic_ids):
            raise EventError("field 'topics' gives two topics the same topic_id")
        return TopicMetadata(**header, topics=tuple(topics), records_per_second=rates, topic_ids=topic_ids)
    return CLIENT_DIRECTIVE_CLASSES[etype](**header)
