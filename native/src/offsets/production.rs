//! Mirrors `state/offsets/production.py`'s `rule_offset`: the production model in one arithmetic. A
//! partition receiving `rate` records per second from time `origin` on top of `base` records holds
//! `base + int(rate * (t - origin) / 1000)` at time t: the difference as a float (correctly rounded, as
//! Python's int-to-float), times the rate, divided by 1000, truncated toward zero. The numpy column form
//! (`rule_offsets`) stays with the views.

use std::fmt;

/// What the reference raises where the arithmetic leaves the integers: Python's `int` of an infinite or NaN
/// float (OverflowError, ValueError); and, the native core's own, an offset beyond int64 (Python's integers
/// have no bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductionError {
    Infinite,
    NotANumber,
    OutOfRange,
}

impl fmt::Display for ProductionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProductionError::Infinite => "cannot convert float infinity to integer",
            ProductionError::NotANumber => "cannot convert float NaN to integer",
            ProductionError::OutOfRange => "the offset is beyond int64",
        })
    }
}

/// 2^63, the first float beyond int64 (i64::MAX rounds up to it).
pub const INT64_BOUND: f64 = i64::MAX as f64;

/// The offset at time t under `rule` = (records per second, origin ts, base offset).
pub fn rule_offset(rule: (f64, i64, i64), t: i64) -> Result<i64, ProductionError> {
    let (rate, origin, base) = rule;
    let produced = rate * ((i128::from(t) - i128::from(origin)) as f64) / 1000.0;
    if produced.is_nan() {
        return Err(ProductionError::NotANumber);
    }
    if produced.is_infinite() {
        return Err(ProductionError::Infinite);
    }
    // |produced| < 2^63 is exactly representable as i64 after truncation; beyond, Python's int grows.
    if produced.abs() >= INT64_BOUND {
        return Err(ProductionError::OutOfRange);
    }
    base.checked_add(produced.trunc() as i64).ok_or(ProductionError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_toward_zero() {
        assert_eq!(rule_offset((1.5, 0, 10), 999), Ok(11));
        assert_eq!(rule_offset((1.5, 1000, 10), 1), Ok(9));
        assert_eq!(rule_offset((f64::INFINITY, 0, 0), 1), Err(ProductionError::Infinite));
        assert_eq!(rule_offset((f64::INFINITY, 0, 0), 0), Err(ProductionError::NotANumber));
    }
}
