//! Mirrors `state/consumer_group/uniform.py`: the "uniform" server-side assignor (Kafka's `UniformAssignor`,
//! the broker's default), computing exactly Kafka's target assignment.
//!
//! Balance comes first (member sizes differ by at most one where subscriptions allow it), stickiness to the
//! current target assignment second. A HOMOGENEOUS group takes the quota-based path of
//! `UniformHomogeneousAssignmentBuilder`; any other group the balancing path of
//! `UniformHeterogeneousAssignmentBuilder`. Which one runs is the group's subscription type, as in Kafka.
//! Members are indices into `GroupSpec::members`.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::consumer_group::group_spec::{
    GroupAssignment, GroupSpec, PartitionAssignorError, SubscriptionType, canonical, java_hash_set_order,
    java_int_set_order, partition_count,
};
use crate::consumer_group::topic_id::TopicId;

pub const NAME: &str = "uniform";

/// The heterogeneous path's limit on passes over the topics while balancing.
pub const MAX_BALANCE_ITERATIONS: usize = 16;

/// `kafka_4_0`: Kafka 4.0.0's assignor for a homogeneous group (before KAFKA-18688).
pub fn assign(
    group: &GroupSpec,
    counts: &FxHashMap<TopicId, i32>,
    kafka_4_0: bool,
) -> Result<GroupAssignment, PartitionAssignorError> {
    if group.members.is_empty() {
        return Ok(Vec::new());
    }
    match group.subscription_type {
        SubscriptionType::Homogeneous => assign_homogeneous(group, counts, kafka_4_0),
        SubscriptionType::Heterogeneous => HeterogeneousBuilder::new(group, counts)?.build(),
    }
}

/// Every member keeps up to its quota of its current target; the rest is handed out in topic order.
///
/// The first `total % members` members in member order may keep one partition over the minimum quota, but a
/// member that does not fill that extra slot from its current target gives it back unless it is among the
/// last members that must take one (Kafka 4.1+, KAFKA-18688). Kafka 4.0 (`kafka_4_0`) gives the extra slots to
/// the first members whatever they hold, so a balanced assignment may still move.
pub fn assign_homogeneous(
    group: &GroupSpec,
    counts: &FxHashMap<TopicId, i32>,
    kafka_4_0: bool,
) -> Result<GroupAssignment, PartitionAssignorError> {
    let n = group.members.len() as i64;
    // The topics of the first member, through a java.util.HashSet: this order is the hand-out order.
    let topics = java_hash_set_order(&group.members[0].1.subscribed_topic_ids);
    if topics.is_empty() {
        return Ok(Vec::new());
    }
    let subscribed: FxHashSet<TopicId> = topics.iter().copied().collect();

    let mut unassigned: Vec<(TopicId, i32)> = Vec::new();
    let mut total: i64 = 0;
    for topic_id in &topics {
        let count = partition_count(counts, topic_id)?;
        unassigned.extend((0..count).filter(|&p| !group.is_partition_assigned(topic_id, p)).map(|p| (*topic_id, p)));
        total += i64::from(count);
    }
    let (minimum_quota, mut extra_left) = (total / n, total % n);

    let mut target: Vec<FxHashMap<TopicId, Vec<i32>>> = Vec::with_capacity(group.members.len());
    let mut unfilled: Vec<(usize, i64)> = Vec::new();
    for (index, (_, member)) in group.members.iter().enumerate() {
        let mut quota = minimum_quota;
        let mut has_extra = extra_left > 0;
        if has_extra {
            quota += 1;
        }
        let mut kept: FxHashMap<TopicId, Vec<i32>> = FxHashMap::default();
        for (topic_id, partitions) in &member.assignment {
            if !subscribed.contains(topic_id) {
                continue;
            }
            if partitions.len() as i64 <= quota {
                kept.insert(*topic_id, partitions.clone());
                quota -= partitions.len() as i64;
                continue;
            }
            let order = java_int_set_order(partitions);
            let keep = (quota as usize).min(order.len());
            if quota > 0 {
                kept.insert(*topic_id, order[..keep].to_vec());
            }
            unassigned.extend(order[keep..].iter().map(|&p| (*topic_id, p)));
            quota = 0;
        }
        if quota > 0 && has_extra && !kafka_4_0 && n - index as i64 > extra_left {
            quota -= 1;
            has_extra = false;
        }
        if quota > 0 {
            unfilled.push((index, quota));
        }
        if has_extra {
            extra_left -= 1;
        }
        target.push(kept);
    }

    let mut handed_out = 0usize;
    for (member, quota) in unfilled {
        let (from, to) = (handed_out.min(unassigned.len()), (handed_out + quota as usize).min(unassigned.len()));
        for (topic_id, partition) in &unassigned[from..to] {
            target[member].entry(*topic_id).or_default().push(*partition);
        }
        handed_out += quota as usize;
    }
    if handed_out < unassigned.len() {
        return Err(PartitionAssignorError("Partitions were left unassigned".into()));
    }
    Ok(group
        .members
        .iter()
        .zip(target)
        .map(|((id, _), t)| (id.clone(), canonical(t.iter().map(|(k, v)| (k, v.clone())))))
        .collect())
}

/// Hands out partitions to the least loaded and takes them from the most loaded of a set of members.
///
/// Members are sorted by (size, index). The least loaded range [0, least_end) holds the members at
/// `least_level + 1` or below once filled; the most loaded range [most_start, most_end) the members at
/// `most_level`. Both ranges widen as the levels move towards each other; members that have nothing of the
/// topic to give are swapped out past `most_end`. The sizes are the builder's, passed in live.
struct Balancer {
    order: Vec<usize>,
    least_end: usize,
    least_level: i64,
    next_least: usize,
    most_start: usize,
    most_end: usize,
    most_level: i64,
    next_most: i64,
}

impl Balancer {
    fn new(sizes: &[i64], members: &[usize]) -> Self {
        let mut order = members.to_vec();
        order.sort_by_key(|&m| (sizes[m], m));
        let len = order.len();
        Balancer {
            least_end: 0,
            least_level: sizes[order[0]] - 1,
            next_least: 0,
            most_start: len,
            most_end: len,
            most_level: sizes[order[len - 1]] + 1,
            next_most: len as i64 - 1,
            order,
        }
    }

    fn imbalance(&self, sizes: &[i64]) -> i64 {
        sizes[self.order[self.order.len() - 1]] - sizes[self.order[0]]
    }

    /// The member to give the next partition to.
    fn least_loaded(&mut self, sizes: &[i64]) -> usize {
        if self.next_least >= self.least_end {
            self.least_level += 1;
            while self.least_end < self.order.len() && sizes[self.order[self.least_end]] == self.least_level {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let member = self.order[self.next_least];
        self.next_least += 1;
        member
    }

    /// The member to take the next partition from, or None when no member is left to take from.
    fn most_loaded(&mut self, sizes: &[i64]) -> Option<usize> {
        if self.next_most < self.most_start as i64 {
            if self.most_end <= self.most_start && self.most_start > 0 {
                // Every member of the range was excluded: restart the level from the next member down.
                self.most_level = sizes[self.order[self.most_start - 1]];
            } else {
                self.most_level -= 1;
            }
            while self.most_start > 0 && sizes[self.order[self.most_start - 1]] == self.most_level {
                self.most_start -= 1;
            }
            self.next_most = self.most_end as i64 - 1;
        }
        if self.next_most < 0 {
            return None;
        }
        let member = self.order[self.next_most as usize];
        self.next_most -= 1;
        Some(member)
    }

    /// Drop the member `most_loaded` just returned from the most loaded range.
    fn exclude_last_most_loaded(&mut self) {
        let (slot, last) = ((self.next_most + 1) as usize, self.most_end - 1);
        self.order.swap(slot, last);
        self.most_end -= 1;
    }

    fn balanced(&self) -> bool {
        self.most_level - self.least_level <= 1
    }
}

struct HeterogeneousBuilder<'a> {
    group: &'a GroupSpec,
    /// Topics in order of first subscription, with their partition counts and subscribers.
    counts: Vec<(TopicId, i32)>,
    subscribers: FxHashMap<TopicId, Vec<usize>>,
    sizes: Vec<i64>,
    /// Each partition's owner, -1 for none.
    owners: FxHashMap<TopicId, Vec<i64>>,
    target: Vec<FxHashMap<TopicId, FxHashSet<i32>>>,
}

impl<'a> HeterogeneousBuilder<'a> {
    fn new(group: &'a GroupSpec, partition_counts: &FxHashMap<TopicId, i32>) -> Result<Self, PartitionAssignorError> {
        let mut counts: Vec<(TopicId, i32)> = Vec::new();
        let mut subscribers: FxHashMap<TopicId, Vec<usize>> = FxHashMap::default();
        for (index, (_, member)) in group.members.iter().enumerate() {
            for topic_id in &member.subscribed_topic_ids {
                let count = partition_count(partition_counts, topic_id)?;
                if !subscribers.contains_key(topic_id) {
                    counts.push((*topic_id, count));
                }
                subscribers.entry(*topic_id).or_default().push(index);
            }
        }
        let owners = counts.iter().map(|&(t, c)| (t, vec![-1; c.max(0) as usize])).collect();
        Ok(HeterogeneousBuilder {
            group,
            counts,
            subscribers,
            sizes: vec![0; group.members.len()],
            owners,
            target: Vec::new(),
        })
    }

    fn count(&self, topic_id: &TopicId) -> i32 {
        self.counts.iter().find(|(t, _)| t == topic_id).map_or(0, |(_, c)| *c)
    }

    /// Partitions per subscriber descending, then fewer subscribers first, then topic id.
    fn sort_topics(&self, topics: &mut [TopicId]) {
        let key = |t: &TopicId| {
            let subscribers = self.subscribers[t].len();
            (-(f64::from(self.count(t)) / subscribers as f64), subscribers, *t)
        };
        topics.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.partial_cmp(&kb.0).unwrap_or(std::cmp::Ordering::Equal).then(ka.1.cmp(&kb.1)).then(ka.2.cmp(&kb.2))
        });
    }

    fn build(mut self) -> Result<GroupAssignment, PartitionAssignorError> {
        if self.counts.is_empty() {
            return Ok(Vec::new());
        }
        self.keep_subscribed()?;
        let unassigned: FxHashMap<TopicId, Vec<i32>> = self
            .counts
            .iter()
            .map(|(t, _)| (*t, (0..).zip(&self.owners[t]).filter(|(_, o)| **o == -1).map(|(p, _)| p).collect()))
            .collect();
        let mut topics: Vec<TopicId> =
            self.counts.iter().map(|(t, _)| *t).filter(|t| !unassigned[t].is_empty()).collect();
        self.sort_topics(&mut topics);
        for topic_id in topics {
            let mut balancer = Balancer::new(&self.sizes, &self.subscribers[&topic_id]);
            for &partition in &unassigned[&topic_id] {
                let member = balancer.least_loaded(&self.sizes);
                self.move_partition(topic_id, partition, member);
            }
        }
        self.balance();
        Ok(self
            .group
            .members
            .iter()
            .zip(&self.target)
            .map(|((id, _), t)| (id.clone(), canonical(t.iter().map(|(k, v)| (k, v.iter().copied().collect())))))
            .collect())
    }

    /// Each member keeps the partitions of its current target whose topics it still subscribes to.
    fn keep_subscribed(&mut self) -> Result<(), PartitionAssignorError> {
        for (index, (member_id, member)) in self.group.members.iter().enumerate() {
            let subscribed: FxHashSet<&TopicId> = member.subscribed_topic_ids.iter().collect();
            let mut kept: FxHashMap<TopicId, FxHashSet<i32>> = FxHashMap::default();
            for (topic_id, partitions) in &member.assignment {
                if !subscribed.contains(topic_id) {
                    continue;
                }
                kept.insert(*topic_id, partitions.iter().copied().collect());
                self.sizes[index] += partitions.len() as i64;
                let owners = self.owners.get_mut(topic_id).expect("a subscribed topic has its partitions");
                let n_partitions = owners.len();
                for &partition in partitions {
                    let slot = usize::try_from(partition).ok().and_then(|p| owners.get_mut(p)).ok_or_else(|| {
                        PartitionAssignorError(format!(
                            "member {member_id}'s current assignment has partition {partition} of topic {topic_id}, \
                             which has {n_partitions} partitions"
                        ))
                    })?;
                    *slot = index as i64;
                }
            }
            self.target.push(kept);
        }
        Ok(())
    }

    fn move_partition(&mut self, topic_id: TopicId, partition: i32, member: usize) {
        let owner = &mut self.owners.get_mut(&topic_id).expect("a subscribed topic")[partition as usize];
        let previous = *owner;
        *owner = member as i64;
        if previous != -1 {
            let previous = previous as usize;
            if let Some(partitions) = self.target[previous].get_mut(&topic_id) {
                partitions.remove(&partition);
                if partitions.is_empty() {
                    self.target[previous].remove(&topic_id);
                }
            }
            self.sizes[previous] -= 1;
        }
        self.target[member].entry(topic_id).or_default().insert(partition);
        self.sizes[member] += 1;
    }

    /// Pass over the shared topics until a whole pass moves nothing (or the iteration limit).
    fn balance(&mut self) {
        let mut topics: Vec<TopicId> =
            self.counts.iter().map(|(t, _)| *t).filter(|t| self.subscribers[t].len() >= 2).collect();
        self.sort_topics(&mut topics);
        let mut last_moved: Option<usize> = None;
        for _ in 0..MAX_BALANCE_ITERATIONS {
            for (index, topic_id) in topics.iter().enumerate() {
                if last_moved == Some(index) {
                    return;
                }
                if self.balance_topic(*topic_id) > 0 || last_moved.is_none() {
                    last_moved = Some(index);
                }
            }
        }
    }

    /// Move the topic's partitions from its most to its least loaded subscribers; how many moved.
    fn balance_topic(&mut self, topic_id: TopicId) -> usize {
        let mut balancer = Balancer::new(&self.sizes, &self.subscribers[&topic_id]);
        if balancer.imbalance(&self.sizes) <= 1 {
            return 0;
        }
        let owners = &self.owners[&topic_id];
        // The topic's partitions grouped by owner; each owner gives away from the end of its slice.
        let mut partitions: Vec<i32> = (0..self.count(&topic_id)).collect();
        partitions.sort_by_key(|&p| (owners[p as usize], p));
        let mut start: FxHashMap<i64, usize> = FxHashMap::default();
        let mut end: FxHashMap<i64, usize> = FxHashMap::default();
        for (position, &partition) in partitions.iter().enumerate() {
            start.entry(owners[partition as usize]).or_insert(position);
            end.insert(owners[partition as usize], position + 1);
        }
        let mut moved = 0;
        while !balancer.balanced() {
            let mut giver = balancer.most_loaded(&self.sizes);
            while let Some(g) = giver {
                let g = g as i64;
                if end.get(&g).copied().unwrap_or(0) as i64 - start.get(&g).copied().unwrap_or(0) as i64 > 0 {
                    break;
                }
                balancer.exclude_last_most_loaded();
                giver = balancer.most_loaded(&self.sizes);
            }
            let Some(giver) = giver else {
                break;
            };
            let slot = end.get_mut(&(giver as i64)).expect("a giver has partitions of the topic");
            *slot -= 1;
            let partition = partitions[*slot];
            let taker = balancer.least_loaded(&self.sizes);
            if balancer.balanced() {
                break;
            }
            self.move_partition(topic_id, partition, taker);
            moved += 1;
        }
        moved
    }
}
