//! Mirrors `state/consumer_group/downgrade.py` (so far when a fencing or a classic static member's join
//! downgrades the group, and the order it owns, which the target assignment reads too): the order a
//! TimelineHashMap, the consumer group's member map, iterates its keys in. The conversion to a classic group
//! (convertToClassicGroup) comes with the consumer group manager.

use crate::config::CoordinatorConfig;
use crate::consumer_group::group::{ConsumerGroup, ConsumerGroupMember};
use crate::java_compat::string_hash_code;

/// org.apache.kafka.timeline.BaseHashTable: Knuth's multiplicative hash picks a slot from the high bits.
const FIBONACCI: i64 = -7046029254386353131;

fn slot(key: &str, table_size: usize) -> usize {
    let shift = 65 - (usize::BITS - table_size.leading_zeros());
    ((i64::from(string_hash_code(key)).wrapping_mul(FIBONACCI) as u64) >> shift) as usize
}

/// The order a TimelineHashMap created empty and filled with `keys` in their order iterates them: slot by
/// slot, and within a slot last put first (a slot keeps its colliding keys in insertion order, and
/// SnapshottableHashTable's CurrentIterator unpacks a slot into a list it takes from the end).
pub fn in_timeline_hash_map_order<'a>(keys: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut slots: Vec<Vec<&String>> = vec![Vec::new(), Vec::new()]; // BaseHashTable.MIN_CAPACITY
    for (size, key) in keys.into_iter().enumerate() {
        // (size + 1) * 0.75 > slots, in integers.
        if (size + 1) * 3 > slots.len() * 4 {
            let grown = vec![Vec::new(); 2 * slots.len()];
            let old = std::mem::replace(&mut slots, grown);
            for moved in old.into_iter().flatten() {
                let i = slot(moved, slots.len());
                slots[i].push(moved);
            }
        }
        let i = slot(key, slots.len());
        slots[i].push(key);
    }
    slots.into_iter().flat_map(|chain| chain.into_iter().rev().cloned()).collect()
}

/// ConsumerGroupMigrationPolicy.isDowngradeEnabled.
pub const DOWNGRADE_POLICIES: [&str; 2] = ["downgrade", "bidirectional"];

/// A downgrade a request or a timer triggers: the fenced members' ids (`leaving`, sorted: the reference's
/// frozenset), or the member a classic JoinGroup made of its static member replacing the last one using the
/// consumer protocol (`joining`, as the join's records leave it), and whether the classic group then
/// rebalances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downgrade {
    pub leaving: Vec<String>,
    pub joining: Option<ConsumerGroupMember>,
    pub rebalance: bool,
}

/// The policy allows a downgrade and the classic group would not be larger than group.max.size.
fn downgrade_allowed(remaining: usize, config: &CoordinatorConfig) -> bool {
    DOWNGRADE_POLICIES.contains(&config.group_consumer_migration_policy.as_str())
        && remaining as i64 <= config.group_max_size
}

/// validateOnlineDowngradeWithFencedMembers: the downgrade fencing `fenced` triggers, if any.
pub fn downgrade_with_fenced_members(
    group: &ConsumerGroup,
    fenced: &[&ConsumerGroupMember],
    config: &CoordinatorConfig,
) -> Option<Downgrade> {
    let mut leaving: Vec<String> = fenced.iter().map(|m| m.member_id.clone()).collect();
    leaving.sort_unstable();
    leaving.dedup();
    let remaining: Vec<&ConsumerGroupMember> =
        group.members.values().filter(|m| leaving.binary_search(&m.member_id).is_err()).collect();
    if remaining.is_empty() || !remaining.iter().all(|m| m.use_classic_protocol()) {
        return None;
    }
    downgrade_allowed(remaining.len(), config).then_some(Downgrade { leaving, joining: None, rebalance: true })
}

/// validateOnlineDowngradeWithReplacedMember: `replaced` is the only member using the consumer protocol.
pub fn downgrade_allowed_with_replaced_member(
    group: &ConsumerGroup,
    replaced: &ConsumerGroupMember,
    config: &CoordinatorConfig,
) -> bool {
    !replaced.use_classic_protocol()
        && group.members.values().filter(|m| m.member_id != replaced.member_id).all(|m| m.use_classic_protocol())
        && downgrade_allowed(group.members.len(), config)
}
