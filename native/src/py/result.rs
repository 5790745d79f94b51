//! The effects of an operation (runtime/result.rs) as the reference's effect tuples (state/runtime/result.py),
//! and the requests the managers' seams were given: each gets a handle, and an effect that answers it holds
//! that very Python object again. Shared by the managers' bindings.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rustc_hash::FxHashMap;

use crate::consumer_group::topic_id::TopicId;
use crate::events::{CapturedAnswer, Event, PartitionList, Request};
use crate::records::group_log::{CommitContext, GroupMetadataValue, OffsetCommitRecord, OffsetCommitValue, Record};
use crate::runtime::result::{
    AssignmentRow, Effect, GenerationRow, JoinMember, PartitionResult, Timer, TimerKey, Value,
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

pub(crate) fn attr<'py, T: FromPyObjectOwned<'py>>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<T> {
    obj.getattr(name)?.extract().map_err(Into::into)
}

pub(crate) fn partition_lists(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<PartitionList>>> {
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

/// A dict of the given items, in order (`?` on a failed conversion).
macro_rules! py_dict {
    ($py:expr, $($key:literal => $value:expr),* $(,)?) => {{
        let dict = PyDict::new($py);
        $(dict.set_item($key, $value)?;)*
        dict
    }};
}

/// The requests a manager was given and still holds, by handle.
#[derive(Default)]
pub struct Requests {
    objects: FxHashMap<u64, Py<PyAny>>,
    next_handle: u64,
}

impl Requests {
    /// The common fields of a request, under a new handle that remembers its Python object.
    pub fn event(&mut self, obj: &Bound<'_, PyAny>) -> PyResult<Event> {
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
        self.objects.insert(self.next_handle, obj.clone().unbind());
        self.next_handle += 1;
        Ok(event)
    }

    fn request_object(&mut self, py: Python<'_>, request: &Request) -> Py<PyAny> {
        let handle = request.event().handle;
        self.objects.remove(&handle).unwrap_or_else(|| py.None())
    }

    pub fn effects<'py>(&mut self, py: Python<'py>, effects: Vec<Effect>) -> PyResult<Bound<'py, PyList>> {
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
                            Record::OffsetCommit(record) => values.append(offset_record_object(py, record)?)?,
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
                    member_id: id,
                    group_instance_id: instance,
                    client_id: client,
                    client_host: host,
                    cause,
                    generation_id: generation,
                    member_count: count,
                } => (MEMBER, change, id, instance, client, host, cause, generation, count).into_pyobject(py)?,
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

pub(crate) fn partitions_object<'py>(py: Python<'py>, partitions: Vec<PartitionList>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for p in partitions {
        out.append(py_dict!(py, "topic" => p.topic, "partitions" => p.partitions))?;
    }
    Ok(out)
}

fn result_object<'py>(py: Python<'py>, r: PartitionResult) -> PyResult<Bound<'py, PyDict>> {
    Ok(py_dict!(
        py,
        "member_id" => r.member_id,
        "group_instance_id" => r.group_instance_id,
        "topic" => r.topic,
        "partition" => r.partition,
        "error" => r.error,
        "offset" => r.offset,
        "leader_epoch" => r.leader_epoch,
        "metadata" => r.metadata,
    ))
}

fn join_member_object<'py>(py: Python<'py>, m: JoinMember) -> PyResult<Bound<'py, PyDict>> {
    Ok(py_dict!(
        py,
        "member_id" => m.member_id,
        "group_instance_id" => m.group_instance_id,
        "metadata" => PyBytes::new(py, &m.metadata),
    ))
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
pub(crate) fn metadata_object(py: Python<'_>, v: GroupMetadataValue) -> PyResult<Bound<'_, PyDict>> {
    let members = PyList::empty(py);
    for m in v.members {
        members.append(py_dict!(
            py,
            "member_id" => m.member_id,
            "group_instance_id" => m.group_instance_id,
            "client_id" => m.client_id,
            "client_host" => m.client_host,
            "rebalance_timeout_ms" => m.rebalance_timeout_ms,
            "session_timeout_ms" => m.session_timeout_ms,
            "subscription" => PyBytes::new(py, &m.subscription),
            "assignment" => PyBytes::new(py, &m.assignment),
        ))?;
    }
    Ok(py_dict!(
        py,
        "protocol_type" => v.protocol_type,
        "generation_id" => v.generation_id,
        "protocol_name" => v.protocol_name,
        "leader_id" => v.leader_id,
        "current_state_ts" => v.current_state_ts,
        "members" => members,
    ))
}

pub(crate) fn generation_object(py: Python<'_>, row: GenerationRow) -> PyResult<Bound<'_, PyDict>> {
    let members = PyList::empty(py);
    for m in row.snapshot.members {
        members.append(py_dict!(
            py,
            "member_id" => m.member_id,
            "group_instance_id" => m.group_instance_id,
            "client_id" => m.client_id,
            "client_host" => m.client_host,
        ))?;
    }
    Ok(py_dict!(
        py,
        "generation_id" => row.snapshot.generation_id,
        "protocol_type" => row.snapshot.protocol_type,
        "protocol_name" => row.snapshot.protocol_name,
        "leader_id" => row.snapshot.leader_id,
        "members" => members,
        "member_count" => row.member_count,
        "rebalance_start_ts" => row.rebalance_start_ts,
        "join_complete_ts" => row.join_complete_ts,
        "stable_ts" => row.stable_ts,
        "cause" => row.cause,
    ))
}

fn assignment_object(py: Python<'_>, row: AssignmentRow) -> PyResult<Bound<'_, PyDict>> {
    Ok(py_dict!(
        py,
        "generation_id" => row.generation_id,
        "member_id" => row.member_id,
        "group_instance_id" => row.group_instance_id,
        "client_id" => row.client_id,
        "topic" => row.topic,
        "partition" => row.partition,
        "assign_ts" => row.assign_ts,
    ))
}

/// An OffsetCommitValue as the reference's dict (the topic id in its text form).
pub(crate) fn offset_value_object(py: Python<'_>, v: OffsetCommitValue) -> PyResult<Bound<'_, PyDict>> {
    Ok(py_dict!(
        py,
        "offset" => v.offset,
        "leader_epoch" => v.leader_epoch,
        "metadata" => v.metadata,
        "commit_ts" => v.commit_ts,
        "expire_ts" => v.expire_ts,
        "topic_id" => v.topic_id.map(|id: TopicId| id.to_string()),
    ))
}

/// An OffsetCommit record as (topic, partition, value, context), the value and context as the reference's
/// dicts (None for a tombstone, for a record without the `offsets` table's columns).
fn offset_record_object(py: Python<'_>, r: OffsetCommitRecord) -> PyResult<Bound<'_, PyTuple>> {
    let value = r.value.map(|v| offset_value_object(py, v)).transpose()?;
    let context = r
        .context
        .map(|c: CommitContext| -> PyResult<Bound<'_, PyDict>> {
            Ok(py_dict!(
                py,
                "generation_id" => c.generation_id,
                "member_id" => c.member_id,
                "log_end_offset" => c.log_end_offset,
            ))
        })
        .transpose()?;
    (r.topic, r.partition, value, context).into_pyobject(py)
}
