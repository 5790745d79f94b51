//! `coordsim_native.offsets.OffsetMetadataManager`: offsets/manager.rs's manager, driven as the reference's
//! state.offsets.manager.OffsetMetadataManager is. The reference's manager holds the group managers and the
//! cluster's image; this one is given them with each operation: the native classic group manager
//! (coordsim_native.classic.ClassicGroupManager) whose group it reads, and the reference's image object,
//! asked beforehand for what the operation may read of it (the committed topics' ids and log-end offsets).
//! No consumer group yet: it comes with the consumer group manager. Effects come back as the classic
//! manager's do (py/result.rs), an OffsetCommit record as (topic, partition, value, context).

use std::collections::VecDeque;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rustc_hash::FxHashMap;

use super::classic::{ClassicGroupManager, coordinator_config};
use super::consumer_group::ConsumerGroup;
use super::record_bytes::offset_commit_value;
use super::result::{Requests, attr, offset_value_object, partition_lists};
use super::{bad_input, guarded};
use crate::config::CoordinatorConfig;
use crate::consumer_group::topic_id::TopicId;
use crate::events::{CommitPartition, OffsetCommit, OffsetFetch};
use crate::offsets::manager::{ConsumerGroupView, Groups, Image, OffsetMetadataManager as Manager};
use crate::runtime::result::CoordinatorResult;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OffsetMetadataManager>()
}

/// What an operation may read of the image, read beforehand.
#[derive(Default)]
struct ImageRead {
    topic_ids: FxHashMap<String, TopicId>,
    log_ends: FxHashMap<(String, i32), Option<i64>>,
}

impl Image for ImageRead {
    fn topic_id(&self, topic: &str) -> TopicId {
        self.topic_ids[topic]
    }

    fn reported_log_end_offset(&self, topic: &str, partition: i32, _at: i64) -> Option<i64> {
        self.log_ends[&(topic.to_string(), partition)]
    }
}

#[pyclass(module = "coordsim_native.offsets")]
pub struct OffsetMetadataManager {
    manager: Manager,
    config: CoordinatorConfig,
    requests: Requests,
}

/// The group the offsets belong to: the native classic manager's, or the native consumer group given.
fn groups<'a>(classic: &'a ClassicGroupManager, consumer: &'a Option<PyRef<'_, ConsumerGroup>>) -> Groups<'a> {
    Groups {
        classic: classic.manager.group.as_ref(),
        consumer: consumer.as_ref().map(|c| &c.group as &dyn ConsumerGroupView),
    }
}

impl OffsetMetadataManager {
    fn commit_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<OffsetCommit> {
        let mut offsets = Vec::new();
        for p in obj.getattr("offsets")?.try_iter()? {
            let p = p?;
            offsets.push(CommitPartition {
                topic: attr(&p, "topic")?,
                partition: attr(&p, "partition")?,
                offset: attr(&p, "offset")?,
                leader_epoch: attr(&p, "leader_epoch")?,
                metadata: attr(&p, "metadata")?,
                commit_timestamp: attr(&p, "commit_timestamp")?,
                records_per_second: attr(&p, "records_per_second")?,
                rate_origin_ts: attr(&p, "rate_origin_ts")?,
            });
        }
        Ok(OffsetCommit {
            event: self.requests.event(obj)?,
            member_id: attr(obj, "member_id")?,
            group_instance_id: attr(obj, "group_instance_id")?,
            generation_id: attr(obj, "generation_id")?,
            retention_time_ms: attr(obj, "retention_time_ms")?,
            offsets,
        })
    }

    fn fetch_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<OffsetFetch> {
        Ok(OffsetFetch {
            event: self.requests.event(obj)?,
            partitions: partition_lists(&obj.getattr("partitions")?)?,
            require_stable: attr(obj, "require_stable")?,
            member_id: attr(obj, "member_id")?,
            member_epoch: attr(obj, "member_epoch")?,
        })
    }

    /// Run one operation as the classic manager's binding does (py/classic.rs's `operate`).
    fn operate<'py>(
        &mut self,
        py: Python<'py>,
        call: &str,
        outcomes: &Bound<'py, PyList>,
        run: impl FnOnce(&Manager, &CoordinatorConfig, VecDeque<String>) -> CoordinatorResult,
    ) -> PyResult<Bound<'py, PyList>> {
        let pending: VecDeque<String> = outcomes
            .extract::<Vec<String>>()
            .map_err(|e| bad_input(py, &format!("OffsetMetadataManager.{call}: outcomes"), e))?
            .into();
        let taken = pending.len();
        let (manager, config) = (&self.manager, &self.config);
        let result = guarded(|| format!("OffsetMetadataManager.{call}"), || Ok(run(manager, config, pending)))?;
        outcomes.del_slice(0, taken - result.outcomes.len())?;
        self.requests.effects(py, result.effects)
    }
}

#[pymethods]
impl OffsetMetadataManager {
    #[new]
    fn new(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Self> {
        let config = coordinator_config(config).map_err(|e| bad_input(py, "OffsetMetadataManager: config", e))?;
        Ok(OffsetMetadataManager { manager: Manager::default(), config, requests: Requests::default() })
    }

    #[pyo3(signature = (now, req, outcomes, classic, image, consumer=None))]
    #[allow(clippy::too_many_arguments)]
    fn commit_offset<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
        classic: PyRef<'py, ClassicGroupManager>,
        image: &Bound<'py, PyAny>,
        consumer: Option<PyRef<'py, ConsumerGroup>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let read = |s: &mut Self| -> PyResult<(OffsetCommit, ImageRead)> {
            let commit = s.commit_of(req)?;
            let mut seen = ImageRead::default();
            for p in &commit.offsets {
                let (msb, lsb): (i64, i64) = image.call_method1("topic_id", (p.topic.as_str(),))?.extract()?;
                seen.topic_ids.insert(p.topic.clone(), TopicId { msb, lsb });
                let log_end: Option<i64> =
                    image.call_method1("reported_log_end_offset", ((p.topic.as_str(), p.partition), now))?.extract()?;
                seen.log_ends.insert((p.topic.clone(), p.partition), log_end);
            }
            Ok((commit, seen))
        };
        let (commit, seen) =
            read(self).map_err(|e| bad_input(py, "OffsetMetadataManager.commit_offset: request", e))?;
        let commit = Arc::new(commit);
        self.operate(py, "commit_offset", outcomes, |m, config, o| {
            m.commit_offset(config, groups(&classic, &consumer), &seen, now, &commit, o)
        })
    }

    #[pyo3(signature = (req, outcomes, classic, consumer=None))]
    fn fetch_offsets<'py>(
        &mut self,
        py: Python<'py>,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
        classic: PyRef<'py, ClassicGroupManager>,
        consumer: Option<PyRef<'py, ConsumerGroup>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let fetch =
            Arc::new(self.fetch_of(req).map_err(|e| bad_input(py, "OffsetMetadataManager.fetch_offsets: request", e))?);
        self.operate(py, "fetch_offsets", outcomes, |m, _, o| m.fetch_offsets(groups(&classic, &consumer), &fetch, o))
    }

    #[pyo3(signature = (now, classic, consumer=None))]
    fn next_expiry_due(
        &self,
        now: i64,
        classic: PyRef<'_, ClassicGroupManager>,
        consumer: Option<PyRef<'_, ConsumerGroup>>,
    ) -> PyResult<Option<i64>> {
        guarded(
            || "OffsetMetadataManager.next_expiry_due".into(),
            || Ok(self.manager.next_expiry_due(&self.config, groups(&classic, &consumer), now)),
        )
    }

    #[pyo3(signature = (now, outcomes, classic, consumer=None))]
    fn cleanup_expired_offsets<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        outcomes: &Bound<'py, PyList>,
        classic: PyRef<'py, ClassicGroupManager>,
        consumer: Option<PyRef<'py, ConsumerGroup>>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "cleanup_expired_offsets", outcomes, |m, config, o| {
            m.cleanup_expired_offsets(config, groups(&classic, &consumer), now, o)
        })
    }

    /// An appended offset record, (topic, partition, value) as the effects give it, replayed.
    fn replay(&mut self, py: Python<'_>, topic: String, partition: i32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = if value.is_none() {
            None
        } else {
            Some(offset_commit_value(value).map_err(|e| bad_input(py, "OffsetMetadataManager.replay: value", e))?)
        };
        let record = crate::records::group_log::OffsetCommitRecord { topic, partition, value, context: None };
        self.manager.replay(&record);
        Ok(())
    }

    /// A load: the committed offsets, {(topic, partition): value}.
    fn load(&mut self, py: Python<'_>, offsets: &Bound<'_, PyDict>) -> PyResult<()> {
        let mut loaded = FxHashMap::default();
        for (key, value) in offsets.iter() {
            let read = || -> PyResult<_> { Ok((key.extract::<(String, i32)>()?, offset_commit_value(&value)?)) };
            let (key, value) = read().map_err(|e| bad_input(py, "OffsetMetadataManager.load: offsets", e))?;
            loaded.insert(key, value);
        }
        self.manager.load(loaded);
        Ok(())
    }

    fn unload(&mut self) {
        self.manager.unload();
    }

    /// The committed offsets, {(topic, partition): value}, sorted.
    fn offsets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut keys: Vec<&(String, i32)> = self.manager.offsets.keys().collect();
        keys.sort();
        let out = PyDict::new(py);
        for key in keys {
            out.set_item(key.clone(), offset_value_object(py, self.manager.offsets[key].clone())?)?;
        }
        Ok(out)
    }

    #[getter]
    fn version(&self) -> u64 {
        self.manager.version
    }
}
