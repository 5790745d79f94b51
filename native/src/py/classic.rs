//! `coordsim_native.classic.ClassicGroupManager`: classic/manager.rs's manager, driven as the reference's
//! state.classic.manager.ClassicGroupManager is: the same methods, given the reference's own request objects
//! (read by attribute), its CoordinatorConfig and its `outcomes` list (the append failures an operation
//! takes are removed from it, as the reference pops them). Each operation returns its effects as the
//! reference's effect tuples (state/runtime/result.py), with plain values where the reference holds objects:
//! an APPEND's records as their GroupMetadata values (None for a tombstone), a state as its name. A request in
//! an effect is the very object the manager was given.

use std::collections::VecDeque;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::consumer_group::{ConsumerGroup, ImageArg, downgrade_of, topics_image};
use super::record_bytes::{blob, group_metadata_value};
use super::result::{Requests, attr, generation_object, partition_lists, partitions_object};
use super::{bad_input, guarded};
use crate::classic::manager::ClassicGroupManager as Manager;
use crate::config::CoordinatorConfig;
use crate::consumer_group::downgrade::convert_to_classic_group;
use crate::events::{Heartbeat, JoinGroup, LeaveGroup, LeaveIdentity, MemberAssignment, Protocol, SyncGroup};
use crate::runtime::member_ids::MemberIds;
use crate::runtime::result::CoordinatorResult;

/// The settings of the reference's CoordinatorConfig the native managers obey.
pub(crate) fn coordinator_config(config: &Bound<'_, PyAny>) -> PyResult<CoordinatorConfig> {
    let version: String = attr(config, "coordsim_kafka_version")?;
    Ok(CoordinatorConfig {
        group_min_session_timeout_ms: attr(config, "group_min_session_timeout_ms")?,
        group_max_session_timeout_ms: attr(config, "group_max_session_timeout_ms")?,
        group_initial_rebalance_delay_ms: attr(config, "group_initial_rebalance_delay_ms")?,
        group_max_size: attr(config, "group_max_size")?,
        offsets_retention_minutes: attr(config, "offsets_retention_minutes")?,
        offset_metadata_max_bytes: attr(config, "offset_metadata_max_bytes")?,
        group_consumer_session_timeout_ms: attr(config, "group_consumer_session_timeout_ms")?,
        group_consumer_heartbeat_interval_ms: attr(config, "group_consumer_heartbeat_interval_ms")?,
        group_consumer_max_size: attr(config, "group_consumer_max_size")?,
        group_consumer_assignors: attr(config, "group_consumer_assignors")?,
        group_consumer_migration_policy: attr(config, "group_consumer_migration_policy")?,
        group_consumer_assignment_interval_ms: attr(config, "group_consumer_assignment_interval_ms")?,
        group_consumer_regex_refresh_interval_ms: attr(config, "group_consumer_regex_refresh_interval_ms")?,
        kafka_4_0: version == "4.0",
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ClassicGroupManager>()
}

/// The manager and the Python objects of the requests it still holds, by handle.
#[pyclass(module = "coordsim_native.classic")]
pub struct ClassicGroupManager {
    pub(crate) manager: Manager,
    requests: Requests,
}

fn protocols(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Protocol>> {
    let mut out = Vec::new();
    for p in obj.try_iter()? {
        let p = p?;
        out.push(Protocol {
            name: attr(&p, "name")?,
            metadata: blob(&p.getattr("metadata")?)?,
            topics: attr(&p, "topics")?,
        });
    }
    Ok(out)
}

impl ClassicGroupManager {
    fn join_group_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<JoinGroup> {
        Ok(JoinGroup {
            event: self.requests.event(obj)?,
            member_id: attr(obj, "member_id")?,
            group_instance_id: attr(obj, "group_instance_id")?,
            protocol_type: attr(obj, "protocol_type")?,
            protocols: protocols(&obj.getattr("protocols")?)?,
            session_timeout_ms: attr(obj, "session_timeout_ms")?,
            rebalance_timeout_ms: attr(obj, "rebalance_timeout_ms")?,
            client_host: attr(obj, "client_host")?,
            reason: attr(obj, "reason")?,
        })
    }

    fn sync_group_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<SyncGroup> {
        let mut assignments = Vec::new();
        for a in obj.getattr("assignments")?.try_iter()? {
            let a = a?;
            assignments.push(MemberAssignment {
                member_id: attr(&a, "member_id")?,
                assignment: blob(&a.getattr("assignment")?)?,
                partitions: partition_lists(&a.getattr("partitions")?)?,
            });
        }
        Ok(SyncGroup {
            event: self.requests.event(obj)?,
            member_id: attr(obj, "member_id")?,
            group_instance_id: attr(obj, "group_instance_id")?,
            generation_id: attr(obj, "generation_id")?,
            protocol_type: attr(obj, "protocol_type")?,
            protocol_name: attr(obj, "protocol_name")?,
            assignments,
        })
    }

    fn heartbeat_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<Heartbeat> {
        Ok(Heartbeat {
            event: self.requests.event(obj)?,
            member_id: attr(obj, "member_id")?,
            group_instance_id: attr(obj, "group_instance_id")?,
            generation_id: attr(obj, "generation_id")?,
        })
    }

    fn leave_group_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<LeaveGroup> {
        let mut members = Vec::new();
        for i in obj.getattr("members")?.try_iter()? {
            let i = i?;
            members.push(LeaveIdentity {
                member_id: attr(&i, "member_id")?,
                group_instance_id: attr(&i, "group_instance_id")?,
                reason: attr(&i, "reason")?,
            });
        }
        Ok(LeaveGroup { event: self.requests.event(obj)?, members })
    }

    /// Run one operation: `read` the request (a TypeError naming it when it cannot be), `run` it (a panic is a
    /// RuntimeError naming the call), then hand back its effects and leave `outcomes` as the operation left it.
    fn operate<'py, R>(
        &mut self,
        py: Python<'py>,
        call: &str,
        outcomes: Option<&Bound<'py, PyList>>,
        read: impl FnOnce(&mut Self) -> PyResult<R>,
        run: impl FnOnce(&mut Manager, R, VecDeque<String>) -> CoordinatorResult,
    ) -> PyResult<Bound<'py, PyList>> {
        let input = read(self).map_err(|e| bad_input(py, &format!("ClassicGroupManager.{call}: request"), e))?;
        let pending: VecDeque<String> = match outcomes {
            Some(list) => list
                .extract::<Vec<String>>()
                .map_err(|e| bad_input(py, &format!("ClassicGroupManager.{call}: outcomes"), e))?
                .into(),
            None => VecDeque::new(),
        };
        let taken = pending.len();
        let group_id = self.manager.group_id.clone();
        let what = || format!("ClassicGroupManager.{call} of group {group_id:?}");
        let manager = &mut self.manager;
        let result = guarded(what, || Ok(run(manager, input, pending)))?;
        if let Some(list) = outcomes {
            list.del_slice(0, taken - result.outcomes.len())?;
        }
        self.requests.effects(py, result.effects)
    }
}

#[pymethods]
impl ClassicGroupManager {
    /// `config`: the reference's CoordinatorConfig (its group.* settings are read); `counter`: where the
    /// group's member ids start (the reference's MemberIds.counter).
    #[new]
    #[pyo3(signature = (group_id, config, counter=0))]
    fn new(py: Python<'_>, group_id: &str, config: &Bound<'_, PyAny>, counter: u64) -> PyResult<Self> {
        let config = coordinator_config(config).map_err(|e| bad_input(py, "ClassicGroupManager: config", e))?;
        let ids = MemberIds { group_id: group_id.to_string(), counter };
        Ok(ClassicGroupManager { manager: Manager::new(group_id, config, ids), requests: Requests::default() })
    }

    fn join_group<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
        consumer_group_exists: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "join_group",
            Some(outcomes),
            |s| s.join_group_of(req).map(Arc::new),
            |m, r, o| m.join_group(now, &r, o, consumer_group_exists),
        )
    }

    fn sync_group<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "sync_group",
            Some(outcomes),
            |s| s.sync_group_of(req).map(Arc::new),
            |m, r, o| m.sync_group(now, &r, o),
        )
    }

    fn heartbeat<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "heartbeat",
            Some(outcomes),
            |s| s.heartbeat_of(req).map(Arc::new),
            |m, r, o| m.heartbeat(now, &r, o),
        )
    }

    fn leave_group<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        req: &Bound<'py, PyAny>,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "leave_group",
            Some(outcomes),
            |s| s.leave_group_of(req).map(Arc::new),
            |m, r, o| m.leave_group(now, &r, o),
        )
    }

    fn prepare_rebalance<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        cause: &str,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "prepare_rebalance", Some(outcomes), |_| Ok(()), |m, (), o| m.prepare_rebalance(now, cause, o))
    }

    fn on_initial_join_timeout<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        delay: i64,
        remaining: i64,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "on_initial_join_timeout",
            Some(outcomes),
            |_| Ok(()),
            |m, (), o| m.on_initial_join_timeout(now, delay, remaining, o),
        )
    }

    fn on_join_timeout<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "on_join_timeout", Some(outcomes), |_| Ok(()), |m, (), o| m.on_join_timeout(now, o))
    }

    fn on_sync_timeout<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        generation_id: i32,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "on_sync_timeout",
            Some(outcomes),
            |_| Ok(()),
            |m, (), o| m.on_sync_timeout(now, generation_id, o),
        )
    }

    fn on_heartbeat_expired<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        member_id: &str,
        outcomes: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.operate(
            py,
            "on_heartbeat_expired",
            Some(outcomes),
            |_| Ok(()),
            |m, (), o| m.on_heartbeat_expired(now, member_id, o),
        )
    }

    fn create_simple_group<'py>(&mut self, py: Python<'py>, now: i64) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "create_simple_group", None, |_| Ok(()), |m, (), _| m.create_simple_group(now))
    }

    fn delete<'py>(&mut self, py: Python<'py>, now: i64, cause: &str) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "delete", None, |_| Ok(()), |m, (), _| m.delete(now, cause))
    }

    /// `value`: the group's last GroupMetadata value (the reference's dict), or None.
    fn load<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        value: &Bound<'py, PyAny>,
        has_offsets: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let read = |_: &mut Self| if value.is_none() { Ok(None) } else { group_metadata_value(value).map(Some) };
        self.operate(py, "load", None, read, |m, v, _| m.load(now, v.as_ref(), has_offsets))
    }

    fn unload<'py>(&mut self, py: Python<'py>, now: i64, crashed: bool) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "unload", None, |_| Ok(()), |m, (), _| m.unload(now, crashed))
    }

    fn replace_by_consumer_group<'py>(&mut self, py: Python<'py>, now: i64) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "replace_by_consumer_group", None, |_| Ok(()), |m, (), _| m.replace_by_consumer_group(now))
    }

    /// As the reference's adopt_downgraded(now, group, rebalance), the classic group being what
    /// state.consumer_group.downgrade.convert_to_classic_group makes of the native `consumer_group` with the
    /// Downgrade's fields (`joining` a reference ConsumerGroupMember or None) over `topics` ({name: ((msb,
    /// lsb), partition count)}).
    #[allow(clippy::too_many_arguments)]
    fn adopt_downgraded<'py>(
        &mut self,
        py: Python<'py>,
        now: i64,
        consumer_group: PyRef<'py, ConsumerGroup>,
        leaving: Vec<String>,
        joining: Option<Bound<'py, PyAny>>,
        rebalance: bool,
        topics: ImageArg,
    ) -> PyResult<Bound<'py, PyList>> {
        let downgrade = downgrade_of(py, leaving, joining, rebalance)?;
        let (_, classic) = convert_to_classic_group(&consumer_group.group, &downgrade, &topics_image(topics), now)
            .map_err(pyo3::exceptions::PyValueError::new_err)?;
        self.operate(py, "adopt_downgraded", None, |_| Ok(()), |m, (), _| m.adopt_downgraded(now, classic, rebalance))
    }

    fn finish<'py>(&mut self, py: Python<'py>, now: i64) -> PyResult<Bound<'py, PyList>> {
        self.operate(py, "finish", None, |_| Ok(()), |m, (), _| m.finish(now))
    }

    /// The generations row of the generation still pending, as the reference's dict (None if none).
    #[pyo3(signature = (stable_ts=None))]
    fn pending_generation_row<'py>(
        &self,
        py: Python<'py>,
        stable_ts: Option<i64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let group_id = &self.manager.group_id;
        let row = guarded(
            || format!("ClassicGroupManager.pending_generation_row of group {group_id:?}"),
            || Ok(self.manager.pending_generation_row(stable_ts)),
        )?;
        row.map(|r| generation_object(py, r)).transpose()
    }

    /// The group as the parity test compares it: None without a group, else (state, generation, protocol
    /// type, protocol name, leader, member ids in the member map's order, pending join ids, pending sync ids,
    /// members awaiting join, each member's (id, awaiting join, awaiting sync, is new, assignment)).
    #[allow(clippy::type_complexity)]
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(group) = &self.manager.group else { return Ok(None) };
        let members = PyList::empty(py);
        for m in group.all_members() {
            let partitions = m.assignment_partitions.clone().map(|p| partitions_object(py, p)).transpose()?;
            members.append((
                &m.member_id,
                m.awaiting_join.is_some(),
                m.awaiting_sync.is_some(),
                m.is_new,
                PyBytes::new(py, &m.assignment),
                partitions,
            ))?;
        }
        Ok(Some(
            (
                group.state.name(),
                group.generation_id,
                group.protocol_type.clone(),
                group.protocol_name.clone(),
                group.leader_id.clone(),
                group.member_ids(),
                group.pending_join_members.clone(),
                group.pending_sync_members.clone(),
                group.num_members_awaiting_join,
                members,
            )
                .into_pyobject(py)?,
        ))
    }

    /// The member ids handed out so far (the MemberIds counter, which the reference shares with the consumer
    /// group manager: a shadow sets it before each operation).
    #[getter]
    fn get_ids_counter(&self) -> u64 {
        self.manager.ids.counter
    }

    #[setter]
    fn set_ids_counter(&mut self, counter: u64) {
        self.manager.ids.counter = counter;
    }
}
