//! Mirrors part of `state/records/group_log.py`: the classic group's `__consumer_offsets` records, OffsetCommit and
//! GroupMetadata, as typed values (the reference keeps each value as a dict of the same fields). The group's
//! compacted log (GroupLog) and its replay come with the runtime's port.

use crate::consumer_group::topic_id::TopicId;

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

/// OffsetCommitKey(group, topic, partition) -> OffsetCommitValue, or a tombstone (`value` None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetCommitRecord {
    pub topic: String,
    pub partition: i32,
    pub value: Option<OffsetCommitValue>,
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
