//! Mirrors `state/metrics.py`: the group's figures of a run (the `metrics` table):
//! rebalances and their causes, the formation apart from the later rebalances and their durations,
//! and, for groups with synthetic consumers, the unconsumed partition time and its gaps, the partitions that
//! changed hands, the records processed twice or never; the nearest-rank percentile every summary of them
//! uses. The definitions are the reference's module docstring's (docs/tables.md#metrics). `failed_commit`,
//! which the output counts as it writes a `responses` row, comes with the output, and `merged` is the reports'.
//!
//! The reference's Counters ({duration: occurrences}) are read only in duration order here: BTreeMaps. Its
//! dicts by partition are read by key only: hash maps.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

/// Both protocols' group states of these names.
pub const STABLE: &str = "Stable";
pub const EMPTY: &str = "Empty";
pub const DEAD: &str = "Dead";

/// A partition, (topic, partition).
pub type Tp = (String, i32);
/// {value: occurrences}.
pub type Counts = BTreeMap<i64, i64>;

/// The group's figures, stored with its state: told what happened in plain values by the runtime and the
/// client side, it never reads the runtime; `row` is the `metrics` row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupMetrics {
    pub first_activity_ts: Option<i64>,
    /// The formation's end; None while it goes on (a straggler may reopen it).
    pub formed_ts: Option<i64>,
    /// When the formation's latest rebalance started.
    pub formation_rebalance_ts: Option<i64>,
    pub generations: i64,
    pub rebalances: i64,
    pub causes: BTreeMap<String, i64>,
    pub rebalances_after_formation: i64,
    /// Starts of later rebalances awaiting a Stable.
    pub unstable_since: Vec<i64>,
    /// Duration -> rebalances after formation.
    pub rebalance_ms: Counts,
    pub synthetic: bool,
    /// Length -> closed gaps of that length.
    pub gaps_ms: Counts,
    pub moved: i64,
    pub duplicates: i64,
    pub skipped: i64,
    pub failed_commits: i64,
    pub unsent_commits: i64,
    pub owner: FxHashMap<Tp, String>,
    pub unconsumed_since: FxHashMap<Tp, i64>,
    pub last_owner: FxHashMap<Tp, String>,
    pub last_position: FxHashMap<Tp, i64>,
}

/// The unconsumed partition time's columns of the `metrics` row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnconsumedFigures {
    pub unconsumed_partition_ms: i64,
    pub unconsumed_gaps: i64,
    pub unconsumed_gap_ms_p50: Option<i64>,
    pub unconsumed_gap_ms_p99: Option<i64>,
    pub unconsumed_gap_ms_max: Option<i64>,
    pub unconsumed_gap_durations: Vec<(i64, i64)>,
}

/// The `metrics` row (but its group id); the client-side figures are None for a group without synthetic
/// consumers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricsRow {
    pub end_ts: i64,
    pub end_state: Option<String>,
    pub end_members: i64,
    pub generations: i64,
    pub rebalances: i64,
    /// (cause, count), by cause.
    pub rebalance_causes: Vec<(String, i64)>,
    pub rebalances_after_formation: i64,
    pub time_to_stable_ms: Option<i64>,
    pub rebalance_ms_p50: Option<i64>,
    pub rebalance_ms_p99: Option<i64>,
    pub rebalance_ms_max: Option<i64>,
    /// (ms, count), by duration.
    pub rebalance_durations: Vec<(i64, i64)>,
    pub unconsumed: Option<UnconsumedFigures>,
    pub partitions_moved: Option<i64>,
    pub duplicate_records: Option<i64>,
    pub skipped_records: Option<i64>,
    pub failed_commits: i64,
    pub unsent_commits: Option<i64>,
}

impl GroupMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// An event reached the group (the formation runs from the first).
    pub fn activity(&mut self, now: i64) {
        self.first_activity_ts.get_or_insert(now);
    }

    /// A rebalance starts: a classic group entering PreparingRebalance, a consumer group's epoch bump.
    /// `window_ms`: group.initial.rebalance.delay.ms, which tells the formation's rebalances from later ones.
    pub fn rebalance(&mut self, now: i64, cause: &str, window_ms: i64) {
        self.rebalances += 1;
        *self.causes.entry(cause.to_string()).or_insert(0) += 1;
        // A rebalance that follows the formation's previous one by less than the window is the formation's
        // too, even once the group was Stable in between: a later one comes at least the window after it.
        let straggler = self.formation_rebalance_ts.is_some_and(|ts| now - ts < window_ms);
        if self.formed_ts.is_none() || straggler {
            self.formed_ts = None;
            self.formation_rebalance_ts = Some(now);
        } else {
            self.rebalances_after_formation += 1;
            self.unstable_since.push(now);
        }
    }

    /// The group is in `state` (either protocol's state, by name) after a write or a transition.
    pub fn group_state(&mut self, now: i64, state: &str) {
        if state == STABLE {
            self.formed_ts.get_or_insert(now);
            for since in self.unstable_since.drain(..) {
                *self.rebalance_ms.entry(now - since).or_insert(0) += 1;
            }
        } else if state == EMPTY || state == DEAD {
            self.unstable_since.clear();
        }
    }

    /// A client failed a commit before sending it (CommitFailedException).
    pub fn unsent_commit(&mut self) {
        self.unsent_commits += 1;
    }

    /// Which of `partitions` another client still consumes, by that client, in `partitions`' order (each once).
    pub fn consumers(&self, client_id: &str, partitions: &[Tp]) -> Vec<(Tp, String)> {
        let mut out: Vec<(Tp, String)> = Vec::new();
        for tp in partitions {
            if let Some(owner) = self.owner.get(tp).filter(|owner| *owner != client_id) {
                if !out.iter().any(|(seen, _)| seen == tp) {
                    out.push((tp.clone(), owner.clone()));
                }
            }
        }
        out
    }

    /// `client_id` starts processing `partitions` at `now`. Per partition: `consumed`, the position of the
    /// client `consumers` named (None if it has none); `committed`, the offset the group's log holds (None if
    /// none); `log_end`, the log-end offset where nothing is committed (with auto.offset.reset=latest).
    #[allow(clippy::too_many_arguments)]
    pub fn start_consuming(
        &mut self,
        now: i64,
        client_id: &str,
        partitions: &[Tp],
        consumed: &FxHashMap<Tp, Option<i64>>,
        committed: &FxHashMap<Tp, Option<i64>>,
        log_end: &FxHashMap<Tp, i64>,
        reset_earliest: bool,
    ) {
        self.synthetic = true;
        for tp in partitions {
            if self.owner.get(tp).is_some_and(|owner| owner == client_id) {
                continue;
            }
            if let Some(since) = self.unconsumed_since.remove(tp) {
                self.close_gap(now, since);
            }
            if self.last_owner.get(tp).is_some_and(|previous| previous != client_id) {
                self.moved += 1;
            }
            let processed = match consumed.get(tp) {
                Some(position) => *position,
                None => self.last_position.get(tp).copied(),
            };
            if let Some(processed) = processed {
                match committed[tp] {
                    Some(offset) => self.duplicates += (processed - offset).max(0),
                    None if reset_earliest => self.duplicates += processed,
                    None => self.skipped += (log_end[tp] - processed).max(0),
                }
            }
            self.owner.insert(tp.clone(), client_id.to_string());
            self.last_owner.insert(tp.clone(), client_id.to_string());
        }
    }

    /// The client stopped consuming these partitions at `now`, having processed up to `positions`.
    pub fn stop_consuming(&mut self, now: i64, client_id: &str, positions: &[(Tp, i64)]) {
        for (tp, position) in positions {
            if self.owner.get(tp).is_none_or(|owner| owner != client_id) {
                continue;
            }
            self.owner.remove(tp);
            self.unconsumed_since.insert(tp.clone(), now);
            self.last_position.insert(tp.clone(), *position);
        }
    }

    /// The group's last running consumer was closed on purpose: partitions nobody is meant to consume any
    /// more stop counting as unconsumed (a crash, by contrast, leaves them waiting for a consumer).
    pub fn consumption_ended(&mut self, now: i64) {
        let open: Vec<i64> = self.unconsumed_since.drain().map(|(_, since)| since).collect();
        for since in open {
            self.close_gap(now, since);
        }
    }

    fn close_gap(&mut self, now: i64, since: i64) {
        // A handoff within the same millisecond left the partition unprocessed for no time: not a gap.
        if now > since {
            *self.gaps_ms.entry(now - since).or_insert(0) += 1;
        }
    }

    /// The group's `metrics` row at `now`, the group in `end_state` (None: no group) with `end_members`.
    pub fn row(&self, now: i64, end_state: Option<&str>, end_members: i64) -> MetricsRow {
        let client_side = self.synthetic;
        let if_client = |v: i64| client_side.then_some(v);
        MetricsRow {
            end_ts: now,
            end_state: end_state.map(str::to_string),
            end_members,
            generations: self.generations,
            rebalances: self.rebalances,
            rebalance_causes: self.causes.iter().map(|(c, n)| (c.clone(), *n)).collect(),
            rebalances_after_formation: self.rebalances_after_formation,
            time_to_stable_ms: self.formed_ts.zip(self.first_activity_ts).map(|(formed, first)| formed - first),
            rebalance_ms_p50: nearest_rank(&self.rebalance_ms, 50),
            rebalance_ms_p99: nearest_rank(&self.rebalance_ms, 99),
            rebalance_ms_max: nearest_rank(&self.rebalance_ms, 100),
            rebalance_durations: distribution(&self.rebalance_ms),
            unconsumed: client_side
                .then(|| unconsumed_figures(&self.gaps_ms, self.unconsumed_since.values().copied(), now)),
            partitions_moved: if_client(self.moved),
            duplicate_records: if_client(self.duplicates),
            skipped_records: if_client(self.skipped),
            failed_commits: self.failed_commits,
            unsent_commits: if_client(self.unsent_commits),
        }
    }
}

/// Nearest-rank percentile of values given as {value: occurrences}: a value that occurred, never an
/// interpolation (so p99 of fewer than 100 values is their maximum); None without values.
pub fn nearest_rank(counts: &Counts, percent: i64) -> Option<i64> {
    let total: i64 = counts.values().sum();
    let rank = (percent * total).div_euclid(100) + i64::from((percent * total).rem_euclid(100) != 0);
    let mut seen = 0;
    for (&value, &n) in counts {
        seen += n;
        if seen >= rank.max(1) {
            return Some(value);
        }
    }
    None
}

/// The `metrics` columns of unconsumed partition time at `now`: the closed gaps ({length: gaps}), and the gaps
/// still open (since each of `open_since`) counted up to `now`.
pub fn unconsumed_figures(closed: &Counts, open_since: impl Iterator<Item = i64>, now: i64) -> UnconsumedFigures {
    let mut gaps = closed.clone();
    for since in open_since.filter(|&since| now > since) {
        *gaps.entry(now - since).or_insert(0) += 1;
    }
    gaps.retain(|_, n| *n > 0); // Counter addition keeps the positive counts only
    UnconsumedFigures {
        unconsumed_partition_ms: gaps.iter().map(|(ms, n)| ms * n).sum(),
        unconsumed_gaps: gaps.values().sum(),
        unconsumed_gap_ms_p50: nearest_rank(&gaps, 50),
        unconsumed_gap_ms_p99: nearest_rank(&gaps, 99),
        unconsumed_gap_ms_max: nearest_rank(&gaps, 100),
        unconsumed_gap_durations: distribution(&gaps),
    }
}

/// The table form of {duration: occurrences}: (ms, count) by duration.
pub fn distribution(counts: &Counts) -> Vec<(i64, i64)> {
    counts.iter().map(|(&ms, &n)| (ms, n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_is_a_value_that_occurred() {
        let counts: Counts = [(10, 1), (20, 2), (30, 1)].into_iter().collect();
        assert_eq!([50, 99, 100, 1].map(|p| nearest_rank(&counts, p)), [Some(20), Some(30), Some(30), Some(10)]);
        assert_eq!(nearest_rank(&Counts::new(), 50), None);
    }
}
