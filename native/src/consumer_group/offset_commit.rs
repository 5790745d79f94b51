//! Mirrors `state/consumer_group/offset_commit.py`: the member epoch checks of an OffsetCommit or
//! TxnOffsetCommit to a consumer group (Kafka's ConsumerGroup.validateOffsetCommit, trunk) and of an
//! OffsetFetch (ConsumerGroup.validateOffsetFetch), and the consumer group as the offsets manager reads it
//! (offsets/manager.rs's `ConsumerGroupView`).
//!
//! A member commits at its current member epoch, or at an older one for partitions it has held since that
//! epoch or before (KIP-1251, 4.3+); Kafka 4.0 accepted only the current one. A member using the classic
//! protocol commits with its member epoch as the generation id, at any version, and is answered
//! ILLEGAL_GENERATION where a consumer-protocol member gets STALE_MEMBER_EPOCH.

use crate::consumer_group::group::{ConsumerGroup, ConsumerGroupState};
use crate::consumer_group::topic_id::TopicId;
use crate::offsets::manager::ConsumerGroupView;

/// OffsetCommit v9 (KIP-848) is the first a consumer-protocol member may commit with.
pub const MIN_CONSUMER_PROTOCOL_OFFSET_COMMIT_VERSION: i16 = 9;
pub const UNKNOWN_GENERATION_ID: i32 = -1;

/// The error the commit of `partitions` (topic id, partition) gets, "NONE" if it is accepted.
#[allow(clippy::too_many_arguments)]
pub fn validate_offset_commit(
    group: &ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
    member_epoch: i32,
    partitions: &[(TopicId, i32)],
    transactional: bool,
    api_version: i16,
    kafka_4_0: bool,
) -> &'static str {
    if member_epoch < 0 && group.members.is_empty() {
        return "NONE"; // the admin client, or a consumer without group management, committing to an empty group
    }
    if transactional && member_epoch == UNKNOWN_GENERATION_ID && member_id.is_empty() && instance_id.is_none() {
        return "NONE"; // a TxnOffsetCommit without the optional group fields
    }
    let Some(member) = group.members.get(member_id) else { return "UNKNOWN_MEMBER_ID" };
    if !transactional && !member.use_classic_protocol() && api_version < MIN_CONSUMER_PROTOCOL_OFFSET_COMMIT_VERSION {
        return "UNSUPPORTED_VERSION";
    }
    if member_epoch == member.member_epoch() {
        return "NONE";
    }
    let stale = if member.use_classic_protocol() { "ILLEGAL_GENERATION" } else { "STALE_MEMBER_EPOCH" };
    if member_epoch > member.member_epoch() || kafka_4_0 {
        return stale;
    }
    let current = &member.current;
    let epoch_of = |held: &[(TopicId, Vec<(i32, i32)>)], topic_id: &TopicId, partition: i32| {
        held.iter()
            .find(|(t, _)| t == topic_id)
            .and_then(|(_, ps)| ps.iter().find(|(p, _)| *p == partition))
            .map(|e| e.1)
    };
    for (topic_id, partition) in partitions {
        let assignment_epoch = epoch_of(&current.assigned_partitions, topic_id, *partition)
            .or_else(|| epoch_of(&current.partitions_pending_revocation, topic_id, *partition));
        if assignment_epoch.is_none_or(|epoch| member_epoch < epoch) {
            return stale;
        }
    }
    "NONE"
}

/// The error an OffsetFetch naming `member_id` at `member_epoch` gets, "NONE" if it is accepted.
pub fn validate_offset_fetch(group: &ConsumerGroup, member_id: Option<&str>, member_epoch: i32) -> &'static str {
    if member_id.is_none() && member_epoch < 0 {
        return "NONE";
    }
    let Some(member) = member_id.and_then(|m| group.members.get(m)) else { return "UNKNOWN_MEMBER_ID" };
    if member_epoch != member.member_epoch() {
        return if member.use_classic_protocol() { "ILLEGAL_GENERATION" } else { "STALE_MEMBER_EPOCH" };
    }
    "NONE"
}

impl ConsumerGroupView for ConsumerGroup {
    fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
        partitions: &[(TopicId, i32)],
        api_version: i16,
        kafka_4_0: bool,
    ) -> String {
        validate_offset_commit(
            self,
            member_id,
            group_instance_id,
            member_epoch,
            partitions,
            false,
            api_version,
            kafka_4_0,
        )
        .to_string()
    }

    fn validate_offset_fetch(&self, member_id: Option<&str>, member_epoch: i32) -> String {
        validate_offset_fetch(self, member_id, member_epoch).to_string()
    }

    fn is_empty(&self) -> bool {
        self.state() == ConsumerGroupState::Empty
    }

    fn is_subscribed_to(&self, topic: &str) -> bool {
        ConsumerGroup::is_subscribed_to(self, topic)
    }
}
