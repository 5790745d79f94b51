//! Mirrors `state/assignors/range.py`: RangeAssignor ("range", RangeAssignor.java). Each topic on its own, its
//! partitions cut into consecutive ranges over the topic's subscribers in MemberInfo order; the first
//! `P % N` subscribers get one extra partition.
//!
//! A member's list follows the iteration order of Kafka's partitionsPerTopic HashMap, then partition index.
//! The rack-aware pass (KIP-881) needs replica racks, which our topic metadata does not carry.

use rustc_hash::FxHashMap;
use std::rc::Rc;

use crate::assignors::model::GroupAssignmentInput;
use crate::classic::consumer_protocol::TopicPartition;

pub fn assign(inp: &GroupAssignmentInput) -> Vec<Vec<TopicPartition>> {
    let mut result = inp.empty_assignment();
    let mut rank = vec![0; inp.members.len()];
    for (r, m) in inp.member_info_order().into_iter().enumerate() {
        rank[m] = r;
    }

    // Subscribers of a topic in MemberInfo order = the union of the (already sorted) groups of identical
    // subscriptions that contain the topic.
    let mut groups_by_topic: FxHashMap<&Rc<str>, Vec<Vec<usize>>> = FxHashMap::default();
    for (topics, members) in &inp.topic_groups {
        let mut ids = members.clone();
        ids.sort_by_key(|&m| rank[m]);
        for topic in topics.iter() {
            groups_by_topic.entry(topic).or_default().push(ids.clone());
        }
    }

    for (topic, n_partitions) in &inp.partitions_per_topic {
        let groups = &groups_by_topic[topic];
        let subscribers: Vec<usize> = if groups.len() == 1 {
            groups[0].clone()
        } else {
            let mut merged: Vec<usize> = groups.concat();
            merged.sort_by_key(|&m| rank[m]);
            merged
        };
        let n_members = subscribers.len() as i32;
        let (quota, extra) = (n_partitions / n_members, n_partitions % n_members);
        let mut start = 0;
        // With fewer partitions than subscribers only the first n_partitions subscribers get one.
        for (i, &member) in subscribers.iter().take(n_members.min(*n_partitions) as usize).enumerate() {
            let end = start + quota + i32::from((i as i32) < extra);
            result[member].extend((start..end).map(|p| TopicPartition::new(topic, p)));
            start = end;
        }
    }
    result
}
