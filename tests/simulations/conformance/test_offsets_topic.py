"""The `__consumer_offsets` comparison (simulations/conformance/offsets_topic.py) on records whose bytes are
known: a consumer group's records as the Kafka version writes them are equal to the simulated rows, field by
field and size by size; a record Kafka writes longer than coordsim counts is a `size` difference."""

from __future__ import annotations

import base64

import pytest

from simulations.conformance.offsets_topic import compare_records
from state.records.record_bytes import key_bytes, value_bytes
from tests.state.harness import GroupContext

FOO_ID = "Xq6LK8SnRkGxz7Da8ZvqLA"


def joined(version: str) -> GroupContext:
    """A consumer group one member joined: its records in the log and in consumer_group_records."""
    ctx = GroupContext(coordsim_kafka_version=version)
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 2, "topic_id": FOO_ID}])
    ctx.send("CONSUMER_GROUP_HEARTBEAT", member_id="A", member_epoch=0, rebalance_timeout_ms=30_000,
             subscribed_topic_names=["foo"], topic_partitions=[])
    return ctx


def dump(ctx: GroupContext, kafka_4_0: bool, extra: bytes = b"") -> list[dict]:
    """The log's records as the driver's dump reads them back from a broker of that version."""
    return [{"key": base64.b64encode(key_bytes(r, ctx.group_id)).decode(),
             "value": base64.b64encode(value_bytes(r, kafka_4_0) + extra).decode()}
            for r in ctx.runtime.log.consumer_group_records()]


def tables(ctx: GroupContext) -> dict[str, list[dict]]:
    return {"offsets": [], "group_metadata": [], "consumer_group_records": ctx.rows("consumer_group_records")}


@pytest.mark.parametrize("version", ["trunk", "4.0"])
def test_a_consumer_group_written_as_its_kafka_version_writes_it_is_equal_in_fields_and_sizes(version):
    ctx = joined(version)
    records = compare_records(dump(ctx, version == "4.0"), tables(ctx), kafka_4_0=version == "4.0")
    assert len(records) == 5 and (records["kind"] == "equal").all()
    assert (records["real_size"] == records["simulated_size"]).all()


def test_kafka_4_0_records_compared_as_trunk_ones_differ_in_the_fields_4_0_does_not_write():
    ctx = joined("4.0")
    records = compare_records(dump(ctx, kafka_4_0=True), tables(ctx), kafka_4_0=False)
    assert set(records.loc[records["kind"] != "equal", "differences"]) == {
        "metadata_hash", "assigned_partitions_epochs"}


def test_a_record_kafka_writes_longer_than_coordsim_counts_is_a_size_difference():
    ctx = joined("trunk")
    lines = dump(ctx, False)
    # The target member's value with an unknown tagged field (tag 5, one byte) where its empty tagged-field
    # section was: the same fields, a record 3 bytes longer.
    target = next(i for i, r in enumerate(ctx.runtime.log.consumer_group_records())
                  if type(r).__name__ == "ConsumerGroupTargetAssignmentMember")
    value = base64.b64decode(lines[target]["value"])
    lines[target] = {**lines[target], "value": base64.b64encode(value[:-1] + bytes.fromhex("01050100")).decode()}
    records = compare_records(lines, tables(ctx))
    assert list(records["kind"]) == ["size" if i == target else "equal" for i in range(len(records))]


def test_records_coordsim_writes_after_the_broker_was_read_back_are_after_the_capture():
    ctx = joined("trunk")
    lines = dump(ctx, False)  # read back before the member's session expires
    ctx.sleep(50_000)
    records = compare_records(lines, tables(ctx), until=1000)
    late = records[records["kind"] != "equal"]
    assert len(late) > 0 and (late["kind"] == "after_capture").all() and (records["kind"] == "equal").sum() == 5


def test_a_regex_record_is_paired_by_its_regex_and_its_image_version_is_the_clusters():
    ctx = GroupContext()
    ctx.send("TOPIC_METADATA", topics=[{"topic": "foo", "partitions": 2, "topic_id": FOO_ID}])
    ctx.send("CONSUMER_GROUP_HEARTBEAT", member_id="A", member_epoch=0, rebalance_timeout_ms=30_000,
             subscribed_topic_regex="fo.*", topic_partitions=[])
    lines = dump(ctx, False)
    written = ctx.runtime.log.consumer_group_records()
    regex = next(i for i, r in enumerate(written) if type(r).__name__ == "ConsumerGroupRegularExpression")
    # The broker's metadata image version is its metadata log's offset (92 here), the last int64 but one.
    value = bytearray(base64.b64decode(lines[regex]["value"]))
    value[-17:-9] = (92).to_bytes(8, "big")
    lines[regex] = {**lines[regex], "value": base64.b64encode(bytes(value)).decode()}
    records = compare_records(lines, tables(ctx))
    assert records.loc[records["record_type"] == "ConsumerGroupRegularExpression", "kind"].tolist() == ["image_version"]
    assert (records.loc[records["record_type"] != "ConsumerGroupRegularExpression", "kind"] == "equal").all()
