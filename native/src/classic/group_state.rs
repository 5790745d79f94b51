//! Mirrors `state/classic/group_state.py`: the classic group's states and the only moves between them (Kafka's
//! ClassicGroupState). An illegal move means the simulator diverged from Kafka: a bug, so it panics (the
//! bindings raise it as RuntimeError), as the reference raises IllegalStateTransition.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// The states each state may be entered from.
    fn valid_previous(self, current: GroupState) -> bool {
        use GroupState::*;
        match self {
            Empty => current == PreparingRebalance,
            PreparingRebalance => matches!(current, Empty | Stable | CompletingRebalance),
            CompletingRebalance => current == PreparingRebalance,
            Stable => current == CompletingRebalance,
            Dead => true,
        }
    }
}

impl fmt::Display for GroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub fn check_transition(current: GroupState, target: GroupState) {
    assert!(target.valid_previous(current), "group cannot move from {current} to {target}");
}
