//! Mirrors `state/java_compat.py`: the Java semantics Kafka's outcomes depend on. String.hashCode,
//! Utils.abs, String.compareTo, the iteration order of java.util.HashMap / HashSet, and java.util.Random.
//!
//! Kafka picks leaders, breaks protocol-vote ties and resolves sticky-assignor claims in HashMap iteration
//! order, so reproducing a real broker's answers needs that order exactly. As in the Python module,
//! treeified buckets (8+ collisions in one bucket at capacity >= 64) are not modelled.

use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::Hash;

pub const INT_MIN: i32 = i32::MIN;

/// Java's String.hashCode over UTF-16 code units, as a signed 32-bit int.
pub fn string_hash_code(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// Kafka's Utils.abs: like Math.abs, but Integer.MIN_VALUE maps to 0 instead of staying negative.
pub fn kafka_abs(n: i32) -> i32 {
    if n == INT_MIN { 0 } else { n.abs() }
}

/// The __consumer_offsets partition whose leader coordinates the group.
pub fn coordinator_partition(group_id: &str, offsets_topic_partitions: i32) -> i32 {
    kafka_abs(string_hash_code(group_id)) % offsets_topic_partitions
}

/// Java's String.compareTo: UTF-16 code units, not code points (a character outside the BMP sorts as its
/// surrogates, below U+E000..U+FFFF); a proper prefix sorts first.
pub fn java_string_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// A sort key with String.compareTo's order, for sorting many times by the same strings.
pub fn java_string_key(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// String.length(): UTF-16 code units (a character outside the BMP counts twice).
pub fn java_string_length(s: &str) -> usize {
    s.encode_utf16().count()
}

/// HashMap.hash(): the key's hashCode with its high half folded into the low half.
pub fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// org.apache.kafka.common.TopicPartition.hashCode(): 31 * (31 + partition) + topic.hashCode(), in int32.
pub fn topic_partition_hash_code(topic: &str, partition: i32) -> i32 {
    31i32.wrapping_mul(31i32.wrapping_add(partition)).wrapping_add(string_hash_code(topic))
}

/// A key's Java hashCode: what places it in a java.util.HashMap bucket.
pub trait JavaHash {
    fn java_hash(&self) -> i32;
}

impl JavaHash for String {
    fn java_hash(&self) -> i32 {
        string_hash_code(self)
    }
}

impl JavaHash for i32 {
    /// Integer.hashCode: the value itself.
    fn java_hash(&self) -> i32 {
        *self
    }
}

/// A map that iterates like java.util.HashMap with the default load factor.
///
/// Order is (bucket at the current capacity, then insertion order within the bucket). Capacity starts at
/// 16 (or the capacity given), doubles when the size passes 0.75 x capacity and never shrinks. A resize
/// keeps the relative order of the keys that share a bucket, so (bucket, insertion sequence) stays the exact
/// order. Re-putting an existing key keeps its place; removing and re-adding moves it to the end of its
/// bucket.
#[derive(Clone, Debug)]
pub struct JavaHashMap<K, V> {
    data: FxHashMap<K, (u64, V)>,
    next_seq: u64,
    capacity: u32,
}

impl<K: JavaHash + Eq + Hash + Clone, V> Default for JavaHashMap<K, V> {
    fn default() -> Self {
        Self::with_capacity(16)
    }
}

impl<K: JavaHash + Eq + Hash + Clone, V> JavaHashMap<K, V> {
    /// `capacity` must be a power of two, as HashMap.tableSizeFor makes it.
    pub fn with_capacity(capacity: u32) -> Self {
        JavaHashMap { data: FxHashMap::default(), next_seq: 0, capacity }
    }

    pub fn insert(&mut self, key: K, value: V) {
        if let Some(entry) = self.data.get_mut(&key) {
            entry.1 = value;
            return;
        }
        if (self.data.len() as u64) + 1 > u64::from(self.capacity) * 3 / 4 {
            self.capacity *= 2;
        }
        self.data.insert(key, (self.next_seq, value));
        self.next_seq += 1;
    }

    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.data.remove(key).map(|(_, v)| v)
    }

    pub fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.data.get(key).map(|(_, v)| v)
    }

    /// The value to change in place: the key keeps its place.
    pub fn get_mut<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.data.get_mut(key).map(|(_, v)| v)
    }

    pub fn contains_key<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.data.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    fn position(&self, key: &K, seq: u64) -> (u32, u64) {
        (spread(key.java_hash()) & (self.capacity - 1), seq)
    }

    /// The entries in iteration order.
    pub fn entries(&self) -> Vec<(&K, &V)> {
        let mut out: Vec<((u32, u64), &K, &V)> =
            self.data.iter().map(|(k, (seq, v))| (self.position(k, *seq), k, v)).collect();
        out.sort_unstable_by_key(|e| e.0);
        out.into_iter().map(|(_, k, v)| (k, v)).collect()
    }

    pub fn keys(&self) -> Vec<K> {
        self.entries().into_iter().map(|(k, _)| k.clone()).collect()
    }

    /// iterator().next(): the first key, None when empty.
    pub fn first_key(&self) -> Option<&K> {
        self.data.iter().min_by_key(|(k, (seq, _))| self.position(k, *seq)).map(|(k, _)| k)
    }
}

/// A set that iterates like java.util.HashSet (a HashMap underneath). Kafka's sticky assignor takes
/// `set.iterator().next()` in places, so which element comes first must match Java.
#[derive(Clone, Debug)]
pub struct JavaHashSet<K> {
    map: JavaHashMap<K, ()>,
}

impl<K: JavaHash + Eq + Hash + Clone> Default for JavaHashSet<K> {
    fn default() -> Self {
        JavaHashSet { map: JavaHashMap::default() }
    }
}

impl<K: JavaHash + Eq + Hash + Clone> JavaHashSet<K> {
    pub fn insert(&mut self, item: K) {
        self.map.insert(item, ());
    }

    pub fn remove(&mut self, item: &K) {
        self.map.remove(item);
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn first(&self) -> Option<&K> {
        self.map.first_key()
    }
}

/// java.util.Random: the 48-bit LCG, `nextInt(bound)` and `Collections.shuffle(list, random)`.
#[derive(Clone, Debug)]
pub struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    const MULTIPLIER: i64 = 0x5DEECE66D;
    const MASK: i64 = (1 << 48) - 1;

    pub fn new(seed: i64) -> Self {
        JavaRandom { seed: (seed ^ Self::MULTIPLIER) & Self::MASK }
    }

    pub fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.seed >> (48 - bits)) as i32
    }

    /// `bound` must be positive, as Java checks.
    pub fn next_int(&mut self, bound: i32) -> i32 {
        let r = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            // A power of two: the high bits, which are the more random ones in an LCG.
            return ((i64::from(bound) * i64::from(r)) >> 31) as i32;
        }
        let mut u = r;
        let mut r = u % bound;
        // u falls in the last, incomplete run of `bound`: draw again.
        while u.wrapping_sub(r).wrapping_add(m) < 0 {
            u = self.next(31);
            r = u % bound;
        }
        r
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (2..=items.len()).rev() {
            let j = self.next_int(i as i32) as usize;
            items.swap(i - 1, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_code_matches_java() {
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE, the classic Java example.
        assert_eq!(string_hash_code("polygenelubricants"), i32::MIN);
        assert_eq!(kafka_abs(string_hash_code("polygenelubricants")), 0);
        assert_eq!(string_hash_code(""), 0);
        assert_eq!(string_hash_code("abc"), 96354);
        // A character outside the BMP hashes as its two surrogates.
        assert_eq!(string_hash_code("\u{1F600}"), 0xD83D * 31 + 0xDE00);
    }

    #[test]
    fn compare_to_orders_code_units_not_code_points() {
        assert_eq!(java_string_cmp("consumer-10", "consumer-2"), Ordering::Less);
        assert_eq!(java_string_cmp("b\u{1F600}", "b\u{FB01}"), Ordering::Less);
        assert_eq!(java_string_cmp("ab", "abc"), Ordering::Less);
        assert_eq!(java_string_length("\u{1F600}"), 2);
    }

    #[test]
    fn hash_map_iterates_by_bucket_then_insertion() {
        // "topic1" falls in bucket 0 and "topic0" in bucket 3 at capacity 16.
        let mut m = JavaHashMap::default();
        m.insert("topic0".to_string(), 0);
        m.insert("topic1".to_string(), 1);
        assert_eq!(m.keys(), vec!["topic1".to_string(), "topic0".to_string()]);
        // Growth past 12 keys doubles the capacity; the order is then that of 32 buckets.
        let mut ints = JavaHashMap::default();
        for i in [17, 1, 33] {
            ints.insert(i, ());
        }
        assert_eq!(ints.keys(), vec![17, 1, 33]);
        for i in 100..110 {
            ints.insert(i, ());
        }
        assert_eq!(ints.keys()[..3], [1, 33, 100]);
    }

    #[test]
    fn java_random_matches_java() {
        // new Random(42).nextInt(10) draws 0, 3, 8 in Java.
        let mut r = JavaRandom::new(42);
        assert_eq!([r.next_int(10), r.next_int(10), r.next_int(10)], [0, 3, 8]);
    }
}
