"""Parity of state/consumer_group/target_assignment.py's TargetAssignmentBuilder and the native engine's: a
group built from Hypothesis-generated records (members and their subscriptions by name and regex, static
members, targets, resolved regexes), then members updated (static members replacing others among them) and
removed, built with the uniform (trunk's or Kafka 4.0's) or the range assignor over a topics image missing
some subscribed topics, gives the same records in order (a TargetAssignmentMember for each changed target,
then the TargetAssignmentMetadata) and the same targets, or the same PartitionAssignorError.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.consumer_group import SERVER_ASSIGNORS, SERVER_ASSIGNORS_4_0
from state.consumer_group import records as cg
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember
from state.consumer_group.group_spec import PartitionAssignorError, SubscriptionType, subscription_type
from state.consumer_group.target_assignment import TargetAssignmentBuilder
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from tests.native import cores
from tests.native.consumer_group.test_group_parity import NAMES, REGEXES, subscriptions

# "Aa" and "BB" share a String.hashCode, so their java.util.HashMap bucket: the put order decides.
MEMBERS = st.sampled_from(["m1", "m2", "Aa", "BB"])
TOPIC_IDS = {"foo": TopicId(1, 2), "bar": TopicId(-5, 7), "é": TopicId(1, -2), "\uffff": TopicId(9, 9),
             "\U0001F600": TopicId(-9, 3)}
TOPICS = st.sampled_from(sorted(TOPIC_IDS.values()))
images = st.dictionaries(NAMES, st.integers(3, 6), min_size=1).map(
    lambda counts: {name: (TOPIC_IDS[name], count) for name, count in counts.items()})
# The records a group's targets are built from (none refused: no current assignments, no tombstones). A
# target holds partitions every topic has (a topic never shrinks; the reference's uniform assignor fails
# with an IndexError on one that did).
records = st.one_of(
    st.builds(cg.ConsumerGroupMemberMetadata, MEMBERS, subscriptions),
    st.builds(cg.ConsumerGroupTargetAssignmentMember, MEMBERS,
              st.lists(st.tuples(TOPICS, st.lists(st.integers(0, 2), max_size=3).map(tuple)), max_size=3).map(tuple)),
    st.builds(cg.ConsumerGroupRegularExpression, REGEXES.filter(bool), st.builds(
        cg.ResolvedRegularExpression, st.lists(NAMES, max_size=3).map(tuple), st.just(1), st.just(0))),
)
ops = st.one_of(
    st.tuples(st.just("update"), st.builds(lambda m, s: ConsumerGroupMember(m).with_subscription(s), MEMBERS,
                                           subscriptions)),
    st.tuples(st.just("remove"), MEMBERS),
)


def python_build(group, ops, epoch, assignor, kafka_4_0, image, now):
    builder = TargetAssignmentBuilder(group.members, group.static_members, group.target_assignment,
                                      group.resolved_regexes)
    for op, arg in ops:
        builder.add_or_update_member(arg) if op == "update" else builder.remove_member(arg)
    homogeneous = subscription_type((m.subscribed_topic_names, m.subscribed_topic_regex)
                                    for m in builder.members.values()) is SubscriptionType.HOMOGENEOUS
    assign = (SERVER_ASSIGNORS_4_0 if kafka_4_0 else SERVER_ASSIGNORS)[assignor]
    try:
        result = builder.build(epoch, assign, SubscriptionType.HOMOGENEOUS if homogeneous
                               else SubscriptionType.HETEROGENEOUS, TopicsImage(image), now)
    except PartitionAssignorError as error:
        return homogeneous, ("PartitionAssignorError", str(error))
    out = []
    for r in result.records:
        if isinstance(r, cg.ConsumerGroupTargetAssignmentMember):
            out.append(("member", r.member_id, [(tuple(t), list(ps)) for t, ps in r.value], 0, 0))
        else:
            out.append(("metadata", None, [], r.value.assignment_epoch, r.value.assignment_timestamp_ms))
    target = [(m, [(tuple(t), sorted(ps)) for t, ps in sorted(a.items())]) for m, a in result.target_assignment.items()]
    return homogeneous, (out, target)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_records=st.lists(records, max_size=15), ops=st.lists(ops, max_size=4), epoch=st.integers(1, 9),
       assignor=st.sampled_from(["uniform", "range"]), kafka_4_0=st.booleans(), image=images,
       now=st.integers(0, 10**6))
def test_target_assignment_gives_the_references_records(group_records, ops, epoch, assignor, kafka_4_0, image,
                                                         now) -> None:
    module = cores.native_module("consumer_group")
    python, native = ConsumerGroup("group-id"), module.ConsumerGroup("group-id")
    for record in group_records:
        python.replay(record)
        native.replay(record)
    homogeneous, expected = python_build(python, ops, epoch, assignor, kafka_4_0, image, now)
    try:
        got = module.build_target_assignment(native, ops, epoch, assignor, kafka_4_0, homogeneous, image, now)
    except cores.native_module("assignors").PartitionAssignorError as error:
        got = ("PartitionAssignorError", str(error))
    assert (list(got[0]), list(got[1])) == expected if not isinstance(got[0], str) else got == expected
