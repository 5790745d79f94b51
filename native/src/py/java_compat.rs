//! `coordsim_native.java_compat`: the Java semantics of java_compat.rs, as functions of plain values the
//! parity tests compare with state.java_compat's.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::java_compat::{self, JavaHashMap, JavaRandom};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(string_hash_code, m)?)?;
    m.add_function(wrap_pyfunction!(coordinator_partition, m)?)?;
    m.add_function(wrap_pyfunction!(java_string_length, m)?)?;
    m.add_function(wrap_pyfunction!(java_sorted, m)?)?;
    m.add_function(wrap_pyfunction!(hash_map_keys, m)?)?;
    m.add_function(wrap_pyfunction!(random_ints, m)?)?;
    m.add_function(wrap_pyfunction!(shuffled, m)?)?;
    Ok(())
}

/// String.hashCode
#[pyfunction]
fn string_hash_code(s: &str) -> i32 {
    java_compat::string_hash_code(s)
}

/// The __consumer_offsets partition that coordinates the group.
#[pyfunction]
fn coordinator_partition(group_id: &str, offsets_topic_partitions: i32) -> PyResult<i32> {
    if offsets_topic_partitions <= 0 {
        return Err(PyValueError::new_err(format!(
            "coordinator_partition: {offsets_topic_partitions} partitions (it takes one or more)"
        )));
    }
    Ok(java_compat::coordinator_partition(group_id, offsets_topic_partitions))
}

/// String.length()
#[pyfunction]
fn java_string_length(s: &str) -> usize {
    java_compat::java_string_length(s)
}

/// The strings sorted by String.compareTo (a stable sort).
#[pyfunction]
fn java_sorted(mut strings: Vec<String>) -> Vec<String> {
    strings.sort_by(|a, b| java_compat::java_string_cmp(a, b));
    strings
}

/// The keys of a java.util.FxHashMap<String, _> after `operations`, ("put", key) or ("remove", key), in its
/// iteration order.
#[pyfunction]
fn hash_map_keys(operations: Vec<(String, String)>) -> PyResult<Vec<String>> {
    let mut map: JavaHashMap<String, ()> = JavaHashMap::default();
    for (op, key) in operations {
        match op.as_str() {
            "put" => map.insert(key, ()),
            "remove" => {
                map.remove(&key);
            }
            other => return Err(PyValueError::new_err(format!("hash_map_keys: no operation {other:?}"))),
        }
    }
    Ok(map.keys())
}

/// new Random(seed).nextInt(bound) for each bound in turn.
#[pyfunction]
fn random_ints(seed: i64, bounds: Vec<i32>) -> PyResult<Vec<i32>> {
    if let Some(bad) = bounds.iter().find(|&&b| b <= 0) {
        return Err(PyValueError::new_err(format!("random_ints: bound must be positive, got {bad}")));
    }
    let mut random = JavaRandom::new(seed);
    Ok(bounds.into_iter().map(|b| random.next_int(b)).collect())
}

/// Collections.shuffle(items, new Random(seed)), on a copy.
#[pyfunction]
fn shuffled(seed: i64, mut items: Vec<Py<PyAny>>) -> Vec<Py<PyAny>> {
    JavaRandom::new(seed).shuffle(&mut items);
    items
}
