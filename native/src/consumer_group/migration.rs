//! Mirrors `state/consumer_group/migration.py`: online migration of a classic group to a consumer group (Kafka's
//! GroupMetadataManager.validateOnlineUpgrade and convertToConsumerGroup, ConsumerGroup.fromClassicGroup and
//! createConsumerGroupRecords, trunk), under `group.consumer.migration.policy`. Every classic member becomes a
//! consumer group member using the classic protocol: at member epoch = the classic generation, STABLE,
//! holding the partitions of its last classic assignment (also its target), with its subscription decoded from
//! its protocol metadata. The conversion is returned as records and session timers; replaying the records
//! gives the converted group.

use crate::classic::consumer_protocol::{self, Assignment};
use crate::classic::group::{CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupMember};
use crate::config::CoordinatorConfig;
use crate::consumer_group::group::{ConsumerGroup, ConsumerGroupMember, ReplayError};
use crate::consumer_group::heartbeat::{GroupResult, HeartbeatError, session_timer};
use crate::consumer_group::reconciliation::member_state;
use crate::consumer_group::records::{
    AssignmentMetadata, ClassicMemberMetadata, ClassicProtocol, ConsumerGroupRecord, CurrentAssignment, GroupEpoch,
    MemberSubscription,
};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::java_compat::JavaHashMap;

/// A member's target as records carry it: (topic id, partitions), both ascending.
type Target = Vec<(TopicId, Vec<i32>)>;

/// ConsumerGroupMigrationPolicy.isUpgradeEnabled.
pub const UPGRADE_POLICIES: [&str; 2] = ["upgrade", "bidirectional"];

/// validateOnlineUpgrade: GROUP_ID_NOT_FOUND unless the classic group may become a consumer group.
pub fn validate_online_upgrade(classic: &ClassicGroup, config: &CoordinatorConfig) -> Result<(), HeartbeatError> {
    let message = if !UPGRADE_POLICIES.contains(&config.group_consumer_migration_policy.as_str()) {
        "online upgrade is disabled"
    } else if classic.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
        "the group does not use the consumer embedded protocol"
    } else if classic.members.len() as i64 > config.group_consumer_max_size {
        "the group size exceeds the consumer group maximum size"
    } else {
        return Ok(());
    };
    Err(not_found(classic, message))
}

fn not_found(classic: &ClassicGroup, why: &str) -> HeartbeatError {
    HeartbeatError {
        error: "GROUP_ID_NOT_FOUND",
        message: format!("Cannot upgrade classic group {} to consumer group because {why}.", classic.group_id),
    }
}

/// Why a conversion fails: a request the coordinator refuses (two classic members holding one partition
/// among the reasons: UNKNOWN_SERVER_ERROR, as Kafka's uncaught IllegalStateException), or a record its replay
/// refuses as invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrationError {
    Refused(HeartbeatError),
    Replay(ReplayError),
}

impl From<HeartbeatError> for MigrationError {
    fn from(error: HeartbeatError) -> Self {
        MigrationError::Refused(error)
    }
}

/// convertToConsumerGroup once validated: the consumer group's records (every member's MemberMetadata, the
/// group epoch, every member's target, the target's metadata, every member's current assignment; members in
/// the consumer group's HashMap order), a session timer per member at its classic session timeout, and the
/// group they replay to.
pub fn convert_to_consumer_group(
    classic: &ClassicGroup,
    topics: &TopicsImage,
    now: i64,
    config: &CoordinatorConfig,
) -> Result<(ConsumerGroup, GroupResult), MigrationError> {
    let generation = classic.generation_id;
    let mut table = JavaHashMap::default();
    for classic_member in classic.all_members() {
        let (member, assigned) = from_classic_member(classic, classic_member, topics, generation)?;
        table.insert(member.member_id.clone(), (member, assigned));
    }
    let members: Vec<&(ConsumerGroupMember, Target)> = table.entries().into_iter().map(|(_, m)| m).collect();
    let names: Vec<&str> =
        members.iter().flat_map(|(m, _)| m.subscribed_topic_names.iter().map(String::as_str)).collect();
    let mut records: Vec<ConsumerGroupRecord> = members
        .iter()
        .map(|(m, _)| ConsumerGroupRecord::MemberMetadata {
            member_id: m.member_id.clone(),
            value: Some(m.subscription()),
        })
        .collect();
    records.push(ConsumerGroupRecord::Metadata(Some(GroupEpoch {
        epoch: generation,
        metadata_hash: topics.metadata_hash(names),
    })));
    records.extend(members.iter().map(|(m, assigned)| ConsumerGroupRecord::TargetAssignmentMember {
        member_id: m.member_id.clone(),
        value: Some(assigned.clone()),
    }));
    records.push(ConsumerGroupRecord::TargetAssignmentMetadata(Some(AssignmentMetadata {
        assignment_epoch: generation,
        assignment_timestamp_ms: 0,
    })));
    records.extend(members.iter().map(|(m, _)| ConsumerGroupRecord::CurrentMemberAssignment {
        member_id: m.member_id.clone(),
        value: Some(m.current.clone()),
    }));
    let mut group = ConsumerGroup::new(&classic.group_id, false);
    for record in &records {
        group.replay(record).map_err(|error| match error {
            // Two classic members holding one partition (the leader's assignment gave it to both): Kafka's
            // addPartitionEpochs throws IllegalStateException, which no caller catches.
            ReplayError::Conflict(conflict) => {
                MigrationError::Refused(HeartbeatError { error: "UNKNOWN_SERVER_ERROR", message: conflict.0 })
            }
            invalid => MigrationError::Replay(invalid),
        })?;
    }
    let timers = members
        .iter()
        .map(|(m, _)| {
            let timeout = m.classic_member_metadata.as_ref().map(|c| i64::from(c.session_timeout_ms));
            session_timer(&m.member_id, now, config, timeout)
        })
        .collect();
    Ok((group, GroupResult { records, timers, ..GroupResult::default() }))
}

/// ConsumerGroup.fromClassicGroup for one member: the member and its assigned partitions by topic id, topics
/// and partitions ascending (topics the cluster does not know are dropped, as toTopicPartitionMap does).
fn from_classic_member(
    classic: &ClassicGroup,
    classic_member: &ClassicGroupMember,
    topics: &TopicsImage,
    generation: i32,
) -> Result<(ConsumerGroupMember, Target), MigrationError> {
    let Some(protocol_name) = classic.protocol_name.as_deref() else {
        // Kafka reads classicGroup.protocolName().get(): no protocol is chosen before the first generation.
        return Err(MigrationError::Refused(HeartbeatError {
            error: "UNKNOWN_SERVER_ERROR",
            message: format!("Classic group {} has no protocol yet.", classic.group_id),
        }));
    };
    if !classic_member.protocol_names().any(|name| name == protocol_name) {
        // A member that joined the ongoing rebalance with other protocols only: ClassicGroupMember.metadata
        // throws IllegalArgumentException, which no caller catches.
        return Err(MigrationError::Refused(HeartbeatError {
            error: "UNKNOWN_SERVER_ERROR",
            message: format!("Member does not support protocol {protocol_name}"),
        }));
    }
    let malformed = || not_found(classic, "the embedded consumer protocol is malformed");
    let subscription = consumer_protocol::decode_subscription(classic_member.metadata(Some(protocol_name)))
        .map_err(|_| malformed())?;
    let assignment = if classic_member.assignment.is_empty() {
        Assignment::default()
    } else {
        consumer_protocol::decode_assignment(&classic_member.assignment).map_err(|_| malformed())?
    };
    if assignment.user_data.as_ref().is_some_and(|u| !u.is_empty()) {
        return Err(not_found(classic, "an unsupported custom assignor is in use").into());
    }
    let mut assigned: Target = Vec::new();
    for tp in &assignment.partitions {
        if let Some(topic_id) = topics.topic_id(&tp.topic) {
            match assigned.iter_mut().find(|(t, _)| *t == topic_id) {
                Some((_, ps)) => ps.push(tp.partition),
                None => assigned.push((topic_id, vec![tp.partition])),
            }
        }
    }
    assigned.sort_unstable_by_key(|(t, _)| *t);
    for (_, ps) in &mut assigned {
        ps.sort_unstable();
        ps.dedup();
    }
    let current = CurrentAssignment {
        state: member_state::STABLE,
        member_epoch: generation,
        previous_member_epoch: generation,
        assigned_partitions: assigned
            .iter()
            .map(|(t, ps)| (*t, ps.iter().map(|p| (*p, generation)).collect()))
            .collect(),
        partitions_pending_revocation: Vec::new(),
    };
    let subscription = MemberSubscription {
        instance_id: classic_member.group_instance_id.clone(),
        rack_id: subscription.rack_id,
        client_id: classic_member.client_id.clone(),
        client_host: classic_member.client_host.clone(),
        subscribed_topic_names: subscription.topics,
        subscribed_topic_regex: String::new(),
        server_assignor: None,
        rebalance_timeout_ms: classic_member.rebalance_timeout_ms,
        classic_member_metadata: Some(ClassicMemberMetadata {
            session_timeout_ms: classic_member.session_timeout_ms,
            supported_protocols: classic_member
                .protocols
                .iter()
                .map(|p| ClassicProtocol { name: p.name.clone(), metadata: p.metadata.clone() })
                .collect(),
        }),
    };
    let mut member = ConsumerGroupMember::new(&classic_member.member_id).with_subscription(&subscription);
    member.current = current;
    Ok((member, assigned))
}
