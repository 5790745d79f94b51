//! Mirrors `state/consumer_group/reconciliation.py` (so far the part a group's replay needs): MemberState's
//! bytes and the group's current partition epochs (`CurrentPartitionEpochs`, from ConsumerGroup), which say
//! which member epoch holds each partition. The reconciliation itself (CurrentAssignmentBuilder) comes with
//! the heartbeat.

use std::fmt;

use rustc_hash::FxHashMap;

use crate::consumer_group::records::PartitionEpochs;
use crate::consumer_group::topic_id::TopicId;

/// The group coordinator's MemberState, as the byte Kafka writes in the CurrentMemberAssignment record.
pub mod member_state {
    pub const STABLE: i8 = 0;
    pub const UNREVOKED_PARTITIONS: i8 = 1;
    pub const UNRELEASED_PARTITIONS: i8 = 2;
    /// A state byte this coordinator does not know (written by a newer one).
    pub const UNKNOWN: i8 = 127;
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
