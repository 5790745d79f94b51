"""Parity of state/records/record_bytes.py and the native engine's: Hypothesis-generated records of every kind, the
classic group's (OffsetCommit at each value version, GroupMetadata with members) and the consumer group's
seven, values and tombstones, give the identical bytes on both cores as keys, values, v2 records at any
offset and timestamp delta, and batches. The Kafka-named cases of tests/state/records/test_record_bytes.py and
tests/state/consumer_group/test_record_bytes.py run on both cores as well (tests/state/conftest.py).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import records as cg
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.topic_id import TopicId
from state.records.group_log import GroupMetadataRecord, OffsetCommitRecord
from tests.native import cores

PARITY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text Kafka can carry: any Unicode but lone surrogates, which have no UTF-8 form.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
int32 = st.integers(-2**31, 2**31 - 1)
int64 = st.integers(-2**63, 2**63 - 1)
topic_ids = st.builds(TopicId, int64, int64)
blobs = st.binary(max_size=16)


def maybe(strategy):
    return st.none() | strategy


offset_commits = st.builds(
    OffsetCommitRecord, text, int32,
    maybe(st.fixed_dictionaries({
        "offset": int64, "leader_epoch": maybe(int32), "metadata": maybe(text), "commit_ts": int64,
        "expire_ts": maybe(int64), "topic_id": maybe(topic_ids.map(str)),
    })),
)
group_metadata = st.builds(GroupMetadataRecord, maybe(st.fixed_dictionaries({
    "protocol_type": maybe(text), "generation_id": int32, "protocol_name": maybe(text), "leader_id": maybe(text),
    "current_state_ts": maybe(int64),
    "members": st.lists(st.fixed_dictionaries({
        "member_id": text, "group_instance_id": maybe(text), "client_id": text, "client_host": text,
        "rebalance_timeout_ms": int32, "session_timeout_ms": int32, "subscription": blobs, "assignment": blobs,
    }), max_size=3),
})))
partition_epochs = st.dictionaries(topic_ids, st.dictionaries(int32, int32, max_size=4), max_size=3)
consumer_group_records = st.one_of(
    st.builds(cg.ConsumerGroupMetadata, maybe(st.builds(cg.GroupEpoch, int32, int64 | st.just(0)))),
    st.just(cg.ConsumerGroupPartitionMetadata()),
    st.builds(cg.ConsumerGroupMemberMetadata, text, maybe(st.builds(
        cg.MemberSubscription, maybe(text), maybe(text), text, text, st.lists(text, max_size=3).map(tuple), text,
        maybe(text), int32,
        maybe(st.builds(cg.ClassicMemberMetadata, int32,
                        st.lists(st.builds(cg.ClassicProtocol, text, blobs), max_size=2).map(tuple))),
    ))),
    st.builds(cg.ConsumerGroupTargetAssignmentMetadata, maybe(st.builds(cg.AssignmentMetadata, int32, int64 | st.just(0)))),
    st.builds(cg.ConsumerGroupTargetAssignmentMember, text, maybe(
        st.lists(st.tuples(topic_ids, st.lists(int32, max_size=4).map(tuple)), max_size=3).map(tuple))),
    st.builds(cg.ConsumerGroupCurrentMemberAssignment, text, maybe(st.builds(
        CurrentAssignment, st.sampled_from(MemberState), int32, int32, partition_epochs, partition_epochs))),
    st.builds(cg.ConsumerGroupRegularExpression, text, maybe(st.builds(
        cg.ResolvedRegularExpression, st.lists(text, max_size=3).map(tuple), int64, int64))),
)
records = offset_commits | group_metadata | consumer_group_records


@PARITY
@given(record=records, group_id=text, offset_delta=int32, timestamp_delta=int64, kafka_4_0=st.booleans())
def test_every_record_has_the_references_bytes(record, group_id, offset_delta, timestamp_delta, kafka_4_0) -> None:
    # kafka_4_0: a consumer group's values as Kafka 4.0's schemas write them (coordsim.kafka.version 4.0)
    python, native = cores.record_bytes("python"), cores.record_bytes("native")
    assert native.key_bytes(record, group_id) == python.key_bytes(record, group_id)
    assert native.value_bytes(record, kafka_4_0) == python.value_bytes(record, kafka_4_0)
    assert (native.record_bytes(record, group_id, offset_delta, timestamp_delta, kafka_4_0)
            == python.record_bytes(record, group_id, offset_delta, timestamp_delta, kafka_4_0))


@settings(max_examples=50, deadline=None)
@given(batch=st.lists(records, max_size=6), group_id=text, kafka_4_0=st.booleans())
def test_every_batch_has_the_references_size(batch, group_id, kafka_4_0) -> None:
    native, python = cores.record_bytes("native"), cores.record_bytes("python")
    assert native.batch_size(batch, group_id, kafka_4_0) == python.batch_size(batch, group_id, kafka_4_0)
