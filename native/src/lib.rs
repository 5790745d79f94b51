//! coordsim's native engine: the protocol core of `state/` in Rust, module for module, byte-identical to
//! the Python reference (docs/native.md). The modules below mirror `state/` and are pure Rust; `py` holds
//! the PyO3 bindings (the `python` feature), the only code that knows of Python.

#![forbid(unsafe_code)]

pub mod assignors;
pub mod classic;
pub mod config;
pub mod consumer_group;
pub mod dict;
pub mod errors;
pub mod events;
pub mod java_compat;
pub mod metrics;
pub mod offsets;
pub mod python_re;
pub mod quiet_run;
pub mod records;
pub mod runtime;
pub mod sha256;

#[cfg(feature = "python")]
mod py;
