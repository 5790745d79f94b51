//! `coordsim_native.consumer_protocol`: the codecs of consumer_protocol.rs under state.classic.consumer_protocol's
//! names. Decoders take bytes and return plain tuples (a Subscription as (topics, user_data,
//! owned_partitions, generation_id, rack_id), an Assignment as (partitions, user_data), sticky userData as
//! (partitions, generation)); encoders read the reference's Subscription and Assignment by attribute.
//!
//! The reference's writer takes any Python value: a string with lone surrogates, or an integer beyond
//! int64, is refused here with the reference's message, as the value is read (so when one call has several
//! bad values, which one is named may differ).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView, PyString, PyTuple};

use super::guarded;
use crate::classic::consumer_protocol::{
    self as cp, ConsumerProtocolError as CoreError, HIGHEST_VERSION, Int, SubscriptionToWrite, TopicPartition,
};

create_exception!(
    coordsim_native.consumer_protocol,
    ConsumerProtocolError,
    PyValueError,
    "A blob that cannot be encoded or decoded (state.classic.consumer_protocol.ConsumerProtocolError)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConsumerProtocolError", m.py().get_type::<ConsumerProtocolError>())?;
    m.add("HIGHEST_VERSION", HIGHEST_VERSION)?;
    m.add_function(wrap_pyfunction!(decode_version, m)?)?;
    m.add_function(wrap_pyfunction!(decode_subscription, m)?)?;
    m.add_function(wrap_pyfunction!(decode_assignment, m)?)?;
    m.add_function(wrap_pyfunction!(decode_sticky_user_data, m)?)?;
    m.add_function(wrap_pyfunction!(decode_cooperative_user_data, m)?)?;
    m.add_function(wrap_pyfunction!(encode_subscription, m)?)?;
    m.add_function(wrap_pyfunction!(encode_assignment, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sticky_user_data, m)?)?;
    m.add_function(wrap_pyfunction!(encode_cooperative_user_data, m)?)?;
    Ok(())
}

pub(crate) fn error(e: CoreError) -> PyErr {
    ConsumerProtocolError::new_err(e.0)
}

/// The blob's bytes, refused as the reference's reader refuses anything but bytes, bytearray or memoryview.
fn blob(data: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if data.is_instance_of::<PyByteArray>() || data.is_instance_of::<PyMemoryView>() {
        return Ok(data.py().get_type::<PyBytes>().call1((data,))?.cast::<PyBytes>()?.as_bytes().to_vec());
    }
    let kind = data.get_type().name()?;
    Err(ConsumerProtocolError::new_err(format!("{what}: expected bytes, got {kind}")))
}

fn partitions<'py>(py: Python<'py>, list: &[TopicPartition]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, list.iter().map(|tp| (tp.topic.as_ref(), tp.partition)))
}

fn decoded<T>(what: &'static str, f: impl FnOnce() -> Result<T, CoreError>) -> PyResult<T> {
    guarded(|| format!("decoding a {what}"), || f().map_err(error))
}

#[pyfunction]
fn decode_version(data: &Bound<'_, PyAny>) -> PyResult<i16> {
    let data = blob(data, "consumer protocol header")?;
    decoded("consumer protocol header", || cp::decode_version(&data))
}

#[pyfunction]
fn decode_subscription<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let data = blob(data, "subscription")?;
    let s = decoded("subscription", || cp::decode_subscription(&data))?;
    let user_data = s.user_data.map(|b| PyBytes::new(py, &b));
    (PyTuple::new(py, &s.topics)?, user_data, partitions(py, &s.owned_partitions)?, s.generation_id, s.rack_id)
        .into_pyobject(py)
}

#[pyfunction]
fn decode_assignment<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let data = blob(data, "assignment")?;
    let a = decoded("assignment", || cp::decode_assignment(&data))?;
    (partitions(py, &a.partitions)?, a.user_data.map(|b| PyBytes::new(py, &b))).into_pyobject(py)
}

#[pyfunction]
fn decode_sticky_user_data<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    let data = blob(data, "sticky userData")?;
    let u = decoded("sticky userData", || cp::decode_sticky_user_data(&data))?;
    (partitions(py, &u.partitions)?, u.generation).into_pyobject(py)
}

#[pyfunction]
fn decode_cooperative_user_data(data: &Bound<'_, PyAny>) -> PyResult<i32> {
    let data = blob(data, "cooperative-sticky userData")?;
    decoded("cooperative-sticky userData", || cp::decode_cooperative_user_data(&data))
}

/// A string field: a str with lone surrogates has no UTF-8 form.
pub(crate) fn text(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    if obj.is_instance_of::<PyString>() {
        if let Ok(s) = obj.extract::<String>() {
            return Ok(s);
        }
        return Err(ConsumerProtocolError::new_err(format!("{field}: {} is not encodable as UTF-8", obj.repr()?)));
    }
    obj.extract()
}

/// An int32 field as any integer (the writer checks that it fits).
pub(crate) fn int(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<Int> {
    obj.extract::<Int>().map_err(|_| match obj.str() {
        Ok(value) => ConsumerProtocolError::new_err(format!("{field}: {value} does not fit in an int32")),
        Err(e) => e,
    })
}

fn optional<T>(obj: Bound<'_, PyAny>, read: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>) -> PyResult<Option<T>> {
    if obj.is_none() { Ok(None) } else { read(&obj).map(Some) }
}

fn bytes_field(obj: Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    optional(obj, |b| blob(b, "user_data"))
}

pub(crate) fn partition_list(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<(String, Int)>> {
    let (topic_field, partition_field) = (format!("{field}.topic"), format!("{field}.partitions"));
    obj.try_iter()?
        .map(|tp| {
            let (topic, partition): (Bound<'_, PyAny>, Bound<'_, PyAny>) = tp?.extract()?;
            Ok((text(&topic, &topic_field)?, int(&partition, &partition_field)?))
        })
        .collect()
}

#[pyfunction]
#[pyo3(signature = (subscription, version = Int::from(HIGHEST_VERSION)))]
fn encode_subscription<'py>(
    py: Python<'py>,
    subscription: &Bound<'py, PyAny>,
    version: Int,
) -> PyResult<Bound<'py, PyBytes>> {
    let sub = SubscriptionToWrite {
        topics: subscription.getattr("topics")?.try_iter()?.map(|t| text(&t?, "topics")).collect::<PyResult<_>>()?,
        user_data: bytes_field(subscription.getattr("user_data")?)?,
        owned_partitions: partition_list(&subscription.getattr("owned_partitions")?, "owned_partitions")?,
        generation_id: optional(subscription.getattr("generation_id")?, |g| int(g, "generation_id"))?,
        rack_id: optional(subscription.getattr("rack_id")?, |r| text(r, "rack_id"))?,
    };
    let out = guarded(|| "encoding a subscription".into(), || cp::encode_subscription(&sub, version).map_err(error))?;
    Ok(PyBytes::new(py, &out))
}

#[pyfunction]
#[pyo3(signature = (assignment, version = Int::from(HIGHEST_VERSION)))]
fn encode_assignment<'py>(
    py: Python<'py>,
    assignment: &Bound<'py, PyAny>,
    version: Int,
) -> PyResult<Bound<'py, PyBytes>> {
    let list = partition_list(&assignment.getattr("partitions")?, "assigned_partitions")?;
    let user_data = bytes_field(assignment.getattr("user_data")?)?;
    let out = guarded(
        || "encoding an assignment".into(),
        || cp::encode_assignment(&list, user_data.as_deref(), version).map_err(error),
    )?;
    Ok(PyBytes::new(py, &out))
}

#[pyfunction]
#[pyo3(signature = (partitions, generation, version = 1))]
fn encode_sticky_user_data<'py>(
    py: Python<'py>,
    partitions: &Bound<'py, PyAny>,
    generation: Option<Bound<'py, PyAny>>,
    version: Int,
) -> PyResult<Bound<'py, PyBytes>> {
    let list = partition_list(partitions, "previous_assignment")?;
    let generation = generation.map(|g| int(&g, "generation")).transpose()?;
    let out = guarded(
        || "encoding sticky userData".into(),
        || cp::encode_sticky_user_data(&list, generation, version).map_err(error),
    )?;
    Ok(PyBytes::new(py, &out))
}

#[pyfunction]
fn encode_cooperative_user_data<'py>(py: Python<'py>, generation: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let generation = int(generation, "generation")?;
    let out = guarded(
        || "encoding cooperative-sticky userData".into(),
        || cp::encode_cooperative_user_data(generation).map_err(error),
    )?;
    Ok(PyBytes::new(py, &out))
}
