//! Mirrors `state/consumer_group/records.py` (the records; their replay is group.rs's): the records a consumer
//! group's coordinator appends to `__consumer_offsets` (Kafka's GroupCoordinatorRecordHelpers, trunk). Each
//! record is its key's fields plus its value; `None` is a tombstone. The type ids are CoordinatorRecordType's.

use crate::consumer_group::topic_id::TopicId;

pub const CONSUMER_GROUP_METADATA: i16 = 3;
pub const CONSUMER_GROUP_PARTITION_METADATA: i16 = 4;
pub const CONSUMER_GROUP_MEMBER_METADATA: i16 = 5;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: i16 = 6;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: i16 = 7;
pub const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: i16 = 8;
pub const CONSUMER_GROUP_REGULAR_EXPRESSION: i16 = 16;

/// Topic id -> (partition -> assignment epoch), each in the order held (reconciliation.PartitionEpochs).
pub type PartitionEpochs = Vec<(TopicId, Vec<(i32, i32)>)>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEpoch {
    pub epoch: i32,
    pub metadata_hash: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicProtocol {
    pub name: String,
    pub metadata: Vec<u8>,
}

/// What a member using the classic protocol joined with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    pub supported_protocols: Vec<ClassicProtocol>,
}

/// ConsumerGroupMemberMetadataValue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSubscription {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: String,
    pub server_assignor: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignmentMetadata {
    pub assignment_epoch: i32,
    pub assignment_timestamp_ms: i64,
}

/// ConsumerGroupRegularExpressionValue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedRegularExpression {
    pub topics: Vec<String>,
    pub version: i64,
    pub timestamp: i64,
}

/// A member's reconciliation state (reconciliation.CurrentAssignment); `state` is MemberState's byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentAssignment {
    pub state: i8,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub assigned_partitions: PartitionEpochs,
    pub partitions_pending_revocation: PartitionEpochs,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsumerGroupRecord {
    Metadata(Option<GroupEpoch>),
    /// Only ever a tombstone (trunk writes no value).
    PartitionMetadata,
    MemberMetadata {
        member_id: String,
        value: Option<MemberSubscription>,
    },
    TargetAssignmentMetadata(Option<AssignmentMetadata>),
    TargetAssignmentMember {
        member_id: String,
        value: Option<Vec<(TopicId, Vec<i32>)>>,
    },
    CurrentMemberAssignment {
        member_id: String,
        value: Option<CurrentAssignment>,
    },
    RegularExpression {
        regex: String,
        value: Option<ResolvedRegularExpression>,
    },
}

impl ConsumerGroupRecord {
    /// The record type id, and the key's member id or regex if it has one.
    pub fn key(&self) -> (i16, Option<&str>) {
        match self {
            ConsumerGroupRecord::Metadata(_) => (CONSUMER_GROUP_METADATA, None),
            ConsumerGroupRecord::PartitionMetadata => (CONSUMER_GROUP_PARTITION_METADATA, None),
            ConsumerGroupRecord::MemberMetadata { member_id, .. } => (CONSUMER_GROUP_MEMBER_METADATA, Some(member_id)),
            ConsumerGroupRecord::TargetAssignmentMetadata(_) => (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, None),
            ConsumerGroupRecord::TargetAssignmentMember { member_id, .. } => {
                (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, Some(member_id))
            }
            ConsumerGroupRecord::CurrentMemberAssignment { member_id, .. } => {
                (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, Some(member_id))
            }
            ConsumerGroupRecord::RegularExpression { regex, .. } => (CONSUMER_GROUP_REGULAR_EXPRESSION, Some(regex)),
        }
    }

    pub fn is_tombstone(&self) -> bool {
        match self {
            ConsumerGroupRecord::Metadata(v) => v.is_none(),
            ConsumerGroupRecord::PartitionMetadata => true,
            ConsumerGroupRecord::MemberMetadata { value, .. } => value.is_none(),
            ConsumerGroupRecord::TargetAssignmentMetadata(v) => v.is_none(),
            ConsumerGroupRecord::TargetAssignmentMember { value, .. } => value.is_none(),
            ConsumerGroupRecord::CurrentMemberAssignment { value, .. } => value.is_none(),
            ConsumerGroupRecord::RegularExpression { value, .. } => value.is_none(),
        }
    }
}
