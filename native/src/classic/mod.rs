//! Mirrors `state/classic/`: the classic group. Ported so far: the consumer protocol's byte blobs
//! (consumer_protocol), the group's states (group_state), the group and its members (group) and the manager
//! of its protocol (manager).

pub mod consumer_protocol;
pub mod group;
pub mod group_state;
pub mod manager;
