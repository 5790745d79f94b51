//! `coordsim_native.consumer_group`'s regex functions and the metadata hash: consumer_group/regex.rs and
//! topics.rs over plain values (resolved regexes as (regex, (topics, version, timestamp)) pairs in their
//! order, a topics image as {name: ((msb, lsb), partition count)}), raising InvalidRegularExpression (a
//! ValueError, as the reference's) with the reference's message.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::consumer_group::{ImageArg, topics_image};
use super::guarded;
use crate::consumer_group::records::{ConsumerGroupRecord, ResolvedRegularExpression};
use crate::consumer_group::regex as core;
use crate::dict::{Counter, Dict};

create_exception!(
    coordsim_native.consumer_group,
    InvalidRegularExpression,
    PyValueError,
    "A regex RE2J would not compile (state.consumer_group.regex)."
);

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InvalidRegularExpression", m.py().get_type::<InvalidRegularExpression>())?;
    m.add_function(wrap_pyfunction!(regex_fullmatch, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_regular_expressions, m)?)?;
    m.add_function(wrap_pyfunction!(maybe_update_regular_expressions, m)?)?;
    m.add_function(wrap_pyfunction!(metadata_hash, m)?)
}

fn invalid(e: core::InvalidRegularExpression) -> PyErr {
    InvalidRegularExpression::new_err(e.0)
}

/// compile_regex(regex), then whether each name fully matches it (`pattern.fullmatch(name) is not None`).
#[pyfunction]
fn regex_fullmatch(regex: &str, names: Vec<String>) -> PyResult<Vec<bool>> {
    guarded(
        || format!("regex_fullmatch({regex:?}) over {} names", names.len()),
        || {
            let pattern = core::compile_regex(regex).map_err(invalid)?;
            Ok(names.iter().map(|name| pattern.fullmatch(name)).collect())
        },
    )
}

pub(crate) type Resolved = (String, (Vec<String>, i64, i64));

fn resolved_out(resolved: &Dict<String, ResolvedRegularExpression>) -> Vec<Resolved> {
    resolved.iter().map(|(k, v)| (k.clone(), (v.topics.clone(), v.version, v.timestamp))).collect()
}

#[pyfunction]
fn resolve_regular_expressions(
    regexes: Vec<String>,
    topic_names: Vec<String>,
    version: i64,
    now: i64,
) -> PyResult<Vec<Resolved>> {
    guarded(
        || format!("resolve_regular_expressions of {} regexes over {} topics", regexes.len(), topic_names.len()),
        || Ok(resolved_out(&core::resolve_regular_expressions(&regexes, &topic_names, version, now))),
    )
}

/// The status's name, the regexes of the RegularExpression tombstones in order, the regexes to resolve or None.
type Decision = (&'static str, Vec<String>, Option<Vec<String>>);

/// As the reference's, `subscribed` as (regex, members) pairs.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn maybe_update_regular_expressions(
    old_regex: &str,
    new_regex: &str,
    subscribed: Vec<(String, i64)>,
    resolved: Vec<Resolved>,
    now: i64,
    refresh_interval_ms: i64,
    new_topics_version: i64,
) -> PyResult<Decision> {
    let mut counts = Counter::default();
    for (regex, count) in subscribed {
        counts.add(&regex, count);
    }
    let mut held = Dict::default();
    for (regex, (topics, version, timestamp)) in resolved {
        held.insert(regex, ResolvedRegularExpression { topics, version, timestamp });
    }
    guarded(
        || format!("maybe_update_regular_expressions({old_regex:?} -> {new_regex:?})"),
        || {
            let (status, records, regexes) = core::maybe_update_regular_expressions(
                old_regex,
                new_regex,
                &counts,
                &held,
                now,
                refresh_interval_ms,
                new_topics_version,
            )
            .map_err(invalid)?;
            let tombstones = records
                .into_iter()
                .map(|r| match r {
                    ConsumerGroupRecord::RegularExpression { regex, value: None } => regex,
                    other => unreachable!("a regex update writes no {:?}", other.key()),
                })
                .collect();
            Ok((status.name(), tombstones, regexes))
        },
    )
}

/// TopicsImage(topics).metadata_hash(names).
#[pyfunction]
fn metadata_hash(topics: ImageArg, names: Vec<String>) -> i64 {
    topics_image(topics).metadata_hash(names.iter().map(String::as_str))
}
