//! Mirrors `state/consumer_group/topics.py` (so far what the target assignment reads): the topics a consumer
//! group's coordinator sees in the cluster's metadata, name -> (topic id, partition count). The group's
//! metadata hash (a BLAKE2b over the subscribed topics) comes with the heartbeat.

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
}
