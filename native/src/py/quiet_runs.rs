//! `coordsim_native.quiet_runs.QuietRuns`: runtime/quiet_runs.rs's runs over rows given as the reference's
//! dicts (held here as a `Row`, a dict of plain values in its order), driven as
//! state.runtime.quiet_runs.QuietRuns is. `handle(production, event, raw, rows)` takes the reference's event
//! (read by attribute), its input row (`request_row(event)`, or None) and the rows its answer made, as
//! (table, row) pairs; it and the closing calls return what they wrote, as ("request", raw, repeat_count,
//! repeat_interval_ms) and ("emit", table, row). A run comes back as the reference's `run_state`.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::{bad_input, guarded};
use crate::dict::Dict;
use crate::runtime::quiet_runs::{self, Cell, PeriodicRequest, Production, QuietRun, Rule, RunOut, RunRow};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<QuietRuns>()
}

/// A row's value, as Python holds it.
#[derive(Clone, Debug)]
enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Map(Row),
}

type Row = Dict<String, Value>;

/// Python's `==`: numbers compare by value, dicts whatever their order.
fn same(a: &Value, b: &Value) -> bool {
    fn number(v: &Value) -> Option<f64> {
        match v {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => same_rows(x, y, &[]),
        _ => matches!((number(a), number(b)), (Some(x), Some(y)) if x == y),
    }
}

fn same_rows(a: &Row, b: &Row, except: &[&str]) -> bool {
    let kept = |row: &Row| row.keys().filter(|k| !except.contains(&k.as_str())).count();
    kept(a) == kept(b)
        && a.iter().filter(|(k, _)| !except.contains(&k.as_str())).all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
}

fn cell(c: Cell) -> Value {
    match c {
        Cell::Null => Value::Null,
        Cell::Int(i) => Value::Int(i),
        Cell::Float(f) => Value::Float(f),
    }
}

/// The seam's row: the reference's dict.
#[derive(Clone, Debug)]
struct DictRow(Row);

impl DictRow {
    fn with_cells(&self, columns: &[(&str, Cell)]) -> Row {
        let mut row = self.0.clone();
        for (column, value) in columns {
            row.insert(column.to_string(), cell(*value));
        }
        row
    }
}

impl RunRow for DictRow {
    fn equal_except(&self, first: &Self, varying: &[&str]) -> bool {
        same_rows(&self.0, &first.0, varying)
    }

    fn text(&self, column: &str) -> Option<&str> {
        match self.0.get(column) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    fn int(&self, column: &str) -> Option<i64> {
        match self.0.get(column) {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }
    }

    fn results_ok(&self) -> bool {
        match self.0.get("results") {
            Some(Value::List(results) | Value::Tuple(results)) => results.iter().all(|r| match r {
                Value::Map(r) => matches!(r.get("error"), Some(Value::Str(e)) if e == "NONE"),
                _ => false,
            }),
            _ => false,
        }
    }

    fn with(&self, columns: &[(&str, Cell)]) -> Self {
        DictRow(self.with_cells(columns))
    }

    fn with_rules(&self, rules: &[Rule]) -> Self {
        let mut row = self.0.clone();
        if let Some(Value::List(partitions) | Value::Tuple(partitions)) = self.0.get("offsets") {
            let ruled = partitions
                .iter()
                .zip(rules)
                .map(|(p, rule)| match p {
                    Value::Map(p) if rule.0 != 0.0 => Value::Map(DictRow(p.clone()).with_cells(&[
                        ("records_per_second", Cell::Float(rule.0)),
                        ("rate_origin_ts", Cell::Int(rule.1)),
                    ])),
                    _ => p.clone(),
                })
                .collect();
            row.insert("offsets".to_string(), Value::List(ruled));
        }
        DictRow(row)
    }
}

fn value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    Ok(if obj.is_none() {
        Value::Null
    } else if let Ok(b) = obj.cast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if obj.is_instance_of::<PyInt>() {
        Value::Int(obj.extract()?)
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        Value::Float(f.value())
    } else if let Ok(s) = obj.cast::<PyString>() {
        Value::Str(s.to_str()?.to_string())
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        Value::Bytes(b.as_bytes().to_vec())
    } else if let Ok(d) = obj.cast::<PyDict>() {
        Value::Map(row(d)?)
    } else if let Ok(l) = obj.cast::<PyList>() {
        Value::List(l.iter().map(|v| value(&v)).collect::<PyResult<_>>()?)
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        Value::Tuple(t.iter().map(|v| value(&v)).collect::<PyResult<_>>()?)
    } else {
        return Err(PyTypeError::new_err(format!("a row's value of type {}", obj.get_type().name()?)));
    })
}

fn row(d: &Bound<'_, PyDict>) -> PyResult<Row> {
    let mut out = Row::default();
    for (k, v) in d.iter() {
        out.insert(k.extract()?, value(&v)?);
    }
    Ok(out)
}

fn value_object<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(items) => {
            PyList::new(py, items.iter().map(|i| value_object(py, i)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        Value::Tuple(items) => {
            PyTuple::new(py, items.iter().map(|i| value_object(py, i)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        Value::Map(r) => row_object(py, r)?.into_any(),
    })
}

fn row_object<'py>(py: Python<'py>, r: &Row) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (k, v) in r.iter() {
        out.set_item(k, value_object(py, v)?)?;
    }
    Ok(out)
}

/// One row the runs wrote.
enum Write {
    Request(DictRow, i64, Option<i64>),
    Emit(String, DictRow),
}

/// What the runs wrote, as the seam returns it.
#[derive(Default)]
struct Writes(Vec<Write>);

impl RunOut<DictRow> for Writes {
    fn request(&mut self, raw: DictRow, repeat_count: i64, repeat_interval_ms: Option<i64>) {
        self.0.push(Write::Request(raw, repeat_count, repeat_interval_ms));
    }

    fn emit(&mut self, table: &str, row: DictRow) {
        self.0.push(Write::Emit(table.into(), row));
    }
}

impl Writes {
    fn object<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for write in self.0 {
            match write {
                Write::Request(raw, count, interval) => {
                    out.append(("request", row_object(py, &raw.0)?, count, interval))?
                }
                Write::Emit(table, row) => out.append(("emit", table, row_object(py, &row.0)?))?,
            }
        }
        Ok(out)
    }
}

type Rows<'a> = Vec<(&'a str, DictRow)>;

fn rows<'a>(tables: &'a [String], rows: &[Bound<'_, PyDict>]) -> PyResult<Rows<'a>> {
    tables.iter().zip(rows).map(|(t, r)| Ok((t.as_str(), DictRow(row(r)?)))).collect()
}

/// The reference event's fields a run reads.
struct EventFields {
    run: String,
    ts: i64,
    kind: String,
    origin: Option<String>,
    request_id: Option<String>,
    offsets: Vec<(Option<f64>, Option<i64>)>,
    raw: Option<DictRow>,
}

impl EventFields {
    fn read(event: &Bound<'_, PyAny>, raw: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut offsets = Vec::new();
        if let Ok(partitions) = event.getattr("offsets") {
            for p in partitions.try_iter()? {
                let p = p?;
                offsets.push((p.getattr("records_per_second")?.extract()?, p.getattr("rate_origin_ts")?.extract()?));
            }
        }
        Ok(EventFields {
            run: event.getattr("run")?.extract()?,
            ts: event.getattr("ts")?.extract()?,
            kind: event.getattr("type")?.extract()?,
            origin: event.getattr("origin")?.extract()?,
            request_id: event.getattr("request_id")?.extract()?,
            offsets,
            raw: raw.map(|r| row(r).map(DictRow)).transpose()?,
        })
    }

    fn request(&self) -> PeriodicRequest<'_, DictRow> {
        PeriodicRequest {
            run: &self.run,
            ts: self.ts,
            kind: &self.kind,
            origin: self.origin.as_deref(),
            request_id: self.request_id.as_deref(),
            offsets: self.offsets.clone(),
            raw: self.raw.clone(),
        }
    }
}

type Read<'a> = (EventFields, Vec<String>, Vec<Bound<'a, PyDict>>, Production);

fn read<'a>(
    production: &Bound<'a, PyAny>,
    event: &Bound<'a, PyAny>,
    raw: Option<&Bound<'a, PyDict>>,
    answered: &Bound<'a, PyAny>,
) -> PyResult<Read<'a>> {
    let py = event.py();
    let fields = EventFields::read(event, raw).map_err(|e| bad_input(py, "event", e))?;
    let pairs: Vec<(String, Bound<'a, PyDict>)> = answered.extract().map_err(|e| bad_input(py, "rows", e))?;
    let (tables, dicts) = pairs.into_iter().unzip();
    let production = production.extract().map_err(|e| bad_input(py, "production", e))?;
    Ok((fields, tables, dicts, production))
}

fn run_state<'py>(py: Python<'py>, run: &QuietRun<DictRow>) -> PyResult<Bound<'py, PyTuple>> {
    let raw = run.raw.as_ref().map(|r| row_object(py, &r.0)).transpose()?;
    let offsets = run.offsets.iter().map(|r| row_object(py, &r.0)).collect::<PyResult<Vec<_>>>()?;
    (
        raw,
        row_object(py, &run.response.0)?,
        offsets,
        run.rules.clone(),
        run.log_end_rules.clone(),
        run.last_ts,
        run.count,
        run.interval,
    )
        .into_pyobject(py)
}

#[pyclass(module = "coordsim_native.quiet_runs")]
pub struct QuietRuns {
    runs: quiet_runs::QuietRuns<DictRow>,
}

#[pymethods]
impl QuietRuns {
    #[new]
    fn new() -> Self {
        QuietRuns { runs: quiet_runs::QuietRuns::new() }
    }

    #[pyo3(signature = (production, event, raw, rows))]
    fn handle<'py>(
        &mut self,
        py: Python<'py>,
        production: &Bound<'py, PyAny>,
        event: &Bound<'py, PyAny>,
        raw: Option<&Bound<'py, PyDict>>,
        rows: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (fields, tables, dicts, production) = read(production, event, raw, rows)?;
        let answered = self::rows(&tables, &dicts)?;
        let mut out = Writes::default();
        guarded(
            || format!("QuietRuns.handle of {:?} at {}", fields.run, fields.ts),
            || {
                self.runs.handle(&mut out, &production, &fields.request(), answered);
                Ok(())
            },
        )?;
        out.object(py)
    }

    #[pyo3(signature = (production, event, raw, rows))]
    fn open_run<'py>(
        &self,
        py: Python<'py>,
        production: &Bound<'py, PyAny>,
        event: &Bound<'py, PyAny>,
        raw: Option<&Bound<'py, PyDict>>,
        rows: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let (fields, tables, dicts, production) = read(production, event, raw, rows)?;
        let answered = self::rows(&tables, &dicts)?;
        let run = guarded(
            || format!("QuietRuns.open_run of {:?} at {}", fields.run, fields.ts),
            || Ok(self.runs.open_run(&production, &fields.request(), &answered)),
        )?;
        run.map(|r| run_state(py, &r)).transpose()
    }

    fn close<'py>(&mut self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyList>> {
        let mut out = Writes::default();
        guarded(
            || format!("QuietRuns.close({key:?})"),
            || {
                self.runs.close(&mut out, key);
                Ok(())
            },
        )?;
        out.object(py)
    }

    fn has_open(&self, origin: &str) -> bool {
        self.runs.has_open(origin)
    }

    fn close_client<'py>(&mut self, py: Python<'py>, origin: &str) -> PyResult<Bound<'py, PyList>> {
        let mut out = Writes::default();
        self.runs.close_client(&mut out, origin);
        out.object(py)
    }

    fn close_all<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut out = Writes::default();
        self.runs.close_all(&mut out);
        out.object(py)
    }

    /// The open runs in order, as (chain, run_state).
    fn runs<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Bound<'py, PyTuple>)>> {
        self.runs.runs.iter().map(|(name, run)| Ok((name.clone(), run_state(py, run)?))).collect()
    }
}
