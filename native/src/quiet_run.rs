//! Mirrors `state/quiet_run.py`'s rule one value at a time (the part the core reads): how one row with
//! `repeat_count` and `repeat_interval_ms` stands for the requests (or commits) of a run (docs/tables.md,
//! "Quiet runs"). A missing value is None here; the reference's NaN (a null pandas read back) is None by the
//! time a value reaches the core. The column forms (numpy) and the row expansion stay with the readers of
//! the tables, in Python.

use crate::offsets::production::{ProductionError, rule_offset};

/// The requests a row stands for, from its `repeat_count`.
pub fn run_count(value: Option<i64>) -> i64 {
    value.map_or(1, |v| v.max(1))
}

/// The ms between a run's requests, from its count and its `repeat_interval_ms`.
pub fn run_interval(count: i64, value: Option<i64>) -> i64 {
    match value {
        Some(v) if count > 1 => v,
        _ => 0,
    }
}

/// Request k's time, given the row's time `first`.
pub fn request_time(first: i64, interval: i64, k: i64) -> i64 {
    first + k * interval
}

/// How many of a run's requests are at or before `at`.
pub fn requests_until(first: i64, count: i64, interval: i64, at: i64) -> i64 {
    if first > at {
        return 0;
    }
    if interval <= 0 { count } else { count.min((at - first).div_euclid(interval) + 1) }
}

/// The time of a run's last request at or before `at` (of its last request at all without `at`); a run
/// whose first request comes after `at` gives its first request's time.
pub fn last_request_time(first: i64, count: i64, interval: i64, at: Option<i64>) -> i64 {
    let passed = at.map_or(count, |at| requests_until(first, count, interval, at));
    request_time(first, interval, passed.max(1) - 1)
}

fn rated(rate: Option<f64>) -> bool {
    rate.is_some_and(|r| r != 0.0)
}

/// `value` at a run's first commit (time `first`), as the commit at time `t` has it: grown by what the
/// offsets rule (`rate` records/s from `origin`) produced between the two.
pub fn grown(value: i64, rate: Option<f64>, origin: Option<i64>, first: i64, t: i64) -> Result<i64, ProductionError> {
    match (rate, origin) {
        (Some(rate), Some(origin)) if rated(Some(rate)) => {
            let rule = (rate, origin, 0);
            let growth = i128::from(rule_offset(rule, t)?) - i128::from(rule_offset(rule, first)?);
            i64::try_from(i128::from(value) + growth).map_err(|_| ProductionError::OutOfRange)
        }
        _ => Ok(value),
    }
}

/// The id of the request `shift` ms after `request_id` in its run: a synthetic client's periodic request
/// (`<client>/heartbeat@<ts>`, `/commit@<ts>`) is named by when it was sent. As the reference's pattern,
/// `^(.*/(?:heartbeat|commit))@(-?\d+)$`: the name may end in one newline, which the new id drops, and has
/// no other. Unlike the reference, whose `\d` takes any Unicode decimal digit, the time is ASCII digits,
/// and one beyond int64 is refused.
pub fn repeated_request_id(request_id: Option<&str>, shift: i64) -> Result<Option<String>, ProductionError> {
    let Some(id) = request_id else { return Ok(None) };
    let text = id.strip_suffix('\n').unwrap_or(id);
    let periodic = text.rsplit_once('@').filter(|(head, time)| {
        let digits = time.strip_prefix('-').unwrap_or(time);
        !head.contains('\n')
            && (head.ends_with("/heartbeat") || head.ends_with("/commit"))
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
    });
    let Some((head, time)) = periodic else { return Ok(Some(id.to_string())) };
    let time: i64 = time.parse().map_err(|_| ProductionError::OutOfRange)?;
    let shifted = time.checked_add(shift).ok_or(ProductionError::OutOfRange)?;
    Ok(Some(format!("{head}@{shifted}")))
}

/// One row's requests read one at a time (request k from 0), without expanding the row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub count: i64,
    pub interval: i64,
    /// records/s of the offsets rule; None: the offset stays the same
    pub rate: Option<f64>,
    /// rate_origin_ts
    pub origin: Option<i64>,
    /// log_end_origin_ts; None: the log-end offset stays the same
    pub log_end_origin: Option<i64>,
}

pub const LONE: Run = Run { count: 1, interval: 0, rate: None, origin: None, log_end_origin: None };

impl Run {
    /// The run of a row, from its `repeat_count`, `repeat_interval_ms`, `records_per_second`,
    /// `rate_origin_ts` and `log_end_origin_ts`.
    pub fn of(
        count: Option<i64>,
        interval: Option<i64>,
        rate: Option<f64>,
        origin: Option<i64>,
        log_end_origin: Option<i64>,
    ) -> Run {
        let count = run_count(count);
        if count == 1 {
            return LONE;
        }
        let interval = run_interval(count, interval);
        if !rated(rate) {
            return Run { count, interval, ..LONE };
        }
        Run { count, interval, rate, origin, log_end_origin }
    }

    /// Request k's time, given the row's time `first`.
    pub fn time(&self, first: i64, k: i64) -> i64 {
        request_time(first, self.interval, k)
    }

    /// Commit k's offset, given the row's `offset` and `commit_ts`.
    pub fn offset(&self, offset: i64, commit_ts: i64, k: i64) -> Result<i64, ProductionError> {
        grown(offset, self.rate, self.origin, commit_ts, self.time(commit_ts, k))
    }

    /// Commit k's log-end offset, given the row's `log_end_offset` and `commit_ts`.
    pub fn log_end_offset(&self, log_end_offset: i64, commit_ts: i64, k: i64) -> Result<i64, ProductionError> {
        grown(log_end_offset, self.rate, self.log_end_origin, commit_ts, self.time(commit_ts, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_ids_shift() {
        assert_eq!(repeated_request_id(Some("c/heartbeat@100"), 5).unwrap().unwrap(), "c/heartbeat@105");
        assert_eq!(repeated_request_id(Some("c/commit@-3\n"), 5).unwrap().unwrap(), "c/commit@2");
        assert_eq!(repeated_request_id(Some("c/heartbeat@"), 5).unwrap().unwrap(), "c/heartbeat@");
        assert_eq!(repeated_request_id(Some("c/heartbeat@--1"), 5).unwrap().unwrap(), "c/heartbeat@--1");
        assert_eq!(repeated_request_id(Some("x\nc/heartbeat@1"), 5).unwrap().unwrap(), "x\nc/heartbeat@1");
        assert_eq!(repeated_request_id(None, 5).unwrap(), None);
    }
}
