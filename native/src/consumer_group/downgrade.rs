//! Mirrors `state/consumer_group/downgrade.py` (so far the order it owns, which the target assignment reads
//! too): the order a TimelineHashMap, the consumer group's member map, iterates its keys in. The downgrade
//! itself comes with the consumer group manager.

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
