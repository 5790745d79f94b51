"""state/request_rows.py: a synthetic request's `requests` row is the input row its event parses back from
(the fleet-wide check is tests/state/harness.py's `check_requests_rows`, used by the client tests)."""

from __future__ import annotations

import dataclasses

from state.events import (EVENT_CLASSES, NEWEST_API_VERSION, CommitPartition, Event, LeaveIdentity, PartitionList,
                          member_assignment, parse_event, subscription_protocol)
from state.request_rows import request_row

HEADER = dict(ts=5, group_id="g", seq=3, request_id="c1#0/3", client_id="c1")  # the newest api_version


def _event(etype: str, **fields):
    """The event a client builds: the header `parse_event` reads from HEADER, and `fields`."""
    base = parse_event(dict(HEADER, type="FIND_COORDINATOR"))
    header = {f.name: getattr(base, f.name) for f in dataclasses.fields(Event)}
    return EVENT_CLASSES[etype](**dict(header, type=etype, api_version=NEWEST_API_VERSION[etype]), **fields)


def test_a_join_row_lists_topics_and_owned_partitions_in_the_order_its_subscription_carries_them():
    """ConsumerProtocol writes a Subscription's topics and owned partitions sorted: the row shows the request
    as it went on the wire, whatever order the client kept them in."""
    protocol = subscription_protocol("cooperative-sticky", ("orders", "audit"),
                                     (PartitionList("orders", (8, 2)), PartitionList("audit", (1,))), 4, b"\x00\x01")
    event = _event("JOIN_GROUP", member_id="m1", protocol_type="consumer", protocols=(protocol,),
                   session_timeout_ms=10_000, rebalance_timeout_ms=30_000, reason="rebalance")
    row = request_row(event)
    assert row["protocols"] == [{"name": "cooperative-sticky", "topics": ["audit", "orders"],
                                 "owned_partitions": [{"topic": "audit", "partitions": [1]},
                                                      {"topic": "orders", "partitions": [2, 8]}],
                                 "generation_id": 4, "user_data": "AAE="}]
    assert "group_instance_id" not in row  # Kafka's null, left out as a hand-written row would
    assert parse_event(row) == event


def test_every_request_type_a_client_builds_reads_back_as_its_event():
    events = [
        _event("SYNC_GROUP", member_id="m1", group_instance_id="i1", generation_id=2, protocol_type="consumer",
               protocol_name="range", assignments=(member_assignment("m1", (PartitionList("orders", (0, 1)),)),)),
        _event("HEARTBEAT", member_id="m1", generation_id=2),
        _event("LEAVE_GROUP", members=(LeaveIdentity("m1", None, "the consumer is being closed"),)),
        _event("OFFSET_COMMIT", member_id="m1", generation_id=2,
               offsets=(CommitPartition("orders", 0, 42, -1, None, -1),)),
        _event("OFFSET_FETCH", partitions=(PartitionList("orders", (0,)),), require_stable=True,
               member_id="m1", member_epoch=3),
        _event("CONSUMER_GROUP_HEARTBEAT", member_id="m1", member_epoch=3, rebalance_timeout_ms=300_000,
               subscribed_topic_names=("orders",), topic_partitions=(PartitionList("orders", (0, 1)),)),
        _event("FIND_COORDINATOR"),
    ]
    for event in events:
        assert parse_event(request_row(event)) == event, event.type
