//! Mirrors `state/records/record_bytes.py`: the bytes a Kafka 4.x group coordinator appends to `__consumer_offsets`
//! for a group's records, and their sizes. The record key and value as GroupCoordinatorRecordSerde writes
//! them, each record as the v2 record format (DefaultRecord) holds it, and the uncompressed record batch
//! (DefaultRecordBatch) around one operation's records.
//!
//! Key: the record type as int16, then the key message (not flexible). Value: the value version as int16,
//! then the value message; a tombstone has a null value. GroupMetadataValue is written at v3;
//! OffsetCommitValue at v1 when the commit set an expire timestamp, else v4 with the topic id as tagged
//! field 0 (Kafka 4.1+, KAFKA-19141) or v3 without it (4.0). Consumer group values are at version 0, which is
//! flexible: compact strings and arrays, tagged fields closing each structure.

use crate::consumer_group::records::{ClassicMemberMetadata, ConsumerGroupRecord, PartitionEpochs};
use crate::consumer_group::topic_id::TopicId;
use crate::records::group_log::{GroupMetadataValue, OffsetCommitValue, Record};

// CoordinatorRecordType ids: the key's int16 prefix.
pub const OFFSET_COMMIT: i16 = 1;
pub const GROUP_METADATA: i16 = 2;

pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 4; // Kafka 4.1+
pub const OFFSET_COMMIT_VALUE_VERSION_4_0: i16 = 3;
pub const OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP: i16 = 1;
pub const OFFSET_COMMIT_TOPIC_ID_TAG: u32 = 0;
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;
pub const CONSUMER_GROUP_VALUE_VERSION: i16 = 0;

/// DefaultRecordBatch.RECORD_BATCH_OVERHEAD: base offset 8, batch length 4, partition leader epoch 4, magic
/// 1, crc 4, attributes 2, last offset delta 4, base timestamp 8, max timestamp 8, producer id 8, producer
/// epoch 2, base sequence 4, record count 4.
pub const RECORD_BATCH_OVERHEAD: usize = 61;

pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
pub const NO_TIMESTAMP: i64 = -1;

/// A record of either kind of group, as `__consumer_offsets` holds them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnyRecord {
    Classic(Record),
    ConsumerGroup(ConsumerGroupRecord),
}

/// ByteUtils.writeUnsignedVarint: 7 bits a byte, low bits first.
fn unsigned_varint(out: &mut Vec<u8>, mut u: u64) {
    while u > 0x7F {
        out.push((u & 0x7F) as u8 | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

/// ByteUtils.writeVarint: zigzag, then as an unsigned varint.
pub fn varint(out: &mut Vec<u8>, n: i32) {
    unsigned_varint(out, u64::from(((n << 1) ^ (n >> 31)) as u32));
}

/// ByteUtils.writeVarlong: as `varint`, over 64 bits.
pub fn varlong(out: &mut Vec<u8>, n: i64) {
    unsigned_varint(out, ((n << 1) ^ (n >> 63)) as u64);
}

fn int16(out: &mut Vec<u8>, n: i16) {
    out.extend_from_slice(&n.to_be_bytes());
}

fn int32(out: &mut Vec<u8>, n: i32) {
    out.extend_from_slice(&n.to_be_bytes());
}

fn int64(out: &mut Vec<u8>, n: i64) {
    out.extend_from_slice(&n.to_be_bytes());
}

/// A non-flexible string: int16 length (-1 for null), then UTF-8.
fn string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => int16(out, -1),
        Some(s) => {
            int16(out, s.len() as i16);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    int32(out, b.len() as i32);
    out.extend_from_slice(b);
}

/// A compact length: n + 1 as an unsigned varint (0 stands for null).
fn compact_len(out: &mut Vec<u8>, n: usize) {
    unsigned_varint(out, n as u64 + 1);
}

fn compact_string(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => unsigned_varint(out, 0),
        Some(s) => {
            compact_len(out, s.len());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

fn compact_int32s(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = i32>) {
    compact_len(out, values.len());
    for v in values {
        int32(out, v);
    }
}

fn uuid(out: &mut Vec<u8>, topic_id: &TopicId) {
    out.extend_from_slice(&topic_id.to_bytes());
}

/// The tagged fields section: how many, then each as tag, size and data, tags ascending.
fn tagged(out: &mut Vec<u8>, mut fields: Vec<(u32, Vec<u8>)>) {
    fields.sort_by_key(|(tag, _)| *tag);
    unsigned_varint(out, fields.len() as u64);
    for (tag, data) in fields {
        unsigned_varint(out, u64::from(tag));
        unsigned_varint(out, data.len() as u64);
        out.extend_from_slice(&data);
    }
}

fn written(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut out);
    out
}

/// The record's key, type-prefixed: OffsetCommitKey(group, topic, partition), GroupMetadataKey(group), or a
/// consumer group record's key (group, and the member id or regex of a record keyed by one).
pub fn key_bytes(record: &AnyRecord, group_id: &str) -> Vec<u8> {
    let mut out = Vec::new();
    match record {
        AnyRecord::Classic(Record::OffsetCommit(r)) => {
            int16(&mut out, OFFSET_COMMIT);
            string(&mut out, Some(group_id));
            string(&mut out, Some(&r.topic));
            int32(&mut out, r.partition);
        }
        AnyRecord::Classic(Record::GroupMetadata(_)) => {
            int16(&mut out, GROUP_METADATA);
            string(&mut out, Some(group_id));
        }
        AnyRecord::ConsumerGroup(r) => {
            let (record_type, member_id) = r.key();
            int16(&mut out, record_type);
            string(&mut out, Some(group_id));
            if let Some(m) = member_id {
                string(&mut out, Some(m));
            }
        }
    }
    out
}

/// The record's value, version-prefixed, or None for a tombstone; `kafka_4_0`: a consumer group's value as
/// Kafka 4.0's schemas write it (without the tagged fields 4.1+ added).
pub fn value_bytes(record: &AnyRecord, kafka_4_0: bool) -> Option<Vec<u8>> {
    match record {
        AnyRecord::Classic(Record::OffsetCommit(r)) => r.value.as_ref().map(offset_commit_value),
        AnyRecord::Classic(Record::GroupMetadata(v)) => v.as_ref().map(group_metadata_value),
        AnyRecord::ConsumerGroup(r) if r.is_tombstone() => None,
        AnyRecord::ConsumerGroup(r) => Some(written(|out| {
            int16(out, CONSUMER_GROUP_VALUE_VERSION);
            consumer_group_value(out, r, kafka_4_0);
        })),
    }
}

/// The OffsetCommitValue version `value` is written at (GroupCoordinatorRecordHelpers.
/// offsetCommitValueVersion): 1 with an expire timestamp; otherwise 4 with the committed topic's id (Kafka
/// 4.1+), 3 without (Kafka 4.0).
pub fn offset_commit_value_version(value: &OffsetCommitValue) -> i16 {
    if value.expire_ts.is_some() {
        return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP;
    }
    if value.topic_id.is_none() { OFFSET_COMMIT_VALUE_VERSION_4_0 } else { OFFSET_COMMIT_VALUE_VERSION }
}

fn offset_commit_value(v: &OffsetCommitValue) -> Vec<u8> {
    let version = offset_commit_value_version(v);
    let mut out = Vec::new();
    int16(&mut out, version);
    int64(&mut out, v.offset);
    if let Some(expire_ts) = v.expire_ts {
        string(&mut out, v.metadata.as_deref());
        int64(&mut out, v.commit_ts);
        int64(&mut out, expire_ts);
        return out;
    }
    int32(&mut out, v.leader_epoch.unwrap_or(NO_PARTITION_LEADER_EPOCH));
    match &v.topic_id {
        None => {
            string(&mut out, v.metadata.as_deref());
            int64(&mut out, v.commit_ts);
        }
        Some(topic_id) => {
            // Flexible: the metadata a compact string, the topic id a tagged field.
            compact_string(&mut out, v.metadata.as_deref());
            int64(&mut out, v.commit_ts);
            tagged(&mut out, vec![(OFFSET_COMMIT_TOPIC_ID_TAG, topic_id.to_bytes().to_vec())]);
        }
    }
    out
}

fn group_metadata_value(v: &GroupMetadataValue) -> Vec<u8> {
    let mut out = Vec::new();
    int16(&mut out, GROUP_METADATA_VALUE_VERSION);
    string(&mut out, v.protocol_type.as_deref());
    int32(&mut out, v.generation_id);
    string(&mut out, v.protocol_name.as_deref());
    string(&mut out, v.leader_id.as_deref());
    int64(&mut out, v.current_state_ts.unwrap_or(NO_TIMESTAMP));
    int32(&mut out, v.members.len() as i32);
    for m in &v.members {
        string(&mut out, m.member_id.as_deref());
        string(&mut out, m.group_instance_id.as_deref());
        string(&mut out, m.client_id.as_deref());
        string(&mut out, m.client_host.as_deref());
        int32(&mut out, m.rebalance_timeout_ms);
        int32(&mut out, m.session_timeout_ms);
        bytes(&mut out, &m.subscription);
        bytes(&mut out, &m.assignment);
    }
    out
}

/// An int64 tagged field with default 0, written only when set.
fn if_set(tag: u32, value: i64) -> Vec<(u32, Vec<u8>)> {
    if value == 0 { Vec::new() } else { vec![(tag, value.to_be_bytes().to_vec())] }
}

/// []TopicPartitions of ConsumerGroupCurrentMemberAssignmentValue: each topic's partitions and, tagged, the
/// assignment epoch of each (GroupCoordinatorRecordHelpers always sets them; Kafka 4.0's TopicPartitions has no
/// AssignmentEpochs).
fn partition_epochs(out: &mut Vec<u8>, assignment: &PartitionEpochs, kafka_4_0: bool) {
    compact_len(out, assignment.len());
    for (topic_id, epochs) in assignment {
        uuid(out, topic_id);
        compact_int32s(out, epochs.iter().map(|(p, _)| *p));
        if kafka_4_0 {
            tagged(out, Vec::new());
        } else {
            let epochs = written(|o| compact_int32s(o, epochs.iter().map(|(_, e)| *e)));
            tagged(out, vec![(0, epochs)]);
        }
    }
}

fn consumer_group_value(out: &mut Vec<u8>, record: &ConsumerGroupRecord, kafka_4_0: bool) {
    // Kafka 4.0's ConsumerGroupMetadataValue has no MetadataHash, its TargetAssignmentMetadataValue no
    // AssignmentTimestamp.
    match record {
        ConsumerGroupRecord::Metadata(Some(v)) => {
            int32(out, v.epoch);
            tagged(out, if kafka_4_0 { Vec::new() } else { if_set(0, v.metadata_hash) });
        }
        ConsumerGroupRecord::TargetAssignmentMetadata(Some(v)) => {
            int32(out, v.assignment_epoch);
            tagged(out, if kafka_4_0 { Vec::new() } else { if_set(0, v.assignment_timestamp_ms) });
        }
        ConsumerGroupRecord::TargetAssignmentMember { value: Some(topics), .. } => {
            compact_len(out, topics.len());
            for (topic_id, partitions) in topics {
                uuid(out, topic_id);
                compact_int32s(out, partitions.iter().copied());
                tagged(out, Vec::new());
            }
            tagged(out, Vec::new());
        }
        ConsumerGroupRecord::RegularExpression { value: Some(v), .. } => {
            compact_len(out, v.topics.len());
            for t in &v.topics {
                compact_string(out, Some(t));
            }
            int64(out, v.version);
            int64(out, v.timestamp);
            tagged(out, Vec::new());
        }
        ConsumerGroupRecord::CurrentMemberAssignment { value: Some(v), .. } => {
            int32(out, v.member_epoch);
            int32(out, v.previous_member_epoch);
            out.push(v.state as u8);
            partition_epochs(out, &v.assigned_partitions, kafka_4_0);
            partition_epochs(out, &v.partitions_pending_revocation, kafka_4_0);
            tagged(out, Vec::new());
        }
        ConsumerGroupRecord::MemberMetadata { value: Some(v), .. } => {
            compact_string(out, v.instance_id.as_deref());
            compact_string(out, v.rack_id.as_deref());
            compact_string(out, Some(&v.client_id));
            compact_string(out, Some(&v.client_host));
            compact_len(out, v.subscribed_topic_names.len());
            for name in &v.subscribed_topic_names {
                compact_string(out, Some(name));
            }
            compact_string(out, Some(&v.subscribed_topic_regex));
            int32(out, v.rebalance_timeout_ms);
            compact_string(out, v.server_assignor.as_deref());
            let classic = written(|o| classic_member_metadata(o, v.classic_member_metadata.as_ref()));
            tagged(out, vec![(0, classic)]);
        }
        // Tombstones have no value (value_bytes does not call this for them).
        _ => {}
    }
}

/// ClassicMemberMetadata, the member metadata's tagged field 0: a nullable struct, so a presence byte (0 null, 1
/// present), then SessionTimeoutMs and SupportedProtocols (each a name and compact bytes). Kafka's generated
/// ConsumerGroupMemberMetadataValue.write writes the field when it is null too (its default, null, is compared
/// with an empty struct), and GroupCoordinatorRecordHelpers sets null for a member using the consumer protocol:
/// every member's value has it.
fn classic_member_metadata(out: &mut Vec<u8>, v: Option<&ClassicMemberMetadata>) {
    let Some(v) = v else {
        out.push(0);
        return;
    };
    out.push(1);
    int32(out, v.session_timeout_ms);
    compact_len(out, v.supported_protocols.len());
    for p in &v.supported_protocols {
        compact_string(out, Some(&p.name));
        compact_len(out, p.metadata.len());
        out.extend_from_slice(&p.metadata);
        tagged(out, Vec::new());
    }
    tagged(out, Vec::new());
}

/// The record as DefaultRecord.writeTo writes it in a v2 batch: its length (varint), then attributes (0),
/// timestamp delta (varlong), offset delta (varint), key length and key, value length (-1 for a tombstone)
/// and value, and the header count (0: coordinator records have no headers).
pub fn record_bytes(
    record: &AnyRecord,
    group_id: &str,
    offset_delta: i32,
    timestamp_delta: i64,
    kafka_4_0: bool,
) -> Vec<u8> {
    let key = key_bytes(record, group_id);
    let value = value_bytes(record, kafka_4_0);
    let mut body = vec![0u8];
    varlong(&mut body, timestamp_delta);
    varint(&mut body, offset_delta);
    varint(&mut body, key.len() as i32);
    body.extend_from_slice(&key);
    match value {
        None => varint(&mut body, -1),
        Some(value) => {
            varint(&mut body, value.len() as i32);
            body.extend_from_slice(&value);
        }
    }
    varint(&mut body, 0);
    let mut out = Vec::with_capacity(body.len() + 5);
    varint(&mut out, body.len() as i32);
    out.extend_from_slice(&body);
    out
}

pub fn record_size(
    record: &AnyRecord,
    group_id: &str,
    offset_delta: i32,
    timestamp_delta: i64,
    kafka_4_0: bool,
) -> usize {
    record_bytes(record, group_id, offset_delta, timestamp_delta, kafka_4_0).len()
}

/// The bytes of one operation's records written as one uncompressed batch: the batch header, then each
/// record at its offset delta, all at the append's timestamp.
pub fn batch_size(records: &[AnyRecord], group_id: &str, kafka_4_0: bool) -> usize {
    RECORD_BATCH_OVERHEAD
        + records.iter().enumerate().map(|(i, r)| record_size(r, group_id, i as i32, 0, kafka_4_0)).sum::<usize>()
}
