//! Mirrors `state/consumer_group/target_assignment.py`: a consumer group's next target assignment and the
//! records that persist it (Kafka's TargetAssignmentBuilder with the UpdatedMembersAndTargetAssignmentView
//! it is fed from, trunk).
//!
//! The builder starts from the group's members and target assignment and takes the heartbeat's change on top
//! without touching the group: a static member taking over an instance id replaces the member that held it
//! and takes over its target. `build` runs the assignor over the members in java.util.HashMap order (put in
//! the order the group's TimelineHashMap iterates its members, then the heartbeat's new ones), writes a
//! TargetAssignmentMember record for every member whose target changed, in that order, then the
//! TargetAssignmentMetadata record that sets the assignment epoch to the group epoch.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::consumer_group::downgrade::in_timeline_hash_map_order;
use crate::consumer_group::group::{Assignment, ConsumerGroupMember};
use crate::consumer_group::group_spec::{
    GroupAssignment, GroupSpec, MemberSpec, PartitionAssignorError, SubscriptionType, java_hash_set_order,
};
use crate::consumer_group::records::{AssignmentMetadata, ConsumerGroupRecord, ResolvedRegularExpression};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::dict::Dict;
use crate::java_compat::{JavaHashMap, java_string_cmp};

/// A server-side assignor (state.consumer_group.Assignor).
pub type Assignor<'a> =
    &'a dyn Fn(&GroupSpec, &FxHashMap<TopicId, i32>) -> Result<GroupAssignment, PartitionAssignorError>;

pub struct TargetAssignmentResult {
    pub records: Vec<ConsumerGroupRecord>,
    /// Every member's new target, in the GroupSpec's order.
    pub target_assignment: Vec<(String, Assignment)>,
}

pub struct TargetAssignmentBuilder<'g> {
    members: Dict<String, ConsumerGroupMember>,
    /// The group's member map is a TimelineHashMap: the GroupSpec's HashMap is filled in its order, then
    /// with the members the heartbeat adds.
    timeline_order: Vec<String>,
    static_members: Dict<String, String>,
    target_assignment: Dict<String, Assignment>,
    resolved_regexes: &'g Dict<String, ResolvedRegularExpression>,
}

/// An assignment as records carry it: topics in TopicId order, partitions ascending (group.topic_partitions).
pub fn topic_partitions(assignment: &Assignment) -> Vec<(TopicId, Vec<i32>)> {
    let mut out: Vec<(TopicId, Vec<i32>)> = assignment.iter().map(|(t, ps)| (*t, ps.clone())).collect();
    out.sort_unstable_by_key(|(t, _)| *t);
    out
}

/// Two targets equal as the reference's dicts of frozensets are (in any order).
fn same_target(a: &Assignment, b: Option<&Assignment>) -> bool {
    b.is_some_and(|b| a.len() == b.len() && a.iter().all(|(t, ps)| b.get(t) == Some(ps)))
}

impl<'g> TargetAssignmentBuilder<'g> {
    pub fn new(
        members: &Dict<String, ConsumerGroupMember>,
        static_members: &Dict<String, String>,
        target_assignment: &Dict<String, Assignment>,
        resolved_regexes: &'g Dict<String, ResolvedRegularExpression>,
    ) -> Self {
        TargetAssignmentBuilder {
            members: members.clone(),
            timeline_order: in_timeline_hash_map_order(members.keys()),
            static_members: static_members.clone(),
            target_assignment: target_assignment.clone(),
            resolved_regexes,
        }
    }

    pub fn add_or_update_member(&mut self, member: ConsumerGroupMember) {
        let member_id = member.member_id.clone();
        let instance_id = member.instance_id.clone();
        let previous = self.members.get(&member_id).and_then(|p| p.instance_id.clone());
        self.members.insert(member_id.clone(), member);
        // The mapping of an unchanged instance id stays, to tell a replacement below.
        if let Some(previous) = previous
            && Some(&previous) != instance_id.as_ref()
        {
            self.static_members.remove(&previous);
        }
        let Some(instance_id) = instance_id else { return };
        let replaced = self.static_members.get(&instance_id).cloned();
        self.static_members.insert(instance_id, member_id.clone());
        if let Some(replaced) = replaced
            && replaced != member_id
        {
            if let Some(target) = self.target_assignment.get(&replaced).cloned() {
                self.target_assignment.insert(member_id, target);
            }
            self.members.remove(&replaced);
            self.target_assignment.remove(&replaced);
        }
    }

    /// The members the target is built for, the heartbeat's changes applied.
    pub fn members(&self) -> &Dict<String, ConsumerGroupMember> {
        &self.members
    }

    pub fn remove_member(&mut self, member_id: &str) {
        if let Some(member) = self.members.remove(member_id)
            && let Some(instance_id) = &member.instance_id
            && self.static_members.get(instance_id).is_some_and(|m| m == member_id)
        {
            self.static_members.remove(instance_id);
        }
        self.target_assignment.remove(member_id);
    }

    pub fn build(
        &self,
        group_epoch: i32,
        assignor: Assignor<'_>,
        subscription_type: SubscriptionType,
        topics: &TopicsImage,
        now: i64,
    ) -> Result<TargetAssignmentResult, PartitionAssignorError> {
        let mut order: Vec<&String> = self.timeline_order.iter().filter(|m| self.members.contains_key(*m)).collect();
        let ordered: FxHashSet<&String> = order.iter().copied().collect();
        order.extend(self.members.keys().filter(|m| !ordered.contains(m)));
        let mut table = JavaHashMap::default();
        for member_id in order {
            table.insert(member_id.clone(), ());
        }
        let specs: Vec<(String, MemberSpec)> = table
            .keys()
            .into_iter()
            .map(|member_id| {
                let spec = self.member_spec(self.members.get(&member_id).expect("a member"), topics);
                (member_id, spec)
            })
            .collect();
        let spec = GroupSpec::new(specs, subscription_type);
        let computed: FxHashMap<String, Vec<(TopicId, Vec<i32>)>> =
            assignor(&spec, &topics.partition_counts())?.into_iter().collect();
        let mut records = Vec::new();
        let mut target = Vec::new();
        for (member_id, _) in &spec.members {
            let mut new = Assignment::default();
            for (topic_id, partitions) in computed.get(member_id).into_iter().flatten() {
                let mut partitions = partitions.clone();
                partitions.sort_unstable();
                partitions.dedup();
                new.insert(*topic_id, partitions);
            }
            if !same_target(&new, self.target_assignment.get(member_id)) {
                records.push(ConsumerGroupRecord::TargetAssignmentMember {
                    member_id: member_id.clone(),
                    value: Some(topic_partitions(&new)),
                });
            }
            target.push((member_id.clone(), new));
        }
        records.push(ConsumerGroupRecord::TargetAssignmentMetadata(Some(AssignmentMetadata {
            assignment_epoch: group_epoch,
            assignment_timestamp_ms: now,
        })));
        Ok(TargetAssignmentResult { records, target_assignment: target })
    }

    fn member_spec(&self, member: &ConsumerGroupMember, topics: &TopicsImage) -> MemberSpec {
        // The names in the order of the java.util.HashSet a replayed member holds them in (built from the
        // record's sorted list; the member keeps them sorted); topics that do not exist are left out.
        let mut names = java_hash_set_order(&member.subscribed_topic_names);
        // A member's regex adds the topics it resolved to; an unresolved regex adds nothing.
        let regex = &member.subscribed_topic_regex;
        if let Some(resolved) = self.resolved_regexes.get(regex.as_str()).filter(|_| !regex.is_empty()) {
            let mut regex_names = resolved.topics.clone();
            regex_names.sort_by(|a, b| java_string_cmp(a, b));
            for name in java_hash_set_order(&regex_names) {
                if !member.subscribed_topic_names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let subscribed_topic_ids = names.iter().filter_map(|name| topics.topic_id(name)).collect();
        let mut target = JavaHashMap::default();
        for (topic_id, partitions) in self.target_assignment.get(&member.member_id).into_iter().flat_map(Dict::iter) {
            target.insert(*topic_id, partitions.clone());
        }
        let assignment = target.entries().into_iter().map(|(t, ps)| (*t, ps.clone())).collect();
        MemberSpec { subscribed_topic_ids, assignment, instance_id: member.instance_id.clone() }
    }
}
