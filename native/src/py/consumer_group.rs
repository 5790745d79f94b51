//! `coordsim_native.consumer_group.ConsumerGroup`: consumer_group/group.rs's group, given the reference's
//! record objects to replay (state.consumer_group.records, read as py/record_bytes.rs reads them), and
//! `snapshot()`: every replayed field as plain values, in the layout tests/native/consumer_group's
//! `snapshot` gives the reference's group, maps in their order (the subscribed topic names sorted: the
//! reference counts them in a frozenset's order, which varies from process to process).

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;

use rustc_hash::FxHashMap;

use super::assignors::PartitionAssignorError;
use super::record_bytes::{consumer_group_record, current_assignment, member_subscription};
use super::{bad_input, guarded};
use crate::consumer_group::downgrade::Downgrade;
use crate::consumer_group::group::{ConsumerGroup as Group, ConsumerGroupMember, ReplayError};
use crate::consumer_group::group_spec::SubscriptionType;
use crate::consumer_group::reconciliation::{
    FencedMemberEpochError as FencedError, Reconciliation, reconcile as core_reconcile,
};
use crate::consumer_group::records::{
    ConsumerGroupRecord, CurrentAssignment, PartitionEpochs, ResolvedRegularExpression,
};
use crate::consumer_group::target_assignment::{TargetAssignmentBuilder, topic_partitions as sorted_topics};
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::consumer_group::{range as server_range, uniform};
use crate::dict::Counter;

create_exception!(
    coordsim_native.consumer_group,
    PartitionEpochConflict,
    PyException,
    "A partition claimed at an epoch not later than its holder's (state.consumer_group.reconciliation)."
);

create_exception!(
    coordsim_native.consumer_group,
    FencedMemberEpochError,
    PyException,
    "The member must drop all its partitions and rejoin (state.consumer_group.reconciliation)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PartitionEpochConflict", m.py().get_type::<PartitionEpochConflict>())?;
    m.add("FencedMemberEpochError", m.py().get_type::<FencedMemberEpochError>())?;
    m.add_function(wrap_pyfunction!(reconcile, m)?)?;
    m.add_function(wrap_pyfunction!(in_timeline_hash_map_order, m)?)?;
    m.add_function(wrap_pyfunction!(build_target_assignment, m)?)?;
    m.add_function(wrap_pyfunction!(record_value_json, m)?)?;
    super::regex::register(m)?;
    super::heartbeat::register(m)?;
    m.add_class::<ConsumerGroup>()
}

/// The topics image the seam is given as {name: ((msb, lsb), partition count)}.
pub(crate) type ImageArg = FxHashMap<String, ((i64, i64), i32)>;

pub(crate) fn topics_image(topics: ImageArg) -> TopicsImage {
    TopicsImage {
        topics: topics.into_iter().map(|(name, ((msb, lsb), count))| (name, (TopicId { msb, lsb }, count))).collect(),
    }
}

/// A Downgrade from its fields, `joining` a reference ConsumerGroupMember or None.
pub(crate) fn downgrade_of(
    py: Python<'_>,
    mut leaving: Vec<String>,
    joining: Option<Bound<'_, PyAny>>,
    rebalance: bool,
) -> PyResult<Downgrade> {
    let joining = joining.map(|j| group_member(&j)).transpose().map_err(|e| bad_input(py, "joining", e))?;
    leaving.sort();
    Ok(Downgrade { leaving, joining, rebalance })
}

/// A reference consumer group record's value as state/consumer_group/manager.py's `consumer_group_records`
/// row writes it (`json.dumps(_json_value(value), sort_keys=True)`), None for a tombstone.
#[pyfunction]
fn record_value_json(record: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let class: String = record.get_type().name()?.extract()?;
    let record = consumer_group_record(&class, record)?
        .ok_or_else(|| PyTypeError::new_err(format!("not a consumer group record: {class}")))?;
    Ok(crate::consumer_group::record_json::record_value_json(&record))
}

/// As state.consumer_group.downgrade.in_timeline_hash_map_order, over a list of names.
#[pyfunction]
fn in_timeline_hash_map_order(keys: Vec<String>) -> Vec<String> {
    crate::consumer_group::downgrade::in_timeline_hash_map_order(&keys)
}

/// (topic id, partitions) pairs from a mapping of the reference's TopicIds to collections of partitions.
fn topic_partitions(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(TopicId, Vec<i32>)>> {
    obj.call_method0("items")?
        .try_iter()?
        .map(|item| {
            let ((msb, lsb), partitions): ((i64, i64), Vec<i32>) = item?.extract()?;
            Ok((TopicId { msb, lsb }, partitions))
        })
        .collect()
}

/// As state.consumer_group.reconciliation.reconcile, `member` the reference's CurrentAssignment and
/// `current_partition_epochs` a dict {(topic id, partition): epoch} of the held partitions; None where the
/// reference returns the member itself, else the new CurrentAssignment as (state, member epoch, previous
/// epoch, assigned, pending), each PartitionEpochs as [((msb, lsb), [(partition, epoch)])].
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn reconcile(
    py: Python<'_>,
    member: &Bound<'_, PyAny>,
    target_epoch: i32,
    target: &Bound<'_, PyAny>,
    subscribed: Vec<(i64, i64)>,
    current_partition_epochs: FxHashMap<((i64, i64), i32), i32>,
    owned: Option<Bound<'_, PyAny>>,
    subscription_changed: bool,
    kafka_4_0: bool,
) -> PyResult<Option<Current>> {
    let member = current_assignment(member).map_err(|e| bad_input(py, "reconcile: member", e))?;
    let target = topic_partitions(target).map_err(|e| bad_input(py, "reconcile: target", e))?;
    let owned = owned.map(|o| topic_partitions(&o)).transpose().map_err(|e| bad_input(py, "reconcile: owned", e))?;
    let subscribed = subscribed.into_iter().map(|(msb, lsb)| TopicId { msb, lsb }).collect();
    let r = Reconciliation {
        target_epoch,
        target: &target,
        subscribed: &subscribed,
        current_partition_epoch: |t: &TopicId, p: i32| {
            current_partition_epochs.get(&((t.msb, t.lsb), p)).copied().unwrap_or(-1)
        },
        owned: owned.as_deref(),
        subscription_changed,
        kafka_4_0,
    };
    guarded(
        || format!("reconcile of a member at epoch {}", member.member_epoch),
        || match core_reconcile(&member, &r) {
            Ok(next) => Ok(next.as_ref().map(current)),
            Err(FencedError(message)) => Err(FencedMemberEpochError::new_err(message)),
        },
    )
}

pub(crate) type Topic = (i64, i64);

pub(crate) fn topic(t: &TopicId) -> Topic {
    (t.msb, t.lsb)
}

fn epochs(partitions: &PartitionEpochs) -> Vec<(Topic, Vec<(i32, i32)>)> {
    partitions.iter().map(|(t, ps)| (topic(t), ps.clone())).collect()
}

fn counts(counter: &Counter) -> Vec<(String, i64)> {
    counter.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

type Assignment = Vec<(Topic, Vec<i32>)>;
type Resolved = (Vec<String>, i64, i64);
pub(crate) type Classic = Option<(i32, Vec<(String, Vec<u8>)>)>;
pub(crate) type Current = (i8, i32, i32, Vec<(Topic, Vec<(i32, i32)>)>, Vec<(Topic, Vec<(i32, i32)>)>);
pub(crate) type Member = (
    String,
    Option<String>,
    Option<String>,
    i32,
    String,
    String,
    Vec<String>,
    String,
    Option<String>,
    Classic,
    Current,
);

pub(crate) fn member(m: &ConsumerGroupMember) -> Member {
    let classic = m.classic_member_metadata.as_ref().map(|c| {
        (c.session_timeout_ms, c.supported_protocols.iter().map(|p| (p.name.clone(), p.metadata.clone())).collect())
    });
    (
        m.member_id.clone(),
        m.instance_id.clone(),
        m.rack_id.clone(),
        m.rebalance_timeout_ms,
        m.client_id.clone(),
        m.client_host.clone(),
        m.subscribed_topic_names.clone(),
        m.subscribed_topic_regex.clone(),
        m.server_assignor_name.clone(),
        classic,
        current(&m.current),
    )
}

pub(crate) fn current(c: &CurrentAssignment) -> Current {
    (
        c.state,
        c.member_epoch,
        c.previous_member_epoch,
        epochs(&c.assigned_partitions),
        epochs(&c.partitions_pending_revocation),
    )
}

fn resolved(r: &ResolvedRegularExpression) -> Resolved {
    (r.topics.clone(), r.version, r.timestamp)
}

#[pyclass(module = "coordsim_native.consumer_group")]
pub struct ConsumerGroup {
    pub(crate) group: Group,
}

#[pymethods]
impl ConsumerGroup {
    #[new]
    #[pyo3(signature = (group_id, kafka_4_0=false))]
    fn new(group_id: &str, kafka_4_0: bool) -> Self {
        ConsumerGroup { group: Group::new(group_id, kafka_4_0) }
    }

    /// The reference's ValueError for a record sequence no coordinator writes, PartitionEpochConflict for
    /// a partition claimed too early, TypeError for what is not a consumer group record.
    fn replay(&mut self, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let class: String = record.get_type().name()?.extract()?;
        let record = consumer_group_record(&class, record)?
            .ok_or_else(|| PyTypeError::new_err(format!("not a consumer group record: {class}")))?;
        let group_id = self.group.group_id.clone();
        guarded(
            || format!("ConsumerGroup.replay({:?}) of group {group_id}", record.key()),
            || {
                self.group.replay(&record).map_err(|e| match e {
                    ReplayError::Invalid(message) => PyValueError::new_err(message),
                    ReplayError::Conflict(conflict) => PartitionEpochConflict::new_err(conflict.0),
                })
            },
        )
    }

    /// Not replayed: the runtime sets it (the reference's attribute).
    #[getter]
    fn metadata_expired(&self) -> bool {
        self.group.metadata_expired
    }

    #[setter]
    fn set_metadata_expired(&mut self, expired: bool) {
        self.group.metadata_expired = expired;
    }

    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let g = &self.group;
        let header =
            (g.group_id.clone(), g.group_epoch, g.metadata_hash, g.assignment_epoch, g.assignment_timestamp_ms);
        let members: Vec<Member> = g.members.values().map(member).collect();
        let target: Vec<(String, Assignment)> = g
            .target_assignment
            .iter()
            .map(|(id, a)| (id.clone(), a.iter().map(|(t, ps)| (topic(t), ps.clone())).collect()))
            .collect();
        let statics: Vec<(String, String)> = g.static_members.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut names = counts(&g.subscribed_topic_names);
        names.sort();
        let regexes: Vec<(String, Resolved)> =
            g.resolved_regexes.iter().map(|(k, v)| (k.clone(), resolved(v))).collect();
        let counters =
            (names, counts(&g.server_assignors), counts(&g.subscribed_regexes), regexes, counts(&g.regex_topic_names));
        let partition_epochs: Vec<(Topic, Vec<(i32, i32)>)> =
            g.partition_epochs.sorted().into_iter().map(|(t, ps)| (topic(&t), ps)).collect();
        let subscription_type = match g.subscription_type() {
            SubscriptionType::Homogeneous => "HOMOGENEOUS",
            SubscriptionType::Heterogeneous => "HETEROGENEOUS",
        };
        let derived = (g.state().name(), subscription_type, g.preferred_server_assignor());
        Ok((header, members, target, statics, counters, partition_epochs, derived).into_pyobject(py)?.into_any())
    }
}

/// A reference ConsumerGroupMember: its id, subscription and current assignment.
pub(crate) fn group_member(obj: &Bound<'_, PyAny>) -> PyResult<ConsumerGroupMember> {
    let member_id: String = obj.getattr("member_id")?.extract()?;
    let mut member = ConsumerGroupMember::new(&member_id)
        .with_subscription(&member_subscription(&obj.call_method0("subscription")?)?);
    member.current = current_assignment(&obj.getattr("current")?)?;
    Ok(member)
}

type MemberTarget = (String, Assignment);
type TargetRecord = (String, Option<String>, Vec<(Topic, Vec<i32>)>, i32, i64);

/// As a state.consumer_group.target_assignment.TargetAssignmentBuilder made from `group`'s members, static
/// members, target assignment and resolved regexes, given `ops` in order (("update", a reference
/// ConsumerGroupMember) or ("remove", member id)), then built with the server assignor `assignor`
/// ("uniform" or "range"; `kafka_4_0` picks Kafka 4.0's uniform) over `topics` ({name: (topic id, partition
/// count)}). Returns (records, target): each record ("member", member id, partitions, 0, 0) or ("metadata",
/// None, [], assignment epoch, timestamp), the target [(member id, [(topic id, partitions)])].
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn build_target_assignment(
    py: Python<'_>,
    group: PyRef<'_, ConsumerGroup>,
    ops: Vec<(String, Bound<'_, PyAny>)>,
    group_epoch: i32,
    assignor: &str,
    kafka_4_0: bool,
    homogeneous: bool,
    topics: ImageArg,
    now: i64,
) -> PyResult<(Vec<TargetRecord>, Vec<MemberTarget>)> {
    let g = &group.group;
    let mut builder =
        TargetAssignmentBuilder::new(&g.members, &g.static_members, &g.target_assignment, &g.resolved_regexes);
    for (i, (op, arg)) in ops.iter().enumerate() {
        match op.as_str() {
            "update" => {
                builder.add_or_update_member(group_member(arg).map_err(|e| bad_input(py, &format!("ops[{i}]"), e))?)
            }
            _ => builder.remove_member(&arg.extract::<String>()?),
        }
    }
    let topics = topics_image(topics);
    let subscription_type = if homogeneous { SubscriptionType::Homogeneous } else { SubscriptionType::Heterogeneous };
    let uniform_assign = |spec: &_, counts: &_| uniform::assign(spec, counts, kafka_4_0);
    let result = guarded(
        || format!("build_target_assignment({assignor:?}) of group {}", g.group_id),
        || {
            let assign: crate::consumer_group::target_assignment::Assignor<'_> =
                if assignor == "range" { &server_range::assign } else { &uniform_assign };
            builder
                .build(group_epoch, assign, subscription_type, &topics, now)
                .map_err(|e| PartitionAssignorError::new_err(e.0))
        },
    )?;
    let records = result
        .records
        .iter()
        .map(|r| match r {
            ConsumerGroupRecord::TargetAssignmentMember { member_id, value } => {
                let partitions = value.iter().flatten().map(|(t, ps)| (topic(t), ps.clone())).collect();
                ("member".to_string(), Some(member_id.clone()), partitions, 0, 0)
            }
            ConsumerGroupRecord::TargetAssignmentMetadata(Some(m)) => {
                ("metadata".to_string(), None, Vec::new(), m.assignment_epoch, m.assignment_timestamp_ms)
            }
            other => unreachable!("a target assignment writes no {:?}", other.key()),
        })
        .collect();
    let target = result
        .target_assignment
        .iter()
        .map(|(id, a)| (id.clone(), sorted_topics(a).into_iter().map(|(t, ps)| (topic(&t), ps)).collect()))
        .collect();
    Ok((records, target))
}
