//! `coordsim_native.record_bytes`: `key_bytes`, `value_bytes`, `record_bytes`, `record_size`, `batch_size`,
//! `varint` and `varlong`, as state.records.record_bytes's.
//!
//! Records are read from the reference's own record objects, told apart by their class name
//! (state.records.group_log's OffsetCommitRecord and GroupMetadataRecord, state.consumer_group.records' seven), their
//! values by attribute, or by key for the classic records' dict values.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{bad_input, guarded};
use crate::consumer_group::records::{
    AssignmentMetadata, ClassicMemberMetadata, ClassicProtocol, ConsumerGroupRecord, CurrentAssignment, GroupEpoch,
    MemberSubscription, PartitionEpochs, ResolvedRegularExpression,
};
use crate::consumer_group::topic_id::TopicId;
use crate::records::group_log::{
    GroupMetadataMember, GroupMetadataValue, OffsetCommitRecord, OffsetCommitValue, Record,
};
use crate::records::record_bytes::{self, AnyRecord};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("RECORD_BATCH_OVERHEAD", record_bytes::RECORD_BATCH_OVERHEAD)?;
    m.add_function(wrap_pyfunction!(key_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(value_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(varint, m)?)?;
    m.add_function(wrap_pyfunction!(varlong, m)?)?;
    m.add_function(wrap_pyfunction!(py_record_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(record_size, m)?)?;
    m.add_function(wrap_pyfunction!(batch_size, m)?)?;
    Ok(())
}

fn topic_id(obj: &Bound<'_, PyAny>) -> PyResult<TopicId> {
    let (msb, lsb): (i64, i64) = obj.extract()?;
    Ok(TopicId { msb, lsb })
}

pub(crate) fn blob(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    Ok(obj.cast::<PyBytes>()?.as_bytes().to_vec())
}

/// `obj.value`, or None for a tombstone, read by `read`.
fn value<T>(obj: &Bound<'_, PyAny>, read: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<Option<T>> {
    let v = obj.getattr("value")?;
    if v.is_none() { Ok(None) } else { read(&v).map(Some) }
}

pub(crate) fn offset_commit_value(v: &Bound<'_, PyAny>) -> PyResult<OffsetCommitValue> {
    let topic_id: Option<String> = v.get_item("topic_id")?.extract()?;
    Ok(OffsetCommitValue {
        offset: v.get_item("offset")?.extract()?,
        leader_epoch: v.get_item("leader_epoch")?.extract()?,
        metadata: v.get_item("metadata")?.extract()?,
        commit_ts: v.get_item("commit_ts")?.extract()?,
        expire_ts: v.get_item("expire_ts")?.extract()?,
        topic_id: topic_id.map(|t| TopicId::from_string(&t)).transpose().map_err(PyTypeError::new_err)?,
    })
}

pub(crate) fn group_metadata_value(v: &Bound<'_, PyAny>) -> PyResult<GroupMetadataValue> {
    let mut members = Vec::new();
    for m in v.get_item("members")?.try_iter()? {
        let m = m?;
        members.push(GroupMetadataMember {
            member_id: m.get_item("member_id")?.extract()?,
            group_instance_id: m.get_item("group_instance_id")?.extract()?,
            client_id: m.get_item("client_id")?.extract()?,
            client_host: m.get_item("client_host")?.extract()?,
            rebalance_timeout_ms: m.get_item("rebalance_timeout_ms")?.extract()?,
            session_timeout_ms: m.get_item("session_timeout_ms")?.extract()?,
            subscription: blob(&m.get_item("subscription")?)?,
            assignment: blob(&m.get_item("assignment")?)?,
        });
    }
    Ok(GroupMetadataValue {
        protocol_type: v.get_item("protocol_type")?.extract()?,
        generation_id: v.get_item("generation_id")?.extract()?,
        protocol_name: v.get_item("protocol_name")?.extract()?,
        leader_id: v.get_item("leader_id")?.extract()?,
        current_state_ts: v.get_item("current_state_ts")?.extract()?,
        members,
    })
}

pub(crate) fn member_subscription(v: &Bound<'_, PyAny>) -> PyResult<MemberSubscription> {
    let classic = v.getattr("classic_member_metadata")?;
    let classic_member_metadata = if classic.is_none() {
        None
    } else {
        let mut supported_protocols = Vec::new();
        for p in classic.getattr("supported_protocols")?.try_iter()? {
            let p = p?;
            supported_protocols.push(ClassicProtocol {
                name: p.getattr("name")?.extract()?,
                metadata: blob(&p.getattr("metadata")?)?,
            });
        }
        Some(ClassicMemberMetadata {
            session_timeout_ms: classic.getattr("session_timeout_ms")?.extract()?,
            supported_protocols,
        })
    };
    Ok(MemberSubscription {
        instance_id: v.getattr("instance_id")?.extract()?,
        rack_id: v.getattr("rack_id")?.extract()?,
        client_id: v.getattr("client_id")?.extract()?,
        client_host: v.getattr("client_host")?.extract()?,
        subscribed_topic_names: v.getattr("subscribed_topic_names")?.extract()?,
        subscribed_topic_regex: v.getattr("subscribed_topic_regex")?.extract()?,
        server_assignor: v.getattr("server_assignor")?.extract()?,
        rebalance_timeout_ms: v.getattr("rebalance_timeout_ms")?.extract()?,
        classic_member_metadata,
    })
}

/// A PartitionEpochs dict, topic id -> {partition: epoch}, in its order.
fn partition_epochs(obj: &Bound<'_, PyAny>) -> PyResult<PartitionEpochs> {
    let mut out = Vec::new();
    for item in obj.call_method0("items")?.try_iter()? {
        let (topic, epochs): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let epochs = epochs.call_method0("items")?.try_iter()?.map(|e| e?.extract()).collect::<PyResult<_>>()?;
        out.push((topic_id(&topic)?, epochs));
    }
    Ok(out)
}

/// A reconciliation.CurrentAssignment.
pub(crate) fn current_assignment(v: &Bound<'_, PyAny>) -> PyResult<CurrentAssignment> {
    Ok(CurrentAssignment {
        state: v.getattr("state")?.extract()?,
        member_epoch: v.getattr("member_epoch")?.extract()?,
        previous_member_epoch: v.getattr("previous_member_epoch")?.extract()?,
        assigned_partitions: partition_epochs(&v.getattr("assigned_partitions")?)?,
        partitions_pending_revocation: partition_epochs(&v.getattr("partitions_pending_revocation")?)?,
    })
}

pub(crate) fn consumer_group_record(class: &str, r: &Bound<'_, PyAny>) -> PyResult<Option<ConsumerGroupRecord>> {
    let member_id = || r.getattr("member_id")?.extract::<String>();
    Ok(Some(match class {
        "ConsumerGroupMetadata" => ConsumerGroupRecord::Metadata(value(r, |v| {
            Ok(GroupEpoch {
                epoch: v.getattr("epoch")?.extract()?,
                metadata_hash: v.getattr("metadata_hash")?.extract()?,
            })
        })?),
        "ConsumerGroupPartitionMetadata" => ConsumerGroupRecord::PartitionMetadata,
        "ConsumerGroupMemberMetadata" => {
            ConsumerGroupRecord::MemberMetadata { member_id: member_id()?, value: value(r, member_subscription)? }
        }
        "ConsumerGroupTargetAssignmentMetadata" => ConsumerGroupRecord::TargetAssignmentMetadata(value(r, |v| {
            Ok(AssignmentMetadata {
                assignment_epoch: v.getattr("assignment_epoch")?.extract()?,
                assignment_timestamp_ms: v.getattr("assignment_timestamp_ms")?.extract()?,
            })
        })?),
        "ConsumerGroupTargetAssignmentMember" => ConsumerGroupRecord::TargetAssignmentMember {
            member_id: member_id()?,
            value: value(r, |v| {
                v.try_iter()?
                    .map(|item| {
                        let (topic, partitions): (Bound<'_, PyAny>, Vec<i32>) = item?.extract()?;
                        Ok((topic_id(&topic)?, partitions))
                    })
                    .collect()
            })?,
        },
        "ConsumerGroupCurrentMemberAssignment" => ConsumerGroupRecord::CurrentMemberAssignment {
            member_id: member_id()?,
            value: value(r, current_assignment)?,
        },
        "ConsumerGroupRegularExpression" => ConsumerGroupRecord::RegularExpression {
            regex: r.getattr("regex")?.extract()?,
            value: value(r, |v| {
                Ok(ResolvedRegularExpression {
                    topics: v.getattr("topics")?.extract()?,
                    version: v.getattr("version")?.extract()?,
                    timestamp: v.getattr("timestamp")?.extract()?,
                })
            })?,
        },
        _ => return Ok(None),
    }))
}

pub(crate) fn any_record(r: &Bound<'_, PyAny>) -> PyResult<AnyRecord> {
    let class: String = r.get_type().name()?.extract()?;
    match class.as_str() {
        "OffsetCommitRecord" => Ok(AnyRecord::Classic(Record::OffsetCommit(OffsetCommitRecord {
            topic: r.getattr("topic")?.extract()?,
            partition: r.getattr("partition")?.extract()?,
            value: value(r, offset_commit_value)?,
            context: None, // the `offsets` table's columns: no part of the record's bytes
        }))),
        "GroupMetadataRecord" => Ok(AnyRecord::Classic(Record::GroupMetadata(value(r, group_metadata_value)?))),
        other => consumer_group_record(other, r)?
            .map(AnyRecord::ConsumerGroup)
            .ok_or_else(|| PyTypeError::new_err(format!("not a group coordinator record: {other}"))),
    }
}

/// key_bytes(record, group_id) -> bytes
#[pyfunction]
fn key_bytes<'py>(py: Python<'py>, record: &Bound<'py, PyAny>, group_id: &str) -> PyResult<Bound<'py, PyBytes>> {
    let r = any_record(record).map_err(|e| bad_input(py, "key_bytes: record", e))?;
    let out = guarded(
        || format!("key_bytes of a record of group {group_id:?}"),
        || Ok(record_bytes::key_bytes(&r, group_id)),
    )?;
    Ok(PyBytes::new(py, &out))
}

/// value_bytes(record, kafka_4_0=False) -> bytes, or None for a tombstone
#[pyfunction]
#[pyo3(signature = (record, kafka_4_0 = false))]
fn value_bytes<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyAny>,
    kafka_4_0: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let r = any_record(record).map_err(|e| bad_input(py, "value_bytes: record", e))?;
    let out = guarded(|| "value_bytes of a record".into(), || Ok(record_bytes::value_bytes(&r, kafka_4_0)))?;
    Ok(out.map(|v| PyBytes::new(py, &v)))
}

/// varint(n) -> bytes (ByteUtils.writeVarint)
#[pyfunction]
fn varint(py: Python<'_>, n: i32) -> Bound<'_, PyBytes> {
    let mut out = Vec::new();
    record_bytes::varint(&mut out, n);
    PyBytes::new(py, &out)
}

/// varlong(n) -> bytes (ByteUtils.writeVarlong)
#[pyfunction]
fn varlong(py: Python<'_>, n: i64) -> Bound<'_, PyBytes> {
    let mut out = Vec::new();
    record_bytes::varlong(&mut out, n);
    PyBytes::new(py, &out)
}

/// record_bytes(record, group_id, offset_delta=0, timestamp_delta=0, kafka_4_0=False) -> bytes
#[pyfunction]
#[pyo3(name = "record_bytes", signature = (record, group_id, offset_delta = 0, timestamp_delta = 0, kafka_4_0 = false))]
fn py_record_bytes<'py>(
    py: Python<'py>,
    record: &Bound<'py, PyAny>,
    group_id: &str,
    offset_delta: i32,
    timestamp_delta: i64,
    kafka_4_0: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let r = any_record(record).map_err(|e| bad_input(py, "record_bytes: record", e))?;
    let out = guarded(
        || format!("record_bytes of a record of group {group_id:?}"),
        || Ok(record_bytes::record_bytes(&r, group_id, offset_delta, timestamp_delta, kafka_4_0)),
    )?;
    Ok(PyBytes::new(py, &out))
}

/// record_size(record, group_id, offset_delta=0, timestamp_delta=0, kafka_4_0=False) -> int
#[pyfunction]
#[pyo3(signature = (record, group_id, offset_delta = 0, timestamp_delta = 0, kafka_4_0 = false))]
fn record_size(
    py: Python<'_>,
    record: &Bound<'_, PyAny>,
    group_id: &str,
    offset_delta: i32,
    timestamp_delta: i64,
    kafka_4_0: bool,
) -> PyResult<usize> {
    let r = any_record(record).map_err(|e| bad_input(py, "record_size: record", e))?;
    guarded(
        || format!("record_size of a record of group {group_id:?}"),
        || Ok(record_bytes::record_size(&r, group_id, offset_delta, timestamp_delta, kafka_4_0)),
    )
}

/// batch_size(records, group_id, kafka_4_0=False) -> int
#[pyfunction]
#[pyo3(signature = (records, group_id, kafka_4_0 = false))]
fn batch_size(py: Python<'_>, records: &Bound<'_, PyAny>, group_id: &str, kafka_4_0: bool) -> PyResult<usize> {
    let mut read = Vec::new();
    for (i, r) in records.try_iter()?.enumerate() {
        read.push(r.and_then(|r| any_record(&r)).map_err(|e| bad_input(py, &format!("batch_size: records[{i}]"), e))?);
    }
    guarded(
        || format!("batch_size of {} records of group {group_id:?}", read.len()),
        || Ok(record_bytes::batch_size(&read, group_id, kafka_4_0)),
    )
}
