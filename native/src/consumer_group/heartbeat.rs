//! Mirrors `state/consumer_group/heartbeat.py`: the broker side of ConsumerGroupHeartbeat (Kafka's
//! GroupCoordinatorService request checks and GroupMetadataManager.consumerGroupHeartbeat / consumerGroupLeave,
//! trunk), the member timeouts that fence members and the timers a coordinator arms when it loads a group.
//! `MemberUpdate`, the heartbeat's update of one member (subscription, group epoch, target assignment,
//! reconciliation), is also what a classic member's JoinGroup runs (classic_members).
//!
//! Every handler reads the group without changing it and returns a `GroupResult` (the reference's
//! heartbeat.CoordinatorResult): the records to append (the group changes when the runtime replays them), the
//! response, and the changes to the coordinator's timers. A failed request writes nothing, answers an error
//! and leaves the timers alone. `kafka_4_0` selects Kafka 4.0.0's rules where they differ (see the
//! reference's module).

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::config::CoordinatorConfig;
use crate::consumer_group::classic_members::ClassicResponse;
use crate::consumer_group::downgrade::{Downgrade, downgrade_with_fenced_members};
use crate::consumer_group::group::{Assignment, ConsumerGroup, ConsumerGroupMember, preferred_server_assignor};
use crate::consumer_group::group_spec::{GroupAssignment, GroupSpec, PartitionAssignorError, subscription_type};
use crate::consumer_group::messages::{
    HeartbeatRequest, HeartbeatResponse, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, TopicPartitions,
    UNCHANGED_REBALANCE_TIMEOUT,
};
use crate::consumer_group::reconciliation::{
    FencedMemberEpochError, Reconciliation, member_state, reconcile, same_current, same_epochs, subscribed_topic_ids,
};
use crate::consumer_group::records::{
    AssignmentMetadata, ClassicMemberMetadata, ConsumerGroupRecord, CurrentAssignment, GroupEpoch, PartitionEpochs,
    ResolvedRegularExpression,
};
use crate::consumer_group::regex::{RegexUpdate, maybe_update_regular_expressions};
use crate::consumer_group::target_assignment::{TargetAssignmentBuilder, topic_partitions};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::consumer_group::{range, uniform};
use crate::dict::{Counter, Dict};
use crate::java_compat::JavaHashMap;

/// Since ConsumerGroupHeartbeat v1 (KIP-1082) the client generates its member id.
pub const CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: i16 = 1;

pub const SESSION_TIMEOUT: &str = "session-timeout";
pub const REBALANCE_TIMEOUT: &str = "rebalance-timeout";
/// A classic member's timers (consumerGroupJoinKey, consumerGroupSyncKey): it must rejoin, or sync, in time.
pub const JOIN_TIMEOUT: &str = "join-timeout";
pub const SYNC_TIMEOUT: &str = "sync-timeout";

/// What a timer runs with: nothing (a cancel), the member, or the member at the epoch the timer was armed at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimerArgs {
    None,
    Member(String),
    MemberAtEpoch(String, i32),
}

/// Schedule (or reschedule) the coordinator timer (name, member id) for `deadline`, or cancel it (None); when
/// it fires it runs `kind` with `args`. `if_absent`: only if no such timer is pending (scheduleIfAbsent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerChange {
    pub name: &'static str,
    pub member_id: String,
    pub deadline: Option<i64>,
    pub kind: &'static str,
    pub args: TimerArgs,
    pub if_absent: bool,
}

impl TimerChange {
    pub fn cancel(name: &'static str, member_id: &str) -> Self {
        TimerChange {
            name,
            member_id: member_id.to_string(),
            deadline: None,
            kind: "",
            args: TimerArgs::None,
            if_absent: false,
        }
    }
}

/// A handler's response: a HeartbeatResponse, or a classic request's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Heartbeat(HeartbeatResponse),
    Classic(ClassicResponse),
}

/// The reference's heartbeat.CoordinatorResult.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupResult {
    pub records: Vec<ConsumerGroupRecord>,
    /// None for a timer's work.
    pub response: Option<Response>,
    pub timers: Vec<TimerChange>,
    /// The heartbeat recomputed the group's metadata hash: the runtime clears `metadata_expired`.
    pub metadata_refreshed: bool,
    /// The group becomes a classic group: `records` are then the join's records that precede the downgrade's.
    pub downgrade: Option<Downgrade>,
    /// The regexes to resolve once these records are written.
    pub resolve_regexes: Option<Vec<String>>,
}

impl GroupResult {
    fn answer(response: HeartbeatResponse) -> Self {
        GroupResult { response: Some(Response::Heartbeat(response)), ..GroupResult::default() }
    }
}

/// What the handler reads besides the group and the request: the broker's settings, the topics in the
/// cluster, the server-side assignors by name (the first one is the default) and the Kafka release; and, for
/// regexes, the metadata image's version and the last version that created a topic (-1 before any).
#[derive(Clone, Debug)]
pub struct HeartbeatContext<'a> {
    pub config: &'a CoordinatorConfig,
    pub topics: &'a TopicsImage,
    pub assignors: Vec<String>,
    pub kafka_4_0: bool,
    pub metadata_version: i64,
    pub new_topics_version: i64,
}

impl<'a> HeartbeatContext<'a> {
    pub fn from_config(
        config: &'a CoordinatorConfig,
        topics: &'a TopicsImage,
        metadata_version: i64,
        new_topics_version: i64,
    ) -> Self {
        HeartbeatContext {
            config,
            topics,
            assignors: config.group_consumer_assignors.clone(),
            kafka_4_0: config.kafka_4_0,
            metadata_version,
            new_topics_version,
        }
    }

    pub fn default_assignor(&self) -> &str {
        &self.assignors[0]
    }

    /// The server-side assignor `name` (SERVER_ASSIGNORS, or Kafka 4.0's uniform).
    fn assign(
        &self,
        name: &str,
        spec: &GroupSpec,
        counts: &FxHashMap<TopicId, i32>,
    ) -> Result<GroupAssignment, PartitionAssignorError> {
        if name == "range" { range::assign(spec, counts) } else { uniform::assign(spec, counts, self.kafka_4_0) }
    }
}

/// A request the coordinator refuses: `error` is Kafka's error name for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeartbeatError {
    pub error: &'static str,
    pub message: String,
}

fn refuse<T>(error: &'static str, message: String) -> Result<T, HeartbeatError> {
    Err(HeartbeatError { error, message })
}

/// What the coordinator holds under the request's group id.
#[derive(Clone, Copy, Debug)]
pub enum Held<'a> {
    Nothing,
    Consumer(&'a ConsumerGroup),
    /// A group of another type (a classic group).
    Other,
}

/// Handle one ConsumerGroupHeartbeat. `generated_member_id`: the id to give a member joining with an empty
/// member id (ConsumerGroupHeartbeat v0), which Kafka draws at random.
pub fn consumer_group_heartbeat(
    group: Held<'_>,
    request: &HeartbeatRequest,
    now: i64,
    context: &HeartbeatContext<'_>,
    client_id: &str,
    client_host: &str,
    generated_member_id: Option<&str>,
) -> GroupResult {
    let handled = (|| {
        validate_request(request, context)?;
        if request.member_epoch == LEAVE_EPOCH || request.member_epoch == STATIC_LEAVE_EPOCH {
            return leave(consumer_group(group, &request.group_id)?, request, context);
        }
        MemberUpdate::new(group, request, now, context, client_id, client_host, generated_member_id, None, false)?.run()
    })();
    handled.unwrap_or_else(|error| {
        GroupResult::answer(HeartbeatResponse {
            error: error.error.to_string(),
            error_message: Some(error.message),
            member_id: None,
            member_epoch: 0,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    })
}

/// The member's session: group.consumer.session.timeout.ms, or `timeout_ms` (a classic member's own).
pub fn session_timer(member_id: &str, now: i64, config: &CoordinatorConfig, timeout_ms: Option<i64>) -> TimerChange {
    TimerChange {
        name: SESSION_TIMEOUT,
        member_id: member_id.to_string(),
        deadline: Some(now + timeout_ms.unwrap_or(config.group_consumer_session_timeout_ms)),
        kind: "on_session_timeout",
        args: TimerArgs::Member(member_id.to_string()),
        if_absent: false,
    }
}

/// The time the member has to revoke, running from the epoch it is revoking at.
pub fn rebalance_timer(member: &ConsumerGroupMember, now: i64) -> TimerChange {
    TimerChange {
        name: REBALANCE_TIMEOUT,
        member_id: member.member_id.clone(),
        deadline: Some(now + i64::from(member.rebalance_timeout_ms)),
        kind: "on_rebalance_timeout",
        args: TimerArgs::MemberAtEpoch(member.member_id.clone(), member.member_epoch()),
        if_absent: false,
    }
}

/// The timers a coordinator arms when it loads the group (GroupMetadataManager.onLoaded): a new session for
/// every member, and the whole rebalance timeout again for every member still revoking.
pub fn on_loaded(group: &ConsumerGroup, now: i64, context: &HeartbeatContext<'_>) -> Vec<TimerChange> {
    let mut timers = Vec::new();
    for member in group.members.values() {
        timers.push(session_timer(&member.member_id, now, context.config, None));
        if member.current.state == member_state::UNREVOKED_PARTITIONS {
            timers.push(rebalance_timer(member, now));
        }
    }
    timers
}

fn held_member<'a>(group: Held<'a>, member_id: &str) -> Option<(&'a ConsumerGroup, &'a ConsumerGroupMember)> {
    match group {
        Held::Consumer(group) => group.members.get(member_id).map(|m| (group, m)),
        _ => None,
    }
}

/// The member's session expired, or a classic member did not rejoin or sync in time: fence it (nothing if it
/// is already gone). consumerGroupFenceMemberOperation.
pub fn on_member_timeout(group: Held<'_>, member_id: &str, context: &HeartbeatContext<'_>) -> GroupResult {
    match held_member(group, member_id) {
        Some((group, member)) => fence_members(group, &[member], None, context),
        None => GroupResult::default(),
    }
}

/// The member did not revoke in time: fence it if it is still at the epoch the timer was armed at.
pub fn on_rebalance_timeout(
    group: Held<'_>,
    member_id: &str,
    member_epoch: i32,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    match held_member(group, member_id) {
        Some((group, member)) if member.member_epoch() == member_epoch => {
            fence_members(group, &[member], None, context)
        }
        _ => GroupResult::default(),
    }
}

// ----------------------------------------------------------------------------------------------------------
// Request checks (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid)

/// A value that is given and all whitespace (Python's `not value.strip()`: str.isspace counts U+001C..U+001F).
fn blank(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.chars().all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)))
}

pub fn validate_request(request: &HeartbeatRequest, context: &HeartbeatContext<'_>) -> Result<(), HeartbeatError> {
    let epoch = request.member_epoch;
    let mut invalid: Vec<(bool, String)> = vec![
        (
            blank(Some(&request.member_id))
                && (request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
                    || epoch > 0
                    || epoch == LEAVE_EPOCH),
            "MemberId is blank.".into(),
        ),
        (blank(Some(&request.group_id)), "GroupId is blank.".into()),
        (blank(request.instance_id.as_deref()), "InstanceId is blank.".into()),
        (blank(request.rack_id.as_deref()), "RackId is blank.".into()),
    ];
    if epoch == JOIN_EPOCH {
        invalid.push((
            request.rebalance_timeout_ms == UNCHANGED_REBALANCE_TIMEOUT,
            "RebalanceTimeoutMs must be given when (re-)joining.".into(),
        ));
        invalid.push((
            request.topic_partitions.as_ref().is_none_or(|owned| !owned.is_empty()),
            "TopicPartitions must be empty when (re-)joining.".into(),
        ));
        invalid.push((
            request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none(),
            "SubscribedTopicNames or SubscribedTopicRegex must be given when (re-)joining.".into(),
        ));
    } else if epoch == STATIC_LEAVE_EPOCH {
        invalid.push((request.instance_id.is_none(), "InstanceId must be given to leave with epoch -2.".into()));
    } else if epoch < STATIC_LEAVE_EPOCH {
        invalid.push((true, format!("MemberEpoch {epoch} is invalid.")));
    }
    if let Some((_, message)) = invalid.into_iter().find(|(failed, _)| *failed) {
        return refuse("INVALID_REQUEST", message);
    }
    if let Some(assignor) = &request.server_assignor
        && !context.assignors.contains(assignor)
    {
        return refuse(
            "UNSUPPORTED_ASSIGNOR",
            format!("ServerAssignor {assignor} is not supported; supported: {}.", context.assignors.join(", ")),
        );
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------------------------
// Leaving and fencing (consumerGroupLeave, consumerGroupStaticMemberGroupLeave, consumerGroupFenceMembers)

fn consumer_group<'a>(group: Held<'a>, group_id: &str) -> Result<&'a ConsumerGroup, HeartbeatError> {
    match group {
        Held::Consumer(group) => Ok(group),
        Held::Other => {
            refuse("GROUP_ID_NOT_FOUND", format!("{group_id} is a group of another type, not a consumer group."))
        }
        Held::Nothing => refuse("GROUP_ID_NOT_FOUND", format!("No consumer group {group_id}.")),
    }
}

/// The member holding the request's instance id, which must be the request's member.
fn static_member<'a>(
    group: &'a ConsumerGroup,
    request: &HeartbeatRequest,
) -> Result<&'a ConsumerGroupMember, HeartbeatError> {
    let instance_id = request.instance_id.as_deref().unwrap_or_default();
    let Some(member) = group.static_member(request.instance_id.as_deref()) else {
        return refuse("UNKNOWN_MEMBER_ID", format!("No member holds instance id {instance_id}."));
    };
    if member.member_id != request.member_id {
        return refuse(
            "FENCED_INSTANCE_ID",
            format!(
                "Member {} with instance id {instance_id} is fenced by member {}.",
                request.member_id, member.member_id
            ),
        );
    }
    Ok(member)
}

fn not_a_member(member_id: &str) -> HeartbeatError {
    HeartbeatError { error: "UNKNOWN_MEMBER_ID", message: format!("Member {member_id} is not a member of the group.") }
}

fn leave(
    group: &ConsumerGroup,
    request: &HeartbeatRequest,
    context: &HeartbeatContext<'_>,
) -> Result<GroupResult, HeartbeatError> {
    let member = match &request.instance_id {
        None => group.members.get(request.member_id.as_str()).ok_or_else(|| not_a_member(&request.member_id))?,
        Some(_) => {
            let member = static_member(group, request)?;
            if request.member_epoch == STATIC_LEAVE_EPOCH {
                return Ok(static_member_leave(member));
            }
            member
        }
    };
    let response = HeartbeatResponse::ok(&request.member_id, request.member_epoch);
    Ok(fence_members(group, &[member], Some(response), context))
}

/// A static member leaving for now stays, at epoch -2, keeping its partitions (their assignment epochs reset
/// to 0, so the member taking its place holds them from epoch 0) and dropping what it was revoking. No epoch
/// bump, and its timers run on.
fn static_member_leave(member: &ConsumerGroupMember) -> GroupResult {
    let current = &member.current;
    let assigned: PartitionEpochs = current
        .assigned_partitions
        .iter()
        .map(|(topic_id, ps)| (*topic_id, ps.iter().map(|(p, _)| (*p, 0)).collect()))
        .collect();
    let left = CurrentAssignment {
        state: current.state,
        member_epoch: STATIC_LEAVE_EPOCH,
        previous_member_epoch: current.previous_member_epoch,
        assigned_partitions: assigned,
        partitions_pending_revocation: Vec::new(),
    };
    GroupResult {
        records: vec![ConsumerGroupRecord::CurrentMemberAssignment {
            member_id: member.member_id.clone(),
            value: Some(left),
        }],
        ..GroupResult::answer(HeartbeatResponse::ok(&member.member_id, STATIC_LEAVE_EPOCH))
    }
}

/// cancelTimers: every timer a member may have.
pub fn member_timer_cancels(member_id: &str) -> Vec<TimerChange> {
    [SESSION_TIMEOUT, REBALANCE_TIMEOUT, JOIN_TIMEOUT, SYNC_TIMEOUT]
        .into_iter()
        .map(|name| TimerChange::cancel(name, member_id))
        .collect()
}

/// Kafka's removeMember: a member's three tombstones, in the order replay accepts them (records.py's
/// member_tombstones).
pub fn member_tombstones(member_id: &str) -> [ConsumerGroupRecord; 3] {
    [
        ConsumerGroupRecord::CurrentMemberAssignment { member_id: member_id.to_string(), value: None },
        ConsumerGroupRecord::TargetAssignmentMember { member_id: member_id.to_string(), value: None },
        ConsumerGroupRecord::MemberMetadata { member_id: member_id.to_string(), value: None },
    ]
}

/// A Counter of topic names as the metadata hash reads it: the group's subscribed names (by name and
/// through resolved regexes), changed by a request.
struct NameCounts(FxHashMap<String, i64>);

impl NameCounts {
    /// ConsumerGroup.all_subscribed_topic_names.
    fn of(group: &ConsumerGroup) -> Self {
        let mut counts = FxHashMap::default();
        for (name, count) in group.subscribed_topic_names.iter().chain(group.regex_topic_names.iter()) {
            *counts.entry(name.clone()).or_insert(0) += count;
        }
        NameCounts(counts)
    }

    fn add<'a>(&mut self, names: impl IntoIterator<Item = &'a String>, delta: i64) {
        for name in names {
            *self.0.entry(name.clone()).or_insert(0) += delta;
        }
    }

    fn metadata_hash(&self, topics: &TopicsImage) -> i64 {
        topics.metadata_hash(self.0.iter().filter(|(_, count)| **count > 0).map(|(name, _)| name.as_str()))
    }
}

/// Remove members: their tombstones, one group epoch bump (always, with the hash of what the remaining
/// members subscribe to) and, when nobody is left, the assignment epoch brought up to the new group epoch
/// (4.4+). Unless only members using the classic protocol would remain and the policy allows a downgrade:
/// then the group becomes a classic group instead (consumerGroupFenceMembers).
pub fn fence_members(
    group: &ConsumerGroup,
    members: &[&ConsumerGroupMember],
    response: Option<HeartbeatResponse>,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    let response = response.map(Response::Heartbeat);
    if let Some(downgrade) = downgrade_with_fenced_members(group, members, context.config) {
        return GroupResult { response, downgrade: Some(downgrade), ..GroupResult::default() };
    }
    let mut records = Vec::new();
    let mut names = NameCounts::of(group);
    for member in members {
        records.extend(member_tombstones(&member.member_id));
        names.add(&member.subscribed_topic_names, -1);
    }
    // maybeDeleteResolvedRegularExpressions: the regexes only the fenced members used go, with their topics.
    for regex in deleted_regexes(group, members) {
        names.add(&group.regex_topics(&regex), -1);
        records.push(ConsumerGroupRecord::RegularExpression { regex, value: None });
    }
    let group_epoch = group.group_epoch + 1;
    let metadata_hash = names.metadata_hash(context.topics);
    records.push(ConsumerGroupRecord::Metadata(Some(GroupEpoch { epoch: group_epoch, metadata_hash })));
    if members.len() == group.members.len() && !context.kafka_4_0 {
        records.push(ConsumerGroupRecord::TargetAssignmentMetadata(Some(AssignmentMetadata {
            assignment_epoch: group_epoch,
            assignment_timestamp_ms: 0,
        })));
    }
    let timers = members.iter().flat_map(|m| member_timer_cancels(&m.member_id)).collect();
    GroupResult { records, response, timers, ..GroupResult::default() }
}

/// maybeDeleteResolvedRegularExpressions: the regexes no member but `members` subscribes with, in the order
/// of Kafka's HashMap of them.
pub fn deleted_regexes(group: &ConsumerGroup, members: &[&ConsumerGroupMember]) -> Vec<String> {
    let mut counts = Counter::default();
    for member in members.iter().filter(|m| !m.subscribed_topic_regex.is_empty()) {
        counts.add(&member.subscribed_topic_regex, 1);
    }
    let mut table = JavaHashMap::default();
    for (regex, count) in counts.iter() {
        table.insert(regex.clone(), *count);
    }
    table
        .entries()
        .into_iter()
        .filter(|(regex, count)| group.subscribed_regexes.count(regex) == **count)
        .map(|(regex, _)| regex.clone())
        .collect()
}

/// handleRegularExpressionsResult: a record for every resolved regex the group still subscribes with, and a
/// group epoch bump if one resolved to other topics or the metadata hash changed (the group's metadata then
/// counts as refreshed). Nothing if the group is gone.
pub fn on_regular_expressions_resolved(
    group: Held<'_>,
    resolved: &Dict<String, ResolvedRegularExpression>,
    context: &HeartbeatContext<'_>,
) -> GroupResult {
    let Held::Consumer(group) = group else { return GroupResult::default() };
    let mut names = NameCounts::of(group);
    let mut records = Vec::new();
    let mut bump = false;
    let mut table = JavaHashMap::default();
    for (regex, new) in resolved.iter() {
        table.insert(regex.clone(), new);
    }
    for (regex, new) in table.entries() {
        if group.subscribed_regexes.count(regex) == 0 {
            continue;
        }
        let old = group.regex_topics(regex);
        let mut new_topics = new.topics.clone();
        new_topics.sort_unstable();
        new_topics.dedup();
        if old != new_topics {
            bump = true;
            names.add(&old, -1);
            names.add(&new.topics, 1);
        }
        records.push(ConsumerGroupRecord::RegularExpression { regex: regex.clone(), value: Some((*new).clone()) });
    }
    let metadata_hash = names.metadata_hash(context.topics);
    bump |= metadata_hash != group.metadata_hash;
    if bump {
        records.push(ConsumerGroupRecord::Metadata(Some(GroupEpoch { epoch: group.group_epoch + 1, metadata_hash })));
    }
    GroupResult { records, metadata_refreshed: bump, ..GroupResult::default() }
}

// ----------------------------------------------------------------------------------------------------------
// The regular heartbeat (GroupMetadataManager.consumerGroupHeartbeat)

fn get<'p, K: PartialEq, V>(items: &'p [(K, V)], key: &K) -> Option<&'p V> {
    items.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Whether the heartbeat reports only partitions the member is assigned (unknown, None: no).
fn is_subset(owned: Option<&TopicPartitions>, assigned: &PartitionEpochs) -> bool {
    let Some(owned) = owned else { return false };
    owned.iter().all(|(topic_id, ps)| {
        get(assigned, topic_id).is_some_and(|held| ps.iter().all(|p| held.iter().any(|(q, _)| q == p)))
    })
}

/// throwIfConsumerGroupMemberEpochIsInvalid: the request's epoch must be the member's, or its previous one
/// when the heartbeat reports a subset of its partitions. Epoch 0 always rejoins (4.3); in 4.0 it is
/// checked like any other.
fn check_member_epoch(
    member: &ConsumerGroupMember,
    epoch: i32,
    owned: Option<&TopicPartitions>,
    kafka_4_0: bool,
) -> Result<(), HeartbeatError> {
    if epoch == JOIN_EPOCH && !kafka_4_0 {
        return Ok(());
    }
    let current = member.member_epoch();
    if epoch > current {
        return refuse(
            "FENCED_MEMBER_EPOCH",
            format!(
                "Member epoch {epoch} is ahead of the coordinator's {current}: the member must give up its \
                 partitions and rejoin."
            ),
        );
    }
    if epoch < current
        && (epoch != member.current.previous_member_epoch || !is_subset(owned, &member.current.assigned_partitions))
    {
        return refuse(
            "FENCED_MEMBER_EPOCH",
            format!(
                "Member epoch {epoch} is behind the coordinator's {current}: the member must give up its \
                 partitions and rejoin."
            ),
        );
    }
    Ok(())
}

/// The members' subscription type: the reference's over (names, regex) pairs.
fn members_subscription_type(
    members: &Dict<String, ConsumerGroupMember>,
) -> crate::consumer_group::group_spec::SubscriptionType {
    subscription_type(members.values().map(|m| (&m.subscribed_topic_names[..], m.subscribed_topic_regex.as_str())))
}

/// One member's heartbeat (consumerGroupHeartbeat). With `classic` (the ClassicMemberMetadata it joined
/// with), a classic member's JoinGroup to the consumer group instead (classicGroupJoinToConsumerGroup): no
/// member epoch is checked, a static member is looked up rather than created unless the JoinGroup came with
/// an unknown member id (`unknown_member`), it replaces a static member without waiting for its leave, and a
/// classic member gets no rebalance timer.
pub struct MemberUpdate<'a, 'c> {
    pub request: &'a HeartbeatRequest,
    pub classic: Option<ClassicMemberMetadata>,
    pub unknown_member: bool,
    pub now: i64,
    pub context: &'a HeartbeatContext<'c>,
    pub config: &'a CoordinatorConfig,
    pub joining: bool,
    pub group: Cow<'a, ConsumerGroup>,
    pub client_id: String,
    pub client_host: String,
    pub member_id: Option<String>,
    pub owned: Option<TopicPartitions>,
    pub records: Vec<ConsumerGroupRecord>,
    pub timers: Vec<TimerChange>,
    pub stale_target: bool,
    pub resolve_regexes: Option<Vec<String>>,
}

impl<'a, 'c> MemberUpdate<'a, 'c> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        group: Held<'a>,
        request: &'a HeartbeatRequest,
        now: i64,
        context: &'a HeartbeatContext<'c>,
        client_id: &str,
        client_host: &str,
        generated_member_id: Option<&str>,
        classic: Option<ClassicMemberMetadata>,
        unknown_member: bool,
    ) -> Result<Self, HeartbeatError> {
        let joining = request.member_epoch == JOIN_EPOCH;
        let group = match group {
            // Created when its records are replayed.
            Held::Nothing if joining => Cow::Owned(ConsumerGroup::new(&request.group_id, context.kafka_4_0)),
            group => Cow::Borrowed(consumer_group(group, &request.group_id)?),
        };
        let member_id = if request.member_id.is_empty() {
            generated_member_id.map(str::to_string)
        } else {
            Some(request.member_id.clone())
        };
        Ok(MemberUpdate {
            request,
            classic,
            unknown_member,
            now,
            context,
            config: context.config,
            joining,
            group,
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            member_id,
            owned: request.topic_partitions.clone(),
            records: Vec::new(),
            timers: Vec::new(),
            stale_target: false,
            resolve_regexes: None,
        })
    }

    fn member_id(&self) -> &str {
        self.member_id.as_deref().expect("a v0 join with an empty member id needs generated_member_id")
    }

    pub fn run(mut self) -> Result<GroupResult, HeartbeatError> {
        let request = self.request;
        self.throw_if_group_is_full()?;
        let member = self.find_member()?;
        let (reconciled, refreshed) = self.update(&member, false)?;
        let member_id = self.member_id().to_string();
        self.timers.push(session_timer(&member_id, self.now, self.config, None));
        let full = request.rebalance_timeout_ms != UNCHANGED_REBALANCE_TIMEOUT
            && (request.subscribed_topic_names.is_some() || request.subscribed_topic_regex.is_some())
            && request.topic_partitions.is_some();
        let changed = !same_epochs(&reconciled.current.assigned_partitions, &member.current.assigned_partitions);
        let assignment = (self.joining || full || changed).then(|| held_partitions(&reconciled.current));
        let response = HeartbeatResponse {
            error: "NONE".into(),
            error_message: None,
            member_id: Some(reconciled.member_id.clone()),
            member_epoch: reconciled.member_epoch(),
            heartbeat_interval_ms: self.config.group_consumer_heartbeat_interval_ms as i32,
            assignment,
        };
        Ok(GroupResult {
            records: self.records,
            response: Some(Response::Heartbeat(response)),
            timers: self.timers,
            metadata_refreshed: refreshed,
            downgrade: None,
            resolve_regexes: self.resolve_regexes,
        })
    }

    /// The member the request is from: existing, new, or replacing a static member (whose records the
    /// replacement adds).
    pub fn find_member(&mut self) -> Result<ConsumerGroupMember, HeartbeatError> {
        self.member_id();
        if self.request.instance_id.is_none() { self.dynamic_member() } else { self.static_member() }
    }

    /// Apply the request to the member: its new subscription, the group epoch bumped if that changes what the
    /// group subscribes to, the target assignment computed if the group epoch is ahead of it, the member
    /// reconciled towards its target. Returns the member as its records leave it, and whether the group's
    /// metadata hash was recomputed. `downgrading`: a classic JoinGroup about to downgrade the group computes
    /// no target; it reconciles the member to the current one unless the epoch is now ahead of it
    /// (`stale_target`: the classic group will rebalance instead).
    pub fn update(
        &mut self,
        member: &ConsumerGroupMember,
        downgrading: bool,
    ) -> Result<(ConsumerGroupMember, bool), HeartbeatError> {
        let updated = self.updated(member);
        let mut names_changed = false;
        if updated != *member {
            self.records.push(ConsumerGroupRecord::MemberMetadata {
                member_id: updated.member_id.clone(),
                value: Some(updated.subscription()),
            });
            names_changed = updated.subscribed_topic_names != member.subscribed_topic_names;
        }
        let regex_status = self.maybe_update_regular_expressions(member, &updated)?;
        let subscription_changed = names_changed || regex_status.regex_updated();
        let group = self.group.clone();
        let group = group.as_ref();
        // Kafka 4.0 bumped a new group's epoch 0 on its first heartbeat whatever the member subscribed to. A
        // new regex not resolved yet bumps nothing: its resolution will.
        let bump = names_changed
            || regex_status == RegexUpdate::UpdatedAndResolved
            || self.preferred_assignor_changed(member, &updated)
            || (self.context.kafka_4_0 && group.group_epoch == 0);

        let mut builder = TargetAssignmentBuilder::new(
            &group.members,
            &group.static_members,
            &group.target_assignment,
            &group.resolved_regexes,
        );
        builder.add_or_update_member(updated.clone());
        let (mut group_epoch, mut sub_type, mut refreshed) = (group.group_epoch, group.subscription_type(), false);
        if bump || group.metadata_expired {
            // ConsumerGroup.computeSubscribedTopicNames: the old regex's topics go if it was its last member's.
            let mut names = NameCounts::of(group);
            names.add(&member.subscribed_topic_names, -1);
            names.add(&updated.subscribed_topic_names, 1);
            let old_regex = &member.subscribed_topic_regex;
            if !old_regex.is_empty()
                && *old_regex != updated.subscribed_topic_regex
                && group.subscribed_regexes.count(old_regex) == 1
            {
                names.add(&group.regex_topics(old_regex), -1);
            }
            let metadata_hash = names.metadata_hash(self.context.topics);
            sub_type = members_subscription_type(builder.members());
            if bump || metadata_hash != group.metadata_hash {
                group_epoch += 1;
                self.records
                    .push(ConsumerGroupRecord::Metadata(Some(GroupEpoch { epoch: group_epoch, metadata_hash })));
            }
            refreshed = true;
        }

        if downgrading {
            self.stale_target = group.assignment_epoch < group_epoch;
            if self.stale_target {
                return Ok((updated, refreshed));
            }
            let target =
                group.target_of(&updated.member_id, updated.instance_id.as_deref()).cloned().unwrap_or_default();
            let reconciled = self.reconcile(updated, group.assignment_epoch, &target, subscription_changed)?;
            return Ok((reconciled, refreshed));
        }
        let (target_epoch, target) = self.target_assignment(&builder, group_epoch, member, &updated, sub_type)?;
        Ok((self.reconcile(updated, target_epoch, &target, subscription_changed)?, refreshed))
    }

    /// maybeUpdateRegularExpressions (regex.rs): its records, and the regexes to resolve after this write.
    fn maybe_update_regular_expressions(
        &mut self,
        member: &ConsumerGroupMember,
        updated: &ConsumerGroupMember,
    ) -> Result<RegexUpdate, HeartbeatError> {
        let (status, records, regexes) = maybe_update_regular_expressions(
            &member.subscribed_topic_regex,
            &updated.subscribed_topic_regex,
            &self.group.subscribed_regexes,
            &self.group.resolved_regexes,
            self.now,
            self.config.group_consumer_regex_refresh_interval_ms,
            self.context.new_topics_version,
        )
        .map_err(|error| HeartbeatError { error: "INVALID_REGULAR_EXPRESSION", message: error.0 })?;
        self.resolve_regexes = regexes;
        self.records.extend(records);
        Ok(status)
    }

    pub fn throw_if_group_is_full(&self) -> Result<(), HeartbeatError> {
        let group = &self.group;
        let member_id = &self.request.member_id;
        // A returning static member only ever replaces itself (4.4+).
        if group.static_member(self.request.instance_id.as_deref()).is_some() && !self.context.kafka_4_0 {
            return Ok(());
        }
        let max = self.config.group_consumer_max_size;
        if group.members.len() as i64 >= max
            && (member_id.is_empty() || !group.members.contains_key(member_id.as_str()))
        {
            return refuse(
                "GROUP_MAX_SIZE_REACHED",
                format!("The consumer group has reached its maximum size of {max} members."),
            );
        }
        Ok(())
    }

    /// getOrMaybeSubscribeDynamicConsumerGroupMember.
    fn dynamic_member(&self) -> Result<ConsumerGroupMember, HeartbeatError> {
        let member_id = self.member_id();
        let member = match self.group.members.get(member_id) {
            Some(member) => member.clone(),
            None if !self.joining => return Err(not_a_member(member_id)),
            None => ConsumerGroupMember::new(member_id),
        };
        if self.classic.is_none() {
            check_member_epoch(&member, self.request.member_epoch, self.owned.as_ref(), self.context.kafka_4_0)?;
        }
        Ok(member)
    }

    /// getOrMaybeSubscribeStaticConsumerGroupMember: a joining static member takes the place of the member
    /// holding its instance id if that one left with epoch -2 (UNRELEASED_INSTANCE_ID otherwise), or uses the
    /// classic protocol; a classic member always takes its place.
    fn static_member(&mut self) -> Result<ConsumerGroupMember, HeartbeatError> {
        let (request, classic) = (self.request, self.classic.is_some());
        let group = self.group.clone();
        let group = group.as_ref();
        if !(if classic { self.unknown_member } else { self.joining }) {
            let member = static_member(group, request)?;
            if !classic {
                check_member_epoch(member, request.member_epoch, self.owned.as_ref(), self.context.kafka_4_0)?;
            }
            return Ok(member.clone());
        }
        let member_id = self.member_id().to_string();
        let Some(existing) = group.static_member(request.instance_id.as_deref()) else {
            return Ok(group
                .members
                .get(member_id.as_str())
                .cloned()
                .unwrap_or_else(|| ConsumerGroupMember::new(&member_id)));
        };
        if !classic && !existing.use_classic_protocol() && existing.member_epoch() != STATIC_LEAVE_EPOCH {
            return refuse(
                "UNRELEASED_INSTANCE_ID",
                format!(
                    "Instance id {} is still held by member {}, which must leave first.",
                    request.instance_id.as_deref().unwrap_or_default(),
                    existing.member_id
                ),
            );
        }
        let mut replacement = existing.clone();
        replacement.member_id = member_id.clone();
        replacement.current.member_epoch = 0;
        replacement.current.previous_member_epoch = 0;
        // The old member's timers are left to run: they find it gone and do nothing.
        self.records.extend(member_tombstones(&existing.member_id));
        let target = group.target_of(&existing.member_id, None).map(topic_partitions).unwrap_or_default();
        self.records.extend([
            ConsumerGroupRecord::MemberMetadata {
                member_id: member_id.clone(),
                value: Some(replacement.subscription()),
            },
            ConsumerGroupRecord::TargetAssignmentMember { member_id: member_id.clone(), value: Some(target) },
            ConsumerGroupRecord::CurrentMemberAssignment { member_id, value: Some(replacement.current.clone()) },
        ]);
        Ok(replacement)
    }

    /// The member with the request's fields applied (a None field leaves it as it is).
    fn updated(&self, member: &ConsumerGroupMember) -> ConsumerGroupMember {
        let request = self.request;
        let mut updated = member.clone();
        // A ConsumerGroupHeartbeat means the member uses the consumer protocol from now on; a JoinGroup, the
        // classic protocol with the session timeout and protocols it carries.
        updated.client_id = self.client_id.clone();
        updated.client_host = self.client_host.clone();
        updated.classic_member_metadata = self.classic.clone();
        if let Some(instance_id) = &request.instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = &request.rack_id {
            updated.rack_id = Some(rack_id.clone());
        }
        if request.rebalance_timeout_ms != UNCHANGED_REBALANCE_TIMEOUT {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        if let Some(assignor) = &request.server_assignor {
            updated.server_assignor_name = Some(assignor.clone());
        }
        if let Some(names) = &request.subscribed_topic_names {
            let mut subscription = updated.subscription();
            subscription.subscribed_topic_names = names.clone();
            updated = updated.with_subscription(&subscription);
        }
        if let Some(regex) = &request.subscribed_topic_regex {
            updated.subscribed_topic_regex = regex.clone();
        }
        updated
    }

    fn assignor_counts(&self, member: &ConsumerGroupMember, updated: &ConsumerGroupMember) -> Counter {
        let mut counts = self.group.server_assignors.clone();
        if let Some(name) = &member.server_assignor_name {
            counts.add(name, -1);
        }
        if let Some(name) = &updated.server_assignor_name {
            counts.add(name, 1);
        }
        counts.retain(|_, count| *count > 0);
        counts
    }

    fn preferred_assignor(&self, member: &ConsumerGroupMember, updated: &ConsumerGroupMember) -> String {
        preferred_server_assignor(&self.assignor_counts(member, updated))
            .unwrap_or_else(|| self.context.default_assignor().to_string())
    }

    /// The group's effective assignor changes (4.4+, KAFKA-20434): its target must be recomputed.
    fn preferred_assignor_changed(&self, member: &ConsumerGroupMember, updated: &ConsumerGroupMember) -> bool {
        if self.context.kafka_4_0 {
            return false;
        }
        let current =
            self.group.preferred_server_assignor().unwrap_or_else(|| self.context.default_assignor().to_string());
        current != self.preferred_assignor(member, updated)
    }

    /// maybeUpdateTargetAssignment: the member's target and its epoch, computing the group's next target
    /// assignment first if the group epoch is ahead of it and the assignment interval allows.
    fn target_assignment(
        &mut self,
        builder: &TargetAssignmentBuilder<'_>,
        group_epoch: i32,
        member: &ConsumerGroupMember,
        updated: &ConsumerGroupMember,
        sub_type: crate::consumer_group::group_spec::SubscriptionType,
    ) -> Result<(i32, Assignment), HeartbeatError> {
        let group = &self.group;
        if group.assignment_epoch >= group_epoch || !self.can_compute_next_assignment() {
            let target =
                group.target_of(&updated.member_id, updated.instance_id.as_deref()).cloned().unwrap_or_default();
            return Ok((group.assignment_epoch, target));
        }
        let assignor_name = self.preferred_assignor(member, updated);
        let context = self.context;
        let assign = |spec: &GroupSpec, counts: &FxHashMap<TopicId, i32>| context.assign(&assignor_name, spec, counts);
        let result = builder.build(group_epoch, &assign, sub_type, context.topics, self.now).map_err(|error| {
            HeartbeatError {
                error: "UNKNOWN_SERVER_ERROR",
                message: format!("Failed to compute a new target assignment for epoch {group_epoch}: {}", error.0),
            }
        })?;
        self.records.extend(result.records);
        let target = result
            .target_assignment
            .into_iter()
            .find(|(member_id, _)| *member_id == updated.member_id)
            .map(|(_, target)| target)
            .unwrap_or_default();
        Ok((group_epoch, target))
    }

    /// KIP-1263 batching: at most one target computation per assignment interval, unless the last one's time
    /// is unknown (0).
    fn can_compute_next_assignment(&self) -> bool {
        let (last, interval) = (self.group.assignment_timestamp_ms, self.config.group_consumer_assignment_interval_ms);
        self.context.kafka_4_0 || last == 0 || interval == 0 || self.now >= last + interval
    }

    /// maybeReconcile: move the member towards its target; arm the rebalance timer while it has partitions to
    /// revoke, cancel it otherwise.
    fn reconcile(
        &mut self,
        member: ConsumerGroupMember,
        target_epoch: i32,
        target: &Assignment,
        subscription_changed: bool,
    ) -> Result<ConsumerGroupMember, HeartbeatError> {
        if !subscription_changed && member.is_reconciled_to(target_epoch) {
            return Ok(member);
        }
        let (group, topics) = (&self.group, self.context.topics);
        let subscribed = subscribed_topic_ids(
            &member.subscribed_topic_names,
            &member.subscribed_topic_regex,
            |regex| group.resolved_regexes.get(regex).map(|r| &r.topics[..]),
            |name| topics.topic_id(name),
        );
        let target: Vec<(TopicId, Vec<i32>)> = target.iter().map(|(t, ps)| (*t, ps.clone())).collect();
        let r = Reconciliation {
            target_epoch,
            target: &target,
            subscribed: &subscribed,
            current_partition_epoch: |t: &TopicId, p: i32| group.partition_epochs.get(t, p),
            owned: self.owned.as_deref(),
            subscription_changed,
            kafka_4_0: self.context.kafka_4_0,
        };
        let current = reconcile(&member.current, &r)
            .map_err(|FencedMemberEpochError(message)| HeartbeatError { error: "FENCED_MEMBER_EPOCH", message })?;
        let Some(current) = current.filter(|c| !same_current(c, &member.current)) else { return Ok(member) };
        let mut reconciled = member;
        reconciled.current = current.clone();
        self.records.push(ConsumerGroupRecord::CurrentMemberAssignment {
            member_id: reconciled.member_id.clone(),
            value: Some(current),
        });
        // A member using the classic protocol has join and sync timers instead of a rebalance timer.
        if !reconciled.use_classic_protocol() {
            let revoking = reconciled.current.state == member_state::UNREVOKED_PARTITIONS;
            self.timers.push(if revoking {
                rebalance_timer(&reconciled, self.now)
            } else {
                TimerChange::cancel(REBALANCE_TIMEOUT, &reconciled.member_id)
            });
        }
        Ok(reconciled)
    }
}

/// The partitions a member holds as records and responses carry them (group.topic_partitions of its
/// assigned partitions).
pub fn held_partitions(current: &CurrentAssignment) -> TopicPartitions {
    let mut out: TopicPartitions = current
        .assigned_partitions
        .iter()
        .map(|(t, ps)| {
            let mut ps: Vec<i32> = ps.iter().map(|(p, _)| *p).collect();
            ps.sort_unstable();
            (*t, ps)
        })
        .collect();
    out.sort_unstable_by_key(|(t, _)| *t);
    out
}
