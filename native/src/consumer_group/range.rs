//! Mirrors `state/consumer_group/range.py`: the "range" server-side assignor (Kafka's group-coordinator
//! `RangeAssignor`), computing exactly Kafka's target assignment.
//!
//! Each topic is cut into contiguous ranges over its subscribers in one fixed member order: static members
//! first, by instance id, then the others by member id (Java String order). The first
//! `partitions % subscribers` members take one partition more. It never looks at the current target
//! assignment.

use rustc_hash::FxHashMap;
use std::cmp::Ordering;

use crate::consumer_group::group_spec::{
    GroupAssignment, GroupSpec, MemberAssignment, MemberSpec, PartitionAssignorError, SubscriptionType, canonical,
    partition_count,
};
use crate::consumer_group::topic_id::TopicId;
use crate::java_compat::java_string_cmp;

pub const NAME: &str = "range";

fn member_order(a: &(String, MemberSpec), b: &(String, MemberSpec)) -> Ordering {
    match (&a.1.instance_id, &b.1.instance_id) {
        (Some(x), Some(y)) => java_string_cmp(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_string_cmp(&a.0, &b.0),
    }
}

pub fn assign(
    group: &GroupSpec,
    partition_counts: &FxHashMap<TopicId, i32>,
) -> Result<GroupAssignment, PartitionAssignorError> {
    if group.members.is_empty() {
        return Ok(Vec::new());
    }
    let mut members: Vec<&(String, MemberSpec)> = group.members.iter().collect();
    members.sort_by(|a, b| member_order(a, b));
    // A homogeneous group is assigned by the first sorted member's topics; they are everyone's.
    let homogeneous_topics = &members[0].1.subscribed_topic_ids;
    let homogeneous = group.subscription_type == SubscriptionType::Homogeneous;
    let topics_of = |member: &'_ MemberSpec| -> Vec<TopicId> {
        if homogeneous { homogeneous_topics.clone() } else { member.subscribed_topic_ids.clone() }
    };

    let mut subscribers: FxHashMap<TopicId, i32> = FxHashMap::default();
    let mut counts: FxHashMap<TopicId, i32> = FxHashMap::default();
    for (_, member) in &members {
        for topic_id in topics_of(member) {
            counts.insert(topic_id, partition_count(partition_counts, &topic_id)?);
            *subscribers.entry(topic_id).or_insert(0) += 1;
        }
    }

    let mut next_start: FxHashMap<TopicId, i32> = counts.keys().map(|t| (*t, 0)).collect();
    let mut extra_left: FxHashMap<TopicId, i32> = counts.iter().map(|(t, c)| (*t, c % subscribers[t])).collect();
    let mut assignment: FxHashMap<&str, MemberAssignment> = FxHashMap::default();
    for (member_id, member) in &members {
        let mut ranges: FxHashMap<TopicId, Vec<i32>> = FxHashMap::default();
        for topic_id in topics_of(member) {
            let mut quota = counts[&topic_id] / subscribers[&topic_id];
            let extra = extra_left.get_mut(&topic_id).expect("a counted topic");
            if *extra > 0 {
                quota += 1;
                *extra -= 1;
            }
            let start = next_start[&topic_id];
            let end = (start + quota).min(counts[&topic_id]);
            next_start.insert(topic_id, end);
            if start < end {
                ranges.insert(topic_id, (start..end).collect());
            }
        }
        assignment.insert(member_id, canonical(ranges.iter().map(|(t, p)| (t, p.clone()))));
    }
    Ok(group.members.iter().map(|(id, _)| (id.clone(), assignment.remove(id.as_str()).unwrap_or_default())).collect())
}
