//! Mirrors `state/classic/manager.py`: the classic group manager. JoinGroup, SyncGroup, Heartbeat and
//! LeaveGroup, the rebalance they drive and its timers (session expiry, the join and initial-delay timeouts,
//! pending-sync expiry), for a classic group (Kafka 4.x GroupMetadataManager's classic group handlers).
//!
//! `ClassicGroupManager` holds the group (`group`, None when the id names no classic group) and changes it in
//! memory as Kafka's handlers do, and every operation returns a `CoordinatorResult` (runtime/result.rs): the
//! GroupMetadata records to append, the responses to the request and to the parked requests it releases, the
//! coordinator timers it sets, and the rows the run's tables observe, in the order the operation produces
//! them. The manager answers, writes and schedules nothing itself. An operation's time is `now`.
//!
//! The methods are the reference's, in its order, under the same names (without the leading underscore).
//! Where a reference method takes the group (always `self.group`) or a member, the Rust one reads the group
//! from `self` and takes the member's id, so the group can change while a member is at hand.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::classic::group::{ClassicGroup, ClassicGroupMember, decode_assignment_partitions};
use crate::classic::group_state::GroupState::{self, *};
use crate::config::{CoordinatorConfig, NEW_MEMBER_JOIN_TIMEOUT_MS};
use crate::errors::append_error_to_response_error;
use crate::events::{Heartbeat, JoinGroup, LeaveGroup, LeaveIdentity, Protocol, Request, SyncGroup};
use crate::records::group_log::{GroupMetadataValue, Record, group_from_value, group_metadata_value};
use crate::runtime::member_ids::MemberIds;
use crate::runtime::result::{
    AssignmentRow, CoordinatorResult, Field, Fields, GenerationMember, GenerationRow, GenerationSnapshot, JoinMember,
    Operations, PartitionResult, Timer, TimerKey, Value,
};

/// GroupCoordinatorService.joinGroup's checks, whatever the group: its id and the session timeout.
pub fn join_request_error(config: &CoordinatorConfig, req: &JoinGroup) -> Option<&'static str> {
    if req.event.group_id.is_empty() {
        return Some("INVALID_GROUP_ID");
    }
    let session = i64::from(req.session_timeout_ms);
    if !(config.group_min_session_timeout_ms <= session && session <= config.group_max_session_timeout_ms) {
        return Some("INVALID_SESSION_TIMEOUT");
    }
    None
}

/// What a JoinGroup error leaves in the response besides the error (Kafka's defaults).
fn join_error() -> Fields {
    vec![(Field::GenerationId, Value::Int(-1)), (Field::LeaderId, Value::from(""))]
}

/// A JoinGroup error's fields after a member id.
fn join_error_with_member(member_id: &str) -> Fields {
    let mut fields = vec![(Field::MemberId, Value::from(member_id))];
    fields.extend(join_error());
    fields
}

/// Why a request fails member validation (ClassicGroup.validateMember): the Kafka error name.
pub fn validate_member(
    group: &ClassicGroup,
    member_id: &str,
    group_instance_id: Option<&str>,
) -> Result<(), &'static str> {
    if let Some(instance_id) = group_instance_id {
        match group.static_members.get(instance_id) {
            None => return Err("UNKNOWN_MEMBER_ID"),
            Some(existing) if existing != member_id => return Err("FENCED_INSTANCE_ID"),
            Some(_) => {}
        }
    }
    if !group.has_member(member_id) {
        return Err("UNKNOWN_MEMBER_ID");
    }
    Ok(())
}

/// Why a request is not from a current member at the group's generation (ClassicGroup.validateMember, then
/// the generation check of validateSyncGroup, validateHeartbeat and validateOffsetCommit), or None.
pub fn generation_member_error(
    group: &ClassicGroup,
    member_id: &str,
    group_instance_id: Option<&str>,
    generation_id: i32,
) -> Option<&'static str> {
    if let Err(error) = validate_member(group, member_id, group_instance_id) {
        return Some(error);
    }
    (generation_id != group.generation_id).then_some("ILLEGAL_GENERATION")
}

/// The generation whose `generations` row is still to write: from its rebalance's start until its outcome is
/// known (Stable, abandoned, or the end of the run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingGeneration {
    pub rebalance_start_ts: i64,
    pub cause: String,
    pub join_complete_ts: Option<i64>,
    pub snapshot: Option<GenerationSnapshot>,
}

/// One group id's classic group and the operations on it (see the module's docstring).
#[derive(Clone, Debug)]
pub struct ClassicGroupManager {
    pub group_id: String,
    pub config: CoordinatorConfig,
    pub ids: MemberIds,
    pub group: Option<ClassicGroup>,
    pub pending_generation: Option<PendingGeneration>,
    // The operation being decided: its time and its result (transient: only during an operation).
    now: i64,
    op: CoordinatorResult,
}

impl Operations for ClassicGroupManager {
    fn operation(&mut self) -> (&mut i64, &mut CoordinatorResult) {
        (&mut self.now, &mut self.op)
    }
}

impl ClassicGroupManager {
    pub fn new(group_id: &str, config: CoordinatorConfig, ids: MemberIds) -> ClassicGroupManager {
        ClassicGroupManager {
            group_id: group_id.to_string(),
            config,
            ids,
            group: None,
            pending_generation: None,
            now: -1,
            op: CoordinatorResult::default(),
        }
    }

    fn g(&self) -> &ClassicGroup {
        self.group.as_ref().expect("the operation needs the classic group")
    }

    fn gm(&mut self) -> &mut ClassicGroup {
        self.group.as_mut().expect("the operation needs the classic group")
    }

    fn is_in(&self, states: &[GroupState]) -> bool {
        self.g().is_in(states)
    }

    // ==========================================================================================================
    // JoinGroup
    // ==========================================================================================================
    /// `consumer_group_exists`: the id names an Empty consumer group, which a new classic group replaces (its
    /// tombstones open the new group's append).
    pub fn join_group(
        &mut self,
        now: i64,
        req: &Arc<JoinGroup>,
        outcomes: VecDeque<String>,
        consumer_group_exists: bool,
    ) -> CoordinatorResult {
        self.begin(now, outcomes);
        let request = Request::JoinGroup(Arc::clone(req));
        if let Some(error) = join_request_error(&self.config, req) {
            self.op.respond(request, error, join_error());
            return self.end();
        }
        if self.group.is_none() {
            if !req.member_id.is_empty() {
                self.op.respond(request, "UNKNOWN_MEMBER_ID", join_error());
                return self.end();
            }
            // A new group is committed with an empty GroupMetadata record: the write's outcome decides whether
            // the group exists, and its state change precedes the record's row.
            if let Some(error) = self.op.outcome() {
                self.answer_failed_group_creation(req, &error);
                return self.end();
            }
            if consumer_group_exists {
                self.op.delete_consumer_group("group_converted");
            }
            self.group = Some(ClassicGroup::new(&self.group_id, self.now));
            self.state(None, Empty, "group_created");
            let value = group_metadata_value(self.g(), None, Some(""));
            self.op.written(vec![Record::GroupMetadata(Some(value))]);
        }
        if !self.accept_joining_member(&req.member_id) {
            self.remove_member(&req.member_id, "group_max_size_reached");
            self.op.respond(request, "GROUP_MAX_SIZE_REACHED", join_error_with_member(""));
        } else if req.member_id.is_empty() {
            self.join_new_member(req);
        } else {
            self.join_existing_member(req);
        }
        self.end()
    }

    fn answer_failed_group_creation(&mut self, req: &Arc<JoinGroup>, error: &str) {
        // Kafka reverts the new group. A join answered inside the same operation (rejected protocols, or
        // MEMBER_ID_REQUIRED) keeps that answer; only a parked join learns about the failed append.
        let request = Request::JoinGroup(Arc::clone(req));
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            self.op.respond(request, "INCONSISTENT_GROUP_PROTOCOL", join_error());
        } else if req.event.api_version >= 4 && req.group_instance_id.is_none() {
            let member_id = self.new_member_id(&req.event.client_id, req);
            self.op.respond(request, "MEMBER_ID_REQUIRED", join_error_with_member(&member_id));
        } else {
            self.op.respond(request, append_error_to_response_error(error), join_error_with_member(""));
        }
    }

    /// clientId (or group.instance.id) + "-" + a UUID, as Kafka does (runtime/member_ids.rs). A replayed
    /// request whose captured broker handed out an id of that form gets the captured id (docs/captures.md).
    fn new_member_id(&mut self, prefix: &str, req: &JoinGroup) -> String {
        let generated = self.ids.member_id(prefix);
        if let Some(captured) = &req.event.captured
            && matches!(captured.error.as_deref(), Some("NONE" | "MEMBER_ID_REQUIRED"))
            && let Some(captured_id) = captured.member_id.as_deref().filter(|id| !id.is_empty())
            && same_form(captured_id, &generated, prefix)
            && !self.group.as_ref().is_some_and(|g| g.has_member(captured_id))
        {
            return captured_id.to_string();
        }
        generated
    }

    fn accept_joining_member(&self, member_id: &str) -> bool {
        let group = self.g();
        let max_size = self.config.group_max_size;
        if group.is_in(&[Empty, Dead]) {
            return true;
        }
        if group.is_in(&[PreparingRebalance]) {
            return (group.has_member(member_id) && group.member(member_id).awaiting_join.is_some())
                || (group.num_members_awaiting_join as i64) < max_size;
        }
        group.has_member(member_id) || (group.members.len() as i64) < max_size
    }

    /// Answered already: the group is Dead, or does not support the join's protocols (both join paths).
    fn join_refused(&mut self, req: &Arc<JoinGroup>) -> bool {
        let error = if self.is_in(&[Dead]) {
            "COORDINATOR_NOT_AVAILABLE"
        } else if !self.g().supports_protocols(&req.protocol_type, &req.protocols) {
            "INCONSISTENT_GROUP_PROTOCOL"
        } else {
            return false;
        };
        self.op.respond(Request::JoinGroup(Arc::clone(req)), error, join_error());
        true
    }

    fn join_new_member(&mut self, req: &Arc<JoinGroup>) {
        if self.join_refused(req) {
            return;
        }
        let prefix = req.group_instance_id.as_deref().unwrap_or(&req.event.client_id);
        let new_id = self.new_member_id(prefix, req);
        if let Some(instance_id) = &req.group_instance_id {
            match self.g().static_members.get(instance_id).cloned() {
                Some(old_id) => self.replace_static_member(req, &old_id, &new_id),
                None => self.add_member_and_rebalance(req, &new_id),
            }
        } else if req.event.api_version >= 4 {
            // KIP-394: the member must come back with the id we hand out; until then it is only pending. A set
            // (a captured id may be handed out twice).
            if !self.g().is_pending_member(&new_id) {
                self.gm().pending_join_members.push(new_id.clone());
            }
            self.op.schedule(
                TimerKey::Heartbeat(new_id.clone()),
                self.now + i64::from(req.session_timeout_ms),
                Timer::Heartbeat(new_id.clone()),
            );
            self.op.respond(Request::JoinGroup(Arc::clone(req)), "MEMBER_ID_REQUIRED", join_error_with_member(&new_id));
        } else {
            self.add_member_and_rebalance(req, &new_id);
        }
    }

    fn join_existing_member(&mut self, req: &Arc<JoinGroup>) {
        let member_id = req.member_id.as_str();
        if self.join_refused(req) {
            return;
        }
        let request = Request::JoinGroup(Arc::clone(req));
        if self.g().is_pending_member(member_id) {
            if req.group_instance_id.is_some() {
                // Kafka throws IllegalStateException here: the client sees a bare server error.
                self.op.respond(request, "UNKNOWN_SERVER_ERROR", join_error_with_member(""));
                return;
            }
            self.add_member_and_rebalance(req, member_id);
            return;
        }
        if let Err(error) = validate_member(self.g(), member_id, req.group_instance_id.as_deref()) {
            self.op.respond(request, error, join_error());
            return;
        }
        let group = self.g();
        let matches = group.member(member_id).matches(&req.protocols);
        if group.is_in(&[PreparingRebalance]) {
            self.update_member_and_rebalance(member_id, req, "member_metadata_update");
        } else if group.is_in(&[CompletingRebalance]) {
            if matches {
                // The member lost our JoinGroup response: send the current generation again.
                let with_members = group.is_leader(member_id);
                self.answer_join_now(member_id, req, with_members);
            } else {
                self.update_member_and_rebalance(member_id, req, "member_metadata_update");
            }
        } else if group.is_in(&[Stable]) {
            if group.is_leader(member_id) {
                // A leader rejoin always rebalances: that is how it reacts to topic metadata changes.
                self.update_member_and_rebalance(member_id, req, "leader_rejoin");
            } else if !matches {
                self.update_member_and_rebalance(member_id, req, "member_metadata_update");
            } else {
                self.answer_join_now(member_id, req, false);
            }
        } else {
            self.op.respond(request, "UNKNOWN_MEMBER_ID", join_error());
        }
    }

    /// A successful JoinGroup response's fields: the generation, the leader as `leader_id` gives it, and the
    /// members list when `members` is given.
    fn join_fields(
        &self,
        member_id: &str,
        leader_id: Option<&str>,
        skip_assignment: bool,
        members: Option<Vec<JoinMember>>,
    ) -> Fields {
        let group = self.g();
        let mut fields = vec![
            (Field::MemberId, Value::from(member_id)),
            (Field::GenerationId, Value::Int(i64::from(group.generation_id))),
            (Field::ProtocolType, Value::from(group.protocol_type.as_deref())),
            (Field::ProtocolName, Value::from(group.protocol_name.as_deref())),
            (Field::LeaderId, Value::from(leader_id.unwrap_or(""))),
            (Field::SkipAssignment, Value::Bool(skip_assignment)),
        ];
        if let Some(members) = members {
            fields.push((Field::Members, Value::Members(members)));
        }
        fields
    }

    fn answer_join_now(&mut self, member_id: &str, req: &Arc<JoinGroup>, with_members: bool) {
        let members = if with_members { self.member_list() } else { Vec::new() };
        let fields = self.join_fields(member_id, self.g().leader_id.as_deref(), false, Some(members));
        self.op.respond(Request::JoinGroup(Arc::clone(req)), "NONE", fields);
    }

    fn member_list(&self) -> Vec<JoinMember> {
        let group = self.g();
        group
            .all_members()
            .into_iter()
            .map(|m| JoinMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(group.protocol_name.as_deref()).to_vec(),
            })
            .collect()
    }

    fn add_member_and_rebalance(&mut self, req: &Arc<JoinGroup>, member_id: &str) {
        let member = ClassicGroupMember {
            member_id: member_id.to_string(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: req.event.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            assignment: Vec::new(),
            assignment_partitions: Some(Vec::new()),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: true,
        };
        let group = self.gm();
        if group.is_in(&[PreparingRebalance]) && group.previous_state == Some(Empty) {
            group.new_member_added = true; // lets the initial rebalance delay be extended
        }
        self.add_member(member, Some(Arc::clone(req)), "member_join");
        // A new member cannot heartbeat while its JoinGroup is parked, so it gets the fixed 5-minute join
        // timeout rather than its session timeout.
        self.schedule_heartbeat(member_id, Some(NEW_MEMBER_JOIN_TIMEOUT_MS));
        self.rebalance_or_complete_join("member_join");
    }

    fn update_member_and_rebalance(&mut self, member_id: &str, req: &Arc<JoinGroup>, cause: &str) {
        self.gm().update_member(
            member_id,
            req.protocols.clone(),
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(Arc::clone(req)),
        );
        self.rebalance_or_complete_join(cause);
    }

    fn rebalance_or_complete_join(&mut self, cause: &str) {
        if self.g().can_rebalance() {
            self.prepare_rebalance_now(cause);
        } else {
            self.maybe_complete_join_phase();
        }
    }

    fn maybe_complete_join_phase(&mut self) {
        // During the initial delay (entered from Empty) only the timer may complete the join phase.
        let group = self.g();
        if group.is_in(&[PreparingRebalance]) && group.has_all_members_joined() && group.previous_state != Some(Empty) {
            self.complete_join("all_members_joined");
        }
    }

    fn replace_static_member(&mut self, req: &Arc<JoinGroup>, old_id: &str, new_id: &str) {
        let previous_leader = self.g().leader_id.clone();
        let instance_id = req.group_instance_id.as_deref().expect("a static member's join");
        let old = self.replace_static_member_id(instance_id, old_id, new_id, "static_member_replacement");
        self.fence_replaced_member(old);
        self.op.cancel(TimerKey::Heartbeat(old_id.to_string()));
        self.schedule_heartbeat(new_id, None);
        let member = self.g().member(new_id);
        let old_settings = (member.protocols.clone(), member.rebalance_timeout_ms, member.session_timeout_ms);
        self.gm().update_member(
            new_id,
            req.protocols.clone(),
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            Some(Arc::clone(req)),
        );
        if self.is_in(&[Stable]) {
            let group = self.g();
            if Some(group.protocol_name.clone().unwrap_or_default()) == group.select_protocol() {
                self.persist_static_replacement(req, new_id, old_id, previous_leader, old_settings);
            } else {
                self.rebalance_or_complete_join("static_member_protocol_change");
            }
        } else if self.is_in(&[CompletingRebalance]) {
            // The leader may already hold an assignment keyed by the old member id.
            self.prepare_rebalance_now("static_member_rejoin");
        } else if self.is_in(&[Empty, Dead]) {
            panic!("static member replacement in an empty group");
        } else {
            self.maybe_complete_join_phase();
        }
    }

    fn fence_replaced_member(&mut self, mut old: ClassicGroupMember) {
        if let Some(join) = old.awaiting_join.take() {
            let fields = vec![
                (Field::MemberId, Value::from(old.member_id.as_str())),
                (Field::GenerationId, Value::Int(-1)),
                (Field::LeaderId, Value::from("")),
                (Field::Members, Value::Members(Vec::new())),
                (Field::SkipAssignment, Value::Bool(false)),
            ];
            self.op.respond(Request::JoinGroup(join), "FENCED_INSTANCE_ID", fields);
        }
        if let Some(sync) = old.awaiting_sync.take() {
            self.op.respond(
                Request::SyncGroup(sync),
                "FENCED_INSTANCE_ID",
                vec![(Field::Assignment, Value::Partitions(Vec::new()))],
            );
        }
    }

    /// The selected protocol does not change: keep the generation, store the assignment under the new id.
    fn persist_static_replacement(
        &mut self,
        req: &Arc<JoinGroup>,
        member_id: &str,
        old_id: &str,
        previous_leader: Option<String>,
        old_settings: (Vec<Protocol>, i32, i32),
    ) {
        let assignment: FxHashMap<String, Vec<u8>> =
            self.g().all_members().into_iter().map(|m| (m.member_id.clone(), m.assignment.clone())).collect();
        let request = Request::JoinGroup(Arc::clone(req));
        if let Some(error) = self.write_group_metadata(Some(&assignment)) {
            let (protocols, rebalance, session) = old_settings;
            self.gm().update_member(member_id, protocols, rebalance, session, None);
            let instance_id = req.group_instance_id.as_deref().expect("a static member's join");
            self.replace_static_member_id(instance_id, member_id, old_id, "static_member_replacement_failed");
            self.op.cancel(TimerKey::Heartbeat(member_id.to_string()));
            self.schedule_heartbeat(old_id, None);
            let fields = self.join_fields("", previous_leader.as_deref(), false, None);
            self.op.respond(request, append_error_to_response_error(&error), fields);
            return;
        }
        self.gm().take_join(member_id);
        let fields = if req.event.api_version >= 9 {
            let is_leader = self.g().is_leader(member_id);
            let members = if is_leader { self.member_list() } else { Vec::new() };
            self.join_fields(member_id, self.g().leader_id.as_deref(), is_leader, Some(members))
        } else {
            // Older clients are told the previous leader id, so a returning static leader does not re-run its
            // assignor while the group is Stable.
            self.join_fields(member_id, previous_leader.as_deref(), false, Some(Vec::new()))
        };
        self.op.respond(request, "NONE", fields);
    }

    // ==========================================================================================================
    // Rebalance
    // ==========================================================================================================
    /// A rebalance the runtime starts (a load finding more members than group.max.size).
    pub fn prepare_rebalance(&mut self, now: i64, cause: &str, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        self.prepare_rebalance_now(cause);
        self.end()
    }

    /// The reference's `_prepare_rebalance`.
    fn prepare_rebalance_now(&mut self, cause: &str) {
        if self.is_in(&[CompletingRebalance]) {
            self.reset_and_propagate_assignment("REBALANCE_IN_PROGRESS");
        }
        self.op.cancel(TimerKey::Sync);
        self.gm().pending_sync_members.clear();
        let initial = self.is_in(&[Empty]);
        if initial {
            let delay = self.config.group_initial_rebalance_delay_ms;
            let remaining = (self.g().rebalance_timeout_ms() - delay).max(0);
            self.op.schedule(TimerKey::Join, self.now + delay, Timer::InitialJoin(delay, remaining));
        }
        if self.is_in(&[CompletingRebalance]) {
            self.flush_generation(None);
        }
        self.transition(PreparingRebalance, cause);
        self.pending_generation = Some(PendingGeneration {
            rebalance_start_ts: self.now,
            cause: cause.to_string(),
            join_complete_ts: None,
            snapshot: None,
        });
        if !initial {
            if self.g().has_all_members_joined() {
                self.complete_join("all_members_joined");
            } else {
                let deadline = self.now + self.g().rebalance_timeout_ms();
                self.op.schedule(TimerKey::Join, deadline, Timer::Join);
            }
        }
    }

    /// The initial rebalance delay ran out: extended while members keep arriving, else the join completes.
    pub fn on_initial_join_timeout(
        &mut self,
        now: i64,
        delay: i64,
        remaining: i64,
        outcomes: VecDeque<String>,
    ) -> CoordinatorResult {
        self.begin(now, outcomes);
        if self.g().new_member_added && remaining != 0 {
            self.gm().new_member_added = false;
            let new_delay = self.config.group_initial_rebalance_delay_ms.min(remaining);
            // Kafka subtracts the previous delay, not the new one.
            let new_remaining = (remaining - delay).max(0);
            self.op.schedule(TimerKey::Join, self.now + new_delay, Timer::InitialJoin(new_delay, new_remaining));
        } else {
            self.complete_join("initial_rebalance_delay");
        }
        self.end()
    }

    /// The rebalance timeout ran out: the join phase completes without the members that did not rejoin.
    pub fn on_join_timeout(&mut self, now: i64, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        self.complete_join("rebalance_timeout");
        self.end()
    }

    fn complete_join(&mut self, cause: &str) {
        self.op.cancel(TimerKey::Join);
        for member_id in self.g().not_yet_rejoined_members() {
            if !self.g().member(&member_id).is_static() {
                self.remove_member(&member_id, cause);
                self.op.cancel(TimerKey::Heartbeat(member_id));
            }
        }
        if self.is_in(&[Dead]) {
            return;
        }
        if !self.gm().maybe_elect_new_joined_leader() && !self.g().members.is_empty() {
            // Only static members that did not rejoin are left: wait another rebalance timeout for them to
            // rejoin or for their sessions to expire.
            let deadline = self.now + self.g().rebalance_timeout_ms();
            self.op.schedule(TimerKey::Join, deadline, Timer::Join);
            return;
        }
        let now = self.now;
        self.gm().init_next_generation(now);
        let (previous, state) = (self.g().previous_state, self.g().state);
        self.state(previous, state, cause);
        let mut pending = self.pending_generation.take().unwrap_or(PendingGeneration {
            rebalance_start_ts: now,
            cause: cause.to_string(),
            join_complete_ts: None,
            snapshot: None,
        });
        pending.join_complete_ts = Some(now);
        self.pending_generation = Some(pending);
        if self.is_in(&[Empty]) {
            // Kafka only logs a failed write of the empty group's record.
            let _ = self.write_group_metadata(Some(&FxHashMap::default()));
            self.flush_generation(None);
            return;
        }
        let snapshot = self.generation_snapshot();
        if let Some(pending) = self.pending_generation.as_mut() {
            pending.snapshot = Some(snapshot);
        }
        for member_id in self.g().member_ids() {
            if let Some(join) = self.gm().take_join(&member_id) {
                let is_leader = self.g().is_leader(&member_id);
                let members = if is_leader { self.member_list() } else { Vec::new() };
                let fields = self.join_fields(&member_id, self.g().leader_id.as_deref(), false, Some(members));
                self.op.respond(Request::JoinGroup(join), "NONE", fields);
            }
            self.schedule_heartbeat(&member_id, None);
            let group = self.gm();
            group.member_mut(&member_id).is_new = false;
            if !group.pending_sync_members.contains(&member_id) {
                group.pending_sync_members.push(member_id);
            }
        }
        let group = self.g();
        let (deadline, generation_id) = (self.now + group.rebalance_timeout_ms(), group.generation_id);
        self.op.schedule(TimerKey::Sync, deadline, Timer::Sync(generation_id));
    }

    fn generation_snapshot(&self) -> GenerationSnapshot {
        let group = self.g();
        GenerationSnapshot {
            generation_id: group.generation_id,
            protocol_type: group.protocol_type.clone(),
            protocol_name: group.protocol_name.clone(),
            leader_id: group.leader_id.clone(),
            members: group
                .all_members()
                .into_iter()
                .map(|m| GenerationMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                })
                .collect(),
        }
    }

    /// The generations row, once the generation's outcome is known: Stable, abandoned, or end of run.
    fn flush_generation(&mut self, stable_ts: Option<i64>) {
        if let Some(row) = self.pending_generation_row(stable_ts) {
            self.pending_generation = None;
            self.op.generation(row);
        }
    }

    /// The generations row of the generation still pending, if its join phase completed (else None).
    pub fn pending_generation_row(&self, stable_ts: Option<i64>) -> Option<GenerationRow> {
        let pending = self.pending_generation.as_ref()?;
        let join_complete_ts = pending.join_complete_ts?;
        let snapshot = pending.snapshot.clone().unwrap_or_else(|| {
            // The join phase completed with no members: an Empty generation.
            let group = self.g();
            GenerationSnapshot {
                generation_id: group.generation_id,
                protocol_type: group.protocol_type.clone(),
                protocol_name: None,
                leader_id: None,
                members: Vec::new(),
            }
        });
        Some(GenerationRow {
            member_count: snapshot.members.len(),
            snapshot,
            rebalance_start_ts: pending.rebalance_start_ts,
            join_complete_ts,
            stable_ts,
            cause: pending.cause.clone(),
        })
    }

    /// The end of the run: a generation still completing is written without a stable time.
    pub fn finish(&mut self, now: i64) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        self.flush_generation(None);
        self.end()
    }

    /// Members that did not send SyncGroup within the rebalance timeout are removed, and the group rebalances
    /// (pending-sync expiry, KAFKA-12890).
    pub fn on_sync_timeout(&mut self, now: i64, generation_id: i32, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        if let Some(group) = &self.group
            && generation_id == group.generation_id
            && group.is_in(&[CompletingRebalance, Stable])
            && !group.pending_sync_members.is_empty()
        {
            for member_id in group.pending_sync_members.clone() {
                self.remove_member(&member_id, "pending_sync_timeout");
                self.op.cancel(TimerKey::Heartbeat(member_id));
            }
            self.prepare_rebalance_now("pending_sync_timeout");
        }
        self.end()
    }

    // ==========================================================================================================
    // SyncGroup
    // ==========================================================================================================
    pub fn sync_group(&mut self, now: i64, req: &Arc<SyncGroup>, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        let request = Request::SyncGroup(Arc::clone(req));
        let no_assignment = || vec![(Field::Assignment, Value::Partitions(Vec::new()))];
        if req.event.group_id.is_empty() {
            self.op.respond(request, "INVALID_GROUP_ID", no_assignment());
            return self.end();
        }
        if self.group.is_none() {
            self.op.respond(request, "UNKNOWN_MEMBER_ID", no_assignment());
            return self.end();
        }
        if let Some(error) = self.validate_sync(req) {
            self.op.respond(request, error, no_assignment());
            return self.end();
        }
        if self.is_in(&[PreparingRebalance]) {
            self.op.respond(request, "REBALANCE_IN_PROGRESS", no_assignment());
        } else if self.is_in(&[CompletingRebalance]) {
            self.gm().member_mut(&req.member_id).awaiting_sync = Some(Arc::clone(req));
            self.remove_pending_sync_member(&req.member_id);
            if self.g().is_leader(&req.member_id) {
                self.store_leader_assignment(req);
            }
        } else if self.is_in(&[Stable]) {
            self.remove_pending_sync_member(&req.member_id);
            let group = self.g();
            let fields = vec![
                (Field::ProtocolType, Value::from(group.protocol_type.as_deref())),
                (Field::ProtocolName, Value::from(group.protocol_name.as_deref())),
                (Field::Assignment, partitions_column(&group.member(&req.member_id).assignment_partitions)),
            ];
            self.op.respond(request, "NONE", fields);
        }
        self.end()
    }

    fn validate_sync(&self, req: &SyncGroup) -> Option<&'static str> {
        let group = self.g();
        if group.is_in(&[Dead]) {
            return Some("COORDINATOR_NOT_AVAILABLE");
        }
        if let Some(error) =
            generation_member_error(group, &req.member_id, req.group_instance_id.as_deref(), req.generation_id)
        {
            return Some(error);
        }
        let differs =
            |asked: &Option<String>, current: &Option<String>| matches!((asked, current), (Some(a), Some(c)) if a != c);
        if differs(&req.protocol_type, &group.protocol_type) || differs(&req.protocol_name, &group.protocol_name) {
            return Some("INCONSISTENT_GROUP_PROTOCOL");
        }
        None
    }

    fn remove_pending_sync_member(&mut self, member_id: &str) {
        let group = self.gm();
        if let Some(i) = group.pending_sync_members.iter().position(|m| m == member_id) {
            group.pending_sync_members.remove(i);
        }
        if !group.is_in(&[CompletingRebalance, Stable]) || group.pending_sync_members.is_empty() {
            self.op.cancel(TimerKey::Sync);
        }
    }

    fn store_leader_assignment(&mut self, req: &SyncGroup) {
        // The plan: the leader's last entry for each member id.
        let mut plan: FxHashMap<&str, (&[u8], Option<&[_]>)> = FxHashMap::default();
        for entry in &req.assignments {
            plan.insert(&entry.member_id, (&entry.assignment, entry.partitions.as_deref()));
        }
        let assignment: FxHashMap<String, Vec<u8>> = self
            .g()
            .all_members()
            .into_iter()
            .map(|m| {
                (m.member_id.clone(), plan.get(m.member_id.as_str()).map_or(Vec::new(), |(data, _)| data.to_vec()))
            })
            .collect();
        if let Some(error) = self.write_group_metadata(Some(&assignment)) {
            self.reset_and_propagate_assignment(append_error_to_response_error(&error));
            self.rebalance_or_complete_join("sync_store_failure");
            return;
        }
        let protocol_type = self.g().protocol_type.clone();
        for member_id in self.g().member_ids() {
            let member = self.gm().member_mut(&member_id);
            let (data, partitions) = plan.get(member_id.as_str()).copied().unwrap_or((&[], Some(&[])));
            member.assignment = data.to_vec();
            member.assignment_partitions = match partitions {
                Some(partitions) => Some(partitions.to_vec()),
                None => decode_assignment_partitions(protocol_type.as_deref(), data),
            };
        }
        self.propagate_assignment("NONE");
        self.assignment_rows();
        self.transition(Stable, "leader_sync_stored");
        self.flush_generation(Some(self.now));
    }

    fn assignment_rows(&mut self) {
        let group = self.group.as_ref().expect("the operation needs the classic group");
        for member in group.all_members() {
            for plist in member.assignment_partitions.iter().flatten() {
                for &partition in &plist.partitions {
                    self.op.assignment(AssignmentRow {
                        generation_id: group.generation_id,
                        member_id: member.member_id.clone(),
                        group_instance_id: member.group_instance_id.clone(),
                        client_id: member.client_id.clone(),
                        topic: plist.topic.clone(),
                        partition,
                        assign_ts: self.now,
                    });
                }
            }
        }
    }

    fn reset_and_propagate_assignment(&mut self, error: &str) {
        for member_id in self.g().member_ids() {
            let member = self.gm().member_mut(&member_id);
            member.assignment = Vec::new();
            member.assignment_partitions = Some(Vec::new());
        }
        self.propagate_assignment(error);
    }

    fn propagate_assignment(&mut self, error: &str) {
        for member_id in self.g().member_ids() {
            if let Some(sync) = self.gm().take_sync(&member_id) {
                let ok = error == "NONE";
                let group = self.g();
                let fields = vec![
                    (Field::ProtocolType, Value::from(group.protocol_type.as_deref().filter(|_| ok))),
                    (Field::ProtocolName, Value::from(group.protocol_name.as_deref().filter(|_| ok))),
                    (Field::Assignment, partitions_column(&group.member(&member_id).assignment_partitions)),
                ];
                self.op.respond(Request::SyncGroup(sync), error, fields);
                // A session that expired while the member waited for its assignment was ignored; restart it.
                self.schedule_heartbeat(&member_id, None);
            }
        }
    }

    // ==========================================================================================================
    // Heartbeat and session expiry
    // ==========================================================================================================
    pub fn heartbeat(&mut self, now: i64, req: &Arc<Heartbeat>, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        let error = self.heartbeat_error(req);
        self.op.respond(Request::Heartbeat(Arc::clone(req)), error, Vec::new());
        self.end()
    }

    fn heartbeat_error(&mut self, req: &Heartbeat) -> &'static str {
        if req.event.group_id.is_empty() {
            return "INVALID_GROUP_ID";
        }
        let Some(group) = &self.group else { return "UNKNOWN_MEMBER_ID" };
        if group.is_in(&[Dead]) {
            return "COORDINATOR_NOT_AVAILABLE";
        }
        if let Some(error) =
            generation_member_error(group, &req.member_id, req.group_instance_id.as_deref(), req.generation_id)
        {
            return error;
        }
        if group.is_in(&[Empty]) {
            return "UNKNOWN_MEMBER_ID";
        }
        let preparing = group.is_in(&[PreparingRebalance]);
        self.schedule_heartbeat(&req.member_id, None);
        if preparing { "REBALANCE_IN_PROGRESS" } else { "NONE" }
    }

    fn schedule_heartbeat(&mut self, member_id: &str, timeout_ms: Option<i64>) {
        let timeout = timeout_ms.unwrap_or_else(|| i64::from(self.g().member(member_id).session_timeout_ms));
        self.op.schedule(
            TimerKey::Heartbeat(member_id.to_string()),
            self.now + timeout,
            Timer::Heartbeat(member_id.to_string()),
        );
    }

    /// A member's session (or a new member's join) deadline passed without a heartbeat.
    pub fn on_heartbeat_expired(&mut self, now: i64, member_id: &str, outcomes: VecDeque<String>) -> CoordinatorResult {
        self.begin(now, outcomes);
        let Some(group) = &self.group else { return self.end() };
        if group.is_in(&[Dead]) {
            return self.end();
        }
        if group.is_pending_member(member_id) {
            let group = self.gm();
            group.remove(member_id);
            if group.is_in(&[PreparingRebalance]) && group.has_all_members_joined() {
                self.complete_join("all_members_joined");
            }
            return self.end();
        }
        if group.has_member(member_id) {
            let member = group.member(member_id);
            if !member.has_satisfied_heartbeat() {
                let cause = if member.is_new { "new_member_join_timeout" } else { "session_timeout" };
                self.remove_expired_member(member_id, cause);
            }
        }
        self.end()
    }

    fn remove_expired_member(&mut self, member_id: &str, cause: &str) {
        if let Some(join) = self.gm().take_join(member_id) {
            self.op.respond(Request::JoinGroup(join), "UNKNOWN_MEMBER_ID", join_error_with_member(""));
        }
        self.remove_member(member_id, cause);
        if self.is_in(&[Stable, CompletingRebalance]) {
            self.prepare_rebalance_now(cause);
        } else if self.is_in(&[PreparingRebalance]) && self.g().has_all_members_joined() {
            self.complete_join("all_members_joined");
        }
    }

    // ==========================================================================================================
    // LeaveGroup
    // ==========================================================================================================
    pub fn leave_group(&mut self, now: i64, req: &Arc<LeaveGroup>, outcomes: VecDeque<String>) -> CoordinatorResult {
        fn result(identity: &LeaveIdentity, error: &str) -> PartitionResult {
            PartitionResult {
                member_id: Some(identity.member_id.clone()),
                group_instance_id: identity.group_instance_id.clone(),
                topic: None,
                partition: None,
                error: error.to_string(),
                offset: None,
                leader_epoch: None,
                metadata: None,
            }
        }

        self.begin(now, outcomes);
        let request = Request::LeaveGroup(Arc::clone(req));
        let single = req.event.api_version < 3;
        let first_member_id = || {
            if single {
                Value::from(req.members.first().expect("a v0-2 LeaveGroup names its member").member_id.as_str())
            } else {
                Value::Null
            }
        };
        if req.event.group_id.is_empty() {
            self.op.respond(request, "INVALID_GROUP_ID", vec![(Field::Results, Value::Results(Vec::new()))]);
            return self.end();
        }
        let Some(group) = &self.group else {
            let results = req.members.iter().map(|i| result(i, "UNKNOWN_MEMBER_ID")).collect();
            let fields = vec![(Field::Results, Value::Results(results)), (Field::MemberId, first_member_id())];
            self.op.respond(request, if single { "UNKNOWN_MEMBER_ID" } else { "NONE" }, fields);
            return self.end();
        };
        if group.is_in(&[Dead]) {
            self.op.respond(request, "COORDINATOR_NOT_AVAILABLE", vec![(Field::Results, Value::Results(Vec::new()))]);
            return self.end();
        }
        let mut results = Vec::new();
        let mut left = 0;
        for identity in &req.members {
            let group = self.g();
            if identity.member_id.is_empty() {
                let target = identity
                    .group_instance_id
                    .as_deref()
                    .filter(|i| !i.is_empty())
                    .and_then(|i| group.static_members.get(i))
                    .cloned();
                let Some(target) = target else {
                    results.push(result(identity, "UNKNOWN_MEMBER_ID"));
                    continue;
                };
                self.remove_leaving_member(&target);
            } else if group.is_pending_member(&identity.member_id) {
                self.gm().remove(&identity.member_id);
                self.op.cancel(TimerKey::Heartbeat(identity.member_id.clone()));
            } else {
                if let Err(error) = validate_member(group, &identity.member_id, identity.group_instance_id.as_deref()) {
                    results.push(result(identity, error));
                    continue;
                }
                self.remove_leaving_member(&identity.member_id);
            }
            results.push(result(identity, "NONE"));
            left += 1;
        }
        let top_error = if single { results[0].error.clone() } else { "NONE".to_string() };
        let fields = vec![(Field::Results, Value::Results(results)), (Field::MemberId, first_member_id())];
        self.op.respond(request, &top_error, fields);
        if left > 0 && self.is_in(&[Stable, CompletingRebalance]) {
            self.prepare_rebalance_now("member_leave");
        } else if left > 0 {
            self.maybe_complete_join_phase();
        }
        self.end()
    }

    fn remove_leaving_member(&mut self, member_id: &str) {
        self.op.cancel(TimerKey::Heartbeat(member_id.to_string()));
        if let Some(join) = self.gm().take_join(member_id) {
            self.op.respond(Request::JoinGroup(join), "UNKNOWN_MEMBER_ID", join_error_with_member(""));
        }
        self.remove_member(member_id, "member_leave");
    }

    // ==========================================================================================================
    // The group's existence: created without members, loaded, unloaded, deleted, converted
    // ==========================================================================================================
    /// Offsets committed without the membership protocol: a "simple" group, no protocol type, no members
    /// (Kafka's getOrMaybeCreateClassicGroup as an offset commit's validation or replay calls it).
    pub fn create_simple_group(&mut self, now: i64) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        self.group = Some(ClassicGroup::new(&self.group_id, self.now));
        self.state(None, Empty, "group_created");
        self.end()
    }

    /// The group goes Dead and is deleted (its tombstone was appended: the offsets sweep's `group_expired`).
    pub fn delete(&mut self, now: i64, cause: &str) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        self.transition(Dead, cause);
        self.group = None;
        self.end()
    }

    /// A coordinator loading the group from its partition: Stable at the last persisted generation if that
    /// record has members, Empty otherwise (a simple group if only offsets were written, none if nothing);
    /// each member gets a fresh session deadline, and a group over group.max.size rebalances.
    pub fn load(&mut self, now: i64, value: Option<&GroupMetadataValue>, has_offsets: bool) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        self.group = None;
        let Some(value) = value else {
            if has_offsets {
                self.group = Some(ClassicGroup::new(&self.group_id, self.now));
                self.state(None, Empty, "coordinator_load");
            }
            return self.end();
        };
        self.group = Some(group_from_value(&self.group_id, value, self.now));
        // Its members in the order of its record: the order they entered the member map.
        for (count, stored) in value.members.iter().enumerate() {
            let member_id = stored.member_id.clone().unwrap_or_default();
            self.member_row("added", &member_id, "coordinator_load", Some(count + 1));
        }
        let state = self.g().state;
        self.state(None, state, "coordinator_load");
        for member_id in self.g().member_ids() {
            self.schedule_heartbeat(&member_id, None);
        }
        if self.g().members.len() as i64 > self.config.group_max_size {
            self.prepare_rebalance_now("group_max_size_on_load");
        }
        self.end()
    }

    /// The coordinator lost the group: its parked requests are answered NOT_COORDINATOR (or, when its broker
    /// `crashed`, their connections fail), a generation still completing is abandoned, and the group is Dead;
    /// its members leave with it (Kafka drops the group object without emptying it).
    pub fn unload(&mut self, now: i64, crashed: bool) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        if self.group.is_none() {
            return self.end();
        }
        for member_id in self.g().member_ids() {
            let join = self.gm().take_join(&member_id).map(Request::JoinGroup);
            let sync = self.gm().take_sync(&member_id).map(Request::SyncGroup);
            let parked = [
                (join, vec![(Field::MemberId, Value::from(member_id.as_str()))]),
                (sync, vec![(Field::Assignment, Value::Null)]),
            ];
            for (request, fields) in parked {
                let Some(request) = request else { continue };
                if crashed {
                    self.op.disconnect(request);
                } else {
                    self.op.respond(request, "NOT_COORDINATOR", fields);
                }
            }
        }
        self.flush_generation(None);
        self.transition(Dead, "coordinator_unload");
        self.departed_members("coordinator_unload");
        self.group = None;
        self.end()
    }

    /// The classic group's GroupMetadata tombstone (ClassicGroup.createGroupTombstoneRecords), in the append
    /// that converts it to a consumer group. Its parked JoinGroup and SyncGroup requests are answered
    /// REBALANCE_IN_PROGRESS (convertToConsumerGroup's completeAllJoinFutures / completeAllSyncFutures), its
    /// timers go, its members leave the `members` table after it goes Dead; its committed offsets stay.
    pub fn replace_by_consumer_group(&mut self, now: i64) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        self.op.written(vec![Record::GroupMetadata(None)]);
        for member_id in self.g().member_ids() {
            let join = self.gm().take_join(&member_id);
            let sync = self.gm().take_sync(&member_id);
            if let Some(join) = join {
                let fields = vec![(Field::MemberId, Value::from(member_id.as_str()))];
                self.op.respond(Request::JoinGroup(join), "REBALANCE_IN_PROGRESS", fields);
            }
            if let Some(sync) = sync {
                self.op.respond(
                    Request::SyncGroup(sync),
                    "REBALANCE_IN_PROGRESS",
                    vec![(Field::Assignment, Value::Null)],
                );
            }
            self.op.cancel(TimerKey::Heartbeat(member_id));
        }
        self.op.cancel(TimerKey::Join);
        self.op.cancel(TimerKey::Sync);
        self.flush_generation(None);
        self.pending_generation = None;
        // As an unload: the row to Dead counts the members, then each one's `removed` row (docs/tables.md).
        self.transition(Dead, "group_converted");
        self.departed_members("group_converted");
        self.group = None;
        self.end()
    }

    /// A consumer group downgraded to this classic group (consumer_group/downgrade.rs), its GroupMetadata
    /// record closing the downgrade's append: its members added, Stable at the group epoch as generation,
    /// their assignments; their sessions start, and it rebalances (`group_converted`) if `rebalance`.
    pub fn adopt_downgraded(&mut self, now: i64, group: ClassicGroup, rebalance: bool) -> CoordinatorResult {
        self.begin(now, VecDeque::new());
        let assignment: FxHashMap<String, Vec<u8>> =
            group.all_members().into_iter().map(|m| (m.member_id.clone(), m.assignment.clone())).collect();
        self.group = Some(group);
        let value = group_metadata_value(self.g(), Some(&assignment), None);
        self.op.written(vec![Record::GroupMetadata(Some(value))]);
        let member_ids: Vec<String> = self.g().all_members().into_iter().map(|m| m.member_id.clone()).collect();
        for (count, member_id) in member_ids.iter().enumerate() {
            self.member_row("added", member_id, "group_converted", Some(count + 1));
        }
        self.state(None, Stable, "group_converted");
        self.assignment_rows();
        for member_id in &member_ids {
            self.schedule_heartbeat(member_id, None);
        }
        if rebalance {
            self.prepare_rebalance_now("group_converted");
        }
        self.end()
    }

    // ==========================================================================================================
    // Writes, transitions and the member map's changes, as the tables record them
    // ==========================================================================================================
    /// Append a GroupMetadata record with every member, its subscription and the given assignment.
    fn write_group_metadata(&mut self, assignment: Option<&FxHashMap<String, Vec<u8>>>) -> Option<String> {
        let value = group_metadata_value(self.g(), assignment, None);
        self.op.append(vec![Record::GroupMetadata(Some(value))])
    }

    fn transition(&mut self, target: GroupState, cause: &str) {
        let now = self.now;
        let previous = self.gm().transition_to(target, now);
        self.state(Some(previous), target, cause);
    }

    fn state(&mut self, previous: Option<GroupState>, target: GroupState, cause: &str) {
        let group = self.group.as_ref().expect("the operation needs the classic group");
        self.op.state(previous, target, cause, group.generation_id, group.leader_id.clone(), group.members.len());
    }

    fn add_member(&mut self, member: ClassicGroupMember, join: Option<Arc<JoinGroup>>, cause: &str) {
        let member_id = member.member_id.clone();
        self.gm().add(member, join);
        self.member_row("added", &member_id, cause, None);
    }

    /// Remove a member or a pending member id. Only members get a row: a pending id (KIP-394) is not in the
    /// member map, so DescribeGroups does not list it and no member count includes it.
    fn remove_member(&mut self, member_id: &str, cause: &str) {
        if let Some(member) = self.gm().remove(member_id) {
            self.removed_member_row(&member, cause, None);
        }
    }

    /// Returns the old member, out of the member map.
    fn replace_static_member_id(
        &mut self,
        instance_id: &str,
        old_id: &str,
        new_id: &str,
        cause: &str,
    ) -> ClassicGroupMember {
        let old = self.gm().replace_static_member(instance_id, old_id, new_id);
        // The count in between is one less: the old id leaves the map before the new one enters it.
        let count = self.g().members.len() - 1;
        self.removed_member_row(&old, cause, Some(count));
        self.member_row("added", new_id, cause, None);
        old
    }

    fn departed_members(&mut self, cause: &str) {
        let group = self.group.as_ref().expect("the operation needs the classic group");
        let members = group.all_members();
        for (count, member) in members.iter().enumerate() {
            self.op.member("removed", member, cause, group.generation_id, members.len() - 1 - count);
        }
    }

    /// A `members` row of a member in the group; `member_count` is after the change (the group's own count
    /// unless given).
    fn member_row(&mut self, change: &'static str, member_id: &str, cause: &str, member_count: Option<usize>) {
        let group = self.group.as_ref().expect("the operation needs the classic group");
        let count = member_count.unwrap_or(group.members.len());
        self.op.member(change, group.member(member_id), cause, group.generation_id, count);
    }

    /// A `removed` row of a member out of the member map.
    fn removed_member_row(&mut self, member: &ClassicGroupMember, cause: &str, member_count: Option<usize>) {
        let group = self.group.as_ref().expect("the operation needs the classic group");
        let count = member_count.unwrap_or(group.members.len());
        self.op.member("removed", member, cause, group.generation_id, count);
    }
}

/// A SyncGroup response's `assignment`: the member's partitions per topic, None when undecodable.
fn partitions_column(partitions: &Option<Vec<crate::events::PartitionList>>) -> Value {
    partitions.as_ref().map_or(Value::Null, |p| Value::Partitions(p.clone()))
}

/// A member id the captured broker generated as Kafka does (the prefix, "-", a UUID's 36 characters). Lengths
/// in characters, as Python's.
fn same_form(captured: &str, generated: &str, prefix: &str) -> bool {
    captured.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('-'))
        && captured.chars().count() == generated.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use crate::runtime::result::Effect;

    fn join(member_id: &str, seq: i64) -> Arc<JoinGroup> {
        Arc::new(JoinGroup {
            event: Event {
                handle: seq as u64,
                ts: 0,
                group_id: "group-id".into(),
                seq,
                request_id: None,
                client_id: "client".into(),
                api_version: 4,
                captured: None,
            },
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![Protocol { name: "range".into(), metadata: vec![0, 1], topics: None }],
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            client_host: String::new(),
            reason: None,
        })
    }

    fn responses(result: &CoordinatorResult) -> Vec<(u64, String)> {
        result
            .effects
            .iter()
            .filter_map(|e| match e {
                Effect::Respond { request, error, .. } => Some((request.event().handle, error.clone())),
                _ => None,
            })
            .collect()
    }

    /// GroupMetadataManagerTest's testNewMemberJoinExpiration path in short: KIP-394's MEMBER_ID_REQUIRED,
    /// the rejoin parked through the initial rebalance delay, then answered as the leader of generation 1.
    #[test]
    fn a_new_member_joins_through_the_initial_delay() {
        let mut manager =
            ClassicGroupManager::new("group-id", CoordinatorConfig::default(), MemberIds::new("group-id"));
        let first = manager.join_group(0, &join("", 1), VecDeque::new(), false);
        assert_eq!(responses(&first), vec![(1, "MEMBER_ID_REQUIRED".to_string())]);
        let member_id = manager.group.as_ref().unwrap().pending_join_members[0].clone();
        assert!(member_id.starts_with("client-") && member_id.len() == "client-".len() + 36);
        let parked = manager.join_group(10, &join(&member_id, 2), VecDeque::new(), false);
        assert!(responses(&parked).is_empty());
        let done = manager.on_initial_join_timeout(3_010, 3_000, 7_000, VecDeque::new());
        assert_eq!(responses(&done), vec![(2, "NONE".to_string())]);
        let group = manager.group.as_ref().unwrap();
        assert_eq!(
            (group.state, group.generation_id, group.leader_id.as_deref()),
            (CompletingRebalance, 1, Some(&*member_id))
        );
    }
}
