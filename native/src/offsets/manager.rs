//! Mirrors `state/offsets/manager.py`: committed offsets. OffsetCommit and OffsetFetch, and KIP-211 expiry by
//! the periodic sweep (Kafka 4.x OffsetMetadataManager; a consumer group's commits are checked by its own
//! rules, a classic group's by its member's generation).
//!
//! Expiry follows each group's offsetExpirationCondition: a classic group's offsets count from their commit
//! (simple group, or a Stable consumer-protocol group for topics it no longer subscribes to) or from when the
//! group became Empty, and nothing expires in other states; a consumer group's count from their commit in
//! every state. An offset whose topic the group subscribes to never expires, and an explicit expire timestamp
//! (OffsetCommit v2-v4 retention) wins over the base.
//!
//! The committed-offsets map is the replay of the group's OffsetCommit records (`replay`). The reference's
//! manager holds the two group managers and the cluster's image; here each operation is given them
//! (`Groups`, `Image`), so the managers stay apart values. The consumer group is read through a trait
//! (`ConsumerGroupView`), which the native ConsumerGroup implements.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::classic::group::{CONSUMER_PROTOCOL_TYPE, ClassicGroup};
use crate::classic::group_state::GroupState;
use crate::classic::manager::generation_member_error;
use crate::config::CoordinatorConfig;
use crate::consumer_group::topic_id::TopicId;
use crate::errors::append_error_to_response_error;
use crate::events::{OffsetCommit, OffsetFetch, Request};
use crate::java_compat::java_string_length;
use crate::records::group_log::{CommitContext, OffsetCommitRecord, OffsetCommitValue, Record};
use crate::runtime::result::{
    CoordinatorResult, Field, PartitionResult, Timer, TimerKey, Value, fetched_result, partition_result,
};

/// What the offsets manager reads of a consumer group (state/consumer_group/group.py's ConsumerGroup and
/// offset_commit.py's rules): the native ConsumerGroup implements it (consumer_group/offset_commit.rs), so the
/// two managers stay apart values.
pub trait ConsumerGroupView {
    /// ConsumerGroup.validateOffsetCommit: an error name, "NONE" when valid.
    fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
        partitions: &[(TopicId, i32)],
        api_version: i16,
        kafka_4_0: bool,
    ) -> String;
    /// ConsumerGroup.validateOffsetFetch: an error name, "NONE" when valid.
    fn validate_offset_fetch(&self, member_id: Option<&str>, member_epoch: i32) -> String;
    fn is_empty(&self) -> bool;
    fn is_subscribed_to(&self, topic: &str) -> bool;
}

/// What the coordinator knows of the cluster's topics.
pub trait Image {
    fn topic_id(&self, topic: &str) -> TopicId;
    /// The log-end offset a broker would report for the partition at `at`, None without a production model.
    fn reported_log_end_offset(&self, topic: &str, partition: i32, at: i64) -> Option<i64>;
}

/// The group the offsets belong to: the classic group or the consumer group the id names (never both), or
/// none.
#[derive(Clone, Copy)]
pub struct Groups<'a> {
    pub classic: Option<&'a ClassicGroup>,
    pub consumer: Option<&'a dyn ConsumerGroupView>,
}

/// The group whose offsets expire: classic or consumer.
enum OffsetsGroup<'a> {
    Classic(&'a ClassicGroup),
    Consumer(&'a dyn ConsumerGroupView),
}

impl OffsetsGroup<'_> {
    fn is_subscribed_to(&self, topic: &str) -> bool {
        match self {
            OffsetsGroup::Classic(group) => group.is_subscribed_to(topic),
            OffsetsGroup::Consumer(group) => group.is_subscribed_to(topic),
        }
    }
}

/// Which timestamp an offset's retention counts from.
#[derive(Clone, Copy)]
enum Base {
    /// Each offset's commit.
    Commit,
    /// When the group became Empty.
    EmptySince(i64),
}

/// The committed offsets of one group and the requests and sweep that change them.
#[derive(Clone, Debug, Default)]
pub struct OffsetMetadataManager {
    pub offsets: FxHashMap<(String, i32), OffsetCommitValue>,
    /// Bumped whenever the map changes: the runtime reschedules the sweep only when something it reads moved.
    pub version: u64,
}

impl OffsetMetadataManager {
    // -- OffsetCommit --------------------------------------------------------------------------------------------
    pub fn commit_offset(
        &self,
        config: &CoordinatorConfig,
        groups: Groups<'_>,
        image: &dyn Image,
        now: i64,
        req: &Arc<OffsetCommit>,
        outcomes: VecDeque<String>,
    ) -> CoordinatorResult {
        let mut result = CoordinatorResult::new(outcomes);
        if let Some(consumer_group) = groups.consumer {
            return self.commit_to_consumer_group(config, consumer_group, image, result, now, req);
        }
        let group = groups.classic;
        // A commit without a generation to a group that does not exist creates it when its records are
        // replayed.
        let creates_group = group.is_none() && req.generation_id < 0;
        let error = if creates_group { None } else { self.validate_offset_commit(group, req) };
        if let Some(error) = error {
            result.respond_error(Request::OffsetCommit(Arc::clone(req)), error);
            return result;
        }
        if let Some(group) = group
            && group.is_in(&[GroupState::Stable, GroupState::PreparingRebalance])
        {
            // Classic members keep their session alive by committing (OffsetMetadataManager.commitOffset
            // reschedules the member's heartbeat).
            let member = group.member(&req.member_id);
            result.schedule(
                TimerKey::Heartbeat(member.member_id.clone()),
                now + i64::from(member.session_timeout_ms),
                Timer::Heartbeat(member.member_id.clone()),
            );
        }
        self.write_commit(config, image, result, req, now, creates_group)
    }

    /// An OffsetCommit to a consumer group: the commit's generation_id is the member epoch (OffsetCommit v9+),
    /// checked by ConsumerGroup.validateOffsetCommit; the offsets are then written as for a classic group.
    fn commit_to_consumer_group(
        &self,
        config: &CoordinatorConfig,
        consumer_group: &dyn ConsumerGroupView,
        image: &dyn Image,
        mut result: CoordinatorResult,
        now: i64,
        req: &Arc<OffsetCommit>,
    ) -> CoordinatorResult {
        let partitions: Vec<(TopicId, i32)> =
            req.offsets.iter().map(|p| (image.topic_id(&p.topic), p.partition)).collect();
        let error = consumer_group.validate_offset_commit(
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            &partitions,
            req.event.api_version,
            config.kafka_4_0,
        );
        if error != "NONE" {
            result.respond_error(Request::OffsetCommit(Arc::clone(req)), &error);
            return result;
        }
        self.write_commit(config, image, result, req, now, false)
    }

    /// A valid commit's records appended and its answer, into `result`.
    fn write_commit(
        &self,
        config: &CoordinatorConfig,
        image: &dyn Image,
        mut result: CoordinatorResult,
        req: &Arc<OffsetCommit>,
        now: i64,
        creates_group: bool,
    ) -> CoordinatorResult {
        let (results, records) = self.commit_records(config, image, req, now);
        let request = Request::OffsetCommit(Arc::clone(req));
        if records.is_empty() {
            if creates_group {
                result.create_simple_group(); // in memory, as Kafka's validation does, though nothing is written
            }
        } else if let Some(error) = result.append(records.into_iter().map(Record::OffsetCommit).collect()) {
            // The failed append rolls back the whole operation, including a group it would have created.
            result.respond_error(request, append_error_to_response_error(&error));
            return result;
        }
        result.respond(request, "NONE", vec![(Field::Results, Value::Results(results))]);
        result
    }

    /// A valid commit handled at `now`: each partition's result, and the records of those accepted.
    pub fn commit_records(
        &self,
        config: &CoordinatorConfig,
        image: &dyn Image,
        req: &OffsetCommit,
        now: i64,
    ) -> (Vec<PartitionResult>, Vec<OffsetCommitRecord>) {
        let expire_ts = (req.retention_time_ms != -1).then(|| now + req.retention_time_ms);
        let (mut results, mut records) = (Vec::new(), Vec::new());
        for p in &req.offsets {
            if p.metadata.as_deref().is_some_and(|m| java_string_length(m) as i64 > config.offset_metadata_max_bytes) {
                results.push(partition_result(&p.topic, p.partition, "OFFSET_METADATA_TOO_LARGE"));
                continue;
            }
            results.push(partition_result(&p.topic, p.partition, "NONE"));
            let value = OffsetCommitValue {
                offset: p.offset,
                leader_epoch: Some(p.leader_epoch),
                metadata: Some(p.metadata.clone().unwrap_or_default()),
                commit_ts: if p.commit_timestamp == -1 { now } else { p.commit_timestamp },
                expire_ts,
                topic_id: self.committed_topic_id(config, image, &p.topic, expire_ts),
            };
            let context = CommitContext {
                generation_id: req.generation_id,
                member_id: req.member_id.clone(),
                log_end_offset: image.reported_log_end_offset(&p.topic, p.partition, now),
            };
            records.push(OffsetCommitRecord {
                topic: p.topic.clone(),
                partition: p.partition,
                value: Some(value),
                context: Some(context),
            });
        }
        (results, records)
    }

    /// The topic id the commit's OffsetCommitValue holds: from Kafka 4.1 (KAFKA-19141) the coordinator writes
    /// the topic's id, except in a v1 value (a commit with an expire timestamp), which has no field for it.
    /// Kafka 4.0 wrote none.
    fn committed_topic_id(
        &self,
        config: &CoordinatorConfig,
        image: &dyn Image,
        topic: &str,
        expire_ts: Option<i64>,
    ) -> Option<TopicId> {
        if expire_ts.is_some() || config.kafka_4_0 {
            return None;
        }
        Some(image.topic_id(topic))
    }

    fn validate_offset_commit(&self, group: Option<&ClassicGroup>, req: &OffsetCommit) -> Option<&'static str> {
        let Some(group) = group else {
            return Some(if req.event.api_version >= 9 { "GROUP_ID_NOT_FOUND" } else { "ILLEGAL_GENERATION" });
        };
        if group.is_in(&[GroupState::Dead]) {
            return Some("COORDINATOR_NOT_AVAILABLE");
        }
        if req.generation_id < 0 && group.is_in(&[GroupState::Empty]) {
            return None; // admin tools and manually assigned consumers commit to an Empty group freely
        }
        if req.generation_id >= 0 || !req.member_id.is_empty() || req.group_instance_id.is_some() {
            if let Some(error) =
                generation_member_error(group, &req.member_id, req.group_instance_id.as_deref(), req.generation_id)
            {
                return Some(error);
            }
        } else if !group.is_in(&[GroupState::Empty]) {
            return Some("UNKNOWN_MEMBER_ID");
        }
        if group.is_in(&[GroupState::CompletingRebalance]) {
            return Some("REBALANCE_IN_PROGRESS");
        }
        None
    }

    // -- OffsetFetch ---------------------------------------------------------------------------------------------
    pub fn fetch_offsets(
        &self,
        groups: Groups<'_>,
        req: &Arc<OffsetFetch>,
        outcomes: VecDeque<String>,
    ) -> CoordinatorResult {
        let mut result = CoordinatorResult::new(outcomes);
        let request = Request::OffsetFetch(Arc::clone(req));
        if let Some(consumer_group) = groups.consumer {
            let error = consumer_group.validate_offset_fetch(req.member_id.as_deref(), req.member_epoch);
            if error != "NONE" {
                // A group-level error (only v9+ names a member): no partitions in the answer.
                result.respond(request, &error, Vec::new());
                return result;
            }
        }
        let known = groups.classic.is_some_and(|g| !g.is_in(&[GroupState::Dead])) || groups.consumer.is_some();
        let mut results = Vec::new();
        match &req.partitions {
            None => {
                if known {
                    let mut committed: Vec<&(String, i32)> = self.offsets.keys().collect();
                    committed.sort();
                    for (topic, partition) in committed {
                        results.push(self.fetched(topic, *partition));
                    }
                }
            }
            Some(lists) => {
                for plist in lists {
                    for &partition in &plist.partitions {
                        if known && self.offsets.contains_key(&(plist.topic.clone(), partition)) {
                            results.push(self.fetched(&plist.topic, partition));
                        } else {
                            results.push(fetched_result(&plist.topic, partition, "NONE", Some(-1), Some(-1), Some("")));
                        }
                    }
                }
            }
        }
        result.respond(request, "NONE", vec![(Field::Results, Value::Results(results))]);
        result
    }

    fn fetched(&self, topic: &str, partition: i32) -> PartitionResult {
        let c = &self.offsets[&(topic.to_string(), partition)];
        fetched_result(topic, partition, "NONE", Some(c.offset), c.leader_epoch, c.metadata.as_deref())
    }

    // -- expiry --------------------------------------------------------------------------------------------------
    fn offsets_group<'a>(&self, groups: Groups<'a>) -> Option<OffsetsGroup<'a>> {
        match (groups.classic, groups.consumer) {
            (Some(group), _) => Some(OffsetsGroup::Classic(group)),
            (None, Some(group)) => Some(OffsetsGroup::Consumer(group)),
            (None, None) => None,
        }
    }

    /// Which timestamp an offset's retention counts from (the group's offsetExpirationCondition), or None when
    /// nothing may expire now.
    fn expiration_base(&self, groups: Groups<'_>) -> Option<Base> {
        if groups.consumer.is_some() {
            return Some(Base::Commit); // ConsumerGroup: always from each commit, whatever its state
        }
        let group = groups.classic?;
        if group.is_in(&[GroupState::Dead]) {
            return None;
        }
        if group.protocol_type.is_none() {
            return Some(Base::Commit); // simple group: from each commit
        }
        if group.is_in(&[GroupState::Empty]) {
            return Some(Base::EmptySince(group.current_state_ts)); // from the moment the group became Empty
        }
        if group.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
            && group.subscribed_topics.is_some()
            && group.is_in(&[GroupState::Stable])
        {
            return Some(Base::Commit); // only topics the group no longer subscribes to
        }
        None
    }

    fn expiry_time(&self, config: &CoordinatorConfig, base: Base, committed: &OffsetCommitValue) -> i64 {
        if let Some(expire_ts) = committed.expire_ts {
            return expire_ts;
        }
        let from = match base {
            Base::Commit => committed.commit_ts,
            Base::EmptySince(ts) => ts,
        };
        from + config.offsets_retention_ms()
    }

    /// Whether a sweep that leaves no offsets deletes the group (maybeDeleteGroup): an Empty group, classic or
    /// consumer.
    fn deletes_when_emptied(&self, groups: Groups<'_>) -> bool {
        if let Some(consumer_group) = groups.consumer {
            return consumer_group.is_empty();
        }
        groups.classic.is_some_and(|g| g.is_in(&[GroupState::Empty]))
    }

    /// Earliest time at which a sweep would change something: an offset expires, or the group is Empty with no
    /// offsets left and gets deleted.
    pub fn next_expiry_due(&self, config: &CoordinatorConfig, groups: Groups<'_>, now: i64) -> Option<i64> {
        let group = self.offsets_group(groups)?;
        if self.offsets.is_empty() {
            return self.deletes_when_emptied(groups).then_some(now);
        }
        let base = self.expiration_base(groups)?;
        self.offsets
            .iter()
            .filter(|((topic, _), _)| !group.is_subscribed_to(topic))
            .map(|(_, c)| self.expiry_time(config, base, c))
            .min()
    }

    /// Kafka's cleanupGroupMetadata for this group: its expired offsets, unless the group subscribes to their
    /// topic (isSubscribedToTopic), are tombstoned; an Empty group left without offsets is deleted.
    pub fn cleanup_expired_offsets(
        &self,
        config: &CoordinatorConfig,
        groups: Groups<'_>,
        now: i64,
        outcomes: VecDeque<String>,
    ) -> CoordinatorResult {
        let mut result = CoordinatorResult::new(outcomes);
        let Some(group) = self.offsets_group(groups) else { return result };
        let mut expired: Vec<(String, i32)> = Vec::new();
        let mut all_expired = true;
        let base = self.expiration_base(groups);
        if !self.offsets.is_empty() {
            let Some(base) = base else { return result };
            let mut committed: Vec<(&(String, i32), &OffsetCommitValue)> = self.offsets.iter().collect();
            committed.sort_by(|a, b| a.0.cmp(b.0));
            for ((topic, partition), value) in committed {
                if !group.is_subscribed_to(topic) && now >= self.expiry_time(config, base, value) {
                    expired.push((topic.clone(), *partition));
                } else {
                    all_expired = false;
                }
            }
        }
        let delete_group = all_expired && self.deletes_when_emptied(groups);
        if expired.is_empty() && !delete_group {
            return result;
        }
        let mut records: Vec<Record> = expired
            .into_iter()
            .map(|(topic, partition)| {
                Record::OffsetCommit(OffsetCommitRecord { topic, partition, value: None, context: None })
            })
            .collect();
        if delete_group && groups.classic.is_some() {
            records.push(Record::GroupMetadata(None));
        }
        if result.append(records).is_some() {
            return result; // the sweep's records were not written; the next tick tries again
        }
        if delete_group {
            result.delete_group("group_expired");
            result.cancel_all();
        }
        result
    }

    // -- replay, load, unload ------------------------------------------------------------------------------------
    /// An appended offset record, replayed into the committed offsets (Kafka's OffsetMetadataManager.replay).
    pub fn replay(&mut self, record: &OffsetCommitRecord) {
        let key = (record.topic.clone(), record.partition);
        match &record.value {
            None => {
                self.offsets.remove(&key);
            }
            Some(value) => {
                self.offsets.insert(key, value.clone());
            }
        }
        self.version += 1;
    }

    /// A coordinator loading the group's partition: each partition's last offset record.
    pub fn load(&mut self, offsets: FxHashMap<(String, i32), OffsetCommitValue>) {
        self.offsets = offsets;
        self.version += 1;
    }

    pub fn unload(&mut self) {
        self.offsets = FxHashMap::default();
        self.version += 1;
    }
}
