//! Mirrors `state/consumer_group/`: the KIP-848 consumer group. Ported so far: the two server-side
//! assignors and what they are given (group_spec, topic_id), the records (records) and the group their
//! replay gives (group), reconciliation, the target assignment and the topics image it reads (with the
//! metadata hash), and the regular-expression subscriptions (regex).

pub mod classic_members;
pub mod downgrade;
pub mod group;
pub mod group_spec;
pub mod heartbeat;
pub mod messages;
pub mod migration;
pub mod offset_commit;
pub mod range;
pub mod reconciliation;
pub mod record_json;
pub mod records;
pub mod regex;
pub mod target_assignment;
pub mod topic_id;
pub mod topics;
pub mod uniform;
