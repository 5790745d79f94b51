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
use rustc_hash::FxHashMap;

use super::record_bytes::{blob, group_metadata_value};
use super::{bad_input, guarded};
use crate::classic::manager::ClassicGroupManager as Manager;
use crate::config::CoordinatorConfig;
use crate::events::{
    CapturedAnswer, Event, Heartbeat, JoinGroup, LeaveGroup, LeaveIdentity, MemberAssignment, PartitionList, Protocol,
    Request, SyncGroup,
};
use crate::records::group_log::{GroupMetadataValue, Record};
use crate::runtime::member_ids::MemberIds;
use crate::runtime::result::{
    AssignmentRow, CoordinatorResult, Effect, GenerationRow, JoinMember, PartitionResult, Timer, TimerKey, Value,
};

// The reference's effect kinds (state/runtime/result.py).
const RESPOND: u8 = 0;
const APPEND: u8 = 1;
const SCHEDULE: u8 = 2;
const CANCEL: u8 = 3;
const CANCEL_ALL: u8 = 4;
const CREATE_SIMPLE_GROUP: u8 = 5;
const DELETE_GROUP: u8 = 6;
const DELETE_CONSUMER_GROUP: u8 = 7;
const DISCONNECT: u8 = 8;
const STATE: u8 = 9;
const MEMBER: u8 = 10;
const GENERATION: u8 = 11;
const ASSIGNMENT: u8 = 12;
const SCHEDULE_IF_ABSENT: u8 = 13;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ClassicGroupManager>()
}

/// The manager and the Python objects of the requests it still holds, by handle.
#[pyclass(module = "coordsim_native.classic")]
pub struct ClassicGroupManager {
    manager: Manager,
    requests: FxHashMap<u64, Py<PyAny>>,
    next_handle: u64,
}

fn attr<'py, T: FromPyObjectOwned<'py>>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<T> {
    obj.getattr(name)?.extract().map_err(Into::into)
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

fn partition_lists(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<PartitionList>>> {
    if obj.is_none() {
        return Ok(None);
    }
    let mut out = Vec::new();
    for p in obj.try_iter()? {
        let p = p?;
        out.push(PartitionList { topic: attr(&p, "topic")?, partitions: attr(&p, "partitions")? });
    }
    Ok(Some(out))
}

impl ClassicGroupManager {
    /// The common fields of a request, under a new handle that remembers its Python object.
    fn event(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<Event> {
        let captured = obj.getattr("captured")?;
        let captured = if captured.is_none() {
            None
        } else {
            Some(CapturedAnswer {
                connection: attr(&captured, "connection")?,
                error: attr(&captured, "error")?,
                member_id: attr(&captured, "member_id")?,
                generation_id: attr(&captured, "generation_id")?,
            })
        };
        let event = Event {
            handle: self.next_handle,
            ts: attr(obj, "ts")?,
            group_id: attr(obj, "group_id")?,
            seq: attr(obj, "seq")?,
            request_id: attr(obj, "request_id")?,
            client_id: attr(obj, "client_id")?,
            api_version: attr(obj, "api_version")?,
            captured,
        };
        self.requests.insert(self.next_handle, obj.clone().unbind());
        self.next_handle += 1;
        Ok(event)
    }

    fn join_group_of(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<JoinGroup> {
        Ok(JoinGroup {
            event: self.event(obj)?,
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
            event: self.event(obj)?,
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
            event: self.event(obj)?,
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
        Ok(LeaveGroup { event: self.event(obj)?, members })
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
        self.effects(py, result.effects)
    }

    fn request_object(&mut self, py: Python<'_>, request: &Request) -> Py<PyAny> {
        let handle = request.event().handle;
        self.requests.remove(&handle).unwrap_or_else(|| py.None())
    }

    fn effects<'py>(&mut self, py: Python<'py>, effects: Vec<Effect>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for effect in effects {
            let item: Bound<'py, PyTuple> = match effect {
                Effect::Respond { request, error, fields } => {
                    let dict = PyDict::new(py);
                    for (field, value) in fields {
                        dict.set_item(field.name(), value_object(py, value)?)?;
                    }
                    (RESPOND, self.request_object(py, &request), error, dict).into_pyobject(py)?
                }
                Effect::Append(records) => {
                    let values = PyList::empty(py);
                    for record in records {
                        match record {
                            Record::GroupMetadata(value) => {
                                values.append(value.map(|v| metadata_object(py, v)).transpose()?)?
                            }
                            Record::OffsetCommit(_) => unreachable!("the classic manager writes GroupMetadata only"),
                        }
                    }
                    (APPEND, values).into_pyobject(py)?
                }
                Effect::Schedule { key, deadline, timer } => {
                    let (kind, args) = timer_object(py, timer)?;
                    (SCHEDULE, key_object(py, key)?, deadline, kind, args).into_pyobject(py)?
                }
                Effect::ScheduleIfAbsent { key, deadline, timer } => {
                    let (kind, args) = timer_object(py, timer)?;
                    (SCHEDULE_IF_ABSENT, key_object(py, key)?, deadline, kind, args).into_pyobject(py)?
                }
                Effect::Cancel(key) => (CANCEL, key_object(py, key)?).into_pyobject(py)?,
                Effect::CancelAll => (CANCEL_ALL,).into_pyobject(py)?,
                Effect::CreateSimpleGroup => (CREATE_SIMPLE_GROUP,).into_pyobject(py)?,
                Effect::DeleteGroup(cause) => (DELETE_GROUP, cause).into_pyobject(py)?,
                Effect::DeleteConsumerGroup(cause) => (DELETE_CONSUMER_GROUP, cause).into_pyobject(py)?,
                Effect::Disconnect(request) => (DISCONNECT, self.request_object(py, &request)).into_pyobject(py)?,
                Effect::State { previous, target, cause, generation_id, leader_id, member_count } => {
                    (STATE, previous.map(|s| s.name()), target.name(), cause, generation_id, leader_id, member_count)
                        .into_pyobject(py)?
                }
                Effect::Member {
                    change,
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    cause,
                    generation_id,
                    member_count,
                } => (
                    MEMBER,
                    change,
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    cause,
                    generation_id,
                    member_count,
                )
                    .into_pyobject(py)?,
                Effect::Generation(row) => (GENERATION, generation_object(py, row)?).into_pyobject(py)?,
                Effect::Assignment(row) => (ASSIGNMENT, assignment_object(py, row)?).into_pyobject(py)?,
            };
            out.append(item)?;
        }
        Ok(out)
    }
}

fn key_object<'py>(py: Python<'py>, key: TimerKey) -> PyResult<Bound<'py, PyTuple>> {
    match key {
        TimerKey::Heartbeat(member_id) => ("heartbeat", member_id).into_pyobject(py),
        TimerKey::Join => ("join",).into_pyobject(py),
        TimerKey::Sync => ("sync",).into_pyobject(py),
    }
}

fn timer_object<'py>(py: Python<'py>, timer: Timer) -> PyResult<(&'static str, Bound<'py, PyTuple>)> {
    Ok(match timer {
        Timer::Heartbeat(member_id) => ("heartbeat", (member_id,).into_pyobject(py)?),
        Timer::InitialJoin(delay, remaining) => ("initial_join", (delay, remaining).into_pyobject(py)?),
        Timer::Join => ("join", PyTuple::empty(py)),
        Timer::Sync(generation_id) => ("sync", (generation_id,).into_pyobject(py)?),
    })
}

fn partitions_object<'py>(py: Python<'py>, partitions: Vec<PartitionList>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for p in partitions {
        let dict = PyDict::new(py);
        dict.set_item("topic", p.topic)?;
        dict.set_item("partitions", p.partitions)?;
        out.append(dict)?;
    }
    Ok(out)
}

fn result_object<'py>(py: Python<'py>, r: PartitionResult) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("member_id", r.member_id)?;
    dict.set_item("group_instance_id", r.group_instance_id)?;
    dict.set_item("topic", r.topic)?;
    dict.set_item("partition", r.partition)?;
    dict.set_item("error", r.error)?;
    dict.set_item("offset", r.offset)?;
    dict.set_item("leader_epoch", r.leader_epoch)?;
    dict.set_item("metadata", r.metadata)?;
    Ok(dict)
}

fn join_member_object<'py>(py: Python<'py>, m: JoinMember) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("member_id", m.member_id)?;
    dict.set_item("group_instance_id", m.group_instance_id)?;
    dict.set_item("metadata", PyBytes::new(py, &m.metadata))?;
    Ok(dict)
}

fn value_object(py: Python<'_>, value: Value) -> PyResult<Bound<'_, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Int(n) => n.into_pyobject(py)?.into_any(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::Members(members) => {
            let out = PyList::empty(py);
            for m in members {
                out.append(join_member_object(py, m)?)?;
            }
            out.into_any()
        }
        Value::Partitions(partitions) => partitions_object(py, partitions)?.into_any(),
        Value::Results(results) => {
            let out = PyList::empty(py);
            for r in results {
                out.append(result_object(py, r)?)?;
            }
            out.into_any()
        }
    })
}

/// A GroupMetadataValue as the reference's dict.
fn metadata_object(py: Python<'_>, v: GroupMetadataValue) -> PyResult<Bound<'_, PyDict>> {
    let members = PyList::empty(py);
    for m in v.members {
        let dict = PyDict::new(py);
        dict.set_item("member_id", m.member_id)?;
        dict.set_item("group_instance_id", m.group_instance_id)?;
        dict.set_item("client_id", m.client_id)?;
        dict.set_item("client_host", m.client_host)?;
        dict.set_item("rebalance_timeout_ms", m.rebalance_timeout_ms)?;
        dict.set_item("session_timeout_ms", m.session_timeout_ms)?;
        dict.set_item("subscription", PyBytes::new(py, &m.subscription))?;
        dict.set_item("assignment", PyBytes::new(py, &m.assignment))?;
        members.append(dict)?;
    }
    let dict = PyDict::new(py);
    dict.set_item("protocol_type", v.protocol_type)?;
    dict.set_item("generation_id", v.generation_id)?;
    dict.set_item("protocol_name", v.protocol_name)?;
    dict.set_item("leader_id", v.leader_id)?;
    dict.set_item("current_state_ts", v.current_state_ts)?;
    dict.set_item("members", members)?;
    Ok(dict)
}

fn generation_object(py: Python<'_>, row: GenerationRow) -> PyResult<Bound<'_, PyDict>> {
    let members = PyList::empty(py);
    for m in row.snapshot.members {
        let dict = PyDict::new(py);
        dict.set_item("member_id", m.member_id)?;
        dict.set_item("group_instance_id", m.group_instance_id)?;
        dict.set_item("client_id", m.client_id)?;
        dict.set_item("client_host", m.client_host)?;
        members.append(dict)?;
    }
    let dict = PyDict::new(py);
    dict.set_item("generation_id", row.snapshot.generation_id)?;
    dict.set_item("protocol_type", row.snapshot.protocol_type)?;
    dict.set_item("protocol_name", row.snapshot.protocol_name)?;
    dict.set_item("leader_id", row.snapshot.leader_id)?;
    dict.set_item("members", members)?;
    dict.set_item("member_count", row.member_count)?;
    dict.set_item("rebalance_start_ts", row.rebalance_start_ts)?;
    dict.set_item("join_complete_ts", row.join_complete_ts)?;
    dict.set_item("stable_ts", row.stable_ts)?;
    dict.set_item("cause", row.cause)?;
    Ok(dict)
}

fn assignment_object(py: Python<'_>, row: AssignmentRow) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("generation_id", row.generation_id)?;
    dict.set_item("member_id", row.member_id)?;
    dict.set_item("group_instance_id", row.group_instance_id)?;
    dict.set_item("client_id", row.client_id)?;
    dict.set_item("topic", row.topic)?;
    dict.set_item("partition", row.partition)?;
    dict.set_item("assign_ts", row.assign_ts)?;
    Ok(dict)
}

#[pymethods]
impl ClassicGroupManager {
    /// `config`: the reference's CoordinatorConfig (its group.* settings are read); `counter`: where the
    /// group's member ids start (the reference's MemberIds.counter).
    #[new]
    #[pyo3(signature = (group_id, config, counter=0))]
    fn new(py: Python<'_>, group_id: &str, config: &Bound<'_, PyAny>, counter: u64) -> PyResult<Self> {
        let read = || -> PyResult<CoordinatorConfig> {
            Ok(CoordinatorConfig {
                group_min_session_timeout_ms: attr(config, "group_min_session_timeout_ms")?,
                group_max_session_timeout_ms: attr(config, "group_max_session_timeout_ms")?,
                group_initial_rebalance_delay_ms: attr(config, "group_initial_rebalance_delay_ms")?,
                group_max_size: attr(config, "group_max_size")?,
            })
        };
        let config = read().map_err(|e| bad_input(py, "ClassicGroupManager: config", e))?;
        let ids = MemberIds { group_id: group_id.to_string(), counter };
        Ok(ClassicGroupManager {
            manager: Manager::new(group_id, config, ids),
            requests: FxHashMap::default(),
            next_handle: 0,
        })
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
