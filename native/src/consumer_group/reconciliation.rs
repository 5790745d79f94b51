//! Mirrors `state/consumer_group/reconciliation.py`: one member's reconciliation towards its target
//! assignment (Kafka's CurrentAssignmentBuilder, trunk, and Kafka 4.0's rules), MemberState's bytes and the
//! group's current partition epochs (`CurrentPartitionEpochs`, from ConsumerGroup), which say which member
//! epoch holds each partition, and the topic ids a member subscribes to.

use std::fmt;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::consumer_group::records::{CurrentAssignment, PartitionEpochs};
use crate::consumer_group::topic_id::TopicId;

/// The group coordinator's MemberState, as the byte Kafka writes in the CurrentMemberAssignment record.
pub mod member_state {
    pub const STABLE: i8 = 0;
    pub const UNREVOKED_PARTITIONS: i8 = 1;
    pub const UNRELEASED_PARTITIONS: i8 = 2;
    /// A state byte this coordinator does not know (written by a newer one).
    pub const UNKNOWN: i8 = 127;
}

/// The ids of the topics a member subscribes to: its names plus what its regex resolved to (an unresolved
/// regex matches nothing), keeping only topics that exist (`topic_ids`: name -> id).
pub fn subscribed_topic_ids<'a>(
    topic_names: &'a [String],
    regex: &str,
    resolved_regexes: impl Fn(&str) -> Option<&'a [String]>,
    topic_ids: impl Fn(&str) -> Option<TopicId>,
) -> FxHashSet<TopicId> {
    let resolved = if regex.is_empty() { None } else { resolved_regexes(regex) };
    topic_names.iter().chain(resolved.into_iter().flatten()).filter_map(|name| topic_ids(name)).collect()
}

/// Two PartitionEpochs equal as the reference's dicts are (topics and partitions in any order).
pub fn same_epochs(a: &PartitionEpochs, b: &PartitionEpochs) -> bool {
    let as_map = |p: &PartitionEpochs| -> FxHashMap<TopicId, FxHashMap<i32, i32>> {
        p.iter().map(|(t, ps)| (*t, ps.iter().copied().collect())).collect()
    };
    a.len() == b.len() && as_map(a) == as_map(b)
}

/// Two current assignments equal as the reference's CurrentAssignments are.
pub fn same_current(a: &CurrentAssignment, b: &CurrentAssignment) -> bool {
    (a.state, a.member_epoch, a.previous_member_epoch) == (b.state, b.member_epoch, b.previous_member_epoch)
        && same_epochs(&a.assigned_partitions, &b.assigned_partitions)
        && same_epochs(&a.partitions_pending_revocation, &b.partitions_pending_revocation)
}

/// A member would take a partition another member still holds at the same or a later epoch (Kafka's
/// IllegalStateException from ConsumerGroup.addPartitionEpochs): a coordinator bug, never a client error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionEpochConflict(pub String);

impl fmt::Display for PartitionEpochConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The group's `currentPartitionEpoch` map: for each partition some member holds (assigned or pending
/// revocation), that member's epoch. A topic's entry stays, empty, until a release touches it, as the
/// reference's dict of dicts does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentPartitionEpochs {
    epochs: FxHashMap<TopicId, FxHashMap<i32, i32>>,
}

impl CurrentPartitionEpochs {
    /// The member epoch holding the partition, -1 when nobody holds it.
    pub fn get(&self, topic_id: &TopicId, partition: i32) -> i32 {
        self.epochs.get(topic_id).and_then(|held| held.get(&partition)).copied().unwrap_or(-1)
    }

    /// Every topic's held partitions and their epochs, topics and partitions ascending.
    pub fn sorted(&self) -> Vec<(TopicId, Vec<(i32, i32)>)> {
        let mut out: Vec<(TopicId, Vec<(i32, i32)>)> = self
            .epochs
            .iter()
            .map(|(t, held)| {
                let mut held: Vec<(i32, i32)> = held.iter().map(|(p, e)| (*p, *e)).collect();
                held.sort_unstable();
                (*t, held)
            })
            .collect();
        out.sort_unstable_by_key(|(t, _)| *t);
        out
    }

    /// A member's holdings replaced: `old` released (None: it joined), `new` claimed (None: it was removed).
    pub fn update_member(
        &mut self,
        old: Option<(&PartitionEpochs, &PartitionEpochs, i32)>,
        new: Option<(&PartitionEpochs, &PartitionEpochs, i32)>,
    ) -> Result<(), PartitionEpochConflict> {
        if let Some((assigned, pending, epoch)) = old {
            self.remove(assigned, epoch);
            self.remove(pending, epoch);
        }
        if let Some((assigned, pending, epoch)) = new {
            self.add(assigned, epoch)?;
            self.add(pending, epoch)?;
        }
        Ok(())
    }

    /// Release `partitions` where they are held at `expected_epoch`; others are left as they are.
    pub fn remove(&mut self, partitions: &PartitionEpochs, expected_epoch: i32) {
        for (topic_id, topic_partitions) in partitions {
            let Some(held) = self.epochs.get_mut(topic_id) else { continue };
            for (partition, _) in topic_partitions {
                if held.get(partition) == Some(&expected_epoch) {
                    held.remove(partition);
                }
            }
            if held.is_empty() {
                self.epochs.remove(topic_id);
            }
        }
    }

    pub fn add(&mut self, partitions: &PartitionEpochs, epoch: i32) -> Result<(), PartitionEpochConflict> {
        for (topic_id, topic_partitions) in partitions {
            let held = self.epochs.entry(*topic_id).or_default();
            for (partition, _) in topic_partitions {
                if let Some(&previous) = held.get(partition)
                    && previous >= epoch
                {
                    return Err(PartitionEpochConflict(format!(
                        "Cannot set the epoch of {topic_id}-{partition} to {epoch} because the partition is still \
                         owned at epoch {previous}"
                    )));
                }
                held.insert(*partition, epoch);
            }
        }
        Ok(())
    }
}

/// The member must drop all its partitions and rejoin (error FENCED_MEMBER_EPOCH).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedMemberEpochError(pub String);

/// What `reconcile` is given besides the member (the reference's keyword arguments): the member's target
/// assignment and the group's assignment epoch, its subscribed topic ids, the epoch of each partition's
/// current owner (-1 when free), the partitions its heartbeat reports as owned (None: not reported, so
/// nothing counts as revoked), whether the heartbeat changed its subscription, and Kafka 4.0's rules.
pub struct Reconciliation<'a, F: Fn(&TopicId, i32) -> i32> {
    pub target_epoch: i32,
    pub target: &'a [(TopicId, Vec<i32>)],
    pub subscribed: &'a FxHashSet<TopicId>,
    pub current_partition_epoch: F,
    pub owned: Option<&'a [(TopicId, Vec<i32>)]>,
    pub subscription_changed: bool,
    pub kafka_4_0: bool,
}

fn get<'p, K: PartialEq, V>(items: &'p [(K, V)], key: &K) -> Option<&'p V> {
    items.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// `dict.setdefault(topic, {}).update(epochs)`: new partitions go last, known ones take the new epoch.
fn merge(into: &mut PartitionEpochs, topic_id: TopicId, epochs: &[(i32, i32)]) {
    let held = match into.iter().position(|(t, _)| *t == topic_id) {
        Some(i) => &mut into[i].1,
        None => {
            into.push((topic_id, Vec::new()));
            &mut into.last_mut().expect("pushed").1
        }
    };
    for &(partition, epoch) in epochs {
        match held.iter_mut().find(|(p, _)| *p == partition) {
            Some(entry) => entry.1 = epoch,
            None => held.push((partition, epoch)),
        }
    }
}

/// The member's next state (`CurrentAssignmentBuilder.build`); None when nothing changes (the reference
/// returns the member itself).
pub fn reconcile<F: Fn(&TopicId, i32) -> i32>(
    member: &CurrentAssignment,
    r: &Reconciliation<'_, F>,
) -> Result<Option<CurrentAssignment>, FencedMemberEpochError> {
    let trim = r.subscription_changed && !r.kafka_4_0;
    let kept_or_trimmed = || if trim { r.drop_unsubscribed(member) } else { None };
    Ok(match member.state {
        member_state::STABLE => {
            if member.member_epoch != r.target_epoch {
                Some(r.next_assignment(member, member.member_epoch))
            } else {
                kept_or_trimmed()
            }
        }
        member_state::UNREVOKED_PARTITIONS => {
            if r.owns_any(&member.partitions_pending_revocation) {
                kept_or_trimmed()
            } else {
                let epoch = if r.kafka_4_0 { member.member_epoch + 1 } else { member.member_epoch };
                Some(r.next_assignment(member, epoch))
            }
        }
        member_state::UNRELEASED_PARTITIONS => Some(r.next_assignment(member, member.member_epoch)),
        _ => {
            if r.owned.is_none_or(|owned| !owned.is_empty()) {
                return Err(FencedMemberEpochError(
                    "The consumer group member is in a unknown state. The member must abandon all its partitions \
                     and rejoin."
                        .into(),
                ));
            }
            Some(r.next_assignment(member, r.target_epoch))
        }
    })
}

/// Kafka's Builder.updateMemberEpoch: the epoch before this move becomes the previous epoch.
fn moved(
    member: &CurrentAssignment,
    state: i8,
    epoch: i32,
    assigned: PartitionEpochs,
    pending: PartitionEpochs,
) -> CurrentAssignment {
    CurrentAssignment {
        state,
        member_epoch: epoch,
        previous_member_epoch: member.member_epoch,
        assigned_partitions: assigned,
        partitions_pending_revocation: pending,
    }
}

impl<F: Fn(&TopicId, i32) -> i32> Reconciliation<'_, F> {
    /// Whether the heartbeat still reports any of `partitions` (always, when it reports nothing).
    fn owns_any(&self, partitions: &PartitionEpochs) -> bool {
        let Some(owned) = self.owned else { return true };
        owned.iter().any(|(topic_id, ps)| {
            get(partitions, topic_id).is_some_and(|held| ps.iter().any(|p| held.iter().any(|(q, _)| q == p)))
        })
    }

    /// Move the topics the member no longer subscribes to from its assignment to pending revocation,
    /// without reconciling towards the target (`updateCurrentAssignment`).
    fn drop_unsubscribed(&self, member: &CurrentAssignment) -> Option<CurrentAssignment> {
        let assigned = &member.assigned_partitions;
        let pending = &member.partitions_pending_revocation;
        let (new_assigned, new_pending) = if self.subscribed.is_empty() && pending.is_empty() {
            (Vec::new(), assigned.clone())
        } else {
            let dropped: Vec<&(TopicId, Vec<(i32, i32)>)> =
                assigned.iter().filter(|(t, _)| !self.subscribed.contains(t)).collect();
            if dropped.is_empty() {
                return None;
            }
            let new_assigned = assigned.iter().filter(|(t, _)| self.subscribed.contains(t)).cloned().collect();
            let mut new_pending = pending.clone();
            for (topic_id, epochs) in dropped {
                merge(&mut new_pending, *topic_id, epochs);
            }
            (new_assigned, new_pending)
        };
        if !new_pending.is_empty() && self.owns_any(&new_pending) {
            return Some(moved(
                member,
                member_state::UNREVOKED_PARTITIONS,
                member.member_epoch,
                new_assigned,
                new_pending,
            ));
        }
        Some(moved(member, member.state, member.member_epoch, new_assigned, pending.clone()))
    }

    /// Reconcile towards the target from `epoch` (`computeNextAssignment`). Topics are taken in the
    /// target's order, then the assigned ones it lacks (the reference iterates a Python set of both, whose
    /// order reaches no output: records are sized, not shown, and responses sort their topics).
    fn next_assignment(&self, member: &CurrentAssignment, epoch: i32) -> CurrentAssignment {
        let assigned = &member.assigned_partitions;
        let no_pending = Vec::new();
        let own_pending = if self.kafka_4_0 { &no_pending } else { &member.partitions_pending_revocation };
        let mut topics: Vec<TopicId> = self.target.iter().map(|(t, _)| *t).collect();
        topics.extend(assigned.iter().map(|(t, _)| *t));
        let mut seen = FxHashSet::default();
        topics.retain(|t| seen.insert(*t));
        let (mut kept, mut revoked, mut added): (PartitionEpochs, PartitionEpochs, PartitionEpochs) =
            Default::default();
        let mut unreleased = false;
        for topic_id in topics {
            let mut wanted: FxHashSet<i32> = FxHashSet::default();
            if self.subscribed.contains(&topic_id) || self.kafka_4_0 {
                wanted.extend(get(self.target, &topic_id).into_iter().flatten());
            }
            let current = get(assigned, &topic_id).map(Vec::as_slice).unwrap_or_default();
            let keep: Vec<(i32, i32)> = current.iter().filter(|(p, _)| wanted.contains(p)).copied().collect();
            let revoke: Vec<(i32, i32)> = current.iter().filter(|(p, _)| !wanted.contains(p)).copied().collect();
            let mut missing: Vec<i32> = wanted.iter().filter(|p| !keep.iter().any(|(q, _)| q == *p)).copied().collect();
            missing.sort_unstable();
            let mut free = Vec::new();
            for partition in missing {
                let own = get(own_pending, &topic_id).is_some_and(|ps| ps.iter().any(|(p, _)| *p == partition));
                if (self.current_partition_epoch)(&topic_id, partition) != -1 && !own {
                    unreleased = true;
                } else {
                    free.push((partition, self.target_epoch));
                }
            }
            if !keep.is_empty() {
                kept.push((topic_id, keep));
            }
            if !revoke.is_empty() {
                revoked.push((topic_id, revoke));
            }
            if !free.is_empty() {
                added.push((topic_id, free));
            }
        }
        if !revoked.is_empty() && self.owns_any(&revoked) {
            return moved(member, member_state::UNREVOKED_PARTITIONS, epoch, kept, revoked);
        }
        for (topic_id, partitions) in &added {
            merge(&mut kept, *topic_id, partitions);
        }
        let state = if unreleased { member_state::UNRELEASED_PARTITIONS } else { member_state::STABLE };
        moved(member, state, self.target_epoch, kept, Vec::new())
    }
}
