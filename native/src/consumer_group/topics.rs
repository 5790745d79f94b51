//! Mirrors `state/consumer_group/topics.py`: the topics a consumer group's coordinator sees in the cluster's
//! metadata, name -> (topic id, partition count), and the group's metadata hash over the topics its members
//! subscribe to (a 64-bit BLAKE2b where Kafka's is XXH3-64: it changes exactly when Kafka's does for
//! rack-less topics, which is all the coordinator uses it for).

use blake2::Blake2b;
use blake2::digest::Digest;
use blake2::digest::consts::U8;
use rustc_hash::FxHashMap;

use crate::consumer_group::topic_id::TopicId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopicsImage {
    pub topics: FxHashMap<String, (TopicId, i32)>,
}

impl TopicsImage {
    pub fn topic_id(&self, name: &str) -> Option<TopicId> {
        self.topics.get(name).map(|(topic_id, _)| *topic_id)
    }

    /// `SubscribedTopicDescriber`: partitions per topic id.
    pub fn partition_counts(&self) -> FxHashMap<TopicId, i32> {
        self.topics.values().copied().collect()
    }

    /// The group's metadata hash for the topic names its members subscribe to: BLAKE2b (8-byte digest) over
    /// each existing topic's "id\0name\0partitions\0", in name order, read as a big-endian signed long; 0
    /// when none exists (as in Kafka).
    pub fn metadata_hash<'a>(&self, subscribed_topic_names: impl IntoIterator<Item = &'a str>) -> i64 {
        let mut existing: Vec<&str> =
            subscribed_topic_names.into_iter().filter(|n| self.topics.contains_key(*n)).collect();
        if existing.is_empty() {
            return 0;
        }
        // Code point order is UTF-8 byte order: Python's sorted(str).
        existing.sort_unstable();
        existing.dedup();
        let mut digest = Blake2b::<U8>::new();
        for name in existing {
            let (topic_id, partitions) = &self.topics[name];
            digest.update(format!("{topic_id}\0{name}\0{partitions}\0").as_bytes());
        }
        i64::from_be_bytes(digest.finalize().into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_hash_is_hashlib_blake2b_digest_size_8() {
        let image = TopicsImage { topics: [("t".to_string(), (TopicId { msb: 1, lsb: 2 }, 3))].into_iter().collect() };
        assert_eq!(image.metadata_hash(["missing"]), 0);
        // int.from_bytes(hashlib.blake2b(b"AAAAAAAAAAEAAAAAAAAAAg\0t\x003\0", digest_size=8).digest(), "big",
        // signed=True)
        assert_eq!(image.metadata_hash(["t", "t", "missing"]), -2269960416913162057);
    }
}
