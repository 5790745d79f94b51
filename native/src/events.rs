//! Mirrors part of `state/events.py`: the typed requests the classic group and offsets managers read
//! (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch and their parts) and
//! `group_partitions`. Parsing the input's rows into
//! them (and the other events) comes with the runtime's port.
//!
//! A request carries `handle`, the caller's name for it: the effects that answer a request hold the request
//! itself (shared, never changed once built), and the caller finds its own object by that name.

use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Vec<u8>,
    /// The consumer-protocol topics, parsed once; None when the metadata is not a consumer Subscription.
    pub topics: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionList {
    pub topic: String,
    pub partitions: Vec<i32>,
}

/// Flat (topic, partition) pairs as PartitionLists, one per topic in first-appearance order.
pub fn group_partitions<'a>(partitions: impl IntoIterator<Item = (&'a str, i32)>) -> Vec<PartitionList> {
    let mut by_topic: Vec<PartitionList> = Vec::new();
    for (topic, partition) in partitions {
        match by_topic.iter_mut().find(|p| p.topic == topic) {
            Some(list) => list.partitions.push(partition),
            None => by_topic.push(PartitionList { topic: topic.to_string(), partitions: vec![partition] }),
        }
    }
    by_topic
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberAssignment {
    pub member_id: String,
    pub assignment: Vec<u8>,
    /// The decoded consumer Assignment, None if opaque.
    pub partitions: Option<Vec<PartitionList>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveIdentity {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub reason: Option<String>,
}

/// What a captured broker answered to a replayed request (docs/captures.md); `error` None when the capture
/// holds no response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedAnswer {
    pub connection: Option<String>,
    pub error: Option<String>,
    pub member_id: Option<String>,
    pub generation_id: Option<i32>,
}

/// The fields every request carries that the managers read (Event's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub handle: u64,
    pub ts: i64,
    pub group_id: String,
    pub seq: i64,
    pub request_id: Option<String>,
    pub client_id: String,
    pub api_version: i16,
    pub captured: Option<CapturedAnswer>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinGroup {
    pub event: Event,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub client_host: String,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncGroup {
    pub event: Event,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignments: Vec<MemberAssignment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    pub event: Event,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaveGroup {
    pub event: Event,
    pub members: Vec<LeaveIdentity>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CommitPartition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// v1 only; -1 = use the coordinator's clock
    pub commit_timestamp: i64,
    /// A repeated commit's offsets rule (quiet_run.rs's `grown`); None: the same offset every time.
    pub records_per_second: Option<f64>,
    pub rate_origin_ts: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OffsetCommit {
    pub event: Event,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub retention_time_ms: i64,
    pub offsets: Vec<CommitPartition>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffsetFetch {
    pub event: Event,
    /// None = all committed partitions
    pub partitions: Option<Vec<PartitionList>>,
    pub require_stable: bool,
    /// v9+ (KIP-848): a consumer-protocol member's id and epoch; None and -1 from an admin client, a classic
    /// consumer or an older version.
    pub member_id: Option<String>,
    pub member_epoch: i32,
}

/// A request an effect answers (or whose connection fails), as the manager was given it.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    JoinGroup(Arc<JoinGroup>),
    SyncGroup(Arc<SyncGroup>),
    Heartbeat(Arc<Heartbeat>),
    LeaveGroup(Arc<LeaveGroup>),
    OffsetCommit(Arc<OffsetCommit>),
    OffsetFetch(Arc<OffsetFetch>),
}

impl Request {
    pub fn event(&self) -> &Event {
        match self {
            Request::JoinGroup(r) => &r.event,
            Request::SyncGroup(r) => &r.event,
            Request::Heartbeat(r) => &r.event,
            Request::LeaveGroup(r) => &r.event,
            Request::OffsetCommit(r) => &r.event,
            Request::OffsetFetch(r) => &r.event,
        }
    }
}
