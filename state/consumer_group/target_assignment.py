"""A consumer group's next target assignment and the records that persist it: Kafka's
TargetAssignmentBuilder together with the UpdatedMembersAndTargetAssignmentView it is fed from (trunk).

The builder starts from the group's members and target assignment and takes the heartbeat's change on top
(`add_or_update_member`, `remove_member`) without touching the group: a static member taking over an
instance id replaces the member that held it, and takes over its target. `build` runs the assignor over the
members in java.util.HashMap order (as Kafka builds the GroupSpec: put in the order the group's
TimelineHashMap iterates its members, then the heartbeat's new member; the put order decides between ids
of the same bucket), writes a TargetAssignmentMember record for
every member whose target changed, in that same order, and then the TargetAssignmentMetadata record that sets
the assignment epoch to the group epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from state.consumer_group import Assignor
from state.consumer_group.downgrade import in_timeline_hash_map_order
from state.consumer_group.group import Assignment, ConsumerGroupMember, topic_partitions
from state.consumer_group.group_spec import (
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    in_java_hash_map_order,
    java_hash_set_order,
)
from state.consumer_group.records import (
    AssignmentMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    ResolvedRegularExpression,
)
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from state.java_compat import java_string_sort_key, string_hash_code


@dataclass(frozen=True)
class TargetAssignmentResult:
    records: list[ConsumerGroupRecord]
    target_assignment: dict[str, Assignment]  # every member's new target


class TargetAssignmentBuilder:
    def __init__(self, members: Mapping[str, ConsumerGroupMember], static_members: Mapping[str, str],
                 target_assignment: Mapping[str, Assignment],
                 resolved_regexes: Mapping[str, ResolvedRegularExpression] | None = None) -> None:
        self.members = dict(members)
        # The group's member map is a TimelineHashMap: the GroupSpec's HashMap is filled in its order, then
        # with the members the heartbeat adds.
        self.timeline_order = in_timeline_hash_map_order(members)
        self.static_members = dict(static_members)
        self.target_assignment = dict(target_assignment)
        self.resolved_regexes = resolved_regexes or {}

    def add_or_update_member(self, member: ConsumerGroupMember) -> None:
        member_id, instance_id = member.member_id, member.instance_id
        previous = self.members.get(member_id)
        self.members[member_id] = member
        # The mapping of an unchanged instance id stays, to tell a replacement below.
        if previous is not None and previous.instance_id is not None and previous.instance_id != instance_id:
            self.static_members.pop(previous.instance_id, None)
        if instance_id is None:
            return
        replaced = self.static_members.get(instance_id)
        self.static_members[instance_id] = member_id
        if replaced is not None and replaced != member_id:
            if replaced in self.target_assignment:
                self.target_assignment[member_id] = self.target_assignment[replaced]
            self.members.pop(replaced, None)
            self.target_assignment.pop(replaced, None)

    def remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None and member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target_assignment.pop(member_id, None)

    def build(self, group_epoch: int, assignor: Assignor, subscription_type: SubscriptionType,
              topics: TopicsImage, now: int) -> TargetAssignmentResult:
        """Raises group_spec.PartitionAssignorError when the assignor cannot assign."""
        order = [m for m in self.timeline_order if m in self.members]
        order += [m for m in self.members if m not in set(order)]
        specs = in_java_hash_map_order({member_id: self._member_spec(self.members[member_id], topics)
                                        for member_id in order})
        computed = assignor(GroupSpec(specs, subscription_type), topics.partition_counts())
        records: list[ConsumerGroupRecord] = []
        target: dict[str, Assignment] = {}
        for member_id in specs:
            new = {topic_id: frozenset(ps) for topic_id, ps in computed.get(member_id, {}).items()}
            target[member_id] = new
            if new != self.target_assignment.get(member_id):
                records.append(ConsumerGroupTargetAssignmentMember(member_id, topic_partitions(new)))
        records.append(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(group_epoch, now)))
        return TargetAssignmentResult(records, target)

    def _member_spec(self, member: ConsumerGroupMember, topics: TopicsImage) -> MemberSpec:
        # The names in the order of the java.util.HashSet a replayed member holds them in (built from the
        # record's sorted list); topics that do not exist are left out, as Kafka's TopicIds resolves names.
        # (The heartbeat that changes a subscription hands Kafka's assignor a set built in the request's order,
        # which differs only for names sharing a hash bucket.)
        names = java_hash_set_order(sorted(member.subscribed_topic_names, key=java_string_sort_key), string_hash_code)
        # A member's regex adds the topics it resolved to (newMemberSubscriptionAndAssignment: its set alone, or
        # a UnionSet after the names); an unresolved regex adds nothing.
        resolved = self.resolved_regexes.get(member.subscribed_topic_regex) if member.subscribed_topic_regex else None
        if resolved is not None:
            regex_names = java_hash_set_order(sorted(resolved.topics, key=java_string_sort_key), string_hash_code)
            names = [*names, *(name for name in regex_names if name not in member.subscribed_topic_names)]
        subscribed = tuple(topic_id for name in names if (topic_id := topics.topic_id(name)) is not None)
        target = in_java_hash_map_order(self.target_assignment.get(member.member_id, {}), TopicId.java_hash)
        return MemberSpec(subscribed, target, member.instance_id, member.rack_id)
