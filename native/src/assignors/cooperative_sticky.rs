//! Mirrors `state/assignors/cooperative_sticky.py`: CooperativeStickyAssignor ("cooperative-sticky",
//! CooperativeStickyAssignor.java). The sticky engine, then one post-step that keeps the incremental
//! protocol safe: a partition that would pass from its current owner to another member in this round is
//! withheld from everyone; its owner sees it revoked, rejoins, and the next round hands it out.
//!
//! Ownership comes from the Subscription itself: OwnedPartitions, plus GenerationId when it is present
//! (v2+). A v1 subscription carries the generation in this assignor's userData instead.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::assignors::model::{AssignorError, GroupAssignmentInput, MemberSubscription};
use crate::assignors::sticky::{self, MemberData, NO_GENERATION};
use crate::classic::consumer_protocol::{TopicPartition, decode_cooperative_user_data};

pub fn cooperative_member_data(member: &MemberSubscription) -> MemberData {
    let partitions = member.owned_partitions.clone();
    let generation = if member.has_generation() {
        member.generation_id
    } else {
        member.user_data.as_deref().map(|blob| decode_cooperative_user_data(blob).unwrap_or(NO_GENERATION))
    };
    MemberData { partitions, generation }
}

pub fn assign(inp: &GroupAssignmentInput) -> Result<Vec<Vec<TopicPartition>>, AssignorError> {
    let mut outcome = sticky::run(inp, cooperative_member_data)?;
    let transferring = match outcome.transferring.take() {
        Some(transferring) => transferring,
        None => owner_changes(inp, &outcome.assignment),
    };
    for (tp, new_owner) in transferring {
        let list = &mut outcome.assignment[new_owner];
        if let Some(i) = list.iter().position(|x| *x == tp) {
            list.remove(i);
        }
    }
    Ok(outcome.assignment)
}

/// The general builder does not track moves, so compare with what members say they own: a partition newly
/// given to one member while another owner loses it.
fn owner_changes(inp: &GroupAssignmentInput, assignment: &[Vec<TopicPartition>]) -> Vec<(TopicPartition, usize)> {
    let mut added: FxHashMap<&TopicPartition, usize> = FxHashMap::default();
    let mut revoked: FxHashSet<&TopicPartition> = FxHashSet::default();
    for (m, member) in inp.members.iter().enumerate() {
        let owned: FxHashSet<&TopicPartition> = member.owned_partitions.iter().collect();
        let assigned = &assignment[m];
        added.extend(assigned.iter().filter(|tp| !owned.contains(tp)).map(|tp| (tp, m)));
        let assigned: FxHashSet<&TopicPartition> = assigned.iter().collect();
        revoked.extend(member.owned_partitions.iter().filter(|tp| !assigned.contains(tp)));
    }
    added.into_iter().filter(|(tp, _)| revoked.contains(tp)).map(|(tp, m)| (tp.clone(), m)).collect()
}
