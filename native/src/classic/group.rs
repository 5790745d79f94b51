//! Mirrors `state/classic/group.py`: a classic group and its members as the coordinator holds them in
//! memory (Kafka's ClassicGroup and ClassicGroupMember): membership, the static-member map, pending join/sync
//! sets, protocol votes, the leader, and the parked JoinGroup/SyncGroup requests waiting for their responses.
//!
//! Data and the group's own invariants only; the protocol handlers that change it live in `manager`. The
//! pending sets keep insertion order (the reference's insertion-ordered dicts), as Vecs: a group's pending
//! members are few, and the pending-sync set is iterated in that order when its deadline passes.

use std::collections::BTreeSet;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::classic::consumer_protocol;
use crate::classic::group_state::{GroupState, check_transition};
use crate::events::{JoinGroup, PartitionList, Protocol, SyncGroup, group_partitions};
use crate::java_compat::JavaHashMap;

pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

pub fn subscription_topics(protocol_type: Option<&str>, metadata: &[u8]) -> Option<Vec<String>> {
    if protocol_type != Some(CONSUMER_PROTOCOL_TYPE) {
        return None;
    }
    let topics: BTreeSet<String> = consumer_protocol::decode_subscription(metadata).ok()?.topics.into_iter().collect();
    Some(topics.into_iter().collect())
}

pub fn decode_assignment_partitions(protocol_type: Option<&str>, data: &[u8]) -> Option<Vec<PartitionList>> {
    if data.is_empty() {
        return Some(Vec::new());
    }
    if protocol_type != Some(CONSUMER_PROTOCOL_TYPE) {
        return None;
    }
    let assignment = consumer_protocol::decode_assignment(data).ok()?;
    Some(group_partitions(assignment.partitions.iter().map(|tp| (&*tp.topic, tp.partition))))
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassicGroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<Protocol>,
    pub assignment: Vec<u8>,
    pub assignment_partitions: Option<Vec<PartitionList>>,
    pub awaiting_join: Option<Arc<JoinGroup>>,
    pub awaiting_sync: Option<Arc<SyncGroup>>,
    pub is_new: bool,
}

impl ClassicGroupMember {
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    pub fn protocol_names(&self) -> impl Iterator<Item = &str> {
        self.protocols.iter().map(|p| p.name.as_str())
    }

    /// The member's metadata for `protocol_name`; a member that does not support it is a simulator bug.
    pub fn metadata(&self, protocol_name: Option<&str>) -> &[u8] {
        match self.protocols.iter().find(|p| Some(p.name.as_str()) == protocol_name) {
            Some(p) => &p.metadata,
            None => panic!("member {} does not support protocol {protocol_name:?}", self.member_id),
        }
    }

    pub fn subscribed_topics(&self, protocol_name: &str) -> Option<&[String]> {
        self.protocols.iter().find(|p| p.name == protocol_name).and_then(|p| p.topics.as_deref())
    }

    /// Same ordered protocol names and metadata bytes: a rejoin that changes nothing.
    pub fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols.len() == protocols.len()
            && self.protocols.iter().zip(protocols).all(|(a, b)| a.name == b.name && a.metadata == b.metadata)
    }

    pub fn vote(&self, candidates: &BTreeSet<String>) -> String {
        match self.protocols.iter().find(|p| candidates.contains(&p.name)) {
            Some(p) => p.name.clone(),
            None => panic!("member {} does not support any of the candidate protocols", self.member_id),
        }
    }

    pub fn has_satisfied_heartbeat(&self) -> bool {
        // New members expire even while parked; others parked in a rebalance count as alive.
        if self.is_new {
            return false;
        }
        self.awaiting_join.is_some() || self.awaiting_sync.is_some()
    }
}

fn count_protocols(supported: &mut FxHashMap<String, i64>, member: &ClassicGroupMember, delta: i64) {
    for name in member.protocol_names() {
        let count = supported.get(name).copied().unwrap_or(0) + delta;
        if count != 0 {
            supported.insert(name.to_string(), count);
        } else {
            supported.remove(name);
        }
    }
}

/// Remove `item` from an insertion-ordered set; whether it was there.
fn remove_from(set: &mut Vec<String>, item: &str) -> bool {
    match set.iter().position(|m| m == item) {
        Some(i) => {
            set.remove(i);
            true
        }
        None => false,
    }
}

#[derive(Clone, Debug)]
pub struct ClassicGroup {
    pub group_id: String,
    pub created_ts: i64,
    pub state: GroupState,
    pub previous_state: Option<GroupState>,
    pub current_state_ts: i64,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader_id: Option<String>,
    pub members: JavaHashMap<String, ClassicGroupMember>,
    pub static_members: FxHashMap<String, String>,
    pub pending_join_members: Vec<String>,
    pub pending_sync_members: Vec<String>,
    pub num_members_awaiting_join: usize,
    pub supported_protocols: FxHashMap<String, i64>,
    pub subscribed_topics: Option<BTreeSet<String>>,
    pub new_member_added: bool,
}

impl ClassicGroup {
    pub fn new(group_id: &str, created_ts: i64) -> ClassicGroup {
        ClassicGroup {
            group_id: group_id.to_string(),
            created_ts,
            state: GroupState::Empty,
            previous_state: None,
            current_state_ts: created_ts,
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: JavaHashMap::default(),
            static_members: FxHashMap::default(),
            pending_join_members: Vec::new(),
            pending_sync_members: Vec::new(),
            num_members_awaiting_join: 0,
            supported_protocols: FxHashMap::default(),
            subscribed_topics: None,
            new_member_added: false,
        }
    }

    // -- state -----------------------------------------------------------------------------------------------
    pub fn is_in(&self, states: &[GroupState]) -> bool {
        states.contains(&self.state)
    }

    pub fn transition_to(&mut self, target: GroupState, now: i64) -> GroupState {
        check_transition(self.state, target);
        let previous = self.state;
        self.previous_state = Some(previous);
        self.state = target;
        self.current_state_ts = now;
        previous
    }

    pub fn can_rebalance(&self) -> bool {
        self.is_in(&[GroupState::Stable, GroupState::CompletingRebalance, GroupState::Empty])
    }

    // -- membership ------------------------------------------------------------------------------------------
    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    pub fn member(&self, member_id: &str) -> &ClassicGroupMember {
        self.members.get(member_id).unwrap_or_else(|| panic!("no member {member_id}"))
    }

    pub fn member_mut(&mut self, member_id: &str) -> &mut ClassicGroupMember {
        self.members.get_mut(member_id).unwrap_or_else(|| panic!("no member {member_id}"))
    }

    /// The members in the member map's (java.util.HashMap's) order.
    pub fn all_members(&self) -> Vec<&ClassicGroupMember> {
        self.members.entries().into_iter().map(|(_, m)| m).collect()
    }

    /// The member ids in the member map's order.
    pub fn member_ids(&self) -> Vec<String> {
        self.members.keys()
    }

    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join_members.iter().any(|m| m == member_id)
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_members_awaiting_join && self.pending_join_members.is_empty()
    }

    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members.entries().iter().map(|(_, m)| i64::from(m.rebalance_timeout_ms)).max().unwrap_or(0)
    }

    pub fn not_yet_rejoined_members(&self) -> Vec<String> {
        self.all_members().into_iter().filter(|m| m.awaiting_join.is_none()).map(|m| m.member_id.clone()).collect()
    }

    pub fn add(&mut self, mut member: ClassicGroupMember, join: Option<Arc<JoinGroup>>) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        count_protocols(&mut self.supported_protocols, &member, 1);
        if join.is_some() {
            self.num_members_awaiting_join += 1;
        }
        member.awaiting_join = join;
        remove_from(&mut self.pending_join_members, &member.member_id);
        if let Some(instance_id) = &member.group_instance_id {
            self.static_members.insert(instance_id.clone(), member.member_id.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    /// Drop a member (or a pending member id); returns the member, None when it was only pending.
    pub fn remove(&mut self, member_id: &str) -> Option<ClassicGroupMember> {
        let removed = self.members.remove(member_id);
        if let Some(removed) = &removed {
            count_protocols(&mut self.supported_protocols, removed, -1);
            if removed.awaiting_join.is_some() {
                self.num_members_awaiting_join -= 1;
            }
            if let Some(instance_id) = &removed.group_instance_id {
                self.static_members.remove(instance_id);
            }
        }
        if self.is_leader(member_id) {
            // Kafka re-picks the first key of its member HashMap: no preference for age or join order.
            self.leader_id = self.members.first_key().cloned();
        }
        remove_from(&mut self.pending_join_members, member_id);
        remove_from(&mut self.pending_sync_members, member_id);
        removed
    }

    pub fn update_member(
        &mut self,
        member_id: &str,
        protocols: Vec<Protocol>,
        rebalance_timeout_ms: i32,
        session_timeout_ms: i32,
        join: Option<Arc<JoinGroup>>,
    ) {
        let member = self.members.get_mut(member_id).unwrap_or_else(|| panic!("no member {member_id}"));
        count_protocols(&mut self.supported_protocols, member, -1);
        member.protocols = protocols;
        count_protocols(&mut self.supported_protocols, member, 1);
        member.rebalance_timeout_ms = rebalance_timeout_ms;
        member.session_timeout_ms = session_timeout_ms;
        if join.is_some() && member.awaiting_join.is_none() {
            self.num_members_awaiting_join += 1;
        } else if join.is_none() && member.awaiting_join.is_some() {
            self.num_members_awaiting_join -= 1;
        }
        member.awaiting_join = join;
    }

    /// Detach the member's parked JoinGroup so the caller can answer it.
    pub fn take_join(&mut self, member_id: &str) -> Option<Arc<JoinGroup>> {
        let join = self.member_mut(member_id).awaiting_join.take();
        if join.is_some() {
            self.num_members_awaiting_join -= 1;
        }
        join
    }

    pub fn take_sync(&mut self, member_id: &str) -> Option<Arc<SyncGroup>> {
        self.member_mut(member_id).awaiting_sync.take()
    }

    /// Move a static member to a new member id; returns the removed old member. The caller fences the old
    /// member's parked requests.
    pub fn replace_static_member(&mut self, instance_id: &str, old_id: &str, new_id: &str) -> ClassicGroupMember {
        let old = self.members.remove(old_id).unwrap_or_else(|| panic!("no member {old_id}"));
        if old.awaiting_join.is_some() {
            self.num_members_awaiting_join -= 1;
        }
        let new = ClassicGroupMember {
            member_id: new_id.to_string(),
            group_instance_id: old.group_instance_id.clone(),
            client_id: old.client_id.clone(),
            client_host: old.client_host.clone(),
            rebalance_timeout_ms: old.rebalance_timeout_ms,
            session_timeout_ms: old.session_timeout_ms,
            protocol_type: old.protocol_type.clone(),
            protocols: old.protocols.clone(),
            assignment: old.assignment.clone(),
            assignment_partitions: old.assignment_partitions.clone(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
        };
        self.members.insert(new_id.to_string(), new);
        if self.is_leader(old_id) {
            self.leader_id = Some(new_id.to_string());
        }
        // The pending-sync set keeps the old id (as Kafka's does): if that member never synced, the sync
        // deadline still finds it missing and rebalances.
        self.static_members.insert(instance_id.to_string(), new_id.to_string());
        old
    }

    // -- protocols -------------------------------------------------------------------------------------------
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.state == GroupState::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|p| self.supported_protocols.get(&p.name).copied().unwrap_or(0) == self.members.len() as i64)
    }

    pub fn candidate_protocols(&self) -> BTreeSet<String> {
        let n = self.members.len() as i64;
        self.supported_protocols.iter().filter(|(_, count)| **count == n).map(|(name, _)| name.clone()).collect()
    }

    /// Each member votes for its first candidate; the most votes win. Ties go to the first name in Java
    /// HashMap order of the vote map (range beats roundrobin), as Kafka's stream max() keeps the first.
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: JavaHashMap<String, usize> = JavaHashMap::default();
        for member in self.all_members() {
            let name = member.vote(&candidates);
            let count = votes.get(&name).copied().unwrap_or(0) + 1;
            votes.insert(name, count);
        }
        let mut best: Option<(&String, usize)> = None;
        for (name, &count) in votes.entries() {
            if best.is_none_or(|(_, best_votes)| count > best_votes) {
                best = Some((name, count));
            }
        }
        best.map(|(name, _)| name.clone())
    }

    pub fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol_name = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for member in self.all_members() {
            // An unparsable subscription: the coordinator knows nothing about topics.
            topics.extend(member.subscribed_topics(protocol_name)?.iter().cloned());
        }
        Some(topics)
    }

    pub fn init_next_generation(&mut self, now: i64) -> GroupState {
        self.generation_id += 1;
        let previous = if !self.members.is_empty() {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::CompletingRebalance, now)
        } else {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::Empty, now)
        };
        self.pending_sync_members.clear();
        previous
    }

    pub fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader_id) = &self.leader_id else { return false };
        if self.member(leader_id).awaiting_join.is_some() {
            return true;
        }
        let joined = self.all_members().into_iter().find(|m| m.awaiting_join.is_some()).map(|m| m.member_id.clone());
        match joined {
            Some(member_id) => {
                self.leader_id = Some(member_id);
                true
            }
            None => false,
        }
    }

    pub fn is_subscribed_to(&self, topic: &str) -> bool {
        self.subscribed_topics.as_ref().is_some_and(|topics| topics.contains(topic))
    }
}
