//! Mirrors part of `state/records/group_log.py`: the classic group's `__consumer_offsets` records, OffsetCommit and
//! GroupMetadata, as typed values (the reference keeps each value as a dict of the same fields), a classic
//! group's GroupMetadataValue (`group_metadata_value`) and the group a load rebuilds from it
//! (`group_from_value`), and the group's partition as compaction keeps it (GroupLog), which a load replays.

use rustc_hash::FxHashMap;

use crate::classic::group::{ClassicGroup, ClassicGroupMember, decode_assignment_partitions, subscription_topics};
use crate::classic::group_state::GroupState;
use crate::consumer_group::records::ConsumerGroupRecord;
use crate::consumer_group::topic_id::TopicId;
use crate::dict::Dict;
use crate::events::Protocol;
use crate::records::record_bytes::AnyRecord;

/// OffsetCommitValue's fields. `topic_id` is the committed topic's id (Kafka 4.1+ writes it; None as Kafka
/// 4.0; the reference keeps its text form); `expire_ts` is set only by old clients' commits with a retention
/// time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitValue {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: Option<String>,
    pub commit_ts: i64,
    pub expire_ts: Option<i64>,
    pub topic_id: Option<TopicId>,
}

/// The `offsets` table's columns of a commit that are not part of its record: who committed it, and the
/// partition's log-end offset when it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitContext {
    pub generation_id: i32,
    pub member_id: String,
    pub log_end_offset: Option<i64>,
}

/// OffsetCommitKey(group, topic, partition) -> OffsetCommitValue, or a tombstone (`value` None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitRecord {
    pub topic: String,
    pub partition: i32,
    pub value: Option<OffsetCommitValue>,
    pub context: Option<CommitContext>,
}

/// One member of GroupMetadataValue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadataMember {
    pub member_id: Option<String>,
    pub group_instance_id: Option<String>,
    pub client_id: Option<String>,
    pub client_host: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// GroupMetadataValue's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: Option<String>,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub current_state_ts: Option<i64>,
    pub members: Vec<GroupMetadataMember>,
}

/// A classic group's record: OffsetCommit, or GroupMetadataKey(group) -> GroupMetadataValue (a tombstone
/// when the group is deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    OffsetCommit(OffsetCommitRecord),
    GroupMetadata(Option<GroupMetadataValue>),
}

/// A record's key in the group's partition, as the reference's key tuples name them: ("offset", topic,
/// partition), ("group_metadata",), or a consumer group record's (type id, then its member id or regex if its
/// key has one).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LogKey {
    Offset(String, i32),
    GroupMetadata,
    ConsumerGroup(i16, Option<String>),
}

/// A key's last value; a consumer group record is kept whole (the reference rebuilds it from key and value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogValue {
    Offset(OffsetCommitValue),
    GroupMetadata(GroupMetadataValue),
    ConsumerGroup(ConsumerGroupRecord),
}

/// The group's records in its `__consumer_offsets` partition, as compaction keeps them: the last value per
/// key, in the reference's dict order (a key written again keeps its place; after a tombstone it goes last),
/// which is the order a load replays the offsets and the consumer group's records in. It outlives the
/// coordinator: a broker that unloads the group drops its memory, not the partition. Replaying it gives the
/// same state as replaying every record in order, since each key's last record decides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupLog {
    values: Dict<LogKey, LogValue>,
}

impl GroupLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// A record appended: its value replaces the key's, a tombstone removes the key (compaction does).
    pub fn append(&mut self, record: &AnyRecord) {
        let (key, value) = match record {
            AnyRecord::Classic(Record::OffsetCommit(r)) => {
                (LogKey::Offset(r.topic.clone(), r.partition), r.value.clone().map(LogValue::Offset))
            }
            AnyRecord::Classic(Record::GroupMetadata(v)) => {
                (LogKey::GroupMetadata, v.clone().map(LogValue::GroupMetadata))
            }
            AnyRecord::ConsumerGroup(r) => {
                let (record_type, id) = r.key();
                let value = (!r.is_tombstone()).then(|| LogValue::ConsumerGroup(r.clone()));
                (LogKey::ConsumerGroup(record_type, id.map(str::to_string)), value)
            }
        };
        match value {
            Some(value) => self.values.insert(key, value),
            None => {
                self.values.remove(&key);
            }
        }
    }

    /// Every key's last value, in the log's order.
    pub fn values(&self) -> impl Iterator<Item = (&LogKey, &LogValue)> {
        self.values.iter()
    }

    pub fn group_metadata(&self) -> Option<&GroupMetadataValue> {
        match self.values.get(&LogKey::GroupMetadata) {
            Some(LogValue::GroupMetadata(v)) => Some(v),
            _ => None,
        }
    }

    /// Each partition's last offset record, in the log's order (what a load gives the offsets manager).
    pub fn offsets(&self) -> impl Iterator<Item = ((&str, i32), &OffsetCommitValue)> {
        self.values.iter().filter_map(|(key, value)| match (key, value) {
            (LogKey::Offset(topic, partition), LogValue::Offset(v)) => Some(((topic.as_str(), *partition), v)),
            _ => None,
        })
    }

    pub fn committed(&self, topic: &str, partition: i32) -> Option<&OffsetCommitValue> {
        match self.values.get(&LogKey::Offset(topic.to_string(), partition)) {
            Some(LogValue::Offset(v)) => Some(v),
            _ => None,
        }
    }

    /// A consumer group's records as compaction keeps them, each key's last value, in the log's order.
    /// Replaying them in any order gives the same group: no tombstone is kept, and each value is the latest.
    pub fn consumer_group_records(&self) -> impl Iterator<Item = &ConsumerGroupRecord> {
        self.values.values().filter_map(|value| match value {
            LogValue::ConsumerGroup(r) => Some(r),
            _ => None,
        })
    }
}

/// The GroupMetadataValue of `group` with the given assignment per member id.
pub fn group_metadata_value(
    group: &ClassicGroup,
    assignment: Option<&FxHashMap<String, Vec<u8>>>,
    protocol_type: Option<&str>,
) -> GroupMetadataValue {
    let members = group
        .all_members()
        .into_iter()
        .map(|m| GroupMetadataMember {
            member_id: Some(m.member_id.clone()),
            group_instance_id: m.group_instance_id.clone(),
            client_id: Some(m.client_id.clone()),
            client_host: Some(m.client_host.clone()),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            session_timeout_ms: m.session_timeout_ms,
            subscription: match &group.protocol_name {
                Some(name) => m.metadata(Some(name)).to_vec(),
                None => Vec::new(),
            },
            assignment: assignment.and_then(|a| a.get(&m.member_id)).cloned().unwrap_or_default(),
        })
        .collect();
    GroupMetadataValue {
        protocol_type: Some(
            protocol_type.map_or_else(|| group.protocol_type.clone().unwrap_or_default(), str::to_string),
        ),
        generation_id: group.generation_id,
        protocol_name: group.protocol_name.clone(),
        leader_id: group.leader_id.clone(),
        current_state_ts: Some(group.current_state_ts),
        members,
    }
}

/// The group a load rebuilds from its last GroupMetadataValue (Kafka's replay of GroupMetadataKey): Stable at
/// that generation if it has members, Empty otherwise.
pub fn group_from_value(group_id: &str, value: &GroupMetadataValue, now: i64) -> ClassicGroup {
    let mut group = ClassicGroup::new(group_id, now);
    group.protocol_type = value.protocol_type.clone().filter(|t| !t.is_empty());
    group.generation_id = value.generation_id;
    group.protocol_name = value.protocol_name.clone();
    group.leader_id = value.leader_id.clone();
    for m in &value.members {
        let topics = subscription_topics(group.protocol_type.as_deref(), &m.subscription);
        let member = ClassicGroupMember {
            member_id: m.member_id.clone().unwrap_or_default(),
            group_instance_id: m.group_instance_id.clone(),
            client_id: m.client_id.clone().unwrap_or_default(),
            client_host: m.client_host.clone().unwrap_or_default(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            session_timeout_ms: m.session_timeout_ms,
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocols: vec![Protocol {
                name: group.protocol_name.clone().unwrap_or_default(),
                metadata: m.subscription.clone(),
                topics,
            }],
            assignment: m.assignment.clone(),
            assignment_partitions: decode_assignment_partitions(group.protocol_type.as_deref(), &m.assignment),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
        };
        group.add(member, None);
    }
    group.leader_id = if value.members.is_empty() { None } else { value.leader_id.clone() };
    if !value.members.is_empty() {
        group.state = GroupState::Stable;
    }
    group.subscribed_topics = group.compute_subscribed_topics();
    group.current_state_ts = value.current_state_ts.filter(|&ts| ts >= 0).unwrap_or(now);
    group
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(topic: &str, offset: Option<i64>) -> AnyRecord {
        let value = offset.map(|offset| OffsetCommitValue {
            offset,
            leader_epoch: None,
            metadata: None,
            commit_ts: 0,
            expire_ts: None,
            topic_id: None,
        });
        AnyRecord::Classic(Record::OffsetCommit(OffsetCommitRecord {
            topic: topic.into(),
            partition: 0,
            value,
            context: None,
        }))
    }

    #[test]
    fn compaction_keeps_each_keys_last_value_and_a_tombstone_removes_it() {
        let mut log = GroupLog::new();
        for record in
            [commit("a", Some(1)), commit("b", Some(2)), commit("a", Some(3)), commit("b", None), commit("b", Some(4))]
        {
            log.append(&record);
        }
        let offsets: Vec<_> = log.offsets().map(|((topic, _), v)| (topic, v.offset)).collect();
        assert_eq!(offsets, [("a", 3), ("b", 4)]);
        assert_eq!(log.committed("b", 0).map(|v| v.offset), Some(4));
        assert!(log.group_metadata().is_none() && log.consumer_group_records().next().is_none());
    }
}
