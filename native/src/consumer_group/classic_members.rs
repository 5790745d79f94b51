//! Mirrors `state/consumer_group/classic_members.py`: members using the classic protocol inside a consumer group
//! (Kafka's GroupMetadataManager classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup and
//! classicGroupHeartbeatToConsumerGroup, trunk). A classic member's JoinGroup is its heartbeat (heartbeat.rs's
//! MemberUpdate, with the subscription in its first protocol's metadata), answered with its member epoch as
//! the generation and no leader; SyncGroup answers its current assignment unless a new target was computed
//! since; Heartbeat answers REBALANCE_IN_PROGRESS while it must rejoin. A JoinGroup whose static member
//! replaces the last member using the consumer protocol downgrades the group when the policy allows.

use rustc_hash::FxHashMap;

use crate::classic::consumer_protocol::{self, Subscription};
use crate::classic::group::CONSUMER_PROTOCOL_TYPE;
use crate::consumer_group::downgrade::{Downgrade, downgrade_allowed_with_replaced_member};
use crate::consumer_group::group::{ConsumerGroup, ConsumerGroupMember};
use crate::consumer_group::heartbeat::{
    GroupResult, HeartbeatContext, HeartbeatError, Held, JOIN_TIMEOUT, MemberUpdate, Response, SYNC_TIMEOUT, TimerArgs,
    TimerChange, held_partitions, session_timer,
};
use crate::consumer_group::messages::{HeartbeatRequest, JOIN_EPOCH, TopicPartitions};
use crate::consumer_group::reconciliation::member_state;
use crate::consumer_group::records::{ClassicMemberMetadata, ClassicProtocol};
use crate::consumer_group::topic_id::TopicId;

/// JoinGroup v4+ (KIP-394): a dynamic member with no member id is given one and must join again with it.
pub const REQUIRES_KNOWN_MEMBER_ID_VERSION: i16 = 4;

/// What a JoinGroup, SyncGroup or Heartbeat to the consumer group answers (the fields Kafka sets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicResponse {
    pub error: String,
    pub member_id: String,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// SyncGroup: the member's partitions.
    pub assignment: Option<TopicPartitions>,
}

impl ClassicResponse {
    pub fn error(error: &str) -> Self {
        ClassicResponse {
            error: error.to_string(),
            member_id: String::new(),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            assignment: None,
        }
    }
}

fn answer(response: ClassicResponse, timers: Vec<TimerChange>) -> GroupResult {
    GroupResult { response: Some(Response::Classic(response)), timers, ..GroupResult::default() }
}

fn fail(error: HeartbeatError) -> GroupResult {
    answer(ClassicResponse::error(error.error), Vec::new())
}

fn refuse<T>(error: &'static str, message: String) -> Result<T, HeartbeatError> {
    Err(HeartbeatError { error, message })
}

/// A JoinGroup to the classic protocol's fields.
pub struct ClassicJoin<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub protocol_type: &'a str,
    pub protocols: &'a [ClassicProtocol],
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub api_version: i16,
    pub client_id: &'a str,
    pub client_host: &'a str,
    /// The id a JoinGroup with an empty member id gets (Kafka draws a random Uuid); unused otherwise.
    pub generated_member_id: &'a str,
}

// ----------------------------------------------------------------------------------------------------------
// JoinGroup (classicGroupJoinToConsumerGroup)

/// A JoinGroup to the non-empty consumer group.
pub fn classic_group_join(
    group: &ConsumerGroup,
    join: &ClassicJoin<'_>,
    now: i64,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    let unknown_member = join.member_id.is_empty();
    let member_id = if unknown_member { join.generated_member_id } else { join.member_id };
    if context.config.group_consumer_migration_policy == "disabled" {
        return fail(HeartbeatError {
            error: "INCONSISTENT_GROUP_PROTOCOL",
            message: format!(
                "Cannot join the consumer group {} with the classic protocol because the group migration is disabled.",
                group.group_id
            ),
        });
    }
    // The subscription is read from the first protocol (all carry the same one), once the member is found.
    let subscription = join.protocols.first().and_then(|p| consumer_protocol::decode_subscription(&p.metadata).ok());
    let request = HeartbeatRequest {
        group_id: group.group_id.clone(),
        member_id: member_id.to_string(),
        member_epoch: JOIN_EPOCH,
        instance_id: join.instance_id.map(str::to_string),
        rack_id: subscription.as_ref().and_then(|s| s.rack_id.clone()),
        rebalance_timeout_ms: join.rebalance_timeout_ms,
        subscribed_topic_names: subscription.as_ref().map(|s| s.topics.clone()),
        subscribed_topic_regex: Some(String::new()), // no regex for a classic member
        server_assignor: None,
        topic_partitions: subscription.as_ref().map(|s| owned(s, context)),
        api_version: 1,
    };
    let classic = ClassicMemberMetadata {
        session_timeout_ms: join.session_timeout_ms,
        supported_protocols: join.protocols.to_vec(),
    };
    let outcome = (|| {
        let mut update = MemberUpdate::new(
            Held::Consumer(group),
            &request,
            now,
            context,
            join.client_id,
            join.client_host,
            None,
            Some(classic),
            unknown_member,
        )?;
        update.throw_if_group_is_full()?;
        if !supports_classic_protocols(group, join.protocol_type, join.protocols) {
            return refuse("INCONSISTENT_GROUP_PROTOCOL", format!("Member {member_id}'s protocols are not supported."));
        }
        if unknown_member && join.instance_id.is_none() && join.api_version >= REQUIRES_KNOWN_MEMBER_ID_VERSION {
            let mut response = ClassicResponse::error("MEMBER_ID_REQUIRED");
            response.member_id = member_id.to_string();
            return Ok(Err(answer(response, Vec::new())));
        }
        let member = update.find_member()?;
        // A static member taking the place of the last member using the consumer protocol downgrades the group.
        let replaced = group.static_member(join.instance_id);
        let downgrading =
            replaced.is_some_and(|replaced| downgrade_allowed_with_replaced_member(group, replaced, context.config));
        if subscription.is_none() {
            return refuse(
                "INCONSISTENT_GROUP_PROTOCOL",
                "Malformed embedded consumer protocol in subscription deserialization.".into(),
            );
        }
        let (joined, refreshed) = update.update(&member, downgrading)?;
        Ok(Ok((update, joined, refreshed, downgrading)))
    })();
    let (update, joined, refreshed, downgrading) = match outcome {
        Err(error) => return fail(error),
        Ok(Err(result)) => return result,
        Ok(Ok(joined)) => joined,
    };
    let response = ClassicResponse {
        error: "NONE".into(),
        member_id: member_id.to_string(),
        generation_id: joined.member_epoch(),
        protocol_type: Some(CONSUMER_PROTOCOL_TYPE.into()),
        protocol_name: Some(join.protocols[0].name.clone()),
        assignment: None,
    };
    if downgrading {
        // The classic group arms its members' sessions; the consumer group's timers go with it.
        let rebalance = update.stale_target;
        return GroupResult {
            records: update.records,
            response: Some(Response::Classic(response)),
            downgrade: Some(Downgrade { leaving: Vec::new(), joining: Some(joined), rebalance }),
            ..GroupResult::default()
        };
    }
    let mut timers = update.timers;
    timers.push(TimerChange::cancel(JOIN_TIMEOUT, member_id));
    timers.push(session_timer(member_id, now, context.config, Some(i64::from(join.session_timeout_ms))));
    timers.push(TimerChange {
        name: SYNC_TIMEOUT,
        member_id: member_id.to_string(),
        deadline: Some(now + i64::from(join.rebalance_timeout_ms)),
        kind: "on_sync_timeout",
        args: TimerArgs::Member(member_id.to_string()),
        if_absent: false,
    });
    GroupResult {
        records: update.records,
        response: Some(Response::Classic(response)),
        timers,
        metadata_refreshed: refreshed,
        downgrade: None,
        resolve_regexes: update.resolve_regexes,
    }
}

/// The subscription's owned partitions by topic id (toTopicPartitions: topics the cluster does not know are
/// left out), as a request carries them.
fn owned(subscription: &Subscription, context: &HeartbeatContext<'_>) -> TopicPartitions {
    let mut owned: FxHashMap<TopicId, Vec<i32>> = FxHashMap::default();
    for tp in &subscription.owned_partitions {
        if let Some(topic_id) = context.topics.topic_id(&tp.topic) {
            owned.entry(topic_id).or_default().push(tp.partition);
        }
    }
    let mut out: TopicPartitions = owned
        .into_iter()
        .map(|(t, mut ps)| {
            ps.sort_unstable();
            ps.dedup();
            (t, ps)
        })
        .collect();
    out.sort_unstable_by_key(|(t, _)| *t);
    out
}

/// ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol every classic member
/// supports (any protocol when none uses the classic protocol).
fn supports_classic_protocols(group: &ConsumerGroup, protocol_type: &str, protocols: &[ClassicProtocol]) -> bool {
    if protocol_type != CONSUMER_PROTOCOL_TYPE {
        return false;
    }
    let classic: Vec<&ClassicMemberMetadata> =
        group.members.values().filter_map(|m| m.classic_member_metadata.as_ref()).collect();
    let mut supported: FxHashMap<&str, usize> = FxHashMap::default();
    for p in classic.iter().flat_map(|metadata| &metadata.supported_protocols) {
        *supported.entry(p.name.as_str()).or_default() += 1;
    }
    protocols.iter().any(|p| supported.get(p.name.as_str()).copied().unwrap_or(0) == classic.len())
}

// ----------------------------------------------------------------------------------------------------------
// SyncGroup and Heartbeat

/// validateConsumerGroupMember: the member a classic request names, by member id or instance id.
fn validate_consumer_group_member<'g>(
    group: &'g ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
) -> Result<&'g ConsumerGroupMember, HeartbeatError> {
    let Some(instance_id) = instance_id else {
        return match group.members.get(member_id) {
            Some(member) => Ok(member),
            None => refuse("UNKNOWN_MEMBER_ID", format!("Member {member_id} is not a member of the group.")),
        };
    };
    let Some(member) = group.static_member(Some(instance_id)) else {
        return refuse(
            "UNKNOWN_MEMBER_ID",
            format!("Member with instance id {instance_id} is not a member of the group."),
        );
    };
    if member.member_id != member_id {
        return refuse(
            "FENCED_INSTANCE_ID",
            format!("Member {member_id} with instance id {instance_id} is fenced by member {}.", member.member_id),
        );
    }
    Ok(member)
}

/// The member, which must use the classic protocol (throwIfMemberDoesNotUseClassicProtocol) and be at the
/// request's generation (throwIfGenerationIdUnmatched).
fn classic_member<'g>(
    group: &'g ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
) -> Result<&'g ConsumerGroupMember, HeartbeatError> {
    let member = validate_consumer_group_member(group, member_id, instance_id)?;
    if !member.use_classic_protocol() {
        return refuse("UNKNOWN_MEMBER_ID", format!("Member {member_id} does not use the classic protocol."));
    }
    if member.member_epoch() != generation_id {
        return refuse(
            "ILLEGAL_GENERATION",
            format!(
                "The request generation id {generation_id} is not equal to the member epoch {} of member {member_id}.",
                member.member_epoch()
            ),
        );
    }
    Ok(member)
}

fn session_timeout_ms(member: &ConsumerGroupMember) -> Option<i64> {
    member.classic_member_metadata.as_ref().map(|c| i64::from(c.session_timeout_ms))
}

/// scheduleConsumerGroupJoinTimeoutIfAbsent: the member told to rejoin must do so within its rebalance
/// timeout, counted from the first time it was told.
pub fn join_timer(member: &ConsumerGroupMember, now: i64) -> TimerChange {
    TimerChange {
        name: JOIN_TIMEOUT,
        member_id: member.member_id.clone(),
        deadline: Some(now + i64::from(member.rebalance_timeout_ms)),
        kind: "on_join_timeout",
        args: TimerArgs::Member(member.member_id.clone()),
        if_absent: true,
    }
}

/// A SyncGroup's fields.
pub struct ClassicSync<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub generation_id: i32,
    pub protocol_type: Option<&'a str>,
    pub protocol_name: Option<&'a str>,
}

/// A SyncGroup to the non-empty consumer group: nothing is written; the member gets its assignment.
pub fn classic_group_sync(
    group: &ConsumerGroup,
    sync: &ClassicSync<'_>,
    now: i64,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    let checked = (|| {
        let member = classic_member(group, sync.member_id, sync.instance_id, sync.generation_id)?;
        let metadata = member.classic_member_metadata.as_ref().expect("a classic member");
        let group_protocol = &metadata.supported_protocols[0].name;
        if let Some(protocol_type) = sync.protocol_type
            && protocol_type != CONSUMER_PROTOCOL_TYPE
        {
            return refuse(
                "INCONSISTENT_GROUP_PROTOCOL",
                format!("The protocol type {protocol_type} is not the group's {CONSUMER_PROTOCOL_TYPE}."),
            );
        }
        if let Some(protocol_name) = sync.protocol_name
            && protocol_name != group_protocol
        {
            return refuse(
                "INCONSISTENT_GROUP_PROTOCOL",
                format!("The protocol name {protocol_name} is not the {group_protocol} returned in the join response."),
            );
        }
        Ok(member)
    })();
    let member = match checked {
        Ok(member) => member,
        Err(error) => return fail(error),
    };
    // throwIfRebalanceInProgress: a new target was computed since the member joined; a member still revoking
    // has rejoined already and finishes its revocation first.
    if group.assignment_epoch > member.member_epoch() && member.current.state != member_state::UNREVOKED_PARTITIONS {
        return answer(ClassicResponse::error("REBALANCE_IN_PROGRESS"), vec![join_timer(member, now)]);
    }
    let timers = vec![
        TimerChange::cancel(SYNC_TIMEOUT, sync.member_id),
        session_timer(sync.member_id, now, context.config, session_timeout_ms(member)),
    ];
    let response = ClassicResponse {
        error: "NONE".into(),
        member_id: sync.member_id.to_string(),
        generation_id: sync.generation_id,
        protocol_type: sync.protocol_type.map(str::to_string),
        protocol_name: sync.protocol_name.map(str::to_string),
        assignment: Some(held_partitions(&member.current)),
    };
    answer(response, timers)
}

/// A Heartbeat to the consumer group: renews the member's session; REBALANCE_IN_PROGRESS when it must rejoin
/// (its epoch is behind the target assignment's, it has partitions to revoke, or the partitions it waits for
/// are all free), which also arms its join timer.
pub fn classic_group_heartbeat(
    group: &ConsumerGroup,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
    now: i64,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    let member = match classic_member(group, member_id, instance_id, generation_id) {
        Ok(member) => member,
        Err(error) => return fail(error),
    };
    let mut timers = vec![session_timer(member_id, now, context.config, session_timeout_ms(member))];
    let state = member.current.state;
    let mut error = "NONE";
    if member.member_epoch() < group.assignment_epoch
        || state == member_state::UNREVOKED_PARTITIONS
        || (state == member_state::UNRELEASED_PARTITIONS && !waiting_on_unreleased_partition(group, member))
    {
        error = "REBALANCE_IN_PROGRESS";
        timers.push(join_timer(member, now));
    }
    answer(ClassicResponse::error(error), timers)
}

/// ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target still held by another member.
fn waiting_on_unreleased_partition(group: &ConsumerGroup, member: &ConsumerGroupMember) -> bool {
    let Some(target) = group.target_of(&member.member_id, None) else { return false };
    target.iter().any(|(topic_id, partitions)| {
        let assigned = member.current.assigned_partitions.iter().find(|(t, _)| t == topic_id).map(|(_, ps)| ps);
        partitions.iter().any(|p| {
            !assigned.is_some_and(|ps| ps.iter().any(|(q, _)| q == p)) && group.partition_epochs.get(topic_id, *p) != -1
        })
    })
}
