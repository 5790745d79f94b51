//! Mirrors part of `state/records/group_log.py`: the classic group's `__consumer_offsets` records, OffsetCommit and
//! GroupMetadata, as typed values (the reference keeps each value as a dict of the same fields), a classic
//! group's GroupMetadataValue (`group_metadata_value`) and the group a load rebuilds from it
//! (`group_from_value`). The group's compacted log (GroupLog) comes with the runtime's port.

use rustc_hash::FxHashMap;

use crate::classic::group::{ClassicGroup, ClassicGroupMember, decode_assignment_partitions, subscription_topics};
use crate::classic::group_state::GroupState;
use crate::consumer_group::topic_id::TopicId;
use crate::events::Protocol;

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
