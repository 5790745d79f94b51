//! `coordsim_native.assignors`: the classic assignors (`assign`, as state.assignors.assign, and the
//! registry's client side: `supported_protocols`, `client_user_data`, and `client_metadata`, the JoinGroup
//! metadata behind state.assignors.client_subscription) and the server-side ones (`assign_server`, as
//! state.consumer_group.uniform / range `assign`).
//!
//! Members are read by attribute from the reference's own MemberSubscription / GroupSpec objects (or
//! anything with the same attributes). Partitions come back as plain (topic, partition) tuples and topic ids
//! as (msb, lsb) tuples, which compare and hash equal to the reference's NamedTuples.

use rustc_hash::FxHashMap;
use std::hash::Hash;
use std::rc::Rc;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::consumer_protocol::{int, partition_list, text};
use super::{bad_input, guarded};
use crate::assignors::{
    self, RebalanceProtocol, model::AssignorError as CoreAssignorError, model::MemberSubscription, model::Topics,
};
use crate::classic::consumer_protocol::Int;
use crate::classic::consumer_protocol::TopicPartition;
use crate::consumer_group::group_spec::{
    GroupSpec, MemberSpec, PartitionAssignorError as CorePartitionError, SubscriptionType,
};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::{range as server_range, uniform};

create_exception!(
    coordsim_native.assignors,
    AssignorError,
    PyRuntimeError,
    "The leader's assignor fails where Kafka's client throws (state.assignors.AssignorError)."
);
create_exception!(
    coordsim_native.assignors,
    PartitionAssignorError,
    PyException,
    "Kafka's PartitionAssignorException (state.consumer_group.group_spec.PartitionAssignorError)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("AssignorError", py.get_type::<AssignorError>())?;
    m.add("PartitionAssignorError", py.get_type::<PartitionAssignorError>())?;
    m.add_function(wrap_pyfunction!(assign, m)?)?;
    m.add_function(wrap_pyfunction!(assign_server, m)?)?;
    m.add_function(wrap_pyfunction!(supported_protocols, m)?)?;
    m.add_function(wrap_pyfunction!(client_user_data, m)?)?;
    m.add_function(wrap_pyfunction!(client_metadata, m)?)?;
    Ok(())
}

/// Topic names shared between members: one `Rc<str>` per distinct name, and one shared list per distinct
/// subscription. Members' names are mostly the same Python objects (the reference caches decoded names), so
/// each is read once and then found by identity; the cache holds a reference to each object it has read, so
/// no address is reused by another object during the call. Topic tuples are looked up in a dict (hashing
/// and comparing them at C speed) before their names are read.
struct TopicReader<'py> {
    by_name: FxHashMap<String, Rc<str>>,
    by_object: FxHashMap<usize, (Bound<'py, PyAny>, Rc<str>)>,
    list_index: Bound<'py, PyDict>,
    lists: Vec<Topics>,
}

impl<'py> TopicReader<'py> {
    fn new(py: Python<'py>) -> Self {
        TopicReader {
            by_name: FxHashMap::default(),
            by_object: FxHashMap::default(),
            list_index: PyDict::new(py),
            lists: Vec::new(),
        }
    }

    fn get(&mut self, name: String) -> Rc<str> {
        Rc::clone(self.by_name.entry(name).or_insert_with_key(|k| Rc::from(k.as_str())))
    }

    fn read(&mut self, obj: &Bound<'py, PyAny>) -> PyResult<Rc<str>> {
        let id = obj.as_ptr() as usize;
        if let Some((_, topic)) = self.by_object.get(&id) {
            return Ok(Rc::clone(topic));
        }
        let topic = self.get(obj.extract()?);
        self.by_object.insert(id, (obj.clone(), Rc::clone(&topic)));
        Ok(topic)
    }

    fn read_list(&mut self, obj: &Bound<'py, PyAny>) -> PyResult<Topics> {
        if obj.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err("topics must be a sequence of names, not a string"));
        }
        let Ok(tuple) = obj.cast::<PyTuple>() else {
            return obj.try_iter()?.map(|t| self.read(&t?)).collect();
        };
        if let Some(i) = self.list_index.get_item(tuple)? {
            return Ok(Rc::clone(&self.lists[i.extract::<usize>()?]));
        }
        let topics: Topics = tuple.iter().map(|t| self.read(&t)).collect::<PyResult<_>>()?;
        self.list_index.set_item(tuple, self.lists.len())?;
        self.lists.push(Rc::clone(&topics));
        Ok(topics)
    }
}

/// `obj.items()` of a Mapping, as (key, value) pairs in its iteration order.
fn items<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    obj.call_method0("items")?.try_iter()?.map(|item| item?.extract()).collect()
}

/// A Mapping of topic -> partition count, its keys read by `key`.
fn read_counts<'py, K: Eq + Hash>(
    obj: &Bound<'py, PyAny>,
    mut key: impl FnMut(&Bound<'py, PyAny>) -> PyResult<K>,
) -> PyResult<FxHashMap<K, i32>> {
    items(obj)?.into_iter().map(|(topic, count)| Ok((key(&topic)?, count.extract()?))).collect()
}

fn member_subscription<'py>(obj: &Bound<'py, PyAny>, topics: &mut TopicReader<'py>) -> PyResult<MemberSubscription> {
    let mut owned_partitions = Vec::new();
    for tp in obj.getattr("owned_partitions")?.try_iter()? {
        let (topic, partition): (Bound<'py, PyAny>, i32) = tp?.extract()?;
        owned_partitions.push(TopicPartition { topic: topics.read(&topic)?, partition });
    }
    let user_data: Option<Bound<'_, PyBytes>> = obj.getattr("user_data")?.extract()?;
    Ok(MemberSubscription {
        member_id: obj.getattr("member_id")?.extract()?,
        topics: topics.read_list(&obj.getattr("topics")?)?,
        group_instance_id: obj.getattr("group_instance_id")?.extract()?,
        owned_partitions,
        generation_id: obj.getattr("generation_id")?.extract()?,
        rack: obj.getattr("rack")?.extract()?,
        user_data: user_data.map(|b| b.as_bytes().to_vec()),
    })
}

/// assign(protocol_name, members, partitions_per_topic) -> {member_id: [(topic, partition), ...]}, as
/// state.assignors.assign: one entry per member, in `members` order.
#[pyfunction]
fn assign<'py>(
    py: Python<'py>,
    protocol_name: &str,
    members: &Bound<'py, PyAny>,
    partitions_per_topic: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut topics = TopicReader::new(py);
    let mut subscriptions = Vec::new();
    for (i, member) in members.try_iter()?.enumerate() {
        let read = member.and_then(|m| member_subscription(&m, &mut topics));
        subscriptions.push(read.map_err(|e| bad_input(py, &format!("assign: members[{i}]"), e))?);
    }
    let counts = read_counts(partitions_per_topic, |t| topics.read(t))
        .map_err(|e| bad_input(py, "assign: partitions_per_topic", e))?;
    let what = || format!("assign({protocol_name:?}) of {} members", subscriptions.len());
    let result = guarded(what, || assignors::assign(protocol_name, &subscriptions, &counts).map_err(assignor_error))?;
    // One Python str per topic, shared by all its partitions.
    let mut names: FxHashMap<Rc<str>, Bound<'py, PyAny>> = FxHashMap::default();
    let out = PyDict::new(py);
    for (member_id, partitions) in result {
        let list = PyList::empty(py);
        for tp in partitions {
            let name = match names.get(&tp.topic) {
                Some(name) => name.clone(),
                None => {
                    let name = PyString::new(py, &tp.topic).into_any();
                    names.insert(Rc::clone(&tp.topic), name.clone());
                    name
                }
            };
            list.append(PyTuple::new(py, [name, tp.partition.into_pyobject(py)?.into_any()])?)?;
        }
        out.set_item(member_id, list)?;
    }
    Ok(out)
}

fn topic_id(obj: &Bound<'_, PyAny>) -> PyResult<TopicId> {
    let (msb, lsb): (i64, i64) = obj.extract()?;
    Ok(TopicId { msb, lsb })
}

fn member_spec(obj: &Bound<'_, PyAny>) -> PyResult<MemberSpec> {
    let subscribed_topic_ids =
        obj.getattr("subscribed_topic_ids")?.try_iter()?.map(|t| topic_id(&t?)).collect::<PyResult<_>>()?;
    let mut assignment = Vec::new();
    for (topic, partitions) in items(&obj.getattr("assignment")?)? {
        let partitions = partitions.try_iter()?.map(|p| p?.extract()).collect::<PyResult<Vec<i32>>>()?;
        assignment.push((topic_id(&topic)?, partitions));
    }
    Ok(MemberSpec { subscribed_topic_ids, assignment, instance_id: obj.getattr("instance_id")?.extract()? })
}

fn group_spec(obj: &Bound<'_, PyAny>) -> PyResult<GroupSpec> {
    let mut members = Vec::new();
    for (member_id, spec) in items(&obj.getattr("members")?)? {
        let member_id: String = member_id.extract()?;
        let spec = member_spec(&spec).map_err(|e| bad_input(obj.py(), &format!("member {member_id:?}"), e))?;
        members.push((member_id, spec));
    }
    let subscription_type = match obj.getattr("subscription_type")?.getattr("name")?.extract::<String>()?.as_str() {
        "HOMOGENEOUS" => SubscriptionType::Homogeneous,
        "HETEROGENEOUS" => SubscriptionType::Heterogeneous,
        other => return Err(PyValueError::new_err(format!("unknown subscription type {other:?}"))),
    };
    Ok(GroupSpec::new(members, subscription_type))
}

/// assign_server(assignor_name, group, partition_counts, kafka_4_0=False) -> {member_id: {(msb, lsb): (partition,
/// ...)}}, as state.consumer_group.uniform.assign / range.assign ("uniform" / "range"); `kafka_4_0`: Kafka
/// 4.0.0's uniform assignor (state.consumer_group.SERVER_ASSIGNORS_4_0).
#[pyfunction]
#[pyo3(signature = (assignor_name, group, partition_counts, kafka_4_0 = false))]
fn assign_server<'py>(
    py: Python<'py>,
    assignor_name: &str,
    group: &Bound<'py, PyAny>,
    partition_counts: &Bound<'py, PyAny>,
    kafka_4_0: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let assign: fn(&GroupSpec, &FxHashMap<TopicId, i32>, bool) -> Result<_, _> = match assignor_name {
        uniform::NAME => uniform::assign,
        server_range::NAME => |group, counts, _| server_range::assign(group, counts),
        other => return Err(PyValueError::new_err(format!("assign_server: no server-side assignor {other:?}"))),
    };
    let spec = group_spec(group).map_err(|e| bad_input(py, "assign_server: group", e))?;
    let counts =
        read_counts(partition_counts, topic_id).map_err(|e| bad_input(py, "assign_server: partition_counts", e))?;
    let what = || format!("assign_server({assignor_name:?}) of {} members", spec.members.len());
    let result = guarded(what, || {
        assign(&spec, &counts, kafka_4_0).map_err(|CorePartitionError(m)| PartitionAssignorError::new_err(m))
    })?;
    let out = PyDict::new(py);
    for (member_id, topics) in result {
        let member = PyDict::new(py);
        for (topic, partitions) in topics {
            member.set_item((topic.msb, topic.lsb), PyTuple::new(py, partitions)?)?;
        }
        out.set_item(member_id, member)?;
    }
    Ok(out)
}

fn assignor_error(e: CoreAssignorError) -> PyErr {
    match e {
        CoreAssignorError::Assignor(m) => AssignorError::new_err(m),
        CoreAssignorError::Value(m) => PyValueError::new_err(m),
    }
}

fn client_error(e: assignors::ClientError) -> PyErr {
    match e {
        assignors::ClientError::Assignor(e) => assignor_error(e),
        assignors::ClientError::Protocol(e) => super::consumer_protocol::error(e),
    }
}

/// supported_protocols(protocol_name) -> (RebalanceProtocol value, ...), most preferred first
#[pyfunction]
fn supported_protocols(protocol_name: &str) -> PyResult<Vec<u8>> {
    let protocols = assignors::supported_protocols(protocol_name).map_err(assignor_error)?;
    Ok(protocols.iter().map(|&p| p as u8).collect())
}

fn previous(obj: Option<Bound<'_, PyAny>>) -> PyResult<Option<Vec<(String, Int)>>> {
    obj.map(|p| partition_list(&p, "previous_assignment")).transpose()
}

/// client_user_data(protocol_name, previous_assignment, generation) -> bytes or None
#[pyfunction]
fn client_user_data<'py>(
    py: Python<'py>,
    protocol_name: &str,
    previous_assignment: Option<Bound<'py, PyAny>>,
    generation: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let previous = previous(previous_assignment)?;
    let generation = int(generation, "generation")?;
    let out = guarded(
        || format!("client_user_data({protocol_name:?})"),
        || assignors::client_user_data(protocol_name, previous.as_deref(), generation).map_err(client_error),
    )?;
    Ok(out.map(|b| PyBytes::new(py, &b)))
}

/// client_metadata(protocol_name, topics, previous_assignment=None, generation=-1, rack=None,
/// rebalance_protocol=None) -> the JoinGroup metadata (a v3 Subscription) a Java client sends
#[pyfunction]
#[pyo3(signature = (protocol_name, topics, previous_assignment = None, generation = None, rack = None, rebalance_protocol = None))]
fn client_metadata<'py>(
    py: Python<'py>,
    protocol_name: &str,
    topics: &Bound<'py, PyAny>,
    previous_assignment: Option<Bound<'py, PyAny>>,
    generation: Option<Bound<'py, PyAny>>,
    rack: Option<Bound<'py, PyAny>>,
    rebalance_protocol: Option<u8>,
) -> PyResult<Bound<'py, PyBytes>> {
    let topics = topics.try_iter()?.map(|t| text(&t?, "topics")).collect::<PyResult<Vec<_>>>()?;
    let previous = previous(previous_assignment)?;
    let generation = generation.map(|g| int(&g, "generation_id")).transpose()?.unwrap_or(-1);
    let rack = rack.map(|r| text(&r, "rack_id")).transpose()?;
    let protocol = match rebalance_protocol {
        None => None,
        Some(0) => Some(RebalanceProtocol::Eager),
        Some(1) => Some(RebalanceProtocol::Cooperative),
        Some(other) => return Err(PyValueError::new_err(format!("client_metadata: no rebalance protocol {other}"))),
    };
    let out = guarded(
        || format!("client_metadata({protocol_name:?})"),
        || {
            assignors::client_metadata(
                protocol_name,
                &topics,
                previous.as_deref(),
                generation,
                rack.as_deref(),
                protocol,
            )
            .map_err(client_error)
        },
    )?;
    Ok(PyBytes::new(py, &out))
}
