//! `coordsim_native.group_log.GroupLog`: records/group_log.rs's GroupLog, appended the reference's record
//! objects (read as py/record_bytes.rs reads them) as state.records.group_log.GroupLog is. Keys come back as
//! the reference's key tuples; an offset's and a group's value as the reference's dicts, a consumer group
//! record's as its value bytes (record_bytes.rs, every field of the value, as Kafka 4.1+ writes it).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::record_bytes::any_record;
use super::result::{metadata_object, offset_value_object};
use super::{bad_input, guarded};
use crate::consumer_group::records::ConsumerGroupRecord;
use crate::records::group_log::{self, LogKey, LogValue};
use crate::records::record_bytes::{self, AnyRecord};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GroupLog>()
}

fn key_object<'py>(py: Python<'py>, key: &LogKey) -> PyResult<Bound<'py, PyTuple>> {
    match key {
        LogKey::Offset(topic, partition) => ("offset", topic, *partition).into_pyobject(py),
        LogKey::GroupMetadata => ("group_metadata",).into_pyobject(py),
        LogKey::ConsumerGroup(record_type, None) => (*record_type,).into_pyobject(py),
        LogKey::ConsumerGroup(record_type, Some(id)) => (*record_type, id).into_pyobject(py),
    }
}

fn record_value<'py>(py: Python<'py>, record: &ConsumerGroupRecord) -> Option<Bound<'py, PyBytes>> {
    record_bytes::value_bytes(&AnyRecord::ConsumerGroup(record.clone()), false).map(|v| PyBytes::new(py, &v))
}

fn value_object<'py>(py: Python<'py>, value: &LogValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        LogValue::Offset(v) => offset_value_object(py, v.clone())?.into_any(),
        LogValue::GroupMetadata(v) => metadata_object(py, v.clone())?.into_any(),
        LogValue::ConsumerGroup(r) => record_value(py, r).into_pyobject(py)?.into_any(),
    })
}

#[pyclass(module = "coordsim_native.group_log")]
pub struct GroupLog {
    log: group_log::GroupLog,
}

#[pymethods]
impl GroupLog {
    #[new]
    fn new() -> Self {
        GroupLog { log: group_log::GroupLog::new() }
    }

    fn append(&mut self, py: Python<'_>, record: &Bound<'_, PyAny>) -> PyResult<()> {
        let record = any_record(record).map_err(|e| bad_input(py, "GroupLog.append: record", e))?;
        guarded(
            || "GroupLog.append".into(),
            || {
                self.log.append(&record);
                Ok(())
            },
        )
    }

    /// Every key's last value, in the log's order, as (key, value).
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Vec<(Bound<'py, PyTuple>, Bound<'py, PyAny>)>> {
        self.log.values().map(|(key, value)| Ok((key_object(py, key)?, value_object(py, value)?))).collect()
    }

    fn group_metadata<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.log.group_metadata().map(|v| metadata_object(py, v.clone())).transpose()
    }

    fn offsets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (key, value) in self.log.offsets() {
            out.set_item(key, offset_value_object(py, value.clone())?)?;
        }
        Ok(out)
    }

    fn committed<'py>(&self, py: Python<'py>, topic: &str, partition: i32) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.log.committed(topic, partition).map(|v| offset_value_object(py, v.clone())).transpose()
    }

    /// The consumer group's records, in the log's order, as (key, value bytes).
    #[allow(clippy::type_complexity)]
    fn consumer_group_records<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(Bound<'py, PyTuple>, Option<Bound<'py, PyBytes>>)>> {
        self.log
            .consumer_group_records()
            .map(|r| {
                let (record_type, id) = r.key();
                let key = LogKey::ConsumerGroup(record_type, id.map(str::to_string));
                Ok((key_object(py, &key)?, record_value(py, r)))
            })
            .collect()
    }
}
