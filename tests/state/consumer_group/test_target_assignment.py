"""Kafka's TargetAssignmentBuilderTest and UpdatedMembersAndTargetAssignmentViewTest (trunk), case by case.
Where Kafka checks TargetAssignmentMember records unordered, they are checked here in the members'
java.util.HashMap order, the order Kafka writes them in."""

from __future__ import annotations

from state.consumer_group import SERVER_ASSIGNORS_4_0
from state.consumer_group import range as range_assignor
from state.consumer_group.downgrade import in_timeline_hash_map_order
from state.consumer_group.group import ConsumerGroupMember
from state.consumer_group.group_spec import SubscriptionType, in_java_hash_map_order
from state.consumer_group.target_assignment import TargetAssignmentBuilder
from state.consumer_group.topics import TopicsImage
from tests.state.consumer_group.coordinator_context import BAR, FOO, MockAssignor, assignment_metadata_record
from tests.state.consumer_group.coordinator_context import target_record

TOPICS = TopicsImage({"foo": (FOO, 6), "bar": (BAR, 6)})
HOMOGENEOUS = SubscriptionType.HOMOGENEOUS


def targets(**members):
    """{member: {topic: partitions}} from member=(foo partitions, bar partitions)."""
    return {member_id.replace("_", "-"): {FOO: frozenset(foo), BAR: frozenset(bar)}
            for member_id, (foo, bar) in members.items()}


def context(subscriptions, current):
    """TargetAssignmentBuilderTestContext: members with their subscriptions and current targets."""
    members = {m: ConsumerGroupMember(m, subscribed_topic_names=frozenset(names)) for m, names in subscriptions.items()}
    return TargetAssignmentBuilder(members, {}, current)


def build(builder, prepared):
    assignor = MockAssignor()
    assignor.prepare(prepared)
    result = builder.build(20, assignor, HOMOGENEOUS, TOPICS, 12345)
    return result, assignor


def test_empty():
    # TargetAssignmentBuilderTest.testEmpty
    result, _ = build(TargetAssignmentBuilder({}, {}, {}), {})
    assert result.records == [assignment_metadata_record(20, 12345)]
    assert result.target_assignment == {}


def test_assignment_has_not_changed():
    # TargetAssignmentBuilderTest.testAssignmentHasNotChanged
    current = targets(member_1=([1, 2, 3], [1, 2, 3]), member_2=([4, 5, 6], [4, 5, 6]))
    builder = context({"member-1": ("foo", "bar", "zar"), "member-2": ("foo", "bar", "zar")}, current)
    result, assignor = build(builder, current)
    assert result.records == [assignment_metadata_record(20, 12345)]
    assert result.target_assignment == current
    # The assignor saw the members with their targets, subscribed to the topics that exist.
    (spec,) = assignor.calls
    assert list(spec.members) == list(in_java_hash_map_order(dict.fromkeys(["member-1", "member-2"])))
    assert set(spec.members["member-1"].subscribed_topic_ids) == {FOO, BAR}
    assert spec.members["member-1"].assignment == current["member-1"]


def test_assignment_swapped():
    # TargetAssignmentBuilderTest.testAssignmentSwapped
    current = targets(member_1=([1, 2, 3], [1, 2, 3]), member_2=([4, 5, 6], [4, 5, 6]))
    builder = context({"member-1": ("foo", "bar", "zar"), "member-2": ("foo", "bar", "zar")}, current)
    swapped = {"member-1": current["member-2"], "member-2": current["member-1"]}
    result, _ = build(builder, swapped)
    order = list(in_java_hash_map_order(dict.fromkeys(["member-1", "member-2"])))
    expected = {"member-1": target_record("member-1", foo=[4, 5, 6], bar=[4, 5, 6]),
                "member-2": target_record("member-2", foo=[1, 2, 3], bar=[1, 2, 3])}
    assert result.records == [*(expected[m] for m in order), assignment_metadata_record(20, 12345)]
    assert result.target_assignment == swapped


def test_partial_assignment_update():
    # TargetAssignmentBuilderTest.testPartialAssignmentUpdate
    current = targets(member_1=([1, 2], [1, 2]), member_2=([3, 4], [3, 4]), member_3=([5, 6], [5, 6]))
    builder = context({"member-1": ("foo", "bar", "zar"), "member-2": ("foo", "bar", "zar"),
                       "member-3": ("bar", "zar")}, current)
    new = targets(member_1=([1, 2], [1, 2]), member_2=([3, 4, 5], [3, 4, 5]), member_3=([6], [6]))
    result, _ = build(builder, new)
    order = [m for m in in_java_hash_map_order(dict.fromkeys(["member-1", "member-2", "member-3"])) if m != "member-1"]
    expected = {"member-2": target_record("member-2", foo=[3, 4, 5], bar=[3, 4, 5]),
                "member-3": target_record("member-3", foo=[6], bar=[6])}
    assert result.records == [*(expected[m] for m in order), assignment_metadata_record(20, 12345)]
    assert result.target_assignment == new


def test_new_member_with_an_empty_target_gets_a_record():
    # TargetAssignmentBuilder.build: an absent target differs from an empty one
    builder = context({"member-1": ("foo",)}, {})
    result, _ = build(builder, {})
    assert result.records == [target_record("member-1"), assignment_metadata_record(20, 12345)]


def test_with_a_real_assignor():
    # GroupMetadataManagerTest.testMemberJoinsEmptyConsumerGroup, with RangeAssignor instead of the mock
    builder = context({"member-1": ("foo", "bar"), "member-2": ("foo", "bar")}, {})
    result = builder.build(2, range_assignor.assign, HOMOGENEOUS, TOPICS, 1000)
    assert result.target_assignment == {"member-1": {FOO: frozenset({0, 1, 2}), BAR: frozenset({0, 1, 2})},
                                        "member-2": {FOO: frozenset({3, 4, 5}), BAR: frozenset({3, 4, 5})}}


# UpdatedMembersAndTargetAssignmentViewTest: member-1 dynamic, member-2 static with "instance-id".

def view():
    members = {"member-1": ConsumerGroupMember("member-1"),
               "member-2": ConsumerGroupMember("member-2", instance_id="instance-id")}
    return TargetAssignmentBuilder(members, {"instance-id": "member-2"},
                                   {"member-1": {FOO: frozenset({1})}, "member-2": {FOO: frozenset({2})}})


def test_add_member():
    # UpdatedMembersAndTargetAssignmentViewTest.testAddMember
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-3"))
    assert set(v.members) == {"member-1", "member-2", "member-3"}
    assert v.static_members == {"instance-id": "member-2"}
    assert set(v.target_assignment) == {"member-1", "member-2"}


def test_add_static_member():
    # UpdatedMembersAndTargetAssignmentViewTest.testAddStaticMember
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-3", instance_id="instance-id-2"))
    assert v.static_members == {"instance-id": "member-2", "instance-id-2": "member-3"}


def test_replace_static_member_with_same_member_id():
    # UpdatedMembersAndTargetAssignmentViewTest.testReplaceStaticMemberWithSameMemberId
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-2", instance_id="instance-id", rack_id="updated"))
    assert v.members["member-2"].rack_id == "updated"
    assert v.static_members == {"instance-id": "member-2"}
    assert v.target_assignment["member-2"] == {FOO: frozenset({2})}


def test_replace_static_member_with_different_member_id():
    # UpdatedMembersAndTargetAssignmentViewTest.testReplaceStaticMemberWithDifferentMemberId
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-3", instance_id="instance-id"))
    assert set(v.members) == {"member-1", "member-3"}
    assert v.static_members == {"instance-id": "member-3"}
    assert v.target_assignment == {"member-1": {FOO: frozenset({1})}, "member-3": {FOO: frozenset({2})}}


def test_replace_static_member_with_null_instance_id():
    # UpdatedMembersAndTargetAssignmentViewTest.testReplaceStaticMemberWithNullInstanceId
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-2"))
    assert v.static_members == {} and set(v.target_assignment) == {"member-1", "member-2"}


def test_replace_static_member_with_different_instance_id():
    # UpdatedMembersAndTargetAssignmentViewTest.testReplaceStaticMemberWithDifferentInstanceId
    v = view()
    v.add_or_update_member(ConsumerGroupMember("member-2", instance_id="instance-id-2"))
    assert v.static_members == {"instance-id-2": "member-2"} and set(v.members) == {"member-1", "member-2"}


def test_remove_member():
    # UpdatedMembersAndTargetAssignmentViewTest.testRemoveMember, testRemoveStaticMember
    v = view()
    v.remove_member("member-1")
    assert set(v.members) == {"member-2"} and set(v.target_assignment) == {"member-2"}
    assert v.static_members == {"instance-id": "member-2"}
    v.remove_member("member-2")
    assert v.members == {} and v.static_members == {} and v.target_assignment == {}


def test_members_of_one_hashmap_bucket_are_put_in_the_groups_timelinehashmap_order():
    # Two member ids of HashMap bucket 0 (16 buckets), joined A then B: the group's TimelineHashMap iterates
    # B first, so Kafka puts B first into the GroupSpec's HashMap, and a member the heartbeat adds last. Found
    # against Kafka 4.0.0, whose uniform assignor gives the extra partition to the first member.
    a, b, c = "_x03ShD7So236SPRIeq3wQ", "BwaFZYakS-K0jrrB2G_e_Q", "RFPmm4yaR5yakOgSaIVW4w"
    current = {a: {FOO: frozenset([0, 1, 2])}, b: {FOO: frozenset([3, 4, 5])}}
    builder = context({a: ("foo",), b: ("foo",)}, current)
    builder.add_or_update_member(ConsumerGroupMember(c, subscribed_topic_names=frozenset(["foo"])))
    result, assignor = build(builder, {})
    (spec,) = assignor.calls
    assert list(spec.members) == [b, a, c]


# Three member ids of one TimelineHashMap slot (the same slot in tables of 2 to 8 slots) and of one HashMap bucket
# but the first, from a consumer-rolling-restart capture against Kafka 4.0.0: joined in this order.
SLOT_0 = ("1DtSRCreRtaseK4hJHBloQ", "lsExKBzoQNKJ9oexOne-5w", "jpfHHui7SpyrDEU6uBjjTA")


def test_a_timelinehashmap_iterates_the_keys_of_one_slot_last_put_first():
    # SnapshottableHashTable.CurrentIterator unpacks a slot into a list and takes from its end.
    assert in_timeline_hash_map_order(SLOT_0) == list(reversed(SLOT_0))


def test_members_of_one_timelinehashmap_slot_are_put_into_the_groupspec_last_joined_first():
    # The first of three members left, the next heartbeat (of the second) computes the target: Kafka 4.0.0's
    # uniform assignor gave the freed partitions 1 and 3 in the GroupSpec's order, 1 to the third member to
    # join and 3 to the second, and wrote their TargetAssignmentMember records in that order.
    gone, second, third = SLOT_0
    members = {m: ConsumerGroupMember(m, subscribed_topic_names=frozenset(["foo"])) for m in SLOT_0}
    current = {gone: {FOO: frozenset([1, 3])}, second: {FOO: frozenset([0])}, third: {FOO: frozenset([2])}}
    builder = TargetAssignmentBuilder(members, {}, current)
    builder.remove_member(gone)
    builder.add_or_update_member(members[second])
    result = builder.build(8, SERVER_ASSIGNORS_4_0["uniform"], HOMOGENEOUS, TopicsImage({"foo": (FOO, 4)}), 0)
    assert result.records[:2] == [target_record(third, foo=[1, 2]), target_record(second, foo=[0, 3])]
