//! Mirrors `state/runtime/`: a group's runtime. Ported so far: what the coordinator managers share, the ids
//! they hand out (member_ids), the result of an operation (result), the timers the runtime keeps (timers) and
//! its quiet runs (quiet_runs); the runtime itself comes next.

pub mod member_ids;
pub mod quiet_runs;
pub mod result;
pub mod timers;
