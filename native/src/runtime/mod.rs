//! Mirrors `state/runtime/`: a group's runtime. Ported so far: what the coordinator managers share, the ids
//! they hand out (member_ids) and the result of an operation (result); the runtime itself comes next.

pub mod member_ids;
pub mod result;
