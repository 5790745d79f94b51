//! Mirrors `state/runtime/result.py`: what one operation of a group's coordinator does, as a value. The
//! records to append, the responses (to the request, and to parked requests the operation releases), and the
//! changes to the coordinator's timers and to what the run's tables observe, in the order the operation does
//! them (Kafka's CoordinatorResult, coordinator-common runtime/CoordinatorResult.java, holds the records and
//! the response; a coordsim operation may append more than once and answers parked requests with the rest).
//!
//! The effects are plain data: the runtime carries them out. An append's outcome is known when the
//! operation is decided: the failures a COORDINATOR_FAULT injected are the partition's (`outcomes`), taken in
//! order by the operations that append, and a failed append leaves no effect. The consumer group's effects
//! (the reference's REPLAY_CONSUMER_GROUP to IN_STATE) come with its manager.

use std::collections::VecDeque;

use crate::classic::group::ClassicGroupMember;
use crate::classic::group_state::GroupState;
use crate::events::{PartitionList, Request};
use crate::records::group_log::Record;

/// A response's column, as the reference's keyword arguments name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    MemberId,
    GenerationId,
    LeaderId,
    ProtocolType,
    ProtocolName,
    SkipAssignment,
    Members,
    Assignment,
    Results,
}

impl Field {
    pub fn name(self) -> &'static str {
        match self {
            Field::MemberId => "member_id",
            Field::GenerationId => "generation_id",
            Field::LeaderId => "leader_id",
            Field::ProtocolType => "protocol_type",
            Field::ProtocolName => "protocol_name",
            Field::SkipAssignment => "skip_assignment",
            Field::Members => "members",
            Field::Assignment => "assignment",
            Field::Results => "results",
        }
    }
}

/// One member of a JoinGroup response's `members` (the leader's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Vec<u8>,
}

/// One entry of a `responses` row's `results`: a member's (LeaveGroup) or a partition's (OffsetCommit,
/// OffsetFetch) answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionResult {
    pub member_id: Option<String>,
    pub group_instance_id: Option<String>,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub error: String,
    pub offset: Option<i64>,
    pub leader_epoch: Option<i32>,
    pub metadata: Option<String>,
}

/// A partition's answer (OffsetCommit, OffsetFetch), without an offset.
pub fn partition_result(topic: &str, partition: i32, error: &str) -> PartitionResult {
    fetched_result(topic, partition, error, None, None, None)
}

/// A partition's answer with the offset an OffsetFetch gives.
pub fn fetched_result(
    topic: &str,
    partition: i32,
    error: &str,
    offset: Option<i64>,
    leader_epoch: Option<i32>,
    metadata: Option<&str>,
) -> PartitionResult {
    PartitionResult {
        member_id: None,
        group_instance_id: None,
        topic: Some(topic.to_string()),
        partition: Some(partition),
        error: error.to_string(),
        offset,
        leader_epoch,
        metadata: metadata.map(str::to_string),
    }
}

/// A response column's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Null,
    Int(i64),
    Bool(bool),
    Str(String),
    Members(Vec<JoinMember>),
    Partitions(Vec<PartitionList>),
    Results(Vec<PartitionResult>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<Option<&str>> for Value {
    fn from(s: Option<&str>) -> Value {
        s.map_or(Value::Null, Value::from)
    }
}

/// A response's columns besides the error, in the order the reference's keyword arguments give them.
pub type Fields = Vec<(Field, Value)>;

/// A coordinator timer's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TimerKey {
    Heartbeat(String),
    Join,
    Sync,
}

/// What a coordinator timer does when it fires, with its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Timer {
    /// A member's session (or a new member's join) deadline.
    Heartbeat(String),
    /// The initial rebalance delay: (delay, remaining).
    InitialJoin(i64, i64),
    /// The rebalance timeout of the join phase.
    Join,
    /// The pending-sync deadline of a generation.
    Sync(i32),
}

/// A `generations` row's members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerationMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
}

/// A generation as its join phase completed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerationSnapshot {
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub members: Vec<GenerationMember>,
}

/// A `generations` row, once the generation's outcome is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenerationRow {
    pub snapshot: GenerationSnapshot,
    pub member_count: usize,
    pub rebalance_start_ts: i64,
    pub join_complete_ts: i64,
    pub stable_ts: Option<i64>,
    pub cause: String,
}

/// An `assignments` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignmentRow {
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub topic: String,
    pub partition: i32,
    pub assign_ts: i64,
}

/// One effect of an operation (the reference's effect kinds, as tuples there).
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// The answer to a request.
    Respond {
        request: Request,
        error: String,
        fields: Fields,
    },
    /// Records appended to the group's partition.
    Append(Vec<Record>),
    /// The coordinator timer `key` (re)scheduled.
    Schedule {
        key: TimerKey,
        deadline: i64,
        timer: Timer,
    },
    /// The coordinator timer `key` cancelled.
    Cancel(TimerKey),
    /// Every coordinator timer of the group cancelled.
    CancelAll,
    /// A group without protocol type or members exists from now on.
    CreateSimpleGroup,
    /// The group goes Dead and is deleted (the cause).
    DeleteGroup(String),
    /// The Empty consumer group goes, its tombstones written (the cause).
    DeleteConsumerGroup(String),
    /// A parked request whose broker failed: the client's connection fails.
    Disconnect(Request),
    /// A classic group's transition.
    State {
        previous: Option<GroupState>,
        target: GroupState,
        cause: String,
        generation_id: i32,
        leader_id: Option<String>,
        member_count: usize,
    },
    /// A `members` row.
    Member {
        change: &'static str,
        member_id: String,
        group_instance_id: Option<String>,
        client_id: String,
        client_host: String,
        cause: String,
        generation_id: i32,
        member_count: usize,
    },
    Generation(GenerationRow),
    Assignment(AssignmentRow),
    /// Kafka's scheduleIfAbsent: the timer `key` unless one is pending when the result is carried out.
    ScheduleIfAbsent {
        key: TimerKey,
        deadline: i64,
        timer: Timer,
    },
}

/// The effects of one operation, in order; built by a manager.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoordinatorResult {
    pub effects: Vec<Effect>,
    /// The partition's injected append failures still to come (taken in order).
    pub outcomes: VecDeque<String>,
}

impl CoordinatorResult {
    pub fn new(outcomes: VecDeque<String>) -> CoordinatorResult {
        CoordinatorResult { effects: Vec::new(), outcomes }
    }

    pub fn respond(&mut self, request: Request, error: &str, fields: Fields) {
        self.effects.push(Effect::Respond { request, error: error.to_string(), fields });
    }

    /// An error with Kafka's default fields for the request's API (GENERIC_ERROR_FIELDS); an OffsetCommit's
    /// applies to each of its partitions.
    pub fn respond_error(&mut self, request: Request, error: &str) {
        let fields = match &request {
            Request::OffsetCommit(req) => vec![(
                Field::Results,
                Value::Results(req.offsets.iter().map(|p| partition_result(&p.topic, p.partition, error)).collect()),
            )],
            Request::JoinGroup(_) => vec![
                (Field::MemberId, Value::from("")),
                (Field::GenerationId, Value::Int(-1)),
                (Field::LeaderId, Value::from("")),
            ],
            Request::SyncGroup(_) => vec![(Field::Assignment, Value::Partitions(Vec::new()))],
            _ => Vec::new(),
        };
        self.respond(request, error, fields);
    }

    /// Append `records` in one write: None once they are appended, else the error the write fails with
    /// (nothing appended).
    pub fn append(&mut self, records: Vec<Record>) -> Option<String> {
        let error = self.outcome();
        if error.is_none() {
            self.written(records);
        }
        error
    }

    /// The outcome of the operation's next write (None: it succeeds), whose records come later (`written`).
    pub fn outcome(&mut self) -> Option<String> {
        self.outcomes.pop_front()
    }

    /// Records of a write whose outcome was success (`outcome`).
    pub fn written(&mut self, records: Vec<Record>) {
        self.effects.push(Effect::Append(records));
    }

    pub fn schedule(&mut self, key: TimerKey, deadline: i64, timer: Timer) {
        self.effects.push(Effect::Schedule { key, deadline, timer });
    }

    pub fn schedule_if_absent(&mut self, key: TimerKey, deadline: i64, timer: Timer) {
        self.effects.push(Effect::ScheduleIfAbsent { key, deadline, timer });
    }

    pub fn cancel(&mut self, key: TimerKey) {
        self.effects.push(Effect::Cancel(key));
    }

    pub fn cancel_all(&mut self) {
        self.effects.push(Effect::CancelAll);
    }

    pub fn create_simple_group(&mut self) {
        self.effects.push(Effect::CreateSimpleGroup);
    }

    pub fn delete_group(&mut self, cause: &str) {
        self.effects.push(Effect::DeleteGroup(cause.to_string()));
    }

    pub fn delete_consumer_group(&mut self, cause: &str) {
        self.effects.push(Effect::DeleteConsumerGroup(cause.to_string()));
    }

    pub fn disconnect(&mut self, request: Request) {
        self.effects.push(Effect::Disconnect(request));
    }

    pub fn state(
        &mut self,
        previous: Option<GroupState>,
        target: GroupState,
        cause: &str,
        generation_id: i32,
        leader_id: Option<String>,
        member_count: usize,
    ) {
        self.effects.push(Effect::State {
            previous,
            target,
            cause: cause.to_string(),
            generation_id,
            leader_id,
            member_count,
        });
    }

    pub fn member(
        &mut self,
        change: &'static str,
        member: &ClassicGroupMember,
        cause: &str,
        generation_id: i32,
        member_count: usize,
    ) {
        self.effects.push(Effect::Member {
            change,
            member_id: member.member_id.clone(),
            group_instance_id: member.group_instance_id.clone(),
            client_id: member.client_id.clone(),
            client_host: member.client_host.clone(),
            cause: cause.to_string(),
            generation_id,
            member_count,
        });
    }

    pub fn generation(&mut self, row: GenerationRow) {
        self.effects.push(Effect::Generation(row));
    }

    pub fn assignment(&mut self, row: AssignmentRow) {
        self.effects.push(Effect::Assignment(row));
    }
}

/// What a manager shares with the other managers: the operation being decided, its time and its result,
/// which its handlers fill in and `end` hands to the runtime.
pub trait Operations {
    /// The operation's time and result.
    fn operation(&mut self) -> (&mut i64, &mut CoordinatorResult);

    fn begin(&mut self, now: i64, outcomes: VecDeque<String>) {
        let (time, op) = self.operation();
        *time = now;
        *op = CoordinatorResult::new(outcomes);
    }

    fn end(&mut self) -> CoordinatorResult {
        std::mem::take(self.operation().1)
    }
}
