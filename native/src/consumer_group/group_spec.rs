//! Mirrors `state/consumer_group/group_spec.py`: what a server-side assignor is given and what it returns
//! (Kafka's `GroupSpec`, `MemberSubscription`, `GroupAssignment`), the group's subscription type, and the
//! Java iteration orders the assignors depend on.
//!
//! As in the reference, every order is part of the input: members in `groupSpec.memberIds()` order, a
//! member's subscribed topic ids in its set's order, a member's current target assignment in its map's
//! order. Partition sets are java.util.FxHashSet<Integer> built from the ascending partitions.

use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt;

use crate::consumer_group::topic_id::TopicId;
use crate::java_compat::{JavaHash, JavaHashMap};

/// memberId -> [(topicId, partitions)]: an assignor's output, members in GroupSpec order, topics in TopicId
/// order, partitions ascending.
pub type GroupAssignment = Vec<(String, MemberAssignment)>;
pub type MemberAssignment = Vec<(TopicId, Vec<i32>)>;

/// Kafka's PartitionAssignorException: the assignor cannot compute a target assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionAssignorError(pub String);

impl fmt::Display for PartitionAssignorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PartitionAssignorError {}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionType {
    Homogeneous,
    Heterogeneous,
}

/// One member as the assignor sees it (`MemberSubscriptionAndAssignmentImpl`). `assignment` is the member's
/// current *target* assignment; `rack_id` is not read by either server-side assignor and is not carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberSpec {
    pub subscribed_topic_ids: Vec<TopicId>,
    pub assignment: Vec<(TopicId, Vec<i32>)>,
    pub instance_id: Option<String>,
}

/// `GroupSpecImpl`: the members in `memberIds()` order and the group's subscription type, with the inverted
/// target assignment (`isPartitionAssigned`) derived from the members' current target assignments.
#[derive(Clone, Debug)]
pub struct GroupSpec {
    pub members: Vec<(String, MemberSpec)>,
    pub subscription_type: SubscriptionType,
    assigned_partitions: FxHashMap<TopicId, FxHashSet<i32>>,
}

impl GroupSpec {
    pub fn new(members: Vec<(String, MemberSpec)>, subscription_type: SubscriptionType) -> Self {
        let mut assigned_partitions: FxHashMap<TopicId, FxHashSet<i32>> = FxHashMap::default();
        for (_, member) in &members {
            for (topic_id, partitions) in &member.assignment {
                assigned_partitions.entry(*topic_id).or_default().extend(partitions);
            }
        }
        GroupSpec { members, subscription_type, assigned_partitions }
    }

    pub fn is_partition_assigned(&self, topic_id: &TopicId, partition: i32) -> bool {
        self.assigned_partitions.get(topic_id).is_some_and(|p| p.contains(&partition))
    }
}

/// `SubscribedTopicDescriber.numPartitions`, failing as both assignors do for a topic that is not in the
/// metadata.
pub fn partition_count(counts: &FxHashMap<TopicId, i32>, topic_id: &TopicId) -> Result<i32, PartitionAssignorError> {
    counts.get(topic_id).copied().ok_or_else(|| {
        PartitionAssignorError(format!(
            "Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
        ))
    })
}

/// A member's assignment in output form: topics in TopicId order, partitions ascending.
pub fn canonical<'a>(assignment: impl IntoIterator<Item = (&'a TopicId, Vec<i32>)>) -> MemberAssignment {
    let mut out: MemberAssignment = assignment
        .into_iter()
        .map(|(t, mut partitions)| {
            partitions.sort_unstable();
            (*t, partitions)
        })
        .collect();
    out.sort_by_key(|(t, _)| *t);
    out
}

/// HashMap.tableSizeFor: the smallest power of two >= capacity.
fn table_size_for(capacity: usize) -> u32 {
    capacity.max(1).next_power_of_two() as u32
}

/// Iteration order of `new FxHashSet<>(items)` (its capacity sized for the collection), `items` being
/// inserted in the order given.
pub fn java_hash_set_order<K: JavaHash + Eq + std::hash::Hash + Clone>(items: &[K]) -> Vec<K> {
    // HashSet(Collection): initial capacity max((int) (n / .75f) + 1, 16); (int) (n / .75f) == 4n / 3.
    let mut table = JavaHashMap::with_capacity(table_size_for((items.len() * 4 / 3 + 1).max(16)));
    for item in items {
        table.insert(item.clone(), ());
    }
    table.keys()
}

/// Iteration order of a java.util.FxHashSet<Integer> holding `partitions`, built from them ascending.
pub fn java_int_set_order(partitions: &[i32]) -> Vec<i32> {
    let mut sorted = partitions.to_vec();
    sorted.sort_unstable();
    java_hash_set_order(&sorted)
}

/// `ConsumerGroup.subscriptionType` from each member's (topic names, regex); "" is no regex. Without
/// regexes the group is homogeneous iff every topic name is subscribed by every member (no members, or
/// nobody subscribing to anything, is homogeneous); with regexes, iff every member uses the same one and
/// nobody subscribes by name. A member's names are a set.
pub fn subscription_type<'a>(subscriptions: impl Iterator<Item = (&'a [String], &'a str)>) -> SubscriptionType {
    let mut members = 0usize;
    let mut name_counts: FxHashMap<&str, usize> = FxHashMap::default();
    let mut regex_counts: FxHashMap<&str, usize> = FxHashMap::default();
    for (names, regex) in subscriptions {
        members += 1;
        let distinct: FxHashSet<&str> = names.iter().map(String::as_str).collect();
        for name in distinct {
            *name_counts.entry(name).or_default() += 1;
        }
        if !regex.is_empty() {
            *regex_counts.entry(regex).or_default() += 1;
        }
    }
    let homogeneous = if regex_counts.is_empty() {
        name_counts.values().all(|&count| count == members)
    } else {
        regex_counts.len() == 1 && regex_counts.values().all(|&count| count == members) && name_counts.is_empty()
    };
    if homogeneous { SubscriptionType::Homogeneous } else { SubscriptionType::Heterogeneous }
}
