"""Parity of state/consumer_group/group.py's ConsumerGroup and the native engine's: Hypothesis-generated
sequences of the seven consumer group records (members joining, changing subscription, static members
moving instance ids, server assignors, regexes resolved and re-resolved, targets, current assignments at
any state and epoch, the three tombstones of a leaving member, and the record sequences a coordinator never
writes that the reference refuses) replayed on both give the same group: every replayed field, the maps in
their order, and the state, subscription type and preferred server assignor derived from them
(tests/native/consumer_group/shadow.py's `snapshot`); a record one refuses the other refuses with the same error.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import records as cg
from state.consumer_group.group import ConsumerGroup
from state.consumer_group.reconciliation import CurrentAssignment, MemberState
from state.consumer_group.topic_id import TopicId
from tests.native import cores
from tests.native.consumer_group.shadow import replayed, snapshot

PARITY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Small pools, so members, instance ids, topics and regexes meet again; names whose String.compareTo
# (UTF-16) and code point orders differ, and assignor names sharing a java.util.HashMap bucket.
MEMBERS = st.sampled_from(["m1", "m2", "m3", "m4"])
NAMES = st.sampled_from(["foo", "bar", "é", "\uffff", "\U0001F600"])
REGEXES = st.sampled_from(["", "f.*", "b.*"])
ASSIGNORS = st.sampled_from(["uniform", "range", "Aa", "BB"])  # "Aa" and "BB": one String.hashCode
TOPICS = st.sampled_from([TopicId(1, 2), TopicId(-5, 7), TopicId(1, -2)])
EPOCHS = st.integers(-2, 6)
PARTITIONS = st.integers(0, 3)


def maybe(strategy):
    return st.none() | strategy


partition_epochs = st.dictionaries(TOPICS, st.dictionaries(PARTITIONS, EPOCHS, max_size=3), max_size=2)
subscriptions = st.builds(
    cg.MemberSubscription, maybe(st.sampled_from(["i1", "i2"])), maybe(st.just("rack")), st.just("client"),
    st.just("host"), st.lists(NAMES, max_size=3).map(tuple), REGEXES, maybe(ASSIGNORS), st.integers(-1, 60_000),
    maybe(st.builds(cg.ClassicMemberMetadata, st.integers(0, 45_000),
                    st.lists(st.builds(cg.ClassicProtocol, st.sampled_from(["range", "roundrobin"]),
                                       st.binary(max_size=4)), max_size=2).map(tuple))),
)
member_metadata = st.builds(cg.ConsumerGroupMemberMetadata, MEMBERS, subscriptions)
values = st.one_of(
    member_metadata, member_metadata, member_metadata,  # members join and change most often
    st.builds(cg.ConsumerGroupMetadata, st.builds(cg.GroupEpoch, EPOCHS, st.integers(0, 2**63 - 1))),
    st.builds(cg.ConsumerGroupTargetAssignmentMetadata, st.builds(cg.AssignmentMetadata, EPOCHS,
                                                                  st.integers(0, 10**6))),
    st.builds(cg.ConsumerGroupTargetAssignmentMember, MEMBERS,
              st.lists(st.tuples(TOPICS, st.lists(PARTITIONS, max_size=3).map(tuple)), max_size=3).map(tuple)),
    st.builds(cg.ConsumerGroupCurrentMemberAssignment, MEMBERS, st.builds(
        CurrentAssignment, st.sampled_from(MemberState), EPOCHS, EPOCHS, partition_epochs, partition_epochs)),
    st.builds(cg.ConsumerGroupRegularExpression, REGEXES, maybe(st.builds(
        cg.ResolvedRegularExpression, st.lists(NAMES, max_size=3).map(tuple), st.integers(0, 9),
        st.integers(0, 10**6)))),
)
# Tombstones one at a time, in any order: some are refused (a member removed before its assignments, the
# target metadata tombstoned while members have targets), which ends a sequence.
tombstones = st.one_of(
    st.just(cg.ConsumerGroupPartitionMetadata()),
    st.builds(cg.ConsumerGroupMemberMetadata, MEMBERS, st.none()),
    st.just(cg.ConsumerGroupTargetAssignmentMetadata(None)),
    st.builds(cg.ConsumerGroupTargetAssignmentMember, MEMBERS, st.none()),
    st.builds(cg.ConsumerGroupCurrentMemberAssignment, MEMBERS, st.none()),
)
# A member leaving: its three tombstones in the order a coordinator writes them (records.member_tombstones).
leaves = MEMBERS.map(cg.member_tombstones)
batches = st.one_of(values, values, values, values, tombstones).map(lambda r: [r]) | leaves


@PARITY
@given(batches=st.lists(batches, min_size=10, max_size=50), kafka_4_0=st.booleans())
def test_replaying_records_gives_the_references_group(batches, kafka_4_0) -> None:
    python = ConsumerGroup("group-id", kafka_4_0)
    native = cores.native_module("consumer_group").ConsumerGroup("group-id", kafka_4_0)
    assert native.snapshot() == snapshot(python)
    for record in (r for batch in batches for r in batch):
        error = replayed(python, record)
        assert replayed(native, record) == error, record
        if error is not None:
            return  # the reference's group is left half-changed: a coordinator never goes on from there
        assert native.snapshot() == snapshot(python), record


def test_a_group_tombstone_is_refused_by_both() -> None:
    python = ConsumerGroup("group-id")
    native = cores.native_module("consumer_group").ConsumerGroup("group-id")
    tombstone = cg.ConsumerGroupMetadata(None)
    assert replayed(native, tombstone) == replayed(python, tombstone) == (
        "ValueError", "group group-id: a ConsumerGroupMetadata tombstone deletes the group")
