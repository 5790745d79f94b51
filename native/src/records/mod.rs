//! Mirrors `state/records/`: what a group's coordinator appends to `__consumer_offsets`. Ported so far: the
//! classic group's and the offsets' records as typed values and the group's compacted log (group_log)
//! and the bytes Kafka writes for every record (record_bytes).

pub mod group_log;
pub mod record_bytes;
