//! Mirrors `state/offsets/`: committed offsets. Ported so far: the production model (production).

pub mod production;
