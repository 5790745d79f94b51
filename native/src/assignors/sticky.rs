//! Mirrors `state/assignors/sticky.py`: the sticky family's shared engine (Kafka's AbstractStickyAssignor)
//! and StickyAssignor ("sticky") itself.
//!
//! Three stages, each reproducing Kafka's order of operations exactly:
//!
//! 1. Claim resolution: every member's owned partitions, in the leader's subscriptions-HashMap order; a
//!    partition claimed twice goes to the higher generation, or to nobody on a tie.
//! 2. When every member's subscription is the same topic set, the constrained builder: keep owned
//!    partitions up to the quotas, then deal the rest round-robin, recording which partitions change owner.
//! 3. Otherwise the general builder: keep what is still valid, give each unassigned partition to the least
//!    loaded subscriber, then move partitions while that improves balance, preferring moves back to a
//!    previous-generation owner and moves that undo an earlier move of the same topic.
//!
//! Where Kafka's client throws, AssignorError::Assignor is returned. The performance shortcuts are the
//! Python reference's (per-subscription heaps ordered by (count, member id), the balance verdict cached
//! until the next move); none changes the result. Members are indices into `GroupAssignmentInput::members`.

use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;

use crate::assignors::model::{AssignorError, GroupAssignmentInput, MemberSubscription, Topics, py_repr};
use crate::classic::consumer_protocol::{TopicPartition, decode_sticky_user_data};
use crate::java_compat::{JavaHashSet, java_string_cmp, java_string_key};

/// AbstractStickyAssignor.DEFAULT_GENERATION
pub const NO_GENERATION: i32 = -1;

/// What an assignor reads as a member's previous ownership: the partitions and their generation (None =
/// Optional.empty(), which compares as -1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberData {
    pub partitions: Vec<TopicPartition>,
    pub generation: Option<i32>,
}

pub type MemberDataFn = fn(&MemberSubscription) -> MemberData;

pub struct StickyOutcome {
    pub assignment: Vec<Vec<TopicPartition>>,
    /// partition -> new owner, from the constrained builder; None on the general path, where Kafka leaves
    /// the cooperative assignor to derive it.
    pub transferring: Option<Vec<(TopicPartition, usize)>>,
}

/// StickyAssignor.memberData: always from userData, since eager clients have revoked everything before they
/// join. Undecodable userData counts as "no partitions, generation -1", as in Kafka.
pub fn sticky_member_data(member: &MemberSubscription) -> MemberData {
    match member.user_data.as_deref() {
        None | Some([]) => MemberData { partitions: Vec::new(), generation: None },
        Some(blob) => match decode_sticky_user_data(blob) {
            Ok(decoded) => MemberData { partitions: decoded.partitions, generation: decoded.generation },
            Err(_) => MemberData { partitions: Vec::new(), generation: Some(NO_GENERATION) },
        },
    }
}

/// StickyAssignor: the builder's output unchanged.
pub fn assign(inp: &GroupAssignmentInput) -> Result<Vec<Vec<TopicPartition>>, AssignorError> {
    Ok(run(inp, sticky_member_data)?.assignment)
}

pub fn run(inp: &GroupAssignmentInput, member_data: MemberDataFn) -> Result<StickyOutcome, AssignorError> {
    let data: Vec<MemberData> = inp.members.iter().map(member_data).collect();
    let claims = resolve_claims(inp, &data);
    if claims.all_equal {
        return constrained(inp, claims);
    }
    let assignment = GeneralBuilder::new(inp, claims, &data).build()?;
    Ok(StickyOutcome { assignment, transferring: None })
}

// ------------------------------------------------------------------------------------- claim resolution

struct Claims {
    all_equal: bool,
    /// member -> resolved owned partitions, in subscriptions order
    owned: Vec<Vec<TopicPartition>>,
    multiply_claimed: FxHashSet<TopicPartition>,
    max_generation: i32,
}

/// java.util.List.remove(Object): drop the first occurrence, if any.
fn remove_first(items: &mut Vec<TopicPartition>, item: &TopicPartition) -> bool {
    match items.iter().position(|x| x == item) {
        Some(i) => {
            items.remove(i);
            true
        }
        None => false,
    }
}

fn resolve_claims(inp: &GroupAssignmentInput, data: &[MemberData]) -> Claims {
    let mut all_equal = true;
    let mut reference: FxHashSet<&Rc<str>> = FxHashSet::default();
    let mut reference_list: Option<&Topics> = None;
    let mut claimed_by: FxHashMap<TopicPartition, usize> = FxHashMap::default();
    let mut owned: Vec<Vec<TopicPartition>> = vec![Vec::new(); inp.members.len()];
    let mut multiply_claimed = FxHashSet::default();
    let mut max_generation = NO_GENERATION;

    for (m, member) in inp.members.iter().enumerate() {
        // Kafka takes the first non-empty topic set as the reference, so members with an empty subscription
        // that come before it in HashMap order do not make the subscriptions unequal.
        if reference.is_empty() {
            reference.extend(member.topics.iter());
            reference_list = Some(&member.topics);
        } else if all_equal
            && !reference_list.is_some_and(|r| Rc::ptr_eq(r, &member.topics))
            && !(member.topics.len() == reference.len() && member.topics.iter().all(|t| reference.contains(t)))
        {
            all_equal = false;
        }

        let md = &data[m];
        let generation = md.generation.unwrap_or(NO_GENERATION);
        max_generation = max_generation.max(generation);
        for tp in &md.partitions {
            if !inp.counts.contains_key(&tp.topic) {
                continue;
            }
            let Some(&other) = claimed_by.get(tp) else {
                owned[m].push(tp.clone());
                claimed_by.insert(tp.clone(), m);
                continue;
            };
            // The rival is judged by its Subscription's GenerationId field, not by its member data; the two
            // differ for v1 cooperative subscriptions, whose generation only travels in userData.
            let other_generation = inp.members[other].subscription_generation();
            if generation == other_generation {
                multiply_claimed.insert(tp.clone());
                remove_first(&mut owned[other], tp);
                claimed_by.insert(tp.clone(), m);
            } else if generation > other_generation {
                owned[m].push(tp.clone());
                remove_first(&mut owned[other], tp);
                claimed_by.insert(tp.clone(), m);
            }
        }
    }
    Claims { all_equal, owned, multiply_claimed, max_generation }
}

fn partitions_of<'a>(
    topics: impl IntoIterator<Item = &'a Rc<str>>,
    counts: &FxHashMap<Rc<str>, i32>,
) -> Vec<TopicPartition> {
    topics.into_iter().flat_map(|t| (0..counts[t]).map(move |p| TopicPartition::new(t, p))).collect()
}

fn all_exist(partitions: &[TopicPartition], counts: &FxHashMap<Rc<str>, i32>) -> bool {
    partitions.iter().all(|tp| 0 <= tp.partition && tp.partition < counts[&tp.topic])
}

/// Kafka's getUnassignedPartitions: sort the kept partitions by `order` (the order of `all_partitions`) and
/// walk both lists once, skipping each partition equal to the next kept one.
///
/// Kept partitions are unique after claim resolution, so when they all exist this is a plain set
/// difference. A kept partition beyond its topic's partition count stalls Kafka's walk, and every partition
/// after it comes out unassigned even if kept; only that case needs the walk itself.
fn unassigned<K: Ord>(
    all_partitions: &[TopicPartition],
    kept: &[TopicPartition],
    kept_exist: bool,
    order: impl Fn(&TopicPartition) -> K,
) -> Vec<TopicPartition> {
    if kept_exist {
        let kept: FxHashSet<&TopicPartition> = kept.iter().collect();
        return all_partitions.iter().filter(|tp| !kept.contains(tp)).cloned().collect();
    }
    let mut sorted: Vec<&TopicPartition> = kept.iter().collect();
    sorted.sort_by_key(|tp| order(tp));
    let mut remaining = sorted.into_iter();
    let mut next_kept = remaining.next();
    let mut out = Vec::new();
    for tp in all_partitions {
        if next_kept == Some(tp) {
            next_kept = remaining.next();
        } else {
            out.push(tp.clone());
        }
    }
    out
}

fn topic_keys(inp: &GroupAssignmentInput) -> FxHashMap<Rc<str>, Vec<u16>> {
    inp.partitions_per_topic.iter().map(|(t, _)| (Rc::clone(t), java_string_key(t))).collect()
}

// ---------------------------------------------------------------------------------- constrained builder

fn constrained(inp: &GroupAssignmentInput, claims: Claims) -> Result<StickyOutcome, AssignorError> {
    let Claims { owned, multiply_claimed, .. } = claims;
    let n = owned.len();
    if n == 0 {
        return Err(AssignorError::Assignor(
            "ArithmeticException: / by zero (the sticky assignor was given no members)".into(),
        ));
    }
    let total: usize = inp.partitions_per_topic.iter().map(|(_, c)| *c as usize).sum();
    let (min_quota, expected_over_min) = (total / n, total % n);
    let max_quota = min_quota + usize::from(expected_over_min > 0);
    let mut over_min = 0;

    let topic_key = topic_keys(inp);
    let mut assignment: Vec<Vec<TopicPartition>> = vec![Vec::new(); n];
    let mut kept: Vec<TopicPartition> = Vec::new();
    let mut maybe_revoked: FxHashMap<TopicPartition, usize> = FxHashMap::default();
    let mut under_min: Vec<usize> = Vec::new();
    let mut exactly_min: Vec<usize> = Vec::new();

    for (member, claimed) in owned.iter().enumerate() {
        // Partition index first, then topic (KAFKA-16277, 3.8+): a member cut down to its quota keeps
        // partition 0 of every topic before partition 1 of any.
        let mut mine = claimed.clone();
        mine.sort_by(|a, b| (a.partition, &topic_key[&a.topic]).cmp(&(b.partition, &topic_key[&b.topic])));
        mine.retain(|tp| !multiply_claimed.contains(tp));
        let keep;
        if mine.len() < min_quota {
            keep = mine.len();
            under_min.push(member);
        } else if mine.len() >= max_quota && over_min < expected_over_min {
            keep = max_quota;
            over_min += 1;
            if over_min == expected_over_min {
                exactly_min.clear();
            }
        } else {
            keep = min_quota;
            if over_min < expected_over_min {
                exactly_min.push(member);
            }
        }
        assignment[member].extend_from_slice(&mine[..keep]);
        kept.extend_from_slice(&mine[..keep]);
        for tp in &mine[keep..] {
            maybe_revoked.insert(tp.clone(), member);
        }
    }

    let mut topics: Vec<&Rc<str>> = inp.partitions_per_topic.iter().map(|(t, _)| t).collect();
    topics.sort_by(|a, b| java_string_cmp(a, b));
    let unassigned = unassigned(&partitions_of(topics, &inp.counts), &kept, all_exist(&kept, &inp.counts), |tp| {
        (topic_key[&tp.topic].clone(), tp.partition)
    });

    // Kafka walks a LinkedList of under-quota members with an iterator, drops a member through the iterator
    // once it reaches minQuota, and restarts from the head when the walk ends. Here each walk is a round
    // over `this_round`; members still under quota are carried, in order, into `next_round`.
    let by_member_id = |a: &usize, b: &usize| java_string_cmp(&inp.members[*a].member_id, &inp.members[*b].member_id);
    let mut this_round = under_min;
    this_round.sort_by(by_member_id);
    let mut next_round: Vec<usize> = Vec::new();
    let mut position = 0;
    exactly_min.sort_by(by_member_id);
    let mut waiting: VecDeque<usize> = exactly_min.into();
    let mut transferring: Vec<(TopicPartition, usize)> = Vec::new();
    for tp in unassigned {
        let mut in_round = true;
        let member = if position < this_round.len() {
            position += 1;
            this_round[position - 1]
        } else if !next_round.is_empty() {
            this_round = std::mem::take(&mut next_round);
            position = 1;
            this_round[0]
        } else if let Some(member) = waiting.pop_front() {
            in_round = false;
            member
        } else {
            return Err(AssignorError::Assignor(
                "IllegalStateException: No more unfilled consumers to be assigned.".into(),
            ));
        };

        let target = &mut assignment[member];
        target.push(tp.clone());
        let moved_away = maybe_revoked.get(&tp).is_some_and(|&previous| previous != member);
        if moved_away || multiply_claimed.contains(&tp) {
            transferring.push((tp, member));
        }
        if target.len() == min_quota {
            waiting.push_back(member);
        } else {
            if target.len() == max_quota {
                over_min += 1;
            }
            if in_round {
                next_round.push(member);
            }
        }
    }

    let still_under: Vec<usize> = this_round[position..].iter().chain(&next_round).copied().collect();
    if !still_under.is_empty() {
        if over_min != expected_over_min {
            return Err(AssignorError::Assignor(
                "IllegalStateException: We haven't reached the expected number of members with more than the \
                 minQuota partitions, but no more partitions to be assigned"
                    .into(),
            ));
        }
        for member in still_under {
            if assignment[member].len() != min_quota {
                return Err(AssignorError::Assignor(format!(
                    "IllegalStateException: Consumer: [{}] doesn't reach minQuota partitions, and no more \
                     partitions to be assigned",
                    inp.members[member].member_id
                )));
            }
        }
    }
    Ok(StickyOutcome { assignment, transferring: Some(transferring) })
}

// -------------------------------------------------------------------------------------- general builder

/// Kafka's PartitionMovements: per topic, which partitions went from which member to which, so a later move
/// in the opposite direction sends back one of those partitions instead of a new one.
/// (from member, to member)
type Move = (usize, usize);

#[derive(Default)]
struct PartitionMovements {
    by_partition: FxHashMap<TopicPartition, Move>,
    by_topic: FxHashMap<Rc<str>, FxHashMap<Move, JavaHashSet<TopicPartition>>>,
}

impl PartitionMovements {
    fn partition_to_move(&self, tp: &TopicPartition, owner: usize, target: usize) -> TopicPartition {
        let Some(pairs) = self.by_topic.get(&tp.topic) else {
            return tp.clone();
        };
        let source = self.by_partition.get(tp).map_or(owner, |record| record.0);
        // Which one comes back is the first element of a java.util.FxHashSet<TopicPartition>.
        match pairs.get(&(target, source)).and_then(JavaHashSet::first) {
            Some(reverse) => reverse.clone(),
            None => tp.clone(),
        }
    }

    fn record_move(&mut self, tp: &TopicPartition, old: usize, new: usize) {
        let Some(record) = self.by_partition.get(tp).copied() else {
            self.add(tp, (old, new));
            return;
        };
        self.remove(tp, record);
        if record.0 != new {
            self.add(tp, (record.0, new));
        }
    }

    fn add(&mut self, tp: &TopicPartition, pair: Move) {
        self.by_partition.insert(tp.clone(), pair);
        self.by_topic.entry(Rc::clone(&tp.topic)).or_default().entry(pair).or_default().insert(tp.clone());
    }

    fn remove(&mut self, tp: &TopicPartition, pair: Move) {
        self.by_partition.remove(tp);
        let pairs = self.by_topic.get_mut(&tp.topic).expect("a recorded move has its topic's entry");
        let set = pairs.get_mut(&pair).expect("a recorded move has its pair's entry");
        set.remove(tp);
        if set.is_empty() {
            pairs.remove(&pair);
            if pairs.is_empty() {
                self.by_topic.remove(&tp.topic);
            }
        }
    }
}

/// Sum of |a - b| over all member pairs, in Java int arithmetic (it can overflow in very large groups, and
/// Kafka compares the wrapped values).
fn balance_score(counts: impl IntoIterator<Item = usize>) -> i32 {
    let mut ordered: Vec<i128> = counts.into_iter().map(|c| c as i128).collect();
    ordered.sort_unstable();
    let n = ordered.len() as i128;
    let sum: i128 = ordered.iter().enumerate().map(|(i, c)| c * (2 * i as i128 - n + 1)).sum();
    sum as i32
}

/// (partition count, rank of the member id in String order, member): the order of Kafka's
/// sortedCurrentSubscriptions.
type Load = (usize, usize, usize);

struct GeneralBuilder<'a> {
    inp: &'a GroupAssignmentInput,
    data: &'a [MemberData],
    max_generation: i32,
    cur: Vec<Vec<TopicPartition>>,
    rank: Vec<usize>,

    // Members with the same existing topics form a group; Kafka's per-member questions ("least loaded
    // subscriber of t", "could it take more?") are answered per group.
    subscriber_count: FxHashMap<Rc<str>, usize>,
    group_of: Vec<usize>,
    group_topics: Vec<Vec<Rc<str>>>,
    group_topic_set: Vec<FxHashSet<Rc<str>>>,
    group_members: Vec<Vec<usize>>,
    group_max_size: Vec<usize>,
    groups_of_topic: FxHashMap<Rc<str>, Vec<usize>>,

    owner: FxHashMap<TopicPartition, usize>,
    holders: FxHashMap<Rc<str>, FxHashMap<usize, usize>>,
    heaps: Vec<BinaryHeap<Reverse<Load>>>,
    // Members set aside once nothing they hold or lack can move (Kafka's fixedAssignments), and the rest.
    fixed: Vec<bool>,
    active: Vec<usize>,
    active_groups: Vec<usize>,
    movements: PartitionMovements,
    literal_balance: bool,
    balanced_cache: Option<bool>,
}

impl<'a> GeneralBuilder<'a> {
    fn new(inp: &'a GroupAssignmentInput, claims: Claims, data: &'a [MemberData]) -> Self {
        let n = inp.members.len();
        let mut by_id: Vec<usize> = (0..n).collect();
        by_id.sort_by(|&a, &b| java_string_cmp(&inp.members[a].member_id, &inp.members[b].member_id));
        let mut rank = vec![0; n];
        for (r, &m) in by_id.iter().enumerate() {
            rank[m] = r;
        }
        let topics = inp.partitions_per_topic.iter().map(|(t, _)| Rc::clone(t));
        let mut b = GeneralBuilder {
            inp,
            data,
            max_generation: claims.max_generation,
            cur: claims.owned,
            rank,
            subscriber_count: topics.clone().map(|t| (t, 0)).collect(),
            group_of: vec![0; n],
            group_topics: Vec::new(),
            group_topic_set: Vec::new(),
            group_members: Vec::new(),
            group_max_size: Vec::new(),
            groups_of_topic: topics.clone().map(|t| (t, Vec::new())).collect(),
            owner: FxHashMap::default(),
            holders: topics.map(|t| (t, FxHashMap::default())).collect(),
            heaps: Vec::new(),
            fixed: vec![false; n],
            active: Vec::new(),
            active_groups: Vec::new(),
            movements: PartitionMovements::default(),
            literal_balance: false,
            balanced_cache: None,
        };
        let mut group_index: FxHashMap<Vec<Rc<str>>, usize> = FxHashMap::default();
        for (subscribed, members) in &inp.topic_groups {
            let topics: Vec<Rc<str>> = subscribed.iter().filter(|t| inp.counts.contains_key(*t)).cloned().collect();
            let g = match group_index.get(&topics) {
                Some(&g) => g,
                None => {
                    let g = b.group_topics.len();
                    group_index.insert(topics.clone(), g);
                    b.group_topic_set.push(topics.iter().cloned().collect());
                    b.group_members.push(Vec::new());
                    b.group_max_size.push(topics.iter().map(|t| inp.counts[t] as usize).sum());
                    for t in &topics {
                        b.groups_of_topic.get_mut(t).expect("an existing topic").push(g);
                    }
                    b.group_topics.push(topics.clone());
                    b.heaps.push(BinaryHeap::new());
                    g
                }
            };
            for &m in members {
                b.group_members[g].push(m);
                b.group_of[m] = g;
            }
            for t in &topics {
                *b.subscriber_count.get_mut(t).expect("an existing topic") += members.len();
            }
        }
        b
    }

    // -- bookkeeping -----------------------------------------------------------------------------------

    fn count_changed(&mut self, member: usize) {
        self.heaps[self.group_of[member]].push(Reverse((self.cur[member].len(), self.rank[member], member)));
        self.balanced_cache = None;
    }

    fn add(&mut self, tp: TopicPartition, member: usize) {
        *self.holders.get_mut(&tp.topic).expect("an existing topic").entry(member).or_insert(0) += 1;
        self.owner.insert(tp.clone(), member);
        self.cur[member].push(tp);
        self.count_changed(member);
    }

    fn remove(&mut self, tp: &TopicPartition, member: usize) {
        assert!(remove_first(&mut self.cur[member], tp), "{tp} is not held by its recorded owner");
        let held = self.holders.get_mut(&tp.topic).expect("an existing topic");
        let count = held.get_mut(&member).expect("the owner holds a partition of the topic");
        *count -= 1;
        if *count == 0 {
            held.remove(&member);
        }
        self.count_changed(member);
    }

    fn group_least_loaded(&mut self, g: usize) -> Load {
        let heap = &mut self.heaps[g];
        loop {
            let Reverse(top) = *heap.peek().expect("every member of a group has an entry in its heap");
            if top.0 == self.cur[top.2].len() {
                return top;
            }
            heap.pop();
        }
    }

    /// The first member of Kafka's sortedCurrentSubscriptions (by count, then member id) subscribed to
    /// `topic`, with its partition count.
    fn least_loaded(&mut self, topic: &Rc<str>) -> (usize, usize) {
        let groups = self.groups_of_topic[topic].clone();
        let (count, _, member) =
            groups.into_iter().map(|g| self.group_least_loaded(g)).min().expect("a subscribed topic has a subscriber");
        (count, member)
    }

    // -- the algorithm ---------------------------------------------------------------------------------

    fn build(mut self) -> Result<Vec<Vec<TopicPartition>>, AssignorError> {
        let inp = self.inp;
        let members = 0..inp.members.len();
        let prev = self.previous_owners();
        let (revocation_required, kept) = self.drop_unsubscribed();
        for m in members.clone() {
            for tp in self.cur[m].clone() {
                *self.holders.get_mut(&tp.topic).expect("an existing topic").entry(m).or_insert(0) += 1;
                self.owner.insert(tp, m);
            }
            self.count_changed(m);
        }

        let topic_order: FxHashMap<Rc<str>, (usize, Vec<u16>)> = inp
            .partitions_per_topic
            .iter()
            .map(|(t, _)| (Rc::clone(t), (self.subscriber_count[t], java_string_key(t))))
            .collect();
        let mut sorted_topics: Vec<&Rc<str>> = inp.partitions_per_topic.iter().map(|(t, _)| t).collect();
        sorted_topics.sort_by(|a, b| topic_order[*a].cmp(&topic_order[*b]));
        let mut all_partitions = partitions_of(sorted_topics, &inp.counts);
        let kept_exist = all_exist(&kept, &inp.counts);
        let mut unassigned =
            unassigned(&all_partitions, &kept, kept_exist, |tp| (topic_order[&tp.topic].clone(), tp.partition));
        // Otherwise Kafka hands some partitions out twice, and only its literal balance check gives its answer.
        self.literal_balance = !kept_exist;

        let initializing = self.cur.iter().all(Vec::is_empty);
        for tp in &unassigned {
            let (_, member) = self.least_loaded(&tp.topic);
            self.add(tp.clone(), member);
        }

        // Only topics with two or more subscribers, and members holding or lacking some of those, can change.
        let movable: FxHashSet<&Rc<str>> =
            self.subscriber_count.iter().filter(|(_, n)| **n >= 2).map(|(t, _)| t).collect();
        all_partitions.retain(|tp| movable.contains(&tp.topic));
        unassigned.retain(|tp| movable.contains(&tp.topic));
        for m in members.clone() {
            let g = self.group_of[m];
            if self.cur[m].len() >= self.group_max_size[g] && !self.cur[m].iter().any(|tp| movable.contains(&tp.topic))
            {
                self.fixed[m] = true;
            }
        }
        self.active = members.filter(|&m| !self.fixed[m]).collect();
        // A group is all fixed or all active: two members with the same topics make each topic movable.
        let mut active_groups: Vec<usize> = self.active.iter().map(|&m| self.group_of[m]).collect();
        active_groups.sort_unstable();
        active_groups.dedup();
        self.active_groups = active_groups;
        let before: Vec<(usize, Vec<TopicPartition>)> = self.active.iter().map(|&m| (m, self.cur[m].clone())).collect();

        // Unless a subscription change already forces revocations, first try moving only new partitions.
        if !revocation_required {
            self.reassign_while_unbalanced(&unassigned, &prev)?;
        }
        let moved = self.reassign_while_unbalanced(&all_partitions, &prev)?;

        // Kafka keeps the moves of that last pass only if they improved the balance score.
        let after_score = balance_score(self.active.iter().map(|&m| self.cur[m].len()));
        if !initializing && moved && after_score >= balance_score(before.iter().map(|(_, p)| p.len())) {
            for (m, partitions) in before {
                self.cur[m] = partitions;
            }
        }
        Ok(self.cur)
    }

    /// Partitions claimed by members one or more generations behind, with the newest such claimant.
    fn previous_owners(&self) -> FxHashMap<TopicPartition, (usize, i32)> {
        let mut prev: FxHashMap<TopicPartition, (usize, i32)> = FxHashMap::default();
        for (m, md) in self.data.iter().enumerate() {
            let generation = match md.generation {
                Some(g) if g < self.max_generation => g,
                None if self.max_generation > NO_GENERATION => NO_GENERATION,
                _ => continue,
            };
            for tp in &md.partitions {
                if prev.get(tp).is_none_or(|known| generation > known.1) {
                    prev.insert(tp.clone(), (m, generation));
                }
            }
        }
        prev
    }

    /// Keep each member's resolved partitions of topics it still subscribes to (claim resolution already
    /// dropped topics that no longer exist).
    fn drop_unsubscribed(&mut self) -> (bool, Vec<TopicPartition>) {
        let mut revocation_required = false;
        let mut kept = Vec::new();
        for m in 0..self.cur.len() {
            let subscribed = &self.group_topic_set[self.group_of[m]];
            let mine = &mut self.cur[m];
            let before = mine.len();
            mine.retain(|tp| subscribed.contains(&tp.topic));
            revocation_required |= mine.len() != before;
            kept.extend_from_slice(mine);
        }
        (revocation_required, kept)
    }

    fn is_balanced(&mut self) -> Result<bool, AssignorError> {
        if let Some(balanced) = self.balanced_cache {
            return Ok(balanced);
        }
        let balanced = if self.literal_balance { self.compute_balanced_literal()? } else { self.compute_balanced() };
        self.balanced_cache = Some(balanced);
        Ok(balanced)
    }

    fn counts_within_one(&self) -> bool {
        let counts = self.active.iter().map(|&m| self.cur[m].len());
        let (min, max) = (counts.clone().min().unwrap_or(0), counts.max().unwrap_or(0));
        min + 1 >= max
    }

    fn compute_balanced(&mut self) -> bool {
        if self.counts_within_one() {
            return true;
        }
        // Unbalanced if some member that could take more lacks a partition of one of its topics that is held
        // by a member with at least two more partitions: compare, per group, the most loaded holder of the
        // group's topics with the group's least loaded member that is not already full.
        let mut most_loaded_holder: FxHashMap<Rc<str>, usize> = FxHashMap::default();
        for g in self.active_groups.clone() {
            let Some(floor) = self.least_unfilled_count(g) else {
                continue;
            };
            for t in &self.group_topics[g] {
                let top = *most_loaded_holder
                    .entry(Rc::clone(t))
                    .or_insert_with(|| self.holders[t].keys().map(|&h| self.cur[h].len()).max().unwrap_or(0));
                if top > floor + 1 {
                    return false;
                }
            }
        }
        true
    }

    /// Kafka's isBalanced as written, for assignments where a partition can have two holders: each partition
    /// is attributed to its last holder in map order, and a member does not lack a partition it holds itself.
    fn compute_balanced_literal(&self) -> Result<bool, AssignorError> {
        if self.counts_within_one() {
            return Ok(true);
        }
        let mut holder: FxHashMap<&TopicPartition, usize> = FxHashMap::default();
        for &m in &self.active {
            for tp in &self.cur[m] {
                holder.insert(tp, m);
            }
        }
        let mut by_load = self.active.clone();
        by_load.sort_by_key(|&m| (self.cur[m].len(), self.rank[m]));
        for m in by_load {
            let g = self.group_of[m];
            let count = self.cur[m].len();
            if count == self.group_max_size[g] {
                continue;
            }
            let mine: FxHashSet<&TopicPartition> = self.cur[m].iter().collect();
            for t in &self.group_topics[g] {
                for i in 0..self.inp.counts[t] {
                    let tp = TopicPartition::new(t, i);
                    if mine.contains(&tp) {
                        continue;
                    }
                    let Some(&other) = holder.get(&tp) else {
                        return Err(AssignorError::Assignor(format!(
                            "NullPointerException in AbstractStickyAssignor.isBalanced: nobody holds {tp}"
                        )));
                    };
                    if count + 1 < self.cur[other].len() {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    /// The smallest partition count among the group's members that Kafka would check, i.e. those whose count
    /// is not exactly the group's maximum assignment size.
    fn least_unfilled_count(&mut self, g: usize) -> Option<usize> {
        let full = self.group_max_size[g];
        let least = self.group_least_loaded(g).0;
        if least != full {
            return Some(least);
        }
        // Only reachable when a partition was moved to a previous owner no longer subscribed to its topic.
        self.group_members[g].iter().map(|&m| self.cur[m].len()).filter(|&n| n != full).min()
    }

    fn reassign_while_unbalanced(
        &mut self,
        partitions: &[TopicPartition],
        prev: &FxHashMap<TopicPartition, (usize, i32)>,
    ) -> Result<bool, AssignorError> {
        let mut moved = false;
        let mut modified = true;
        while modified {
            modified = false;
            for tp in partitions {
                if self.is_balanced()? {
                    break;
                }
                let owner_count = self.cur[self.owner[tp]].len();
                if let Some(&(previous_owner, generation)) = prev.get(tp) {
                    if self.fixed[previous_owner] {
                        return Err(AssignorError::Assignor(format!(
                            "NullPointerException in AbstractStickyAssignor.performReassignments: {tp} was last \
                             owned by {} in generation {generation}, but that member was set aside as fixed (it \
                             can take no partition that another member could take)",
                            py_repr(&self.inp.members[previous_owner].member_id)
                        )));
                    }
                    // No subscription check: Kafka hands the partition back to its previous owner even when
                    // that member has stopped subscribing to the topic.
                    if owner_count > self.cur[previous_owner].len() + 1 {
                        self.reassign(tp, previous_owner);
                        moved = true;
                        modified = true;
                        continue;
                    }
                }
                let (least_count, least) = self.least_loaded(&tp.topic);
                if owner_count > least_count + 1 {
                    self.reassign(tp, least);
                    moved = true;
                    modified = true;
                }
            }
        }
        Ok(moved)
    }

    fn reassign(&mut self, tp: &TopicPartition, target: usize) {
        let actual = self.movements.partition_to_move(tp, self.owner[tp], target);
        let old = self.owner[&actual];
        self.movements.record_move(&actual, old, target);
        self.remove(&actual, old);
        self.add(actual, target);
    }
}
