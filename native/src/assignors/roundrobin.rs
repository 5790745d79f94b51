//! Mirrors `state/assignors/roundrobin.py`: RoundRobinAssignor ("roundrobin", RoundRobinAssignor.java).
//! Members in MemberInfo order on a circular iterator; partitions by topic name (String order) then index;
//! each partition goes to the next member, from the iterator's position, that subscribes to its topic, and
//! the iterator moves past it. The iterator is not reset between topics.
//!
//! The next subscriber is found by binary search over the topic's subscriber positions on the ring rather
//! than by skipping non-subscribers one by one; the result is the same.

use rustc_hash::FxHashMap;
use std::rc::Rc;

use crate::assignors::model::{AssignorError, GroupAssignmentInput};
use crate::classic::consumer_protocol::TopicPartition;
use crate::java_compat::java_string_cmp;

pub fn assign(inp: &GroupAssignmentInput) -> Result<Vec<Vec<TopicPartition>>, AssignorError> {
    if inp.members.is_empty() {
        return Err(AssignorError::Assignor(
            "IllegalArgumentException: CircularIterator can only be used on non-empty lists".into(),
        ));
    }
    let ring = inp.member_info_order();
    let mut position = vec![0; ring.len()];
    for (p, &m) in ring.iter().enumerate() {
        position[m] = p;
    }
    let mut result = inp.empty_assignment();

    let mut group_positions: Vec<Vec<usize>> = Vec::new();
    let mut groups_by_topic: FxHashMap<&Rc<str>, Vec<usize>> = FxHashMap::default();
    for (topics, members) in &inp.topic_groups {
        let mut positions: Vec<usize> = members.iter().map(|&m| position[m]).collect();
        positions.sort_unstable();
        group_positions.push(positions);
        for topic in topics.iter() {
            groups_by_topic.entry(topic).or_default().push(group_positions.len() - 1);
        }
    }

    // Topics sharing the same set of subscribing groups share one position list; None when everyone
    // subscribes.
    let mut positions_cache: FxHashMap<Vec<usize>, Option<Vec<usize>>> = FxHashMap::default();
    let mut topics: Vec<&(Rc<str>, i32)> = inp.partitions_per_topic.iter().collect();
    topics.sort_by(|a, b| java_string_cmp(&a.0, &b.0));
    let mut cursor = 0;
    for (topic, n_partitions) in topics {
        let key = &groups_by_topic[topic];
        let positions = positions_cache.entry(key.clone()).or_insert_with(|| {
            let everyone = key.iter().map(|&g| group_positions[g].len()).sum::<usize>() == ring.len();
            (!everyone).then(|| {
                let mut merged: Vec<usize> = key.iter().flat_map(|&g| group_positions[g].iter().copied()).collect();
                merged.sort_unstable();
                merged
            })
        });
        for p in 0..*n_partitions {
            if let Some(positions) = positions {
                let i = positions.partition_point(|&q| q < cursor);
                cursor = if i < positions.len() { positions[i] } else { positions[0] };
            }
            result[ring[cursor]].push(TopicPartition::new(topic, p));
            cursor = (cursor + 1) % ring.len();
        }
    }
    Ok(result)
}
