//! `coordsim_native.consumer_group`'s heartbeat functions: consumer_group/heartbeat.rs given the reference's
//! HeartbeatRequest and HeartbeatContext (read by attribute) and a native ConsumerGroup (None: no group;
//! any other object: a group of another type), returning the handler's result as plain values:
//! (records, response, timers, metadata_refreshed, downgrade, resolve_regexes), in the layout
//! tests/native/consumer_group/test_heartbeat_parity.py gives the reference's.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::classic::{ClassicGroupManager, coordinator_config};
use super::consumer_group::{ConsumerGroup, ImageArg, Member, current, downgrade_of, member, topic, topics_image};
use super::regex::Resolved;
use super::result::attr;
use super::{bad_input, guarded};
use crate::config::CoordinatorConfig;
use crate::consumer_group::classic_members::{self, ClassicJoin, ClassicSync};
use crate::consumer_group::group::ConsumerGroup as ConsumerGroupCore;
use crate::consumer_group::heartbeat::{self as core, GroupResult, HeartbeatContext, Held, Response, TimerArgs};
use crate::consumer_group::messages::{HeartbeatRequest, TopicPartitions};
use crate::consumer_group::migration::{self, MigrationError};
use crate::consumer_group::offset_commit;
use crate::consumer_group::records::{ClassicProtocol, ConsumerGroupRecord, ResolvedRegularExpression};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::dict::Dict;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(heartbeat, m)?)?;
    m.add_function(wrap_pyfunction!(on_member_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(on_rebalance_timeout, m)?)?;
    m.add_function(wrap_pyfunction!(on_regular_expressions_resolved, m)?)?;
    m.add_function(wrap_pyfunction!(on_loaded, m)?)?;
    m.add_function(wrap_pyfunction!(classic_group_join, m)?)?;
    m.add_function(wrap_pyfunction!(classic_group_sync, m)?)?;
    m.add_function(wrap_pyfunction!(classic_group_heartbeat, m)?)?;
    m.add_function(wrap_pyfunction!(convert_to_classic_group, m)?)?;
    m.add_function(wrap_pyfunction!(upgrade, m)?)?;
    m.add_function(wrap_pyfunction!(validate_offset_commit, m)?)?;
    m.add_function(wrap_pyfunction!(validate_offset_fetch, m)?)
}

/// The reference's HeartbeatContext: its config and topics, owned, and the rest.
struct Context {
    config: CoordinatorConfig,
    topics: TopicsImage,
    assignors: Vec<String>,
    kafka_4_0: bool,
    metadata_version: i64,
    new_topics_version: i64,
}

impl Context {
    fn read(obj: &Bound<'_, PyAny>) -> PyResult<Context> {
        let topics: ImageArg = obj.getattr("topics")?.getattr("topics")?.extract()?;
        Ok(Context {
            config: coordinator_config(&obj.getattr("config")?)?,
            topics: topics_image(topics),
            assignors: obj.getattr("assignors")?.try_iter()?.map(|a| a?.extract()).collect::<PyResult<_>>()?,
            kafka_4_0: attr(obj, "kafka_4_0")?,
            metadata_version: attr(obj, "metadata_version")?,
            new_topics_version: attr(obj, "new_topics_version")?,
        })
    }

    fn heartbeat_context(&self) -> HeartbeatContext<'_> {
        HeartbeatContext {
            config: &self.config,
            topics: &self.topics,
            assignors: self.assignors.clone(),
            kafka_4_0: self.kafka_4_0,
            metadata_version: self.metadata_version,
            new_topics_version: self.new_topics_version,
        }
    }
}

fn read_context(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Context> {
    Context::read(obj).map_err(|e| bad_input(py, "context", e))
}

fn topic_partitions(obj: &Bound<'_, PyAny>) -> PyResult<Option<TopicPartitions>> {
    if obj.is_none() {
        return Ok(None);
    }
    let pairs: Vec<((i64, i64), Vec<i32>)> = obj.extract()?;
    Ok(Some(pairs.into_iter().map(|((msb, lsb), ps)| (TopicId { msb, lsb }, ps)).collect()))
}

fn request(obj: &Bound<'_, PyAny>) -> PyResult<HeartbeatRequest> {
    Ok(HeartbeatRequest {
        group_id: attr(obj, "group_id")?,
        member_id: attr(obj, "member_id")?,
        member_epoch: attr(obj, "member_epoch")?,
        instance_id: attr(obj, "instance_id")?,
        rack_id: attr(obj, "rack_id")?,
        rebalance_timeout_ms: attr(obj, "rebalance_timeout_ms")?,
        subscribed_topic_names: attr(obj, "subscribed_topic_names")?,
        subscribed_topic_regex: attr(obj, "subscribed_topic_regex")?,
        server_assignor: attr(obj, "server_assignor")?,
        topic_partitions: topic_partitions(&obj.getattr("topic_partitions")?)?,
        api_version: attr(obj, "api_version")?,
    })
}

/// Run `f` on what the coordinator holds: None, a native ConsumerGroup, or a group of another type.
fn with_held<T>(group: &Bound<'_, PyAny>, f: impl FnOnce(Held<'_>) -> T) -> T {
    if group.is_none() {
        return f(Held::Nothing);
    }
    match group.cast::<ConsumerGroup>() {
        Ok(native) => f(Held::Consumer(&native.borrow().group)),
        Err(_) => f(Held::Other),
    }
}

type Partitions = Vec<((i64, i64), Vec<i32>)>;

fn partitions(tp: &TopicPartitions) -> Partitions {
    tp.iter().map(|(t, ps)| (topic(t), ps.clone())).collect()
}

/// A record as (class name, key, value): the member id or regex its key holds (None for the group's), and
/// the value as plain values (None: a tombstone).
fn record<'py>(py: Python<'py>, r: &ConsumerGroupRecord) -> PyResult<Bound<'py, PyAny>> {
    let any = |v: Bound<'py, PyAny>| v;
    Ok(match r {
        ConsumerGroupRecord::Metadata(v) => {
            any(("ConsumerGroupMetadata", None::<String>, v.as_ref().map(|e| (e.epoch, e.metadata_hash)))
                .into_pyobject(py)?
                .into_any())
        }
        ConsumerGroupRecord::PartitionMetadata => {
            ("ConsumerGroupPartitionMetadata", None::<String>, None::<i32>).into_pyobject(py)?.into_any()
        }
        ConsumerGroupRecord::MemberMetadata { member_id, value } => {
            let value = value.as_ref().map(|s| {
                let classic = s.classic_member_metadata.as_ref().map(|c| {
                    (
                        c.session_timeout_ms,
                        c.supported_protocols.iter().map(|p| (p.name.clone(), p.metadata.clone())).collect::<Vec<_>>(),
                    )
                });
                (
                    (s.instance_id.clone(), s.rack_id.clone(), s.client_id.clone(), s.client_host.clone()),
                    s.subscribed_topic_names.clone(),
                    s.subscribed_topic_regex.clone(),
                    s.server_assignor.clone(),
                    s.rebalance_timeout_ms,
                    classic,
                )
            });
            ("ConsumerGroupMemberMetadata", Some(member_id.clone()), value).into_pyobject(py)?.into_any()
        }
        ConsumerGroupRecord::TargetAssignmentMetadata(v) => (
            "ConsumerGroupTargetAssignmentMetadata",
            None::<String>,
            v.as_ref().map(|m| (m.assignment_epoch, m.assignment_timestamp_ms)),
        )
            .into_pyobject(py)?
            .into_any(),
        ConsumerGroupRecord::TargetAssignmentMember { member_id, value } => {
            ("ConsumerGroupTargetAssignmentMember", Some(member_id.clone()), value.as_ref().map(partitions))
                .into_pyobject(py)?
                .into_any()
        }
        ConsumerGroupRecord::CurrentMemberAssignment { member_id, value } => {
            ("ConsumerGroupCurrentMemberAssignment", Some(member_id.clone()), value.as_ref().map(current))
                .into_pyobject(py)?
                .into_any()
        }
        ConsumerGroupRecord::RegularExpression { regex, value } => (
            "ConsumerGroupRegularExpression",
            Some(regex.clone()),
            value.as_ref().map(|r| (r.topics.clone(), r.version, r.timestamp)),
        )
            .into_pyobject(py)?
            .into_any(),
    })
}

type Timer = (&'static str, String, Option<i64>, &'static str, Vec<Py<PyAny>>, bool);

fn timer(py: Python<'_>, t: &core::TimerChange) -> PyResult<Timer> {
    let args = match &t.args {
        TimerArgs::None => Vec::new(),
        TimerArgs::Member(m) => vec![m.into_pyobject(py)?.into_any().unbind()],
        TimerArgs::MemberAtEpoch(m, e) => {
            vec![m.into_pyobject(py)?.into_any().unbind(), e.into_pyobject(py)?.into_any().unbind()]
        }
    };
    Ok((t.name, t.member_id.clone(), t.deadline, t.kind, args, t.if_absent))
}

type DowngradeOut = (Vec<String>, Option<Member>, bool);

fn result<'py>(py: Python<'py>, r: &GroupResult) -> PyResult<Bound<'py, PyTuple>> {
    let records = r.records.iter().map(|rec| record(py, rec)).collect::<PyResult<Vec<_>>>()?;
    let response = match &r.response {
        None => None,
        Some(Response::Heartbeat(h)) => Some(
            (
                "heartbeat",
                h.error.clone(),
                h.error_message.clone(),
                h.member_id.clone(),
                h.member_epoch,
                h.heartbeat_interval_ms,
                h.assignment.as_ref().map(partitions),
            )
                .into_pyobject(py)?
                .into_any(),
        ),
        Some(Response::Classic(c)) => Some(
            (
                "classic",
                c.error.clone(),
                c.member_id.clone(),
                c.generation_id,
                c.protocol_type.clone(),
                c.protocol_name.clone(),
                c.assignment.as_ref().map(partitions),
            )
                .into_pyobject(py)?
                .into_any(),
        ),
    };
    let timers = r.timers.iter().map(|t| timer(py, t)).collect::<PyResult<Vec<_>>>()?;
    let downgrade: Option<DowngradeOut> =
        r.downgrade.as_ref().map(|d| (d.leaving.clone(), d.joining.as_ref().map(member), d.rebalance));
    (records, response, timers, r.metadata_refreshed, downgrade, r.resolve_regexes.clone()).into_pyobject(py)
}

/// Run handler `f` on what the coordinator holds (`group`) with the reference's `context`, a panic named by
/// `what`; its result as plain values.
fn handle<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    context: &Bound<'py, PyAny>,
    what: impl FnOnce() -> String,
    f: impl FnOnce(Held<'_>, &HeartbeatContext<'_>) -> GroupResult,
) -> PyResult<Bound<'py, PyTuple>> {
    let context = read_context(py, context)?;
    let out = guarded(what, || Ok(with_held(group, |held| f(held, &context.heartbeat_context()))))?;
    result(py, &out)
}

/// The consumer group a classic request names (the manager sends them to a consumer group only).
fn consumer(held: Held<'_>) -> &ConsumerGroupCore {
    match held {
        Held::Consumer(group) => group,
        _ => panic!("a classic request to a consumer group needs a native ConsumerGroup"),
    }
}

/// As state.consumer_group.heartbeat.consumer_group_heartbeat.
#[pyfunction]
#[pyo3(signature = (group, request, now, context, client_id="", client_host="", generated_member_id=None))]
#[allow(clippy::too_many_arguments)]
fn heartbeat<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    request: &Bound<'py, PyAny>,
    now: i64,
    context: &Bound<'py, PyAny>,
    client_id: &str,
    client_host: &str,
    generated_member_id: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let req = self::request(request).map_err(|e| bad_input(py, "request", e))?;
    handle(
        py,
        group,
        context,
        || format!("heartbeat of member {:?} at epoch {} of group {:?}", req.member_id, req.member_epoch, req.group_id),
        |held, context| {
            core::consumer_group_heartbeat(held, &req, now, context, client_id, client_host, generated_member_id)
        },
    )
}

#[pyfunction]
fn on_member_timeout<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    member_id: &str,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    handle(
        py,
        group,
        context,
        || format!("on_member_timeout({member_id:?})"),
        |held, context| core::on_member_timeout(held, member_id, context),
    )
}

#[pyfunction]
fn on_rebalance_timeout<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    member_id: &str,
    member_epoch: i32,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    handle(
        py,
        group,
        context,
        || format!("on_rebalance_timeout({member_id:?}, {member_epoch})"),
        |held, context| core::on_rebalance_timeout(held, member_id, member_epoch, context),
    )
}

/// `resolved` as (regex, (topics, version, timestamp)) pairs in the reference's dict order.
#[pyfunction]
fn on_regular_expressions_resolved<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    resolved: Vec<Resolved>,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut regexes = Dict::default();
    for (regex, (topics, version, timestamp)) in resolved {
        regexes.insert(regex, ResolvedRegularExpression { topics, version, timestamp });
    }
    handle(
        py,
        group,
        context,
        || format!("on_regular_expressions_resolved of {} regexes", regexes.len()),
        |held, context| core::on_regular_expressions_resolved(held, &regexes, context),
    )
}

/// The timers, as the result's.
#[pyfunction]
fn on_loaded(
    py: Python<'_>,
    group: PyRef<'_, ConsumerGroup>,
    now: i64,
    context: &Bound<'_, PyAny>,
) -> PyResult<Vec<Timer>> {
    let context = read_context(py, context)?;
    let timers = guarded(
        || format!("on_loaded of group {:?}", group.group.group_id),
        || Ok(core::on_loaded(&group.group, now, &context.heartbeat_context())),
    )?;
    timers.iter().map(|t| timer(py, t)).collect()
}

/// As state.consumer_group.classic_members.classic_group_join, `protocols` the reference's ClassicProtocols.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn classic_group_join<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    member_id: &str,
    instance_id: Option<&str>,
    protocol_type: &str,
    protocols: Vec<Bound<'py, PyAny>>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    api_version: i16,
    now: i64,
    context: &Bound<'py, PyAny>,
    client_id: &str,
    client_host: &str,
    generated_member_id: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let protocols = protocols
        .iter()
        .map(|p| Ok(ClassicProtocol { name: attr(p, "name")?, metadata: attr(p, "metadata")? }))
        .collect::<PyResult<Vec<_>>>()
        .map_err(|e| bad_input(py, "protocols", e))?;
    let join = ClassicJoin {
        member_id,
        instance_id,
        protocol_type,
        protocols: &protocols,
        session_timeout_ms,
        rebalance_timeout_ms,
        api_version,
        client_id,
        client_host,
        generated_member_id,
    };
    handle(
        py,
        group,
        context,
        || format!("classic_group_join of member {member_id:?}"),
        |held, context| classic_members::classic_group_join(consumer(held), &join, now, context),
    )
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn classic_group_sync<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
    protocol_type: Option<&str>,
    protocol_name: Option<&str>,
    now: i64,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let sync = ClassicSync { member_id, instance_id, generation_id, protocol_type, protocol_name };
    handle(
        py,
        group,
        context,
        || format!("classic_group_sync of member {member_id:?}"),
        |held, context| classic_members::classic_group_sync(consumer(held), &sync, now, context),
    )
}

#[pyfunction]
fn classic_group_heartbeat<'py>(
    py: Python<'py>,
    group: &Bound<'py, PyAny>,
    member_id: &str,
    instance_id: Option<&str>,
    generation_id: i32,
    now: i64,
    context: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    handle(
        py,
        group,
        context,
        || format!("classic_group_heartbeat of member {member_id:?}"),
        |held, context| {
            classic_members::classic_group_heartbeat(
                consumer(held),
                member_id,
                instance_id,
                generation_id,
                now,
                context,
            )
        },
    )
}

type ClassicMember = (
    (String, Option<String>, String, String, i32, i32),
    Vec<(String, Vec<u8>)>,
    Vec<u8>,
    Option<Vec<(String, Vec<i32>)>>,
);
type ClassicDescription = (
    (&'static str, i32, Option<String>, Option<String>, Option<String>),
    Option<Vec<String>>,
    Vec<ClassicMember>,
    Vec<(String, String)>,
    Vec<(String, i64)>,
);

/// A classic group as the parity test compares it: (state, generation, protocol type and name, leader), its
/// subscribed topics, its members in iteration order (identity and timeouts, protocols, assignment bytes and
/// partitions), its static members and protocol counts sorted.
fn classic_description(g: &crate::classic::group::ClassicGroup) -> ClassicDescription {
    let members = g
        .all_members()
        .into_iter()
        .map(|m| {
            (
                (
                    m.member_id.clone(),
                    m.group_instance_id.clone(),
                    m.client_id.clone(),
                    m.client_host.clone(),
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                ),
                m.protocols.iter().map(|p| (p.name.clone(), p.metadata.clone())).collect(),
                m.assignment.clone(),
                m.assignment_partitions
                    .as_ref()
                    .map(|ps| ps.iter().map(|p| (p.topic.clone(), p.partitions.clone())).collect()),
            )
        })
        .collect();
    let mut statics: Vec<(String, String)> = g.static_members.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    statics.sort();
    let mut supported: Vec<(String, i64)> = g.supported_protocols.iter().map(|(k, v)| (k.clone(), *v)).collect();
    supported.sort();
    (
        (g.state.name(), g.generation_id, g.protocol_type.clone(), g.protocol_name.clone(), g.leader_id.clone()),
        g.subscribed_topics.as_ref().map(|t| t.iter().cloned().collect()),
        members,
        statics,
        supported,
    )
}

/// As state.consumer_group.downgrade.convert_to_classic_group, the Downgrade given as its fields (`joining` a
/// reference ConsumerGroupMember or None) and the topics as {name: ((msb, lsb), partition count)}: the
/// tombstones (as `heartbeat`'s records) and the classic group's description; ValueError where the
/// reference raises it.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn convert_to_classic_group<'py>(
    py: Python<'py>,
    group: PyRef<'py, ConsumerGroup>,
    leaving: Vec<String>,
    joining: Option<Bound<'py, PyAny>>,
    rebalance: bool,
    topics: ImageArg,
    now: i64,
) -> PyResult<(Vec<Bound<'py, PyAny>>, ClassicDescription)> {
    let downgrade = downgrade_of(py, leaving, joining, rebalance)?;
    let image = topics_image(topics);
    let (records, classic) = guarded(
        || format!("convert_to_classic_group of group {:?}", group.group.group_id),
        || {
            crate::consumer_group::downgrade::convert_to_classic_group(&group.group, &downgrade, &image, now)
                .map_err(PyValueError::new_err)
        },
    )?;
    let records = records.iter().map(|r| record(py, r)).collect::<PyResult<Vec<_>>>()?;
    Ok((records, classic_description(&classic)))
}

/// As state.consumer_group.migration's validate_online_upgrade then convert_to_consumer_group of the native
/// classic manager's group (`config` the reference's CoordinatorConfig, `topics` as
/// convert_to_classic_group's): ("refused", error, message), or ("converted", records, timers, the native
/// ConsumerGroup they replay to); ValueError where the replay refuses a record as invalid.
#[pyfunction]
fn upgrade<'py>(
    py: Python<'py>,
    classic: PyRef<'py, ClassicGroupManager>,
    topics: ImageArg,
    now: i64,
    config: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let config = coordinator_config(config).map_err(|e| bad_input(py, "config", e))?;
    let image = topics_image(topics);
    let Some(group) = &classic.manager.group else {
        return Err(PyValueError::new_err("the classic manager holds no group"));
    };
    let converted = guarded(
        || format!("upgrade of classic group {:?}", group.group_id),
        || {
            Ok(migration::validate_online_upgrade(group, &config)
                .map_err(MigrationError::Refused)
                .and_then(|()| migration::convert_to_consumer_group(group, &image, now, &config)))
        },
    )?;
    match converted {
        Ok((consumer_group, result)) => {
            let records = result.records.iter().map(|r| record(py, r)).collect::<PyResult<Vec<_>>>()?;
            let timers = result.timers.iter().map(|t| timer(py, t)).collect::<PyResult<Vec<_>>>()?;
            let group = Py::new(py, ConsumerGroup { group: consumer_group })?;
            ("converted", records, timers, group).into_pyobject(py)
        }
        Err(MigrationError::Refused(error)) => ("refused", error.error, error.message).into_pyobject(py),
        Err(MigrationError::Replay(error)) => Err(PyValueError::new_err(error.to_string())),
    }
}

/// As state.consumer_group.offset_commit.validate_offset_commit, `partitions` as ((msb, lsb), partition).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn validate_offset_commit(
    group: PyRef<'_, ConsumerGroup>,
    member_id: &str,
    instance_id: Option<&str>,
    member_epoch: i32,
    partitions: Vec<((i64, i64), i32)>,
    transactional: bool,
    api_version: i16,
    kafka_4_0: bool,
) -> &'static str {
    let partitions: Vec<(TopicId, i32)> =
        partitions.into_iter().map(|((msb, lsb), p)| (TopicId { msb, lsb }, p)).collect();
    offset_commit::validate_offset_commit(
        &group.group,
        member_id,
        instance_id,
        member_epoch,
        &partitions,
        transactional,
        api_version,
        kafka_4_0,
    )
}

/// As state.consumer_group.offset_commit.validate_offset_fetch.
#[pyfunction]
fn validate_offset_fetch(group: PyRef<'_, ConsumerGroup>, member_id: Option<&str>, member_epoch: i32) -> &'static str {
    offset_commit::validate_offset_fetch(&group.group, member_id, member_epoch)
}
