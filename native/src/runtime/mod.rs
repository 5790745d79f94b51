//! Mirrors `state/runtime/`: a group's runtime. Ported so far: the ids its coordinator hands out
//! (member_ids); the result of an operation and the runtime itself come next.

pub mod member_ids;
