"""Decoded group-API messages in, rows out: the request as an event of the input contract (docs/events.md)
and the broker's answer as a row of the captured-responses table (captured.py), shaped like the simulator's
`responses` rows so the two compare column by column.

Consumer-protocol bytes travel as captured (`metadata`, `assignment`, base64): they are what the coordinator
compares and hands out, so re-encoding them could only lose fidelity. A `decoded` view (Subscription,
Assignment, and the sticky assignors' userData) rides along for people reading the events; the input
contract ignores it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from state.classic import consumer_protocol
from state.errors import ERROR_CODES
from state.events import NEWEST_API_VERSION

from simulations.capture.messages import (CONSUMER_GROUP_HEARTBEAT, FIND_COORDINATOR, HEARTBEAT, JOIN_GROUP,
                                          LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, SYNC_GROUP, Api)

EVENT_TYPES = {
    JOIN_GROUP.key: "JOIN_GROUP", SYNC_GROUP.key: "SYNC_GROUP", HEARTBEAT.key: "HEARTBEAT",
    LEAVE_GROUP.key: "LEAVE_GROUP", OFFSET_COMMIT.key: "OFFSET_COMMIT", OFFSET_FETCH.key: "OFFSET_FETCH",
    CONSUMER_GROUP_HEARTBEAT.key: "CONSUMER_GROUP_HEARTBEAT",
}

# Codes group APIs can carry that the simulator never answers with, so state.errors does not name them.
_MORE_ERRORS = {
    29: "TOPIC_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED", 42: "INVALID_REQUEST",
    68: "NON_EMPTY_GROUP", 86: "GROUP_SUBSCRIBED_TO_TOPIC",
}
ERROR_NAMES = {**_MORE_ERRORS, **{code: name for name, code in ERROR_CODES.items()}}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


@dataclass(frozen=True)
class Request:
    api: Api
    version: int
    client_id: str
    client_host: str  # as Kafka reports it: "/" + the client's address
    body: dict


@dataclass(frozen=True)
class Part:
    """One group's share of a request: most requests name one group; OffsetFetch v8+ and FindCoordinator
    v4+ may name several, and each becomes its own event / captured row."""

    group_id: str
    index: int  # position among the request's groups
    count: int


def parts(request: Request) -> list[Part]:
    body = request.body
    if request.api is FIND_COORDINATOR:
        if body["key_type"] != 0:  # a transaction coordinator lookup, not a group's
            return []
        keys = body["coordinator_keys"] if request.version >= 4 else [body["key"]]
    elif request.api is OFFSET_FETCH and request.version >= 8:
        keys = [g["group_id"] for g in body["groups"]]
    else:
        keys = [body["group_id"]]
    return [Part(key, i, len(keys)) for i, key in enumerate(keys)]


# ---------------------------------------------------------------------------------------------- events

def event_row(request: Request, part: Part) -> dict | None:
    """The request's event fields for one group (without ts, seq and request_id); None for FindCoordinator,
    which the simulator does not model."""
    event_type = EVENT_TYPES.get(request.api.key)
    if event_type is None:
        return None
    # OffsetCommit v10 and OffsetFetch v10 differ from v9 only in naming topics by id, which the import names
    # (topics.py): as events, whose topics go by name (docs/events.md), they are the v9 requests.
    row = {"group_id": part.group_id, "type": event_type, "client_id": request.client_id,
           "api_version": min(request.version, NEWEST_API_VERSION[event_type])}
    row.update(_EVENT_FIELDS[event_type](request.body, request, part))
    return row


def _join_group(body: dict, request: Request, part: Part) -> dict:
    consumer = body["protocol_type"] == consumer_protocol.PROTOCOL_TYPE
    return {
        "member_id": body["member_id"],
        "group_instance_id": body["group_instance_id"],
        "protocol_type": body["protocol_type"],
        "protocols": [{"name": p["name"], "metadata": _b64(p["metadata"]),
                       **({"decoded": subscription_view(p["name"], p["metadata"])} if consumer else {})}
                      for p in body["protocols"]],
        "session_timeout_ms": body["session_timeout_ms"],
        "rebalance_timeout_ms": body["rebalance_timeout_ms"],
        "client_host": request.client_host,
        "reason": body["reason"],
    }


def _sync_group(body: dict, request: Request, part: Part) -> dict:
    return {
        "member_id": body["member_id"],
        "group_instance_id": body["group_instance_id"],
        "generation_id": body["generation_id"],
        "protocol_type": body["protocol_type"],
        "protocol_name": body["protocol_name"],
        "assignments": [{"member_id": a["member_id"], "assignment": _b64(a["assignment"]),
                         "decoded": assignment_view(a["assignment"])} for a in body["assignments"]],
    }


def _heartbeat(body: dict, request: Request, part: Part) -> dict:
    return {"member_id": body["member_id"], "group_instance_id": body["group_instance_id"],
            "generation_id": body["generation_id"]}


def _leave_group(body: dict, request: Request, part: Part) -> dict:
    if request.version < 3:
        return {"members": [{"member_id": body["member_id"]}]}
    return {"members": [{"member_id": m["member_id"], "group_instance_id": m["group_instance_id"],
                         "reason": m["reason"]} for m in body["members"]]}


def _offset_commit(body: dict, request: Request, part: Part) -> dict:
    return {
        "member_id": body["member_id"],
        "group_instance_id": body["group_instance_id"],
        "generation_id": body["generation_id"],
        "retention_time_ms": body["retention_time_ms"],
        "offsets": [{"topic": topic_name(t), "partition": p["partition_index"], "offset": p["committed_offset"],
                     "leader_epoch": p["committed_leader_epoch"], "metadata": p["committed_metadata"],
                     "commit_timestamp": p["commit_timestamp"]}
                    for t in body["topics"] for p in t["partitions"]],
    }


def _offset_fetch(body: dict, request: Request, part: Part) -> dict:
    group = body["groups"][part.index] if request.version >= 8 else body
    topics = group["topics"]
    fields = {
        # v0-v1 cannot ask for "all partitions"; Kafka reads an empty list as nothing, not everything
        "partitions": None if topics is None else [{"topic": topic_name(t), "partitions": t["partition_indexes"]}
                                                   for t in topics],
        "require_stable": body["require_stable"],
    }
    if request.version >= 9:  # a consumer-protocol member's id and epoch (KIP-848)
        fields.update(member_id=group["member_id"], member_epoch=group["member_epoch"])
    return fields


def _consumer_group_heartbeat(body: dict, request: Request, part: Part) -> dict:
    """Partitions travel by topic id; the events name topics (docs/events.md), which topics.py fills in once
    the capture's Metadata responses are read."""
    return {
        "member_id": body["member_id"],
        "member_epoch": body["member_epoch"],
        "instance_id": body["instance_id"],
        "rack_id": body["rack_id"],
        "rebalance_timeout_ms": body["rebalance_timeout_ms"],
        "subscribed_topic_names": body["subscribed_topic_names"],
        **({"subscribed_topic_regex": body["subscribed_topic_regex"]} if request.version >= 1 else {}),
        "server_assignor": body["server_assignor"],
        "topic_partitions": body["topic_partitions"],  # [{topic_id, partitions}] as decoded
        "client_host": request.client_host,
    }


_EVENT_FIELDS = {
    "JOIN_GROUP": _join_group, "SYNC_GROUP": _sync_group, "HEARTBEAT": _heartbeat,
    "LEAVE_GROUP": _leave_group, "OFFSET_COMMIT": _offset_commit, "OFFSET_FETCH": _offset_fetch,
    "CONSUMER_GROUP_HEARTBEAT": _consumer_group_heartbeat,
}


# ---------------------------------------------------------------------------------------------- captured

def captured_request_fields(request: Request, part: Part) -> dict:
    """The captured-responses columns known from the request alone, as the simulator's responses echo them."""
    body = request.body
    single_leave = request.api is LEAVE_GROUP and request.version < 3
    echoed = (SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT)
    member_id = body["member_id"] if request.api in echoed or single_leave else None
    if request.api is CONSUMER_GROUP_HEARTBEAT:
        instance_id = body["instance_id"]
    else:
        instance_id = body.get("group_instance_id") if request.api is not LEAVE_GROUP else None
    return {
        "group_id": part.group_id,
        "api": request.api.name,
        "api_version": request.version,
        "client_id": request.client_id,
        "member_id": member_id,
        "group_instance_id": instance_id,
        "generation_id": body["generation_id"] if request.api in (SYNC_GROUP, HEARTBEAT, OFFSET_COMMIT) else None,
    }


def captured_response_fields(request: Request, part: Part, body: dict) -> dict:
    """What the broker answered, in the simulator's responses columns (docs/tables.md#responses)."""
    api = request.api
    if api is JOIN_GROUP:
        return {
            "error": error_name(body["error_code"]),
            "member_id": body["member_id"],
            "generation_id": body["generation_id"],
            "protocol_type": body["protocol_type"],
            "protocol_name": body["protocol_name"],
            "leader_id": body["leader"],
            "skip_assignment": body["skip_assignment"] if request.version >= 9 else None,
            "members": [{"member_id": m["member_id"], "group_instance_id": m["group_instance_id"]}
                        for m in body["members"]],
        }
    if api is SYNC_GROUP:
        view = assignment_view(body["assignment"]) if body["assignment"] else {"partitions": []}
        return {
            "error": error_name(body["error_code"]),
            "protocol_type": body["protocol_type"],
            "protocol_name": body["protocol_name"],
            "assignment": None if view is None else view["partitions"],
        }
    if api is HEARTBEAT:
        return {"error": error_name(body["error_code"])}
    if api is CONSUMER_GROUP_HEARTBEAT:
        # As the simulator's row: the member epoch answered and, when given, the partitions (by topic id until
        # topics.py names them); on an error only the error, the member id staying the request's.
        if body["error_code"]:
            return {"error": error_name(body["error_code"])}
        assignment = body["assignment"]
        return {"error": "NONE", "generation_id": body["member_epoch"],
                "heartbeat_interval_ms": body["heartbeat_interval_ms"],
                "assignment": None if assignment is None else assignment["topic_partitions"],
                **({"member_id": body["member_id"]} if body["member_id"] is not None else {})}
    if api is LEAVE_GROUP:
        return {"error": error_name(body["error_code"]),
                "results": None if request.version < 3 else [
                    _result(member_id=m["member_id"], group_instance_id=m["group_instance_id"],
                            error=error_name(m["error_code"])) for m in body["members"]]}
    if api is OFFSET_COMMIT:
        # The committed offset rides along (the simulator's results leave it null), so the captured table
        # alone says which offsets the broker accepted.
        sent = {(topic_name(t), p["partition_index"]): p["committed_offset"]
                for t in request.body["topics"] for p in t["partitions"]}
        results = [_result(topic=topic_name(t), partition=p["partition_index"], error=error_name(p["error_code"]),
                           offset=sent.get((topic_name(t), p["partition_index"])))
                   for t in body["topics"] for p in t["partitions"]]
        errors = {r["error"] for r in results}
        # the simulator reports a request-wide failure as the response's error and each partition's
        return {"error": errors.pop() if len(errors) == 1 else "NONE", "results": results}
    if api is OFFSET_FETCH:
        if request.version >= 8:
            group = next((g for g in body["groups"] if g["group_id"] == part.group_id), None)
            topics, error = (group["topics"], group["error_code"]) if group else ([], 0)
        else:
            topics, error = body["topics"], body["error_code"]
        return {"error": error_name(error),
                "results": [_result(topic=topic_name(t), partition=p["partition_index"], error=error_name(p["error_code"]),
                                    offset=p["committed_offset"], leader_epoch=p["committed_leader_epoch"],
                                    metadata=p["metadata"]) for t in topics for p in t["partitions"]]}
    if request.version >= 4:
        found = next((c for c in body["coordinators"] if c["key"] == part.group_id), None)
        if found is None:
            return {"error": "NONE", "coordinator": None}
        body = found
    return {"error": error_name(body["error_code"]),
            "coordinator": f"node {body['node_id']} at {body['host']}:{body['port']}"}


def topic_name(topic: dict) -> str:
    """An OffsetCommit or OffsetFetch topic's name; from v10 the topic's id, which topics.py names once the
    capture's Metadata responses are read."""
    return topic["name"] if topic["name"] is not None else topic["topic_id"]


def _result(**fields) -> dict:
    row = dict.fromkeys(("member_id", "group_instance_id", "topic", "partition", "error", "offset",
                         "leader_epoch", "metadata"))
    row.update(fields)
    return row


# ---------------------------------------------------------------------------------------------- views

def partition_lists(pairs) -> list[dict]:
    """(topic, partition) pairs as [{topic, partitions}], one entry per topic in first-appearance order."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def subscription_view(protocol_name: str, data: bytes) -> dict | None:
    try:
        version = consumer_protocol.decode_version(data)
        sub = consumer_protocol.decode_subscription(data)
    except ValueError:
        return None
    view = {
        "version": version,
        "topics": list(sub.topics),
        "owned_partitions": partition_lists(sub.owned_partitions),
        "generation_id": -1 if sub.generation_id is None else sub.generation_id,
        "rack": sub.rack_id,
        "user_data": _b64(sub.user_data),
    }
    if sub.user_data:
        view["user_data_decoded"] = _user_data_view(protocol_name, sub.user_data)
    return view


def _user_data_view(protocol_name: str, data: bytes) -> dict | None:
    """The sticky assignors' userData. Java's cooperative-sticky writes only a generation; librdkafka
    writes the StickyAssignor layout for both names, so both layouts are tried, strictest first."""
    if len(data) == 4:
        return {"generation": consumer_protocol.decode_cooperative_user_data(data)}
    if protocol_name in ("sticky", "cooperative-sticky"):
        try:
            sticky = consumer_protocol.decode_sticky_user_data(data)
        except ValueError:
            return None
        return {"previous_assignment": partition_lists(sticky.partitions), "generation": sticky.generation}
    return None


def assignment_view(data: bytes) -> dict | None:
    try:
        version = consumer_protocol.decode_version(data)
        assignment = consumer_protocol.decode_assignment(data)
    except ValueError:
        return None
    return {"version": version, "partitions": partition_lists(assignment.partitions),
            "user_data": _b64(assignment.user_data)}


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")
