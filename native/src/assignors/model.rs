//! Mirrors `state/assignors/model.py`: the inputs and outputs shared by every classic assignor, and the input
//! preparation all of Kafka's built-in assignors go through (AbstractPartitionAssignor.assign).
//!
//! The leader decodes each JoinGroup member's metadata into a Subscription and puts it in a
//! java.util.HashMap keyed by member id, inserting in the order of the JoinGroup response's member list. The
//! collected topics go through a HashSet, and the partition counts through a HashMap. Several results depend
//! on the iteration order of those maps, so GroupAssignmentInput keeps the members and topics in exactly
//! that order. Members are referred to by their index in `GroupAssignmentInput::members`.

use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;

use crate::classic::consumer_protocol::TopicPartition;
use crate::java_compat::{JavaHash, JavaHashMap, java_string_cmp, string_hash_code};

/// A subscription's topic names, shared between the members that have the same list.
pub type Topics = Rc<[Rc<str>]>;

impl JavaHash for Rc<str> {
    fn java_hash(&self) -> i32 {
        string_hash_code(self)
    }
}

/// Where Kafka's client throws (`Assignor`: the leader sends no assignment for this generation), or the
/// input is not one a leader can have (`Value`: the Python reference's ValueError).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssignorError {
    Assignor(String),
    Value(String),
}

impl fmt::Display for AssignorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssignorError::Assignor(m) | AssignorError::Value(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AssignorError {}

/// One JoinGroup member as the leader's assignor sees it. `generation_id` None or negative means absent,
/// which Kafka compares as -1; `rack` is carried but unused (no replica racks in our topic metadata).
/// `topics` is shared: the members of a group mostly subscribe to one list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberSubscription {
    pub member_id: String,
    pub topics: Topics,
    pub group_instance_id: Option<String>,
    pub owned_partitions: Vec<TopicPartition>,
    pub generation_id: Option<i32>,
    pub rack: Option<String>,
    pub user_data: Option<Vec<u8>>,
}

impl MemberSubscription {
    /// The GenerationId field as Kafka compares it (absent = -1).
    pub fn subscription_generation(&self) -> i32 {
        match self.generation_id {
            Some(g) if g >= 0 => g,
            _ => -1,
        }
    }

    /// Subscription.generationId().isPresent(): v2+ and not negative.
    pub fn has_generation(&self) -> bool {
        matches!(self.generation_id, Some(g) if g >= 0)
    }
}

/// AbstractPartitionAssignor.MemberInfo order: static members first by group.instance.id, then dynamic
/// members by member.id, both in Java String.compareTo order.
pub fn member_info_cmp(a: &MemberSubscription, b: &MemberSubscription) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_string_cmp(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_string_cmp(&a.member_id, &b.member_id),
    }
}

/// The leader's view of one assignment round.
#[derive(Clone, Debug)]
pub struct GroupAssignmentInput {
    /// Every member, in the iteration order of the leader's `subscriptions` HashMap.
    pub members: Vec<MemberSubscription>,
    /// The subscribed topics that exist with at least one partition, in the iteration order of Kafka's
    /// `partitionsPerTopic` HashMap.
    pub partitions_per_topic: Vec<(Rc<str>, i32)>,
    /// The same counts, by topic.
    pub counts: FxHashMap<Rc<str>, i32>,
    /// Members grouped by identical topic list, lists in order of first appearance: per-topic work is done
    /// once per distinct subscription instead of once per member.
    pub topic_groups: Vec<(Topics, Vec<usize>)>,
}

impl GroupAssignmentInput {
    pub fn build(
        members: &[MemberSubscription],
        partitions_per_topic: &FxHashMap<Rc<str>, i32>,
    ) -> Result<Self, AssignorError> {
        let mut by_id: JavaHashMap<String, usize> = JavaHashMap::default();
        for (i, m) in members.iter().enumerate() {
            if by_id.contains_key(&m.member_id) {
                return Err(AssignorError::Value(format!(
                    "member id {} appears twice in the member list",
                    py_repr(&m.member_id)
                )));
            }
            by_id.insert(m.member_id.clone(), i);
        }
        let ordered: Vec<MemberSubscription> = by_id.entries().into_iter().map(|(_, &i)| members[i].clone()).collect();

        let mut topic_groups: Vec<(Topics, Vec<usize>)> = Vec::new();
        // A shared list is found by its address before its names are hashed.
        let mut group_of_list: FxHashMap<*const [Rc<str>], usize> = FxHashMap::default();
        let mut group_of: FxHashMap<&[Rc<str>], usize> = FxHashMap::default();
        for (i, m) in ordered.iter().enumerate() {
            let g = match group_of_list.get(&Rc::as_ptr(&m.topics)) {
                Some(&g) => g,
                None => {
                    let g = *group_of.entry(&m.topics).or_insert_with(|| {
                        topic_groups.push((Rc::clone(&m.topics), Vec::new()));
                        topic_groups.len() - 1
                    });
                    group_of_list.insert(Rc::as_ptr(&m.topics), g);
                    g
                }
            };
            topic_groups[g].1.push(i);
        }
        // The HashSet of subscribed topics is filled member by member; a member whose topic list was already
        // seen adds nothing new, so each distinct list is walked once.
        let mut subscribed: JavaHashMap<Rc<str>, ()> = JavaHashMap::default();
        for (topics, _) in &topic_groups {
            for topic in topics.iter() {
                subscribed.insert(Rc::clone(topic), ());
            }
        }

        let mut existing: JavaHashMap<Rc<str>, i32> = JavaHashMap::default();
        for topic in subscribed.keys() {
            match partitions_per_topic.get(&topic).copied() {
                None | Some(0) => continue,
                Some(count) if count < 0 => {
                    return Err(AssignorError::Value(format!(
                        "topic {} has a negative partition count {count}",
                        py_repr(&topic)
                    )));
                }
                Some(count) => existing.insert(topic, count),
            }
        }
        let partitions_per_topic: Vec<(Rc<str>, i32)> =
            existing.entries().into_iter().map(|(t, &n)| (Rc::clone(t), n)).collect();
        let counts = partitions_per_topic.iter().cloned().collect();
        Ok(GroupAssignmentInput { members: ordered, partitions_per_topic, counts, topic_groups })
    }

    /// Member indices in MemberInfo order: a stable sort over the HashMap order, like Collections.sort over a
    /// list filled from the HashMap.
    pub fn member_info_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.members.len()).collect();
        order.sort_by(|&a, &b| member_info_cmp(&self.members[a], &self.members[b]));
        order
    }

    /// An empty assignment list per member.
    pub fn empty_assignment(&self) -> Vec<Vec<TopicPartition>> {
        vec![Vec::new(); self.members.len()]
    }
}

/// Python's repr() of a str, which the reference's error messages show: single quotes unless the text has a
/// single quote and no double quote; backslash, the quote and the control characters escaped.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}
