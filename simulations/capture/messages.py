"""The group APIs' request and response layouts, and the request/response headers, as data.

Transcribed field by field from Kafka's message specs (clients/src/main/resources/common/message/
<Name>Request.json and <Name>Response.json): every field with the versions it exists in, the versions in
which it may be null, its default when absent, and the first flexible version of each API. One generic
reader walks these declarations, so supporting a new version means editing a declaration, not code. Field
names are the specs' names in snake_case.

Declared: the APIs a classic group's members send to find and talk to their coordinator, a KIP-848
consumer's ConsumerGroupHeartbeat, and Metadata, whose responses name the topic ids ConsumerGroupHeartbeat
carries (topics.py). Other APIs on the same connection (Fetch, ApiVersions, ...) are framed and paired but
never decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulations.capture.wire import Reader, WireError


@dataclass(frozen=True)
class Versions:
    """A spec version range: "0+", "3-7", "1", or "none"."""

    low: int
    high: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str) -> "Versions":
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True)
class Field:
    name: str
    # "int8" ... "string", "bytes", "bool", "uuid", "[]int32", "[]string", a tuple of Fields (array of structs)
    # or a Struct (one struct)
    type: Any
    versions: Versions
    nullable: Versions
    default: Any


@dataclass(frozen=True)
class Struct:
    """A field that is one struct, not an array of them (ConsumerGroupHeartbeatResponse's Assignment)."""

    fields: tuple[Field, ...]


def f(name: str, type: Any, versions: str = "0+", nullable: str = "none", default: Any = None) -> Field:
    if isinstance(type, list):
        type = tuple(type)
    return Field(name, type, Versions.parse(versions), Versions.parse(nullable), default)


@dataclass(frozen=True)
class Api:
    key: int
    name: str  # Kafka's ApiKeys name, also the `api` column of our tables
    max_version: int
    flexible_from: int
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    def flexible(self, version: int) -> bool:
        return version >= self.flexible_from


FIND_COORDINATOR = Api(10, "FindCoordinator", 6, 3, request=(
    f("key", "string", "0-3"),
    f("key_type", "int8", "1+", default=0),
    f("coordinator_keys", "[]string", "4+"),
), response=(
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16", "0-3"),
    f("error_message", "string", "1-3", nullable="1-3"),
    f("node_id", "int32", "0-3"),
    f("host", "string", "0-3"),
    f("port", "int32", "0-3"),
    f("coordinators", [
        f("key", "string", "4+"),
        f("node_id", "int32", "4+"),
        f("host", "string", "4+"),
        f("port", "int32", "4+"),
        f("error_code", "int16", "4+"),
        f("error_message", "string", "4+", nullable="4+"),
    ], "4+"),
))

JOIN_GROUP = Api(11, "JoinGroup", 9, 6, request=(
    f("group_id", "string"),
    f("session_timeout_ms", "int32"),
    f("rebalance_timeout_ms", "int32", "1+", default=-1),
    f("member_id", "string"),
    f("group_instance_id", "string", "5+", nullable="5+"),
    f("protocol_type", "string"),
    f("protocols", [
        f("name", "string"),
        f("metadata", "bytes"),
    ]),
    f("reason", "string", "8+", nullable="8+"),
), response=(
    f("throttle_time_ms", "int32", "2+"),
    f("error_code", "int16"),
    f("generation_id", "int32", default=-1),
    f("protocol_type", "string", "7+", nullable="7+"),
    f("protocol_name", "string", nullable="7+"),
    f("leader", "string"),
    f("skip_assignment", "bool", "9+", default=False),
    f("member_id", "string"),
    f("members", [
        f("member_id", "string"),
        f("group_instance_id", "string", "5+", nullable="5+"),
        f("metadata", "bytes"),
    ]),
))

HEARTBEAT = Api(12, "Heartbeat", 4, 4, request=(
    f("group_id", "string"),
    f("generation_id", "int32"),
    f("member_id", "string"),
    f("group_instance_id", "string", "3+", nullable="3+"),
), response=(
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
))

LEAVE_GROUP = Api(13, "LeaveGroup", 5, 4, request=(
    f("group_id", "string"),
    f("member_id", "string", "0-2"),
    f("members", [
        f("member_id", "string", "3+"),
        f("group_instance_id", "string", "3+", nullable="3+"),
        f("reason", "string", "5+", nullable="5+"),
    ], "3+"),
), response=(
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
    f("members", [
        f("member_id", "string", "3+"),
        f("group_instance_id", "string", "3+", nullable="3+"),
        f("error_code", "int16", "3+"),
    ], "3+"),
))

SYNC_GROUP = Api(14, "SyncGroup", 5, 4, request=(
    f("group_id", "string"),
    f("generation_id", "int32"),
    f("member_id", "string"),
    f("group_instance_id", "string", "3+", nullable="3+"),
    f("protocol_type", "string", "5+", nullable="5+"),
    f("protocol_name", "string", "5+", nullable="5+"),
    f("assignments", [
        f("member_id", "string"),
        f("assignment", "bytes"),
    ]),
), response=(
    f("throttle_time_ms", "int32", "1+"),
    f("error_code", "int16"),
    f("protocol_type", "string", "5+", nullable="5+"),
    f("protocol_name", "string", "5+", nullable="5+"),
    f("assignment", "bytes"),
))

# v10 (Kafka 4.1+) names each topic by its id instead of its name, in the request and the response.
OFFSET_COMMIT = Api(8, "OffsetCommit", 10, 8, request=(
    f("group_id", "string"),
    f("generation_id", "int32", "1+", default=-1),  # GenerationIdOrMemberEpoch
    f("member_id", "string", "1+", default=""),
    f("group_instance_id", "string", "7+", nullable="7+"),
    f("retention_time_ms", "int64", "2-4", default=-1),
    f("topics", [
        f("name", "string", "0-9"),
        f("topic_id", "uuid", "10+"),
        f("partitions", [
            f("partition_index", "int32"),
            f("committed_offset", "int64"),
            f("committed_leader_epoch", "int32", "6+", default=-1),
            f("commit_timestamp", "int64", "1", default=-1),
            f("committed_metadata", "string", nullable="0+"),
        ]),
    ]),
), response=(
    f("throttle_time_ms", "int32", "3+"),
    f("topics", [
        f("name", "string", "0-9"),
        f("topic_id", "uuid", "10+"),
        f("partitions", [
            f("partition_index", "int32"),
            f("error_code", "int16"),
        ]),
    ]),
))

_FETCH_PARTITION = [
    f("partition_index", "int32"),
    f("committed_offset", "int64"),
    f("committed_leader_epoch", "int32", "5+", default=-1),
    f("metadata", "string", nullable="0+"),
    f("error_code", "int16"),
]

# v10 (Kafka 4.1+) names each topic of a group by its id instead of its name.
OFFSET_FETCH = Api(9, "OffsetFetch", 10, 6, request=(
    f("group_id", "string", "0-7"),
    f("topics", [
        f("name", "string"),
        f("partition_indexes", "[]int32"),
    ], "0-7", nullable="2-7"),
    f("groups", [
        f("group_id", "string"),
        f("member_id", "string", "9+", nullable="9+"),
        f("member_epoch", "int32", "9+", default=-1),
        f("topics", [
            f("name", "string", "0-9"),
            f("topic_id", "uuid", "10+"),
            f("partition_indexes", "[]int32"),
        ], nullable="8+"),
    ], "8+"),
    f("require_stable", "bool", "7+", default=False),
), response=(
    f("throttle_time_ms", "int32", "3+"),
    f("topics", [
        f("name", "string"),
        f("partitions", _FETCH_PARTITION),
    ], "0-7"),
    f("error_code", "int16", "2-7", default=0),
    f("groups", [
        f("group_id", "string"),
        f("topics", [
            f("name", "string", "0-9"),
            f("topic_id", "uuid", "10+"),
            f("partitions", _FETCH_PARTITION),
        ]),
        f("error_code", "int16", default=0),
    ], "8+"),
))

# The Kafka 4.x broker's versions: v1 adds SubscribedTopicRegex and has the client generate its member id
# (KIP-1082). Both versions are flexible; the response's Assignment is a nullable struct.
_TOPIC_PARTITIONS = [
    f("topic_id", "uuid"),
    f("partitions", "[]int32"),
]

CONSUMER_GROUP_HEARTBEAT = Api(68, "ConsumerGroupHeartbeat", 1, 0, request=(
    f("group_id", "string"),
    f("member_id", "string"),
    f("member_epoch", "int32"),
    f("instance_id", "string", nullable="0+"),
    f("rack_id", "string", nullable="0+"),
    f("rebalance_timeout_ms", "int32", default=-1),
    f("subscribed_topic_names", "[]string", nullable="0+"),
    f("subscribed_topic_regex", "string", "1+", nullable="1+"),
    f("server_assignor", "string", nullable="0+"),
    f("topic_partitions", _TOPIC_PARTITIONS, nullable="0+"),
), response=(
    f("throttle_time_ms", "int32"),
    f("error_code", "int16"),
    f("error_message", "string", nullable="0+"),
    f("member_id", "string", nullable="0+"),
    f("member_epoch", "int32"),
    f("heartbeat_interval_ms", "int32"),
    f("assignment", Struct((f("topic_partitions", _TOPIC_PARTITIONS),)), nullable="0+"),
))

GROUP_APIS: dict[int, Api] = {api.key: api for api in (
    FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, OFFSET_COMMIT, OFFSET_FETCH,
    CONSUMER_GROUP_HEARTBEAT)}

# Read for its responses' topics only: names, ids (v10+) and partition counts. v0-v13, as Kafka 4.x answers.
METADATA = Api(3, "Metadata", 13, 9, request=(
    f("topics", [
        f("topic_id", "uuid", "10+"),
        f("name", "string", nullable="10+"),
    ], nullable="1+"),
    f("allow_auto_topic_creation", "bool", "4+", default=True),
    f("include_cluster_authorized_operations", "bool", "8-10", default=False),
    f("include_topic_authorized_operations", "bool", "8+", default=False),
), response=(
    f("throttle_time_ms", "int32", "3+"),
    f("brokers", [
        f("node_id", "int32"),
        f("host", "string"),
        f("port", "int32"),
        f("rack", "string", "1+", nullable="1+"),
    ]),
    f("cluster_id", "string", "2+", nullable="2+"),
    f("controller_id", "int32", "1+", default=-1),
    f("topics", [
        f("error_code", "int16"),
        f("name", "string", nullable="12+"),
        f("topic_id", "uuid", "10+"),
        f("is_internal", "bool", "1+", default=False),
        f("partitions", [
            f("error_code", "int16"),
            f("partition_index", "int32"),
            f("leader_id", "int32"),
            f("leader_epoch", "int32", "7+", default=-1),
            f("replica_nodes", "[]int32"),
            f("isr_nodes", "[]int32"),
            f("offline_replicas", "[]int32", "5+"),
        ]),
        f("topic_authorized_operations", "int32", "8+", default=-2147483648),
    ]),
    f("cluster_authorized_operations", "int32", "8-10", default=-2147483648),
    f("error_code", "int16", "13+", default=0),
))

# Every API whose messages are decoded: the group APIs, and Metadata for the topics.
DECODED_APIS: dict[int, Api] = {**GROUP_APIS, METADATA.key: METADATA}

# No Kafka API key is near this yet; a larger one in a request header means the bytes are not Kafka.
MAX_PLAUSIBLE_API_KEY = 200
# socket.request.max.bytes: a broker refuses longer requests, so a longer length prefix is not Kafka either.
MAX_FRAME_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


def read_request_header(frame: bytes) -> RequestHeader:
    """Header v1/v2 (every API since Kafka 0.8 but ControlledShutdown v0, which clients never send). The
    client id is a classic nullable string even in the flexible v2 header; v2 adds tagged fields after it,
    which we can only know to skip for the APIs we decode."""
    r = Reader(frame)
    api_key = r.int16("request api key")
    api_version = r.int16("request api version")
    correlation_id = r.int32("correlation id")
    client_id = r.string(nullable=True, what="client id")
    if not 0 <= api_key <= MAX_PLAUSIBLE_API_KEY or api_version < 0:
        raise WireError(f"api key {api_key} version {api_version} is not a Kafka request header")
    api = DECODED_APIS.get(api_key)
    if api is not None and api_version <= api.max_version and api.flexible(api_version):
        r.flexible = True
        r.skip_tagged_fields("request header tagged fields")
    return RequestHeader(api_key, api_version, correlation_id, client_id, r.pos)


def response_correlation_id(frame: bytes) -> int:
    return Reader(frame).int32("correlation id")


def decode_request(api: Api, version: int, frame: bytes, offset: int) -> dict:
    return _decode_body(api.request, version, Reader(frame, api.flexible(version), offset), api, "request")


def decode_response(api: Api, version: int, frame: bytes) -> dict:
    """A response frame: correlation id, header tagged fields (flexible versions), then the body. Read
    leniently (wire.py): a null where the spec has none is the broker's quirk, not a damaged frame."""
    r = Reader(frame, api.flexible(version), 4, lenient=True)
    r.skip_tagged_fields("response header tagged fields")
    return _decode_body(api.response, version, r, api, "response")


def _decode_body(fields: tuple[Field, ...], version: int, r: Reader, api: Api, what: str) -> dict:
    body = _decode_struct(fields, version, r)
    if r.lenient and r.flexible and r.data[r.pos:] == b"\x00":
        r.skip_tagged_fields("a second top-level tagged-field section")  # librdkafka's mock's Metadata v13
    # Kafka peers never pad a message, so leftover bytes mean the layout read was not the one sent.
    if r.remaining():
        raise WireError(f"{r.remaining()} bytes left over after the {api.name} v{version} {what}")
    return body


def _decode_struct(fields: tuple[Field, ...], version: int, r: Reader) -> dict:
    out = {}
    for field in fields:
        out[field.name] = _read(field, version, r) if version in field.versions else field.default
    r.skip_tagged_fields()
    return out


def _read(field: Field, version: int, r: Reader) -> Any:
    nullable = version in field.nullable
    kind = field.type
    if isinstance(kind, Struct):
        # A nullable struct is preceded by a presence byte: -1 null, 1 present (Kafka's MessageDataGenerator).
        if nullable and r.int8(field.name) < 0:
            return None
        return _decode_struct(kind.fields, version, r)
    if isinstance(kind, tuple):
        n = r.array_length(nullable, field.name)
        return None if n is None else [_decode_struct(kind, version, r) for _ in range(n)]
    if kind.startswith("[]"):
        n = r.array_length(nullable, field.name)
        if n is None:
            return None
        element = kind[2:]
        return [_scalar(element, False, field.name, r) for _ in range(n)]
    return _scalar(kind, nullable, field.name, r)


def _scalar(kind: str, nullable: bool, what: str, r: Reader) -> Any:
    if kind == "string":
        return r.string(nullable, what)
    if kind == "bytes":
        return r.bytes_(nullable, what)
    if kind == "bool":
        return r.boolean(what)
    return getattr(r, kind)(what)  # int8, int16, int32, int64, uuid
