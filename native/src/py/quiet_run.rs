//! `coordsim_native.quiet_run`, `coordsim_native.production`, `coordsim_native.topic_id` and
//! `coordsim_native.member_ids`: the small leaf rules (quiet_run.rs, offsets/production.rs,
//! consumer_group/topic_id.rs's derived ids, runtime/member_ids.rs) over plain values, as the reference's
//! functions of the same names.
//!
//! A value the reference reads with `known` (None, or NaN as pandas reads a null back) is None here when it
//! is None or NaN; a float count or time is truncated as Python's `int` does.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyFloat;

use crate::consumer_group::topic_id;
use crate::offsets::production::{self, ProductionError};
use crate::quiet_run;
use crate::runtime::member_ids::MemberIds;

pub fn register_quiet_run(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_count, m)?)?;
    m.add_function(wrap_pyfunction!(run_interval, m)?)?;
    m.add_function(wrap_pyfunction!(request_time, m)?)?;
    m.add_function(wrap_pyfunction!(requests_until, m)?)?;
    m.add_function(wrap_pyfunction!(last_request_time, m)?)?;
    m.add_function(wrap_pyfunction!(grown, m)?)?;
    m.add_function(wrap_pyfunction!(repeated_request_id, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    Ok(())
}

pub fn register_production(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rule_offset, m)?)
}

pub fn register_topic_id(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(derived_topic_id, m)?)
}

pub fn register_member_ids(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(member_ids, m)?)
}

pub(crate) fn production_error(what: &str, error: ProductionError) -> PyErr {
    let message = format!("{what}: {error}");
    match error {
        ProductionError::NotANumber => PyValueError::new_err(message),
        ProductionError::Infinite | ProductionError::OutOfRange => PyOverflowError::new_err(message),
    }
}

/// An integer the reference reads with `known`: None for None or NaN, a float truncated.
fn known_int(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let f = f.value();
        if f.is_nan() {
            return Ok(None);
        }
        if !f.is_finite() || f.abs() >= production::INT64_BOUND {
            return Err(PyOverflowError::new_err(format!("{name}: {f} is beyond int64")));
        }
        return Ok(Some(f.trunc() as i64));
    }
    obj.extract().map(Some).map_err(|e: PyErr| PyTypeError::new_err(format!("{name}: {}", e.value(obj.py()))))
}

/// A rate the reference reads with `known`: None for None or NaN.
fn known_float(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if obj.is_none() {
        return Ok(None);
    }
    let f: f64 = obj.extract().map_err(|e: PyErr| PyTypeError::new_err(format!("{name}: {}", e.value(obj.py()))))?;
    Ok(if f.is_nan() { None } else { Some(f) })
}

#[pyfunction]
fn run_count(value: &Bound<'_, PyAny>) -> PyResult<i64> {
    Ok(quiet_run::run_count(known_int("repeat_count", value)?))
}

#[pyfunction]
fn run_interval(count: i64, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    Ok(quiet_run::run_interval(count, known_int("repeat_interval_ms", value)?))
}

#[pyfunction]
fn request_time(first: i64, interval: i64, k: i64) -> i64 {
    quiet_run::request_time(first, interval, k)
}

#[pyfunction]
fn requests_until(first: i64, count: i64, interval: i64, at: i64) -> i64 {
    quiet_run::requests_until(first, count, interval, at)
}

#[pyfunction]
#[pyo3(signature = (first, count, interval, at=None))]
fn last_request_time(first: i64, count: i64, interval: i64, at: Option<i64>) -> i64 {
    quiet_run::last_request_time(first, count, interval, at)
}

#[pyfunction]
fn grown(value: i64, rate: &Bound<'_, PyAny>, origin: &Bound<'_, PyAny>, first: i64, t: i64) -> PyResult<i64> {
    quiet_run::grown(value, known_float("rate", rate)?, known_int("origin", origin)?, first, t)
        .map_err(|e| production_error("grown", e))
}

#[pyfunction]
fn repeated_request_id(request_id: Option<&str>, shift: i64) -> PyResult<Option<String>> {
    quiet_run::repeated_request_id(request_id, shift).map_err(|e| production_error("repeated_request_id", e))
}

/// Run.of(row) read as the reference reads the row's five columns, as (count, interval, rate, origin,
/// log_end_origin).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn run(
    count: &Bound<'_, PyAny>,
    interval: &Bound<'_, PyAny>,
    rate: &Bound<'_, PyAny>,
    origin: &Bound<'_, PyAny>,
    log_end_origin: &Bound<'_, PyAny>,
) -> PyResult<(i64, i64, Option<f64>, Option<i64>, Option<i64>)> {
    let run = quiet_run::Run::of(
        known_int("repeat_count", count)?,
        known_int("repeat_interval_ms", interval)?,
        known_float("records_per_second", rate)?,
        known_int("rate_origin_ts", origin)?,
        known_int("log_end_origin_ts", log_end_origin)?,
    );
    Ok((run.count, run.interval, run.rate, run.origin, run.log_end_origin))
}

#[pyfunction]
fn rule_offset(rule: (f64, i64, i64), t: i64) -> PyResult<i64> {
    production::rule_offset(rule, t).map_err(|e| production_error("rule_offset", e))
}

/// The derived id as (msb, lsb).
#[pyfunction]
fn derived_topic_id(name: &str) -> (i64, i64) {
    let id = topic_id::derived_topic_id(name);
    (id.msb, id.lsb)
}

/// The ids a MemberIds of `group_id` hands out for `asks` in turn: a prefix asks for `member_id(prefix)`,
/// None for `uuid()`.
#[pyfunction]
fn member_ids(group_id: &str, asks: Vec<Option<String>>) -> Vec<String> {
    let mut ids = MemberIds::new(group_id);
    asks.iter()
        .map(|ask| match ask {
            Some(prefix) => ids.member_id(prefix),
            None => ids.uuid(),
        })
        .collect()
}
