//! Mirrors part of `state/consumer_group/manager.py` (`_json_value` and the `json.dumps(..., sort_keys=True)` of
//! `_record_row`): a consumer group record's value as the `consumer_group_records` table's `value` column
//! writes it (docs/tables.md). Objects take the reference's field names (snake case), topic ids their
//! base64 text, bytes (a classic protocol's metadata) standard base64, a member state its byte; keys sorted
//! as Python sorts them (a partition map's by number), and the text as Python's json writes it (ASCII only,
//! ", " and ": " separators).

use std::fmt::Write;

use crate::consumer_group::records::{ConsumerGroupRecord, CurrentAssignment, MemberSubscription, PartitionEpochs};

/// A JSON value; an object's keys are text or (a partition map's) numbers, which Python sorts apart.
enum Json {
    Null,
    Int(i64),
    Str(String),
    List(Vec<Json>),
    Obj(Vec<(String, Json)>),
    IntKeyed(Vec<(i64, Json)>),
}

fn object(fields: Vec<(&str, Json)>) -> Json {
    Json::Obj(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn opt_str(s: &Option<String>) -> Json {
    s.as_ref().map_or(Json::Null, |s| Json::Str(s.clone()))
}

fn strings(items: &[String]) -> Json {
    Json::List(items.iter().map(|s| Json::Str(s.clone())).collect())
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// base64.b64encode: standard alphabet, padded.
fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() { char::from(BASE64[(n >> (18 - 6 * i) & 63) as usize]) } else { '=' });
        }
    }
    out
}

fn epochs(partitions: &PartitionEpochs) -> Json {
    Json::Obj(
        partitions
            .iter()
            .map(|(topic_id, ps)| {
                (
                    topic_id.to_string(),
                    Json::IntKeyed(ps.iter().map(|(p, e)| (i64::from(*p), Json::Int(i64::from(*e)))).collect()),
                )
            })
            .collect(),
    )
}

fn subscription(s: &MemberSubscription) -> Json {
    let classic = s.classic_member_metadata.as_ref().map_or(Json::Null, |c| {
        object(vec![
            ("session_timeout_ms", Json::Int(i64::from(c.session_timeout_ms))),
            (
                "supported_protocols",
                Json::List(
                    c.supported_protocols
                        .iter()
                        .map(|p| {
                            object(vec![
                                ("name", Json::Str(p.name.clone())),
                                ("metadata", Json::Str(base64(&p.metadata))),
                            ])
                        })
                        .collect(),
                ),
            ),
        ])
    });
    object(vec![
        ("instance_id", opt_str(&s.instance_id)),
        ("rack_id", opt_str(&s.rack_id)),
        ("client_id", Json::Str(s.client_id.clone())),
        ("client_host", Json::Str(s.client_host.clone())),
        ("subscribed_topic_names", strings(&s.subscribed_topic_names)),
        ("subscribed_topic_regex", Json::Str(s.subscribed_topic_regex.clone())),
        ("server_assignor", opt_str(&s.server_assignor)),
        ("rebalance_timeout_ms", Json::Int(i64::from(s.rebalance_timeout_ms))),
        ("classic_member_metadata", classic),
    ])
}

fn current(c: &CurrentAssignment) -> Json {
    object(vec![
        ("state", Json::Int(i64::from(c.state))),
        ("member_epoch", Json::Int(i64::from(c.member_epoch))),
        ("previous_member_epoch", Json::Int(i64::from(c.previous_member_epoch))),
        ("assigned_partitions", epochs(&c.assigned_partitions)),
        ("partitions_pending_revocation", epochs(&c.partitions_pending_revocation)),
    ])
}

/// The record's value as the `value` column holds it; None for a tombstone.
pub fn record_value_json(record: &ConsumerGroupRecord) -> Option<String> {
    let value = match record {
        ConsumerGroupRecord::Metadata(v) => v.as_ref().map(|e| {
            object(vec![("epoch", Json::Int(i64::from(e.epoch))), ("metadata_hash", Json::Int(e.metadata_hash))])
        })?,
        ConsumerGroupRecord::PartitionMetadata => return None,
        ConsumerGroupRecord::MemberMetadata { value, .. } => subscription(value.as_ref()?),
        ConsumerGroupRecord::TargetAssignmentMetadata(v) => v.as_ref().map(|m| {
            object(vec![
                ("assignment_epoch", Json::Int(i64::from(m.assignment_epoch))),
                ("assignment_timestamp_ms", Json::Int(m.assignment_timestamp_ms)),
            ])
        })?,
        ConsumerGroupRecord::TargetAssignmentMember { value, .. } => Json::List(
            value
                .as_ref()?
                .iter()
                .map(|(t, ps)| {
                    Json::List(vec![
                        Json::Str(t.to_string()),
                        Json::List(ps.iter().map(|p| Json::Int(i64::from(*p))).collect()),
                    ])
                })
                .collect(),
        ),
        ConsumerGroupRecord::CurrentMemberAssignment { value, .. } => current(value.as_ref()?),
        ConsumerGroupRecord::RegularExpression { value, .. } => value.as_ref().map(|r| {
            object(vec![
                ("topics", strings(&r.topics)),
                ("version", Json::Int(r.version)),
                ("timestamp", Json::Int(r.timestamp)),
            ])
        })?,
    };
    let mut out = String::new();
    write_json(&mut out, &value);
    Some(out)
}

/// json.dumps's string: ASCII only (ensure_ascii), the short escapes, \uXXXX for the rest (surrogate pairs
/// beyond the BMP).
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

fn write_json(out: &mut String, value: &Json) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Json::Str(s) => write_str(out, s),
        Json::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Json::Obj(fields) => {
            let mut fields: Vec<&(String, Json)> = fields.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            write_members(out, fields.into_iter().map(|(k, v)| (k.clone(), v)));
        }
        Json::IntKeyed(fields) => {
            let mut fields: Vec<&(i64, Json)> = fields.iter().collect();
            fields.sort_by_key(|f| f.0);
            write_members(out, fields.into_iter().map(|(k, v)| (k.to_string(), v)));
        }
    }
}

fn write_members<'a>(out: &mut String, members: impl Iterator<Item = (String, &'a Json)>) {
    out.push('{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_str(out, &key);
        out.push_str(": ");
        write_json(out, value);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_as_pythons() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xff, 0xfe, 0x00, 0x7f]), "//4Afw==");
    }
}
