//! Mirrors `state/consumer_group/group.py`: a consumer group and its members as the coordinator holds them
//! (Kafka's ConsumerGroup and ConsumerGroupMember, trunk). The group changes only by replaying its records
//! (`ConsumerGroup::replay`), so a group rebuilt from its log equals the one that wrote it.
//!
//! What the group derives from its members is kept in step on every replay, as Kafka's `updateMember` /
//! `removeMember` do: the static members, the count of members per subscribed topic name, per regex and
//! per server assignor, the topics the resolved regexes match, and the member epoch holding each partition.
//! Every map keeps the reference's dict order (`dict::Dict`), since Kafka's HashMaps are filled from them.
//! `metadata_expired` is not replayed (Kafka's in-memory metadata refresh deadline).

use std::fmt;

use crate::consumer_group::group_spec::{SubscriptionType, subscription_type};
use crate::consumer_group::reconciliation::{CurrentPartitionEpochs, PartitionEpochConflict, member_state};
use crate::consumer_group::records::{
    AssignmentMetadata, ClassicMemberMetadata, ConsumerGroupRecord, CurrentAssignment, MemberSubscription,
    PartitionEpochs, ResolvedRegularExpression,
};
use crate::consumer_group::topic_id::TopicId;
use crate::dict::{Counter, Dict};
use crate::java_compat::{JavaHashMap, java_string_cmp};

/// What a member's current assignment holds, at which epoch (CurrentPartitionEpochs.update_member's sides).
fn holdings(c: &CurrentAssignment) -> (&PartitionEpochs, &PartitionEpochs, i32) {
    (&c.assigned_partitions, &c.partitions_pending_revocation, c.member_epoch)
}

/// messages.LEAVE_EPOCH: a member leaving the group for good.
pub const LEAVE_EPOCH: i32 = -1;

/// A member's target: topic id -> partitions (ascending), in the order the record listed the topics.
pub type Assignment = Dict<TopicId, Vec<i32>>;

/// A new group's group epoch and assignment epoch: 1, so the first join bumps to 2 (KAFKA-20268, 4.3);
/// Kafka 4.0 started at 0.
pub fn initial_epoch(kafka_4_0: bool) -> i32 {
    if kafka_4_0 { 0 } else { 1 }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    /// The group epoch is ahead of the target assignment.
    Assigning,
    /// Some member has not reached the target assignment yet.
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// A member: its subscription (the MemberMetadata record) and its reconciliation state (the
/// CurrentMemberAssignment record). `new` is a member that has just been created: epoch 0, previous epoch
/// -1, STABLE, nothing assigned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub client_id: String,
    pub client_host: String,
    /// A set, held in String.compareTo order (the order Kafka writes them in).
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: String,
    pub server_assignor_name: Option<String>,
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
    pub current: CurrentAssignment,
}

impl ConsumerGroupMember {
    pub fn new(member_id: &str) -> Self {
        ConsumerGroupMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: String::new(),
            server_assignor_name: None,
            classic_member_metadata: None,
            current: CurrentAssignment {
                state: member_state::STABLE,
                member_epoch: 0,
                previous_member_epoch: -1,
                assigned_partitions: Vec::new(),
                partitions_pending_revocation: Vec::new(),
            },
        }
    }

    pub fn member_epoch(&self) -> i32 {
        self.current.member_epoch
    }

    pub fn use_classic_protocol(&self) -> bool {
        self.classic_member_metadata.is_some()
    }

    pub fn is_reconciled_to(&self, assignment_epoch: i32) -> bool {
        self.current.state == member_state::STABLE && self.current.member_epoch == assignment_epoch
    }

    pub fn subscription(&self) -> MemberSubscription {
        MemberSubscription {
            instance_id: self.instance_id.clone(),
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.clone(),
            subscribed_topic_regex: self.subscribed_topic_regex.clone(),
            server_assignor: self.server_assignor_name.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            classic_member_metadata: self.classic_member_metadata.clone(),
        }
    }

    pub fn with_subscription(&self, value: &MemberSubscription) -> Self {
        let mut names = value.subscribed_topic_names.clone();
        names.sort_by(|a, b| java_string_cmp(a, b));
        names.dedup();
        ConsumerGroupMember {
            member_id: self.member_id.clone(),
            instance_id: value.instance_id.clone(),
            rack_id: value.rack_id.clone(),
            rebalance_timeout_ms: value.rebalance_timeout_ms,
            client_id: value.client_id.clone(),
            client_host: value.client_host.clone(),
            subscribed_topic_names: names,
            subscribed_topic_regex: value.subscribed_topic_regex.clone(),
            server_assignor_name: value.server_assignor.clone(),
            classic_member_metadata: value.classic_member_metadata.clone(),
            current: self.current.clone(),
        }
    }
}

/// The assignor most members name (ConsumerGroup.computePreferredServerAssignor): the max over Kafka's
/// HashMap filled from the counts in their order, the first one met winning a tie.
pub fn preferred_server_assignor(counts: &Counter) -> Option<String> {
    let mut table = JavaHashMap::default();
    for (name, count) in counts.iter() {
        table.insert(name.clone(), *count);
    }
    let mut best: Option<(&String, i64)> = None;
    for (name, count) in table.entries() {
        if best.is_none_or(|(_, most)| *count > most) {
            best = Some((name, *count));
        }
    }
    best.map(|(name, _)| name.clone())
}

/// Why a replay fails: a record sequence no coordinator writes (the reference's ValueError), or a partition
/// claimed at an epoch not later than its holder's (PartitionEpochConflict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    Invalid(String),
    Conflict(PartitionEpochConflict),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Invalid(message) => f.write_str(message),
            ReplayError::Conflict(conflict) => conflict.fmt(f),
        }
    }
}

impl From<PartitionEpochConflict> for ReplayError {
    fn from(conflict: PartitionEpochConflict) -> Self {
        ReplayError::Conflict(conflict)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub group_id: String,
    pub group_epoch: i32,
    pub metadata_hash: i64,
    pub assignment_epoch: i32,
    pub assignment_timestamp_ms: i64,
    pub members: Dict<String, ConsumerGroupMember>,
    pub target_assignment: Dict<String, Assignment>,
    /// instance id -> member id
    pub static_members: Dict<String, String>,
    /// topic name -> members subscribing to it by name
    pub subscribed_topic_names: Counter,
    /// assignor name -> members naming it
    pub server_assignors: Counter,
    /// regex -> members subscribing with it
    pub subscribed_regexes: Counter,
    /// regex -> what it resolved to (a re-resolved regex goes last)
    pub resolved_regexes: Dict<String, ResolvedRegularExpression>,
    /// topic name -> resolved regexes matching it
    pub regex_topic_names: Counter,
    pub partition_epochs: CurrentPartitionEpochs,
    pub metadata_expired: bool,
}

impl ConsumerGroup {
    pub fn new(group_id: &str, kafka_4_0: bool) -> Self {
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: initial_epoch(kafka_4_0),
            metadata_hash: 0,
            assignment_epoch: initial_epoch(kafka_4_0),
            assignment_timestamp_ms: 0,
            members: Dict::default(),
            target_assignment: Dict::default(),
            static_members: Dict::default(),
            subscribed_topic_names: Counter::default(),
            server_assignors: Counter::default(),
            subscribed_regexes: Counter::default(),
            resolved_regexes: Dict::default(),
            regex_topic_names: Counter::default(),
            partition_epochs: CurrentPartitionEpochs::default(),
            metadata_expired: true,
        }
    }

    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self.members.values().any(|m| !m.is_reconciled_to(self.assignment_epoch)) {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    pub fn subscription_type(&self) -> SubscriptionType {
        subscription_type(
            self.members.values().map(|m| (&m.subscribed_topic_names[..], m.subscribed_topic_regex.as_str())),
        )
    }

    pub fn preferred_server_assignor(&self) -> Option<String> {
        preferred_server_assignor(&self.server_assignors)
    }

    /// Whether a member subscribes to `topic`, by name or through a resolved regex
    /// (ModernGroup.isSubscribedToTopic): its offsets do not expire.
    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscribed_topic_names.contains_key(topic) || self.regex_topic_names.contains_key(topic)
    }

    /// The topics `regex` resolved to, each once; nothing if it is not resolved (yet).
    pub fn regex_topics(&self, regex: &str) -> Vec<String> {
        let mut topics = match self.resolved_regexes.get(regex) {
            Some(resolved) if !regex.is_empty() => resolved.topics.clone(),
            _ => Vec::new(),
        };
        topics.sort_unstable();
        topics.dedup();
        topics
    }

    /// The member holding `instance_id`. (The reference's KeyError, for an instance id whose member a
    /// record sequence no coordinator writes has removed, is None here.)
    pub fn static_member(&self, instance_id: Option<&str>) -> Option<&ConsumerGroupMember> {
        self.members.get(self.static_members.get(instance_id?)?.as_str())
    }

    /// The member's target assignment; a static member's is found through its instance id, so that the
    /// member replacing it gets it (ConsumerGroup.targetAssignment(memberId, instanceId)).
    pub fn target_of(&self, member_id: &str, instance_id: Option<&str>) -> Option<&Assignment> {
        let member_id = match instance_id {
            Some(instance_id) => self.static_members.get(instance_id)?.as_str(),
            None => member_id,
        };
        self.target_assignment.get(member_id)
    }

    // ------------------------------------------------------------------------------------------------
    // Replay: the only way the group changes.

    pub fn replay(&mut self, record: &ConsumerGroupRecord) -> Result<(), ReplayError> {
        match record {
            ConsumerGroupRecord::Metadata(None) => {
                // Deleting a group (ConsumerGroup.createGroupTombstoneRecords) is not modelled.
                return Err(ReplayError::Invalid(format!(
                    "group {}: a ConsumerGroupMetadata tombstone deletes the group",
                    self.group_id
                )));
            }
            ConsumerGroupRecord::Metadata(Some(value)) => {
                self.group_epoch = value.epoch;
                self.metadata_hash = value.metadata_hash;
            }
            ConsumerGroupRecord::PartitionMetadata => {} // nothing of it is held: trunk keeps the metadata hash
            ConsumerGroupRecord::MemberMetadata { member_id, value: None } => self.remove_member(member_id)?,
            ConsumerGroupRecord::MemberMetadata { member_id, value: Some(value) } => {
                let old = self.members.get(member_id.as_str()).cloned();
                let new = old.clone().unwrap_or_else(|| ConsumerGroupMember::new(member_id)).with_subscription(value);
                // The current assignment is the old one's: no partition changes hands.
                self.update_member(old, new, false)?;
            }
            ConsumerGroupRecord::TargetAssignmentMetadata(None) => {
                if !self.target_assignment.is_empty() {
                    return Err(ReplayError::Invalid(format!(
                        "group {}: target assignment tombstone while members have targets",
                        self.group_id
                    )));
                }
                self.set_assignment_metadata(&AssignmentMetadata { assignment_epoch: -1, assignment_timestamp_ms: 0 });
            }
            ConsumerGroupRecord::TargetAssignmentMetadata(Some(value)) => self.set_assignment_metadata(value),
            ConsumerGroupRecord::TargetAssignmentMember { member_id, value: None } => {
                self.target_assignment.remove(member_id.as_str());
            }
            ConsumerGroupRecord::TargetAssignmentMember { member_id, value: Some(value) } => {
                let mut assignment = Assignment::default();
                for (topic_id, partitions) in value {
                    let mut partitions = partitions.clone();
                    partitions.sort_unstable();
                    partitions.dedup();
                    assignment.insert(*topic_id, partitions);
                }
                self.target_assignment.insert(member_id.clone(), assignment);
            }
            ConsumerGroupRecord::CurrentMemberAssignment { member_id, value: None } => {
                if let Some(old) = self.members.get(member_id.as_str()).cloned() {
                    // The member stays until its MemberMetadata tombstone, holding nothing, at epoch -1.
                    let mut new = old.clone();
                    new.current = CurrentAssignment {
                        state: old.current.state,
                        member_epoch: LEAVE_EPOCH,
                        previous_member_epoch: LEAVE_EPOCH,
                        assigned_partitions: Vec::new(),
                        partitions_pending_revocation: Vec::new(),
                    };
                    self.update_member(Some(old), new, true)?;
                }
            }
            ConsumerGroupRecord::CurrentMemberAssignment { member_id, value: Some(value) } => {
                let old = self.members.get(member_id.as_str()).cloned();
                let mut new = old.clone().unwrap_or_else(|| ConsumerGroupMember::new(member_id));
                new.current = value.clone();
                self.update_member(old, new, true)?;
            }
            ConsumerGroupRecord::RegularExpression { regex, value } => {
                // updateResolvedRegularExpression / removeResolvedRegularExpression.
                if let Some(old) = self.resolved_regexes.remove(regex.as_str()) {
                    for topic in &old.topics {
                        self.regex_topic_names.add(topic, -1);
                    }
                }
                if let Some(value) = value {
                    self.resolved_regexes.insert(regex.clone(), value.clone());
                    for topic in &value.topics {
                        self.regex_topic_names.add(topic, 1);
                    }
                }
                self.regex_topic_names.drop_zeros();
            }
        }
        Ok(())
    }

    fn set_assignment_metadata(&mut self, value: &AssignmentMetadata) {
        self.assignment_epoch = value.assignment_epoch;
        self.assignment_timestamp_ms = value.assignment_timestamp_ms;
    }

    /// `current_changed`: the new member's current assignment is a new one (the reference's `is not`),
    /// whose partitions are released and claimed.
    fn update_member(
        &mut self,
        old: Option<ConsumerGroupMember>,
        new: ConsumerGroupMember,
        current_changed: bool,
    ) -> Result<(), ReplayError> {
        self.members.insert(new.member_id.clone(), new.clone());
        if let Some(old) = &old {
            self.count(old, -1);
        }
        self.count(&new, 1);
        if old.is_none() || current_changed {
            let old_current = old.as_ref().map(|m| holdings(&m.current));
            self.partition_epochs.update_member(old_current, Some(holdings(&new.current)))?;
        }
        if let Some(instance_id) = old.as_ref().and_then(|m| m.instance_id.as_deref()) {
            self.static_members.remove(instance_id);
        }
        if let Some(instance_id) = &new.instance_id {
            self.static_members.insert(instance_id.clone(), new.member_id.clone());
        }
        Ok(())
    }

    fn remove_member(&mut self, member_id: &str) -> Result<(), ReplayError> {
        let Some(old) = self.members.get(member_id) else { return Ok(()) };
        // Kafka removes a member only after its current assignment and target are gone.
        if old.member_epoch() != LEAVE_EPOCH || self.target_assignment.contains_key(member_id) {
            return Err(ReplayError::Invalid(format!(
                "group {}: member {member_id} removed before its current assignment and target assignment tombstones",
                self.group_id
            )));
        }
        let old = self.members.remove(member_id).expect("present");
        self.count(&old, -1);
        self.partition_epochs.update_member(Some(holdings(&old.current)), None)?;
        if let Some(instance_id) = &old.instance_id {
            self.static_members.remove(instance_id.as_str());
        }
        Ok(())
    }

    fn count(&mut self, member: &ConsumerGroupMember, delta: i64) {
        for name in &member.subscribed_topic_names {
            self.subscribed_topic_names.add(name, delta);
        }
        if let Some(name) = &member.server_assignor_name {
            self.server_assignors.add(name, delta);
        }
        if !member.subscribed_topic_regex.is_empty() {
            self.subscribed_regexes.add(&member.subscribed_topic_regex, delta);
        }
        self.subscribed_topic_names.drop_zeros();
        self.server_assignors.drop_zeros();
        self.subscribed_regexes.drop_zeros();
    }
}
