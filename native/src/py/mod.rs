//! The Python bindings (no Python counterpart in `state/`): the `coordsim_native` extension module and its
//! submodules, each a seam the parity tests in tests/native/ drive. Inputs are read from the reference's
//! own objects by attribute, so a test hands both implementations the same values; a failure is a Python
//! exception naming the input, and a panic (a bug) is caught here and raised as RuntimeError, never unwound
//! into Python.

mod assignors;
mod classic;
mod consumer_group;
mod consumer_protocol;
mod group_log;
mod heartbeat;
mod java_compat;
mod metrics;
mod offsets;
mod quiet_run;
mod quiet_runs;
mod record_bytes;
mod regex;
mod result;
mod timers;

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

/// Run `f`, turning a panic into a RuntimeError that names `what` (the call and its input).
pub(crate) fn guarded<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!("coordsim_native: {} failed: {message}", what())))
        }
    }
}

/// A TypeError naming the argument (or the part of it) that could not be read.
pub(crate) fn bad_input(py: Python<'_>, what: &str, err: PyErr) -> PyErr {
    PyTypeError::new_err(format!("{what}: {}", err.value(py)))
}

#[pymodule]
fn coordsim_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    submodule(m, "assignors", assignors::register)?;
    submodule(m, "consumer_group", consumer_group::register)?;
    submodule(m, "consumer_protocol", consumer_protocol::register)?;
    submodule(m, "java_compat", java_compat::register)?;
    submodule(m, "record_bytes", record_bytes::register)?;
    submodule(m, "quiet_run", quiet_run::register_quiet_run)?;
    submodule(m, "production", quiet_run::register_production)?;
    submodule(m, "topic_id", quiet_run::register_topic_id)?;
    submodule(m, "member_ids", quiet_run::register_member_ids)?;
    submodule(m, "timers", timers::register)?;
    submodule(m, "group_log", group_log::register)?;
    submodule(m, "quiet_runs", quiet_runs::register)?;
    submodule(m, "metrics", metrics::register)?;
    submodule(m, "classic", classic::register)?;
    submodule(m, "offsets", offsets::register)
}

fn submodule(m: &Bound<'_, PyModule>, name: &str, register: fn(&Bound<'_, PyModule>) -> PyResult<()>) -> PyResult<()> {
    let py = m.py();
    let sub = PyModule::new(py, name)?;
    register(&sub)?;
    m.add_submodule(&sub)?;
    // `import coordsim_native.NAME` looks in sys.modules: a submodule made in Rust is not a package's.
    py.import("sys")?.getattr("modules")?.set_item(format!("coordsim_native.{name}"), &sub)?;
    Ok(())
}
