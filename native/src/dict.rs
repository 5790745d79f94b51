//! A map in Python's dict order (no counterpart in `state/`: the reference's insertion-ordered dicts and
//! Counters): iteration in insertion order, a key put again keeps its place, a removed key re-added goes
//! last. The reference's structures whose order reaches an output (a group's members, its static members
//! and resolved regexes, the assignor counts Kafka's HashMap is filled from) are held in one of these.

use std::borrow::Borrow;
use std::hash::Hash;

use rustc_hash::FxHashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dict<K: Eq + Hash, V> {
    entries: Vec<(K, V)>,
    index: FxHashMap<K, usize>,
}

impl<K: Eq + Hash, V> Default for Dict<K, V> {
    fn default() -> Self {
        Dict { entries: Vec::new(), index: FxHashMap::default() }
    }
}

impl<K: Eq + Hash + Clone, V> Dict<K, V> {
    /// `d[key] = value`: an existing key keeps its place.
    pub fn insert(&mut self, key: K, value: V) {
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    /// `d.pop(key, None)`: the keys after it move up one place.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let i = self.index.remove(key)?;
        let (_, value) = self.entries.remove(i);
        for (k, _) in &self.entries[i..] {
            *self.index.get_mut::<K>(k).expect("indexed") -= 1;
        }
        Some(value)
    }

    pub fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    pub fn get_mut<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
    {
        self.index.get(key).map(|&i| &mut self.entries[i].1)
    }

    pub fn contains_key<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.index.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Keep the entries `keep` says to, in their order (`del d[k]` for each other one).
    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        self.entries.retain(|(k, v)| keep(k, v));
        self.index = self.entries.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect();
    }
}

/// A collections.Counter of names, in its order: `add` is `counter[key] += delta` (a new key goes last);
/// `drop_zeros` removes the names whose count is 0, as the reference does after each change.
pub type Counter = Dict<String, i64>;

impl Counter {
    pub fn add(&mut self, key: &str, delta: i64) {
        match self.get_mut(key) {
            Some(count) => *count += delta,
            None => self.insert(key.to_string(), delta),
        }
    }

    pub fn drop_zeros(&mut self) {
        self.retain(|_, &count| count != 0);
    }

    pub fn count(&self, key: &str) -> i64 {
        self.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_pythons_dict_order() {
        let mut d: Dict<String, i32> = Dict::default();
        for (k, v) in [("a", 1), ("b", 2), ("c", 3), ("a", 4)] {
            d.insert(k.to_string(), v);
        }
        assert_eq!(d.remove("b"), Some(2));
        d.insert("b".into(), 5);
        let items: Vec<_> = d.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(items, [("a", 4), ("c", 3), ("b", 5)]);
        assert_eq!(d.get("c"), Some(&3));
    }
}
