//! Mirrors `state/runtime/quiet_runs.py`: quiet runs, a chain of one client's periodic requests (heartbeats, or
//! its poll loop's commits) that all succeed the same way at a fixed interval, written as one row per table
//! when the run closes, each carrying `repeat_count` and `repeat_interval_ms` (commit runs: the offsets rule,
//! `records_per_second` and `rate_origin_ts`). A run closes when the next request of its chain does not fit,
//! when the client sends anything else or stops, and at the end of the run. How a run's rows read back is
//! quiet_run.rs's rule.
//!
//! The rows are the runtime's (`RunRow`): a run reads a few of their columns, compares them but for the
//! columns that vary from one request to the next, and writes them with the run's columns added, as the
//! reference does with its dicts; `RunOut` is where the rows go. The runtime hands `QuietRuns::handle` the rows
//! the request's answer made (the reference collects them with `out.deferred()` around the handler).

use rustc_hash::FxHashMap;

use crate::dict::Dict;
use crate::offsets::production::rule_offset;

pub const HEARTBEAT_CHAIN: &str = "heartbeat";
pub const COMMIT_CHAIN: &str = "commit";
pub const HEARTBEATS: [&str; 2] = ["HEARTBEAT", "CONSUMER_GROUP_HEARTBEAT"];
/// Response columns that differ from one request of a run to the next; everything else must be equal.
pub const VARYING_RESPONSE: [&str; 5] = ["request_ts", "response_ts", "request_id", "request_seq", "out_seq"];
pub const VARYING_OFFSET: [&str; 5] = ["offset", "log_end_offset", "commit_ts", "write_ts", "out_seq"];

/// An offsets rule, (records/s, rate origin ts, base): offset = rule_offset(rule, ts).
pub type Rule = (f64, i64, i64);
/// The cluster's production model per topic, (since, records/s, base) (ClusterImage.production).
pub type Production = FxHashMap<String, (i64, f64, i64)>;

/// A value the run writes into a row's column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Float(f64),
}

impl From<Option<i64>> for Cell {
    fn from(v: Option<i64>) -> Cell {
        v.map_or(Cell::Null, Cell::Int)
    }
}

/// A row of the runtime's tables, as a run reads and writes it.
pub trait RunRow: Clone {
    /// Whether the row equals `first` but for the columns `varying` names.
    fn equal_except(&self, first: &Self, varying: &[&str]) -> bool;
    /// A text column (`error`, `topic`); None when the row has none or it is null.
    fn text(&self, column: &str) -> Option<&str>;
    /// An integer column (`offset`, `commit_ts`, `write_ts`, `log_end_offset`); None when null or absent.
    fn int(&self, column: &str) -> Option<i64>;
    /// A `responses` row: whether every entry of its `results` has error NONE.
    fn results_ok(&self) -> bool;
    /// The row with these columns set (a column it has keeps its place, a new one goes last).
    fn with(&self, columns: &[(&str, Cell)]) -> Self;
    /// A request's input row with each of its `offsets` partitions given its rule's `records_per_second` and
    /// `rate_origin_ts` where the rule has a rate (as many partitions as rules); unchanged without `offsets`.
    fn with_rules(&self, rules: &[Rule]) -> Self;
}

/// Where a run's rows go (the runtime's output).
pub trait RunOut<R> {
    /// A synthetic client's request, or a run of them, as its `requests` row.
    fn request(&mut self, raw: R, repeat_count: i64, repeat_interval_ms: Option<i64>);
    fn emit(&mut self, table: &str, row: R);
}

/// A request of a periodic chain, as a run reads it.
#[derive(Clone, Debug)]
pub struct PeriodicRequest<'a, R> {
    /// Its chain (`origin/heartbeat`, `origin/commit`, or an input row's run).
    pub run: &'a str,
    pub ts: i64,
    /// The request's type (HEARTBEAT, OFFSET_COMMIT, ...).
    pub kind: &'a str,
    /// The synthetic client that sent it; None for an input row.
    pub origin: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// Each committed partition's own offsets rule, (records_per_second, rate_origin_ts).
    pub offsets: Vec<(Option<f64>, Option<i64>)>,
    /// The request as an input row (state/request_rows.py), for a synthetic client's request.
    pub raw: Option<R>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QuietRun<R> {
    /// The first request as an input row (synthetic clients' chains).
    pub raw: Option<R>,
    /// The first response row.
    pub response: R,
    /// The first commit's `offsets` rows.
    pub offsets: Vec<R>,
    /// Per offsets row: the rule of its offset.
    pub rules: Vec<Rule>,
    /// Per offsets row: the same for its log_end_offset (None: not modelled).
    pub log_end_rules: Vec<Option<Rule>>,
    pub last_ts: i64,
    pub count: i64,
    pub interval: Option<i64>,
}

/// A group's open quiet runs, by chain, in the order they opened.
#[derive(Clone, Debug)]
pub struct QuietRuns<R> {
    pub runs: Dict<String, QuietRun<R>>,
}

impl<R> Default for QuietRuns<R> {
    fn default() -> Self {
        QuietRuns { runs: Dict::default() }
    }
}

fn offset_at(rule: Rule, ts: i64) -> i64 {
    rule_offset(rule, ts).unwrap_or_else(|e| panic!("the offsets rule {rule:?} at {ts}: {e}"))
}

impl<R: RunRow> QuietRuns<R> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Handle a request of a periodic chain, answered with `rows`: fold it into its open run, or close that
    /// run and start a new one, or write it as an ordinary request when it is not quiet.
    pub fn handle(
        &mut self,
        out: &mut impl RunOut<R>,
        production: &Production,
        event: &PeriodicRequest<'_, R>,
        rows: Vec<(&str, R)>,
    ) {
        if let Some(run) = self.runs.get_mut(event.run) {
            if fits(run, event, &rows) {
                run.count += 1;
                run.interval = Some(event.ts - run.last_ts);
                run.last_ts = event.ts;
                return;
            }
            self.close(out, event.run);
        }
        match self.open_run(production, event, &rows) {
            Some(opened) => self.runs.insert(event.run.to_string(), opened),
            None => {
                if event.origin.is_some() {
                    out.request(request_row(event).clone(), 1, None);
                }
                for (table, row) in rows {
                    out.emit(table, row);
                }
            }
        }
    }

    /// The run a request answered with `rows` opens, or None if it is not quiet.
    pub fn open_run(
        &self,
        production: &Production,
        event: &PeriodicRequest<'_, R>,
        rows: &[(&str, R)],
    ) -> Option<QuietRun<R>> {
        let rules = quiet_rules(production, event, rows)?;
        let offsets: Vec<R> = rows[..rows.len() - 1].iter().map(|(_, row)| row.clone()).collect();
        let log_end_rules = offsets.iter().map(|row| log_end_rule(production, row)).collect();
        Some(QuietRun {
            raw: event.origin.map(|_| request_row(event).clone()),
            response: rows[rows.len() - 1].1.clone(),
            offsets,
            rules,
            log_end_rules,
            last_ts: event.ts,
            count: 1,
            interval: None,
        })
    }

    pub fn close(&mut self, out: &mut impl RunOut<R>, key: &str) {
        let run = self.runs.remove(key).expect("an open run");
        write_run(out, &run);
    }

    pub fn has_open(&self, origin: &str) -> bool {
        [HEARTBEAT_CHAIN, COMMIT_CHAIN].iter().any(|chain| self.runs.contains_key(&format!("{origin}/{chain}")))
    }

    /// The client sent something else or stopped: its runs end here.
    pub fn close_client(&mut self, out: &mut impl RunOut<R>, origin: &str) {
        for chain in [HEARTBEAT_CHAIN, COMMIT_CHAIN] {
            let key = format!("{origin}/{chain}");
            if self.runs.contains_key(&key) {
                self.close(out, &key);
            }
        }
    }

    pub fn close_all(&mut self, out: &mut impl RunOut<R>) {
        let keys: Vec<String> = self.runs.keys().cloned().collect();
        for key in keys {
            self.close(out, &key);
        }
    }
}

fn request_row<'e, R>(event: &'e PeriodicRequest<'_, R>) -> &'e R {
    event.raw.as_ref().expect("a synthetic client's request comes with its input row")
}

/// None if the request is not quiet; else the offsets rule of each of its `offsets` rows.
fn quiet_rules<R: RunRow>(
    production: &Production,
    event: &PeriodicRequest<'_, R>,
    rows: &[(&str, R)],
) -> Option<Vec<Rule>> {
    let (table, response) = rows.last()?;
    if *table != "responses" || response.text("error") != Some("NONE") {
        return None;
    }
    if HEARTBEATS.contains(&event.kind) {
        return (rows.len() == 1).then(Vec::new);
    }
    let offsets: Vec<&R> = rows[..rows.len() - 1].iter().filter(|(t, _)| *t == "offsets").map(|(_, row)| row).collect();
    if offsets.len() != rows.len() - 1
        || offsets.len() != event.offsets.len()
        || !response.results_ok()
        || offsets.iter().any(|row| row.int("commit_ts") != Some(event.ts))
    {
        return None;
    }
    let rules: Vec<Rule> = event
        .offsets
        .iter()
        .zip(&offsets)
        .map(|(&partition, row)| commit_rule(production, event, partition, row))
        .collect();
    // A run's log-end offsets grow at its offsets' rate (`records_per_second`): a commit whose offset does
    // not follow production (a client that stopped consuming) is written on its own.
    if offsets.iter().zip(&rules).any(|(&row, rule)| log_end_rule(production, row).is_some_and(|l| l.0 != rule.0)) {
        return None;
    }
    Some(rules)
}

fn fits<R: RunRow>(run: &QuietRun<R>, event: &PeriodicRequest<'_, R>, rows: &[(&str, R)]) -> bool {
    if event.ts <= run.last_ts || run.interval.is_some_and(|interval| event.ts - run.last_ts != interval) {
        return false;
    }
    if rows.len() != run.offsets.len() + 1 || rows[rows.len() - 1].0 != "responses" {
        return false;
    }
    if !rows[rows.len() - 1].1.equal_except(&run.response, &VARYING_RESPONSE) {
        return false;
    }
    let ts = event.ts;
    rows.iter().zip(&run.offsets).zip(&run.rules).zip(&run.log_end_rules).all(
        |((((table, row), first), rule), log_end)| {
            *table == "offsets"
                && row.equal_except(first, &VARYING_OFFSET)
                && row.int("offset") == Some(offset_at(*rule, ts))
                && row.int("commit_ts") == Some(ts)
                && row.int("write_ts") == Some(ts)
                && row.int("log_end_offset") == log_end.map(|l| offset_at(l, ts))
        },
    )
}

fn commit_rule<R: RunRow>(
    production: &Production,
    event: &PeriodicRequest<'_, R>,
    partition: (Option<f64>, Option<i64>),
    row: &R,
) -> Rule {
    let (offset, ts) = (row.int("offset").expect("a commit's offset"), event.ts);
    if let (Some(rate), origin) = partition {
        if rate != 0.0 {
            // an input row's own rule
            let origin = origin.expect("a partition's own rule has its rate_origin_ts");
            return (rate, origin, offset - offset_at((rate, origin, 0), ts));
        }
    }
    if event.origin.is_some() {
        let topic = row.text("topic").unwrap_or_default();
        let (since, rate, base) = production.get(topic).copied().unwrap_or((0, 0.0, 0));
        let request_id = event.request_id.unwrap_or_default();
        let sent: i64 = request_id[request_id.rfind('@').map_or(0, |i| i + 1)..]
            .parse()
            .unwrap_or_else(|_| panic!("a periodic request id ends in its time: {request_id:?}"));
        let rule = (rate, since + ts - sent, base);
        if rate != 0.0 && offset_at(rule, ts) == offset {
            return rule;
        }
    }
    (0.0, 0, offset)
}

/// The production model behind a commit's `log_end_offset` (the runtime's log_end_offset).
fn log_end_rule<R: RunRow>(production: &Production, row: &R) -> Option<Rule> {
    row.int("log_end_offset")?;
    let topic = row.text("topic").unwrap_or_default();
    let (since, rate, base) = *production.get(topic).unwrap_or_else(|| panic!("no production model for {topic:?}"));
    Some((rate, since, base))
}

/// A run's rows, written as it closes: its request (a synthetic client's), responses and offsets.
pub fn write_run<R: RunRow>(out: &mut impl RunOut<R>, run: &QuietRun<R>) {
    if let Some(raw) = &run.raw {
        out.request(run_raw(run, raw), run.count, run.interval);
    }
    let repeat = [("repeat_count", Cell::Int(run.count)), ("repeat_interval_ms", Cell::from(run.interval))];
    for ((row, rule), log_end) in run.offsets.iter().zip(&run.rules).zip(&run.log_end_rules) {
        let rated = run.count > 1 && rule.0 != 0.0;
        let log_end = log_end.filter(|l| run.count > 1 && l.0 != 0.0);
        out.emit(
            "offsets",
            row.with(&[
                repeat[0],
                repeat[1],
                ("records_per_second", if rated { Cell::Float(rule.0) } else { Cell::Null }),
                ("rate_origin_ts", if rated { Cell::Int(rule.1) } else { Cell::Null }),
                ("log_end_origin_ts", Cell::from(log_end.map(|l| l.1))),
            ]),
        );
    }
    out.emit("responses", run.response.with(&repeat));
}

/// The run's `requests` row: the first request, with the repeat and each partition's offsets rule.
fn run_raw<R: RunRow>(run: &QuietRun<R>, raw: &R) -> R {
    if run.count > 1 {
        raw.with(&[("repeat_count", Cell::Int(run.count)), ("repeat_interval_ms", Cell::from(run.interval))])
            .with_rules(&run.rules)
    } else {
        raw.clone()
    }
}
