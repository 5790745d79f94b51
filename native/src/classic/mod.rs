//! Mirrors `state/classic/`: the classic group. Ported so far: the consumer protocol's byte blobs, which the
//! assignors read and write; the group and its manager come with the runtime's port.

pub mod consumer_protocol;
