//! `coordsim_native.metrics`: metrics.rs's GroupMetrics, told what happened as state.metrics.GroupMetrics is
//! (partitions as (topic, partition) tuples, the mappings as dicts), its `row` as the reference's dict; and
//! `nearest_rank` and `unconsumed_figures` over {value: occurrences} dicts.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rustc_hash::FxHashMap;

use super::guarded;
use crate::metrics::{self, Counts, MetricsRow, Tp, UnconsumedFigures};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GroupMetrics>()?;
    m.add_function(wrap_pyfunction!(nearest_rank, m)?)?;
    m.add_function(wrap_pyfunction!(unconsumed_figures, m)?)
}

fn distribution<'py>(py: Python<'py>, counts: &[(i64, i64)]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (ms, n) in counts {
        let entry = PyDict::new(py);
        entry.set_item("ms", ms)?;
        entry.set_item("count", n)?;
        out.append(entry)?;
    }
    Ok(out)
}

/// The unconsumed columns into `row` (all None for a group without synthetic consumers).
fn set_unconsumed(py: Python<'_>, row: &Bound<'_, PyDict>, figures: Option<&UnconsumedFigures>) -> PyResult<()> {
    let columns = [
        "unconsumed_partition_ms",
        "unconsumed_gaps",
        "unconsumed_gap_ms_p50",
        "unconsumed_gap_ms_p99",
        "unconsumed_gap_ms_max",
        "unconsumed_gap_durations",
    ];
    let Some(f) = figures else {
        return columns.iter().try_for_each(|c| row.set_item(c, py.None()));
    };
    row.set_item(columns[0], f.unconsumed_partition_ms)?;
    row.set_item(columns[1], f.unconsumed_gaps)?;
    row.set_item(columns[2], f.unconsumed_gap_ms_p50)?;
    row.set_item(columns[3], f.unconsumed_gap_ms_p99)?;
    row.set_item(columns[4], f.unconsumed_gap_ms_max)?;
    row.set_item(columns[5], distribution(py, &f.unconsumed_gap_durations)?)
}

fn row_object<'py>(py: Python<'py>, r: &MetricsRow) -> PyResult<Bound<'py, PyDict>> {
    let row = PyDict::new(py);
    row.set_item("end_ts", r.end_ts)?;
    row.set_item("end_state", &r.end_state)?;
    row.set_item("end_members", r.end_members)?;
    row.set_item("generations", r.generations)?;
    row.set_item("rebalances", r.rebalances)?;
    let causes = PyList::empty(py);
    for (cause, count) in &r.rebalance_causes {
        let entry = PyDict::new(py);
        entry.set_item("cause", cause)?;
        entry.set_item("count", count)?;
        causes.append(entry)?;
    }
    row.set_item("rebalance_causes", causes)?;
    row.set_item("rebalances_after_formation", r.rebalances_after_formation)?;
    row.set_item("time_to_stable_ms", r.time_to_stable_ms)?;
    row.set_item("rebalance_ms_p50", r.rebalance_ms_p50)?;
    row.set_item("rebalance_ms_p99", r.rebalance_ms_p99)?;
    row.set_item("rebalance_ms_max", r.rebalance_ms_max)?;
    row.set_item("rebalance_durations", distribution(py, &r.rebalance_durations)?)?;
    set_unconsumed(py, &row, r.unconsumed.as_ref())?;
    row.set_item("partitions_moved", r.partitions_moved)?;
    row.set_item("duplicate_records", r.duplicate_records)?;
    row.set_item("skipped_records", r.skipped_records)?;
    row.set_item("failed_commits", r.failed_commits)?;
    row.set_item("unsent_commits", r.unsent_commits)?;
    Ok(row)
}

#[pyfunction]
fn nearest_rank(counts: Counts, percent: i64) -> Option<i64> {
    metrics::nearest_rank(&counts, percent)
}

#[pyfunction]
fn unconsumed_figures<'py>(
    py: Python<'py>,
    closed: Counts,
    open_since: Vec<i64>,
    now: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let row = PyDict::new(py);
    set_unconsumed(py, &row, Some(&metrics::unconsumed_figures(&closed, open_since.into_iter(), now)))?;
    Ok(row)
}

fn sorted<V: Clone>(map: &FxHashMap<Tp, V>) -> Vec<(Tp, V)> {
    let mut out: Vec<(Tp, V)> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[pyclass(module = "coordsim_native.metrics")]
pub struct GroupMetrics {
    metrics: metrics::GroupMetrics,
}

type Consumption = (Vec<(Tp, String)>, Vec<(Tp, i64)>, Vec<(Tp, String)>, Vec<(Tp, i64)>);

#[pymethods]
impl GroupMetrics {
    #[new]
    fn new() -> Self {
        GroupMetrics { metrics: metrics::GroupMetrics::new() }
    }

    #[getter]
    fn generations(&self) -> i64 {
        self.metrics.generations
    }

    #[setter]
    fn set_generations(&mut self, value: i64) {
        self.metrics.generations = value;
    }

    #[getter]
    fn failed_commits(&self) -> i64 {
        self.metrics.failed_commits
    }

    #[setter]
    fn set_failed_commits(&mut self, value: i64) {
        self.metrics.failed_commits = value;
    }

    fn activity(&mut self, now: i64) {
        self.metrics.activity(now);
    }

    fn rebalance(&mut self, now: i64, cause: &str, window_ms: i64) {
        self.metrics.rebalance(now, cause, window_ms);
    }

    fn group_state(&mut self, now: i64, state: &str) {
        self.metrics.group_state(now, state);
    }

    fn unsent_commit(&mut self) {
        self.metrics.unsent_commit();
    }

    fn consumers<'py>(&self, py: Python<'py>, client_id: &str, partitions: Vec<Tp>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (tp, owner) in self.metrics.consumers(client_id, &partitions) {
            out.set_item(tp, owner)?;
        }
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_consuming(
        &mut self,
        now: i64,
        client_id: &str,
        partitions: Vec<Tp>,
        consumed: FxHashMap<Tp, Option<i64>>,
        committed: FxHashMap<Tp, Option<i64>>,
        log_end: FxHashMap<Tp, i64>,
        reset_earliest: bool,
    ) -> PyResult<()> {
        guarded(
            || format!("GroupMetrics.start_consuming({client_id:?}, {} partitions) at {now}", partitions.len()),
            || {
                self.metrics.start_consuming(
                    now,
                    client_id,
                    &partitions,
                    &consumed,
                    &committed,
                    &log_end,
                    reset_earliest,
                );
                Ok(())
            },
        )
    }

    fn stop_consuming(&mut self, now: i64, client_id: &str, positions: &Bound<'_, PyDict>) -> PyResult<()> {
        let positions: Vec<(Tp, i64)> =
            positions.iter().map(|(k, v)| Ok((k.extract()?, v.extract()?))).collect::<PyResult<_>>()?;
        self.metrics.stop_consuming(now, client_id, &positions);
        Ok(())
    }

    fn consumption_ended(&mut self, now: i64) {
        self.metrics.consumption_ended(now);
    }

    #[pyo3(signature = (now, end_state, end_members))]
    fn row<'py>(
        &self,
        py: Python<'py>,
        now: i64,
        end_state: Option<&str>,
        end_members: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        row_object(py, &self.metrics.row(now, end_state, end_members))
    }

    /// The consumption's state, each map sorted: (owner, unconsumed_since, last_owner, last_position).
    fn consumption(&self) -> Consumption {
        let m = &self.metrics;
        (sorted(&m.owner), sorted(&m.unconsumed_since), sorted(&m.last_owner), sorted(&m.last_position))
    }
}
