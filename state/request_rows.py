"""A request as an input-contract row (docs/events.md): the inverse of `state.events.parse_event` for the
requests synthetic clients send.

A client builds a request once, as its typed event; the `requests` table's row, the form a captured or
hand-written input would take, is derived from it here when the request reaches a broker. Parsing the row
gives the event back (tests/state/test_request_rows.py), so a run's `requests` table replays as its input.
Fields a client leaves at Kafka's default (a null instance id, no rack, no user data) are left out, as a
hand-written row would leave them.
"""

from __future__ import annotations

import base64

from state.classic import consumer_protocol
from state.events import (ConsumerGroupHeartbeat, Event, Heartbeat, JoinGroup, LeaveGroup,
                          OffsetCommit, OffsetFetch, Protocol, SyncGroup, group_partitions)
from state.tables import partitions_column


def request_row(event: Event) -> dict:
    """The input row `parse_event` reads as `event` (its header, then its own fields)."""
    row = {"ts": event.ts, "group_id": event.group_id, "type": event.type, "seq": event.seq,
           "request_id": event.request_id, "client_id": event.client_id}
    fields = _FIELDS.get(type(event))
    if fields is not None:
        fields(row, event)
    return row


def _member(row: dict, event) -> None:
    """The member fields of JoinGroup, SyncGroup, Heartbeat and OffsetCommit."""
    row["member_id"] = event.member_id
    if event.group_instance_id is not None:
        row["group_instance_id"] = event.group_instance_id


def _join_group(row: dict, event: JoinGroup) -> None:
    _member(row, event)
    row.update(protocol_type=event.protocol_type, session_timeout_ms=event.session_timeout_ms,
               rebalance_timeout_ms=event.rebalance_timeout_ms, reason=event.reason,
               protocols=[_protocol(p) for p in event.protocols])


# A group's members often join with the same Subscription (no partitions owned yet, the same generation): each
# distinct one is decoded once. The entries are only read (written as JSON), so rows may share them.
_READABLE: dict[bytes, dict] = {}
_READABLE_MAX = 4_096


def _protocol(protocol: Protocol) -> dict:
    """A consumer-protocol JoinGroup protocol in the readable form (`state.events.subscription_protocol`'s)."""
    readable = _READABLE.get(protocol.metadata)
    if readable is None:
        if len(_READABLE) >= _READABLE_MAX:
            _READABLE.clear()
        readable = _READABLE[protocol.metadata] = _readable(protocol.metadata)
    return {"name": protocol.name, **readable}


def _readable(metadata: bytes) -> dict:
    subscription = consumer_protocol.decode_subscription(metadata)
    entry = {"topics": list(subscription.topics),
             "owned_partitions": partitions_column(group_partitions(subscription.owned_partitions)),
             # The Java Subscription (and its decoder here) keeps no negative generation: -1 is the wire's "none".
             "generation_id": -1 if subscription.generation_id is None else subscription.generation_id}
    if subscription.user_data is not None:
        entry["user_data"] = base64.b64encode(subscription.user_data).decode("ascii")
    if subscription.rack_id is not None:
        entry["rack"] = subscription.rack_id
    return entry


def _sync_group(row: dict, event: SyncGroup) -> None:
    _member(row, event)
    row.update(generation_id=event.generation_id, protocol_type=event.protocol_type,
               protocol_name=event.protocol_name,
               assignments=[{"member_id": a.member_id, "partitions": partitions_column(a.partitions)}
                            for a in event.assignments])


def _heartbeat(row: dict, event) -> None:
    _member(row, event)
    row["generation_id"] = event.generation_id


def _leave_group(row: dict, event: LeaveGroup) -> None:
    members = []
    for identity in event.members:
        member = {"member_id": identity.member_id}
        if identity.group_instance_id is not None:
            member["group_instance_id"] = identity.group_instance_id
        member["reason"] = identity.reason
        members.append(member)
    row["members"] = members


def _offset_commit(row: dict, event: OffsetCommit) -> None:
    _heartbeat(row, event)
    row["offsets"] = [{"topic": p.topic, "partition": p.partition, "offset": p.offset} for p in event.offsets]


def _offset_fetch(row: dict, event: OffsetFetch) -> None:
    row.update(partitions=partitions_column(event.partitions), require_stable=event.require_stable)
    if event.member_id is not None:
        row.update(member_id=event.member_id, member_epoch=event.member_epoch)


# ConsumerGroupHeartbeat's fields in the request's order; None (Kafka's null: unchanged) is left out.
_HEARTBEAT_FIELDS = ("member_id", "member_epoch", "instance_id", "rack_id", "rebalance_timeout_ms",
                     "subscribed_topic_names", "subscribed_topic_regex", "server_assignor")


def _consumer_group_heartbeat(row: dict, event: ConsumerGroupHeartbeat) -> None:
    for name in _HEARTBEAT_FIELDS:
        value = getattr(event, name)
        if value is not None:
            row[name] = list(value) if name == "subscribed_topic_names" else value
    if event.topic_partitions is not None:
        row["topic_partitions"] = partitions_column(event.topic_partitions)


_FIELDS = {
    JoinGroup: _join_group,
    SyncGroup: _sync_group,
    Heartbeat: _heartbeat,
    LeaveGroup: _leave_group,
    OffsetCommit: _offset_commit,
    OffsetFetch: _offset_fetch,
    ConsumerGroupHeartbeat: _consumer_group_heartbeat,
}
