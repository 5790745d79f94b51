//! Mirrors `state/offsets/`: committed offsets, their manager (manager) and the production model (production).

pub mod manager;
pub mod production;
