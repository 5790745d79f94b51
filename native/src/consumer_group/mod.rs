//! Mirrors `state/consumer_group/`: the KIP-848 consumer group. Ported so far: the two server-side
//! assignors and what they are given (group_spec, topic_id), and the records (records) as record_bytes
//! sizes them.

pub mod group_spec;
pub mod range;
pub mod records;
pub mod topic_id;
pub mod uniform;
