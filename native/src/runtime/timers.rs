//! Mirrors `state/runtime/timers.py`: the deadlines kept in the group state, at most one timer per key,
//! rescheduling a key replacing its timer (Kafka's coordinator timer). A timer is plain data: its key, its
//! deadline, its place in the order and what it does (`T`, the runtime's to define), so the queue is encoded
//! with the group state.
//!
//! Timers fire in deadline order. At equal deadlines the coordinator's own timers come first, in the order
//! they were scheduled (Kafka's timer wheel fires them in insertion order), then the synthetic clients'
//! timers in key order (keys starting with "client" or "deliver": `TimerKey::client_side`), so a client
//! whose periodic work is computed in closed form fires in the same order as one simulated step by step.
//! The coordinator's scheduling order is a point in the group's handling order, (clock, the item being
//! handled, a stamp), as the reference's module docstring explains.
//!
//! The reference's heap keeps the entries of replaced and cancelled timers until they reach the top; so does
//! this one. Its pop order is the reference's: both compare entries on (deadline, rank, order, stamp), a
//! total order since every push has its own stamp. `pending` keeps the reference's dict order (a key placed
//! again keeps its place; taken or cancelled and placed again, it goes last).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::hash::Hash;

use rustc_hash::FxHashMap;

/// A timer's key, ordered as the reference's key tuples compare (client-side keys are compared).
pub trait TimerKey: Clone + Eq + Hash + Ord {
    /// A synthetic client's timer (the reference's keys starting with "client" or "deliver").
    fn client_side(&self) -> bool;
}

/// What the runtime is handling when it schedules a coordinator timer: a deadline firing (the reference's
/// FIRING, `(0,)`), before any request handled at the same time, or a request (`request_item`,
/// `(1, seq, member_id)`). The derived order is the reference's tuple order.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    #[default]
    Firing,
    Request {
        seq: i64,
        member_id: String,
    },
}

/// The item of a request with this `seq` from this member ("" when it names none).
pub fn request_item(seq: i64, member_id: &str) -> Item {
    Item::Request { seq, member_id: member_id.to_string() }
}

/// A timer's place among timers at its deadline: a coordinator timer's (scheduled at, item, stamp of its
/// first scheduling), or, for a client timer, its key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Order {
    Coordinator { at: i64, item: Item, stamp: u64 },
    Key,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timer<K, T> {
    pub key: K,
    pub deadline: i64,
    pub order: Order,
    /// What it does when it fires (the reference's kind and args).
    pub action: T,
    /// Unique per scheduling: tells a live heap entry from a replaced one.
    pub stamp: u64,
}

impl<K: TimerKey, T> Timer<K, T> {
    /// 0 for the coordinator's timers, 1 for the clients' (fired after them at the same deadline).
    pub fn rank(&self) -> u8 {
        u8::from(self.key.client_side())
    }
}

/// A heap entry, the reference's (deadline, rank, order, stamp, key).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry<K> {
    deadline: i64,
    rank: u8,
    order: Order,
    stamp: u64,
    key: K,
}

impl<K: TimerKey> Entry<K> {
    fn of<T>(timer: &Timer<K, T>) -> Self {
        Entry {
            deadline: timer.deadline,
            rank: timer.rank(),
            order: timer.order.clone(),
            stamp: timer.stamp,
            key: timer.key.clone(),
        }
    }
}

impl<K: TimerKey> Ord for Entry<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.deadline
            .cmp(&other.deadline)
            .then(self.rank.cmp(&other.rank))
            .then_with(|| match (&self.order, &other.order) {
                (Order::Key, Order::Key) => self.key.cmp(&other.key),
                (a, b) => a.cmp(b),
            })
            .then(self.stamp.cmp(&other.stamp))
    }
}

impl<K: TimerKey> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Clone, Debug)]
pub struct TimerQueue<K: TimerKey, T> {
    /// Each key's timer, with the stamp that placed the key (its place in the reference's dict order).
    by_key: FxHashMap<K, (Timer<K, T>, u64)>,
    heap: BinaryHeap<Reverse<Entry<K>>>,
    stamp: u64,
    /// The runtime's current time, set before each step.
    pub clock: i64,
    /// The item being handled, set before each step.
    pub item: Item,
}

impl<K: TimerKey, T> Default for TimerQueue<K, T> {
    fn default() -> Self {
        TimerQueue { by_key: FxHashMap::default(), heap: BinaryHeap::new(), stamp: 0, clock: 0, item: Item::Firing }
    }
}

impl<K: TimerKey, T> TimerQueue<K, T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn schedule(&mut self, key: K, deadline: i64, action: T) {
        self.stamp += 1;
        let order = if key.client_side() {
            Order::Key
        } else {
            Order::Coordinator { at: self.clock, item: self.item.clone(), stamp: self.stamp }
        };
        self.push(Timer { key, deadline, order, action, stamp: self.stamp });
    }

    /// Schedule a coordinator timer as if it had been scheduled while handling `item` at `scheduled_at`, a
    /// time at which nothing else ran (closed-form work). Coordinator keys only, as in the reference (whose
    /// heap could not compare such an order with a client key).
    pub fn schedule_as_of(&mut self, scheduled_at: i64, item: Item, key: K, deadline: i64, action: T) {
        debug_assert!(!key.client_side(), "schedule_as_of takes a coordinator timer");
        self.stamp += 1;
        let order = Order::Coordinator { at: scheduled_at, item, stamp: self.stamp };
        self.push(Timer { key, deadline, order, action, stamp: self.stamp });
    }

    /// Put back a timer taken out with `take`, in its original place in the order.
    pub fn restore(&mut self, timer: Timer<K, T>) {
        self.stamp += 1;
        self.push(Timer { stamp: self.stamp, ..timer });
    }

    /// Remove a timer and return it, to be restored later.
    pub fn take(&mut self, key: &K) -> Option<Timer<K, T>> {
        self.by_key.remove(key).map(|(timer, _)| timer)
    }

    fn push(&mut self, timer: Timer<K, T>) {
        self.heap.push(Reverse(Entry::of(&timer)));
        match self.by_key.get_mut(&timer.key) {
            Some(slot) => slot.0 = timer,
            None => {
                let placed = timer.stamp;
                self.by_key.insert(timer.key.clone(), (timer, placed));
            }
        }
    }

    pub fn cancel(&mut self, key: &K) {
        self.by_key.remove(key);
    }

    pub fn cancel_all(&mut self) {
        self.by_key.clear();
        self.heap.clear();
    }

    pub fn get(&self, key: &K) -> Option<&Timer<K, T>> {
        self.by_key.get(key).map(|(timer, _)| timer)
    }

    pub fn next_deadline(&mut self) -> Option<i64> {
        self.peek().map(|timer| timer.deadline)
    }

    /// The timer due first; heap entries of replaced or cancelled timers on top are dropped on the way.
    pub fn peek(&mut self) -> Option<&Timer<K, T>> {
        while let Some(Reverse(entry)) = self.heap.peek() {
            if let Some((timer, _)) = self.by_key.get(&entry.key) {
                if timer.stamp == entry.stamp {
                    return Some(timer);
                }
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest timer with deadline <= now, removed from the queue; None if nothing is due.
    pub fn pop_due(&mut self, now: i64) -> Option<Timer<K, T>> {
        if self.peek()?.deadline > now {
            return None;
        }
        self.pop_peeked()
    }

    /// Remove the timer `peek` just returned (nothing was scheduled or cancelled since), and return it.
    pub fn pop_peeked(&mut self) -> Option<Timer<K, T>> {
        let Reverse(entry) = self.heap.pop()?;
        self.by_key.remove(&entry.key).map(|(timer, _)| timer)
    }

    /// The pending timers, in the reference's dict order.
    pub fn pending(&self) -> Vec<&Timer<K, T>> {
        let mut placed: Vec<_> = self.by_key.values().collect();
        placed.sort_unstable_by_key(|(_, at)| *at);
        placed.into_iter().map(|(timer, _)| timer).collect()
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
    enum Key {
        Join,
        Heartbeat(String),
        Client(String, String),
    }

    impl TimerKey for Key {
        fn client_side(&self) -> bool {
            matches!(self, Key::Client(..))
        }
    }

    #[test]
    fn coordinator_timers_fire_first_in_scheduling_order_then_clients_in_key_order() {
        let mut q: TimerQueue<Key, &str> = TimerQueue::new();
        q.schedule(Key::Client("c2".into(), "poll".into()), 10, "c2");
        q.schedule(Key::Client("c1".into(), "poll".into()), 10, "c1");
        q.clock = 5;
        q.item = request_item(3, "m");
        q.schedule(Key::Heartbeat("m".into()), 10, "hb");
        q.item = Item::Firing;
        q.schedule(Key::Join, 10, "join");
        q.schedule(Key::Heartbeat("m".into()), 10, "hb again"); // replaced: goes by its new scheduling
        let fired: Vec<_> = std::iter::from_fn(|| q.pop_due(10)).map(|t| t.action).collect();
        assert_eq!(fired, ["join", "hb again", "c1", "c2"]);
    }

    #[test]
    fn a_restored_timer_keeps_its_place_and_goes_last_in_pending() {
        let mut q: TimerQueue<Key, &str> = TimerQueue::new();
        q.schedule(Key::Heartbeat("a".into()), 7, "a");
        q.schedule(Key::Join, 7, "join");
        let taken = q.take(&Key::Heartbeat("a".into())).expect("pending");
        q.restore(taken);
        let pending: Vec<_> = q.pending().iter().map(|t| t.action).collect();
        assert_eq!(pending, ["join", "a"]);
        assert_eq!(q.pop_due(7).map(|t| t.action), Some("a"));
    }
}
