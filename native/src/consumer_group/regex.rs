//! Mirrors `state/consumer_group/regex.py`: regular-expression subscriptions of the consumer protocol (KIP-848's
//! SubscribedTopicRegex): the RE2J syntax check a new regex gets (Kafka's Utils.throwIfRegularExpressionIsInvalid),
//! its resolution against the topics the coordinator knows (TopicRegexResolver.resolveRegularExpressions), and
//! when a heartbeat asks for one (GroupMetadataManager.maybeUpdateRegularExpressions), trunk.
//!
//! The reference stands Python's `re` in for RE2J, after refusing the constructs where they differ; here
//! `python_re` is that `re`, so both cores accept and refuse the same patterns, with the same messages, and
//! match topic names alike (docs/native.md says where the port stops).

use crate::consumer_group::records::{ConsumerGroupRecord, ResolvedRegularExpression};
use crate::dict::{Counter, Dict};
use crate::python_re::{self, Pattern};

/// GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: the regexes of a group are refreshed at most
/// this often, whatever asks for it.
pub const REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: i64 = 10_000;
/// ConsumerGroup.lastResolvedRegularExpressionRefreshTimeMs of a group with no resolved regex.
pub const NEVER: i64 = i64::MIN;

const REFUSED_GROUPS: [(&str, &str); 7] = [
    ("(?=", "lookahead"),
    ("(?!", "negative lookahead"),
    ("(?<=", "lookbehind"),
    ("(?<!", "negative lookbehind"),
    ("(?>", "atomic group"),
    ("(?(", "conditional"),
    ("(?#", "comment"),
];

/// A regex RE2J would not compile (or this simulator cannot evaluate): Kafka's InvalidRegularExpression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidRegularExpression(pub String);

fn refuse(regex: &str, why: &str) -> InvalidRegularExpression {
    InvalidRegularExpression(format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {why}."))
}

fn starts_with(chars: &[char], i: usize, prefix: &str) -> bool {
    (i..).zip(prefix.chars()).all(|(j, p)| chars.get(j) == Some(&p))
}

/// The regex as a pattern, or InvalidRegularExpression where RE2J would refuse it (or the simulator cannot
/// evaluate it): see regex.py's notes.
pub fn compile_regex(regex: &str) -> Result<Pattern, InvalidRegularExpression> {
    let chars: Vec<char> = regex.chars().collect();
    let mut out = String::with_capacity(regex.len());
    let (mut i, mut in_class) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' {
            let Some(nxt) = next else { return Err(refuse(regex, "trailing backslash at end of expression")) };
            if ('1'..='9').contains(&nxt) {
                return Err(refuse(
                    regex,
                    &format!("invalid escape sequence: `\\{nxt}` (backreferences are not supported)"),
                ));
            }
            if nxt == 'Z' {
                return Err(refuse(regex, "invalid escape sequence: `\\Z`"));
            }
            if "pPQE".contains(nxt) {
                return Err(refuse(regex, &format!("`\\{nxt}` is RE2J syntax this simulator does not evaluate")));
            }
            out.push('\\');
            out.push(if nxt == 'z' { 'Z' } else { nxt });
            i += 2;
            continue;
        }
        if in_class {
            if starts_with(&chars, i, "[:") {
                return Err(refuse(regex, "POSIX character classes are RE2J syntax this simulator does not evaluate"));
            }
            if c == ']' {
                in_class = false;
            }
        } else if c == '[' {
            in_class = true;
            // A `]` right after `[` or `[^` is a literal.
            let j = i + 1 + usize::from(next == Some('^'));
            if chars.get(j) == Some(&']') {
                out.extend(&chars[i..=j]);
                i = j + 1;
                continue;
            }
        } else if c == '(' {
            for (prefix, name) in REFUSED_GROUPS {
                if starts_with(&chars, i, prefix) {
                    return Err(refuse(regex, &format!("invalid or unsupported Perl syntax: `{prefix}` ({name})")));
                }
            }
            if starts_with(&chars, i, "(?<") {
                return Err(refuse(
                    regex,
                    "`(?<name>` is RE2J syntax this simulator does not evaluate (use `(?P<name>`)",
                ));
            }
        } else if "*+?}".contains(c) && next == Some('+') {
            return Err(refuse(regex, &format!("bad repetition operator: `{c}+`")));
        }
        out.push(c);
        i += 1;
    }
    python_re::compile(&out).map_err(|error| refuse(regex, &error))
}

/// Utils.throwIfRegularExpressionIsInvalid.
pub fn throw_if_regular_expression_is_invalid(regex: &str) -> Result<(), InvalidRegularExpression> {
    compile_regex(regex).map(|_| ())
}

/// TopicRegexResolver.resolveRegularExpressions: each regex with the topics whose whole name it matches (in
/// name order), stamped with the image version and the time. A regex that does not compile (never: they are
/// checked when a member brings them) matches nothing, as Kafka logs and ignores it.
pub fn resolve_regular_expressions<'a>(
    regexes: impl IntoIterator<Item = &'a String>,
    topic_names: impl IntoIterator<Item = &'a String>,
    version: i64,
    now: i64,
) -> Dict<String, ResolvedRegularExpression> {
    let mut names: Vec<&String> = topic_names.into_iter().collect();
    names.sort_unstable();
    let mut resolved = Dict::default();
    for regex in regexes {
        let topics = match compile_regex(regex) {
            Ok(pattern) => names.iter().filter(|name| pattern.fullmatch(name)).map(|name| (*name).clone()).collect(),
            Err(_) => Vec::new(),
        };
        resolved.insert(regex.clone(), ResolvedRegularExpression { topics, version, timestamp: now });
    }
    resolved
}

/// GroupMetadataManager.UpdateRegularExpressionStatus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegexUpdate {
    NoChange,
    /// The member's regex changed; not resolved yet: no epoch bump now.
    Updated,
    /// Changed to a resolved regex (or to none): bump.
    UpdatedAndResolved,
}

impl RegexUpdate {
    pub fn regex_updated(self) -> bool {
        self != RegexUpdate::NoChange
    }

    pub fn name(self) -> &'static str {
        match self {
            RegexUpdate::NoChange => "NO_CHANGE",
            RegexUpdate::Updated => "UPDATED",
            RegexUpdate::UpdatedAndResolved => "UPDATED_AND_RESOLVED",
        }
    }
}

/// What maybe_update_regular_expressions decides: the status, the records (the tombstone of a regex its
/// last member leaves) and the regexes to resolve now (None: no refresh), sorted.
pub type RegexDecision = (RegexUpdate, Vec<ConsumerGroupRecord>, Option<Vec<String>>);

/// maybeUpdateRegularExpressions for a member changing its regex from `old_regex` to `new_regex` ("" for
/// none) in a group whose members subscribe to `subscribed` (regex -> members) and which resolved
/// `resolved`. InvalidRegularExpression for a new, invalid regex.
///
/// A refresh happens at most every REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (counted from the last resolution),
/// and then only if a regex is unresolved, a topic was created since the last resolution (image version),
/// or the last one is older than group.consumer.regex.refresh.interval.ms.
#[allow(clippy::too_many_arguments)]
pub fn maybe_update_regular_expressions(
    old_regex: &str,
    new_regex: &str,
    subscribed: &Counter,
    resolved: &Dict<String, ResolvedRegularExpression>,
    now: i64,
    refresh_interval_ms: i64,
    new_topics_version: i64,
) -> Result<RegexDecision, InvalidRegularExpression> {
    let mut records = Vec::new();
    let (mut status, mut require_refresh) = (RegexUpdate::NoChange, false);
    if old_regex != new_regex {
        status = RegexUpdate::Updated;
        if !old_regex.is_empty() && subscribed.count(old_regex) == 1 {
            records.push(ConsumerGroupRecord::RegularExpression { regex: old_regex.to_string(), value: None });
        }
        if !new_regex.is_empty() {
            if subscribed.count(new_regex) == 0 {
                throw_if_regular_expression_is_invalid(new_regex)?;
                require_refresh = true;
            } else if resolved.contains_key(new_regex) {
                status = RegexUpdate::UpdatedAndResolved;
            }
        } else if !old_regex.is_empty() {
            status = RegexUpdate::UpdatedAndResolved;
        }
    }
    if !require_refresh && subscribed.is_empty() {
        return Ok((status, records, None));
    }
    let last_refresh = last_refresh_time_ms(resolved);
    if now <= last_refresh.saturating_add(REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) {
        return Ok((status, records, None));
    }
    let mut counts = subscribed.clone();
    if !old_regex.is_empty() {
        counts.add(old_regex, -1);
    }
    if !new_regex.is_empty() {
        counts.add(new_regex, 1);
    }
    let mut regexes: Vec<String> = counts.iter().filter(|(_, count)| **count > 0).map(|(r, _)| r.clone()).collect();
    require_refresh |= regexes.len() != resolved.len();
    require_refresh |= last_version(resolved) < new_topics_version;
    require_refresh |= now > last_refresh.saturating_add(refresh_interval_ms);
    if require_refresh && !regexes.is_empty() {
        // Python's sorted(str): code point order, which is UTF-8 byte order.
        regexes.sort_unstable();
        return Ok((status, records, Some(regexes)));
    }
    Ok((status, records, None))
}

/// lastResolvedRegularExpressionRefreshTimeMs: the first one's (they are resolved together).
pub fn last_refresh_time_ms(resolved: &Dict<String, ResolvedRegularExpression>) -> i64 {
    resolved.values().next().map_or(NEVER, |r| r.timestamp)
}

/// lastResolvedRegularExpressionVersion: the first one's, 0 with none.
pub fn last_version(resolved: &Dict<String, ResolvedRegularExpression>) -> i64 {
    resolved.values().next().map_or(0, |r| r.version)
}
