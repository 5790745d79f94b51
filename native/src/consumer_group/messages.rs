//! Mirrors `state/consumer_group/messages.py`: ConsumerGroupHeartbeat (API key 68) as the coordinator and the
//! client exchange it (Kafka's ConsumerGroupHeartbeatRequest.json / ConsumerGroupHeartbeatResponse.json,
//! v0-v1) and the member epochs with a meaning of their own. `None` in a request field is Kafka's null:
//! "unchanged since my last heartbeat". Partitions travel by topic id: (topic id, ascending partitions)
//! pairs in topic id order.

use crate::consumer_group::topic_id::TopicId;

/// A member joining (or rejoining after being fenced).
pub const JOIN_EPOCH: i32 = 0;
/// Leaving the group for good.
pub const LEAVE_EPOCH: i32 = -1;
/// A static member leaving for now: it keeps its partitions until its session ends.
pub const STATIC_LEAVE_EPOCH: i32 = -2;
pub const UNCHANGED_REBALANCE_TIMEOUT: i32 = -1;

/// A topic's partitions in a request or response.
pub type TopicPartitions = Vec<(TopicId, Vec<i32>)>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    /// v1+; "" clears the member's regex.
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// The partitions the member owns now.
    pub topic_partitions: Option<TopicPartitions>,
    pub api_version: i16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatResponse {
    /// Kafka's error name.
    pub error: String,
    pub error_message: Option<String>,
    pub member_id: Option<String>,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// None: nothing new to tell the member.
    pub assignment: Option<TopicPartitions>,
}

impl HeartbeatResponse {
    /// A successful response's fields (the reference's defaults for the others).
    pub fn ok(member_id: &str, member_epoch: i32) -> Self {
        HeartbeatResponse {
            error: "NONE".into(),
            error_message: None,
            member_id: Some(member_id.to_string()),
            member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    }
}
