//! `coordsim_native.timers`: runtime/timers.rs's TimerQueue over the reference's key tuples, driven as
//! state.runtime.timers.TimerQueue is (`schedule(key, deadline, kind, *args)`, `clock` and `item` set
//! before each step). Keys and args are tuples of str and int; a timer comes back as the reference's Timer
//! fields in a tuple, (key, deadline, order, kind, args, stamp), an item as `(0,)` or `(1, seq, member_id)`.
//! The runtime's port keys its queue with its own types; this key type is the seam's.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::runtime::timers::{self, Item, Order, TimerKey};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TimerQueue>()?;
    m.add_function(wrap_pyfunction!(request_item, m)?)
}

/// One element of a key or of a timer's args.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, IntoPyObject, FromPyObject)]
enum Atom {
    Int(i64),
    Str(String),
}

/// A key tuple; compared as the reference's tuples of the same shape are.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key(Vec<Atom>);

impl TimerKey for Key {
    fn client_side(&self) -> bool {
        matches!(self.0.first(), Some(Atom::Str(s)) if s == "client" || s == "deliver")
    }
}

type Action = (String, Vec<Atom>);
type Timer = timers::Timer<Key, Action>;
type PyTimer<'py> = (Bound<'py, PyTuple>, i64, Bound<'py, PyAny>, String, Bound<'py, PyTuple>, u64);

fn read_key(obj: &Bound<'_, PyAny>) -> PyResult<Key> {
    obj.extract().map(Key).map_err(|e: PyErr| PyTypeError::new_err(format!("key: {}", e.value(obj.py()))))
}

fn read_item(obj: &Bound<'_, PyAny>) -> PyResult<Item> {
    let tag: i64 = obj.get_item(0)?.extract()?;
    Ok(if tag == 0 {
        Item::Firing
    } else {
        Item::Request { seq: obj.get_item(1)?.extract()?, member_id: obj.get_item(2)?.extract()? }
    })
}

fn item_object<'py>(py: Python<'py>, item: &Item) -> PyResult<Bound<'py, PyAny>> {
    Ok(match item {
        Item::Firing => (0,).into_pyobject(py)?.into_any(),
        Item::Request { seq, member_id } => (1, *seq, member_id).into_pyobject(py)?.into_any(),
    })
}

fn timer_object<'py>(py: Python<'py>, timer: &Timer) -> PyResult<PyTimer<'py>> {
    let key = PyTuple::new(py, timer.key.0.iter().cloned())?;
    let order = match &timer.order {
        Order::Coordinator { at, item, stamp } => (*at, item_object(py, item)?, *stamp).into_pyobject(py)?.into_any(),
        Order::Key => key.clone().into_any(),
    };
    let (kind, args) = &timer.action;
    Ok((key, timer.deadline, order, kind.clone(), PyTuple::new(py, args.iter().cloned())?, timer.stamp))
}

/// A timer from its tuple (as `timer_object` gives it): an order whose first element is an int is a
/// coordinator timer's.
fn timer_of(obj: &Bound<'_, PyAny>) -> PyResult<Timer> {
    let key = read_key(&obj.get_item(0)?)?;
    let order = obj.get_item(2)?;
    let order = if order.get_item(0)?.extract::<i64>().is_ok() {
        Order::Coordinator {
            at: order.get_item(0)?.extract()?,
            item: read_item(&order.get_item(1)?)?,
            stamp: order.get_item(2)?.extract()?,
        }
    } else {
        Order::Key
    };
    Ok(Timer {
        key,
        deadline: obj.get_item(1)?.extract()?,
        order,
        action: (obj.get_item(3)?.extract()?, obj.get_item(4)?.extract()?),
        stamp: obj.get_item(5)?.extract()?,
    })
}

#[pyfunction]
fn request_item<'py>(py: Python<'py>, seq: i64, member_id: &str) -> PyResult<Bound<'py, PyAny>> {
    item_object(py, &timers::request_item(seq, member_id))
}

#[pyclass(module = "coordsim_native.timers")]
pub struct TimerQueue {
    queue: timers::TimerQueue<Key, Action>,
}

fn timer_option<'py>(py: Python<'py>, timer: Option<&Timer>) -> PyResult<Option<PyTimer<'py>>> {
    timer.map(|t| timer_object(py, t)).transpose()
}

#[pymethods]
impl TimerQueue {
    #[new]
    fn new() -> Self {
        TimerQueue { queue: timers::TimerQueue::new() }
    }

    #[getter]
    fn clock(&self) -> i64 {
        self.queue.clock
    }

    #[setter]
    fn set_clock(&mut self, clock: i64) {
        self.queue.clock = clock;
    }

    #[getter]
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        item_object(py, &self.queue.item)
    }

    #[setter]
    fn set_item(&mut self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.queue.item = read_item(value)?;
        Ok(())
    }

    #[pyo3(signature = (key, deadline, kind, *args))]
    fn schedule(&mut self, key: &Bound<'_, PyAny>, deadline: i64, kind: String, args: Vec<Atom>) -> PyResult<()> {
        self.queue.schedule(read_key(key)?, deadline, (kind, args));
        Ok(())
    }

    #[pyo3(signature = (scheduled_at, item, key, deadline, kind, *args))]
    fn schedule_as_of(
        &mut self,
        scheduled_at: i64,
        item: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        deadline: i64,
        kind: String,
        args: Vec<Atom>,
    ) -> PyResult<()> {
        let key = read_key(key)?;
        if key.client_side() {
            return Err(PyTypeError::new_err("schedule_as_of takes a coordinator timer's key"));
        }
        self.queue.schedule_as_of(scheduled_at, read_item(item)?, key, deadline, (kind, args));
        Ok(())
    }

    fn restore(&mut self, timer: &Bound<'_, PyAny>) -> PyResult<()> {
        self.queue.restore(timer_of(timer)?);
        Ok(())
    }

    fn take<'py>(&mut self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyTimer<'py>>> {
        timer_option(py, self.queue.take(&read_key(key)?).as_ref())
    }

    fn cancel(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.queue.cancel(&read_key(key)?);
        Ok(())
    }

    fn cancel_all(&mut self) {
        self.queue.cancel_all();
    }

    fn get<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyTimer<'py>>> {
        timer_option(py, self.queue.get(&read_key(key)?))
    }

    fn next_deadline(&mut self) -> Option<i64> {
        self.queue.next_deadline()
    }

    fn peek<'py>(&mut self, py: Python<'py>) -> PyResult<Option<PyTimer<'py>>> {
        timer_option(py, self.queue.peek())
    }

    fn pop_due<'py>(&mut self, py: Python<'py>, now: i64) -> PyResult<Option<PyTimer<'py>>> {
        timer_option(py, self.queue.pop_due(now).as_ref())
    }

    fn pop_peeked(&mut self) {
        self.queue.pop_peeked();
    }

    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Vec<PyTimer<'py>>> {
        self.queue.pending().into_iter().map(|t| timer_object(py, t)).collect()
    }

    fn __len__(&self) -> usize {
        self.queue.len()
    }
}
