"""Parity of state/records/group_log.py's GroupLog and the native engine's (native/src/records/group_log.rs): the
same Hypothesis-generated sequence of appends (offset commits, GroupMetadata values and the consumer group's
seven records, with tombstones among them, their keys from a small pool so values replace one another and
keys come back after a tombstone) gives the same log: every key's last value in the same order, and at each
load what a load replays (the group's last GroupMetadata value, the offsets in order, the consumer group's
records in order) and the committed offsets. A consumer group record's value is compared by its bytes
(record_bytes.value_bytes: every field of the value, in order)."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import records as cg
from state.records.group_log import GroupLog
from state.records.record_bytes import value_bytes
from tests.native import cores
from tests.native.records.test_record_bytes import consumer_group_records, group_metadata, offset_commits

TOPICS = st.sampled_from(["a", "b"])
PARTITIONS = st.integers(0, 2)
IDS = st.sampled_from(["m1", "m2", "^t.*"])

offset_records = st.builds(lambda r, topic, partition: dataclasses.replace(r, topic=topic, partition=partition),
                           offset_commits, TOPICS, PARTITIONS)


def _keyed(record, member_id):
    """The record with its member id (or regex) from the small pool, so keys repeat."""
    for field in ("member_id", "regex"):
        if hasattr(record, field):
            return dataclasses.replace(record, **{field: member_id})
    return record


appends = st.lists(st.one_of(
    offset_records, offset_records, group_metadata, st.builds(_keyed, consumer_group_records, IDS),
    st.just("load"),
), max_size=40)


def _value(key, value):
    return value_bytes(cg.record_of(key, value)) if cg.is_consumer_group_key(key) else value


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(appends=appends)
def test_group_log_parity(appends) -> None:
    native = cores.native_module("group_log")
    python, log = GroupLog(), native.GroupLog()
    for record in [*appends, "load"]:
        if record == "load":
            assert log.group_metadata() == python.group_metadata()
            assert list(log.offsets().items()) == list(python.offsets().items())
            assert log.consumer_group_records() == [(r.key, value_bytes(r)) for r in python.consumer_group_records()]
            for topic in ("a", "b"):
                for partition in range(3):
                    assert log.committed(topic, partition) == python.committed(topic, partition)
        else:
            python.append(record)
            log.append(record)
        assert log.values() == [(key, _value(key, value)) for key, value in python.values.items()]
