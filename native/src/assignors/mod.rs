//! Mirrors `state/assignors/__init__.py`: Kafka's four built-in classic-consumer assignors, as pure
//! deterministic functions (clients/.../consumer/*Assignor.java).
//!
//! ```text
//! assign(protocol_name, members, partitions_per_topic) -> [(member_id, [TopicPartition, ...])]
//! ```
//!
//! `members` is the leader's JoinGroup response member list, in order; the result has one entry per member,
//! in that order. Results match the Python reference element for element, including the order within each
//! member's list. The registry's client side says which rebalance protocols an assignor supports and what a
//! well-behaved Java client puts in its JoinGroup metadata.

pub mod cooperative_sticky;
pub mod model;
pub mod range;
pub mod roundrobin;
pub mod sticky;

use rustc_hash::FxHashMap;
use std::rc::Rc;

use crate::classic::consumer_protocol::{
    self as cp, ConsumerProtocolError, Int, Partitions, SubscriptionToWrite, TopicPartition,
};
use model::{AssignorError, GroupAssignmentInput, MemberSubscription};

/// ConsumerPartitionAssignor.RebalanceProtocol; the higher value wins when clients pick one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RebalanceProtocol {
    Eager = 0,
    Cooperative = 1,
}

impl RebalanceProtocol {
    pub fn name(self) -> &'static str {
        match self {
            RebalanceProtocol::Eager => "EAGER",
            RebalanceProtocol::Cooperative => "COOPERATIVE",
        }
    }
}

type AssignFn = fn(&GroupAssignmentInput) -> Result<Vec<Vec<TopicPartition>>, AssignorError>;

/// What a client's assignor writes as its userData: its previous assignment (None before its first) and
/// that assignment's generation.
type UserDataFn = fn(Option<&Partitions>, Int) -> Result<Option<Vec<u8>>, ConsumerProtocolError>;

struct Assignor {
    assign: AssignFn,
    protocols: &'static [RebalanceProtocol],
    user_data: UserDataFn,
}

fn no_user_data(_: Option<&Partitions>, _: Int) -> Result<Option<Vec<u8>>, ConsumerProtocolError> {
    Ok(None)
}

/// The client remembers its last assignment only once it has had one.
fn sticky_user_data(previous: Option<&Partitions>, generation: Int) -> Result<Option<Vec<u8>>, ConsumerProtocolError> {
    previous.map(|p| cp::encode_sticky_user_data(p, Some(generation), 1)).transpose()
}

/// Sent on every join, even though v2+ subscriptions make the leader read GenerationId instead.
fn cooperative_user_data(_: Option<&Partitions>, generation: Int) -> Result<Option<Vec<u8>>, ConsumerProtocolError> {
    cp::encode_cooperative_user_data(generation).map(Some)
}

const EAGER: &[RebalanceProtocol] = &[RebalanceProtocol::Eager];

fn lookup(protocol_name: &str) -> Result<Assignor, AssignorError> {
    match protocol_name {
        "range" => Ok(Assignor { assign: |inp| Ok(range::assign(inp)), protocols: EAGER, user_data: no_user_data }),
        "roundrobin" => Ok(Assignor { assign: roundrobin::assign, protocols: EAGER, user_data: no_user_data }),
        "sticky" => Ok(Assignor { assign: sticky::assign, protocols: EAGER, user_data: sticky_user_data }),
        "cooperative-sticky" => Ok(Assignor {
            assign: cooperative_sticky::assign,
            protocols: &[RebalanceProtocol::Cooperative, RebalanceProtocol::Eager],
            user_data: cooperative_user_data,
        }),
        _ => Err(AssignorError::Assignor(format!(
            "IllegalStateException: Coordinator selected invalid assignment protocol: {protocol_name}"
        ))),
    }
}

/// ConsumerPartitionAssignor.supportedProtocols(), most preferred first.
pub fn supported_protocols(protocol_name: &str) -> Result<&'static [RebalanceProtocol], AssignorError> {
    Ok(lookup(protocol_name)?.protocols)
}

/// The userData a Java client's assignor puts in its Subscription (subscriptionUserData).
pub fn client_user_data(
    protocol_name: &str,
    previous_assignment: Option<&Partitions>,
    generation: Int,
) -> Result<Option<Vec<u8>>, ClientError> {
    Ok((lookup(protocol_name)?.user_data)(previous_assignment, generation)?)
}

/// Why a client's metadata cannot be made: an unknown assignor, a rebalance protocol it does not support
/// (the reference's ValueError), or a value the consumer protocol cannot write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    Assignor(AssignorError),
    Protocol(ConsumerProtocolError),
}

impl From<AssignorError> for ClientError {
    fn from(e: AssignorError) -> Self {
        ClientError::Assignor(e)
    }
}

impl From<ConsumerProtocolError> for ClientError {
    fn from(e: ConsumerProtocolError) -> Self {
        ClientError::Protocol(e)
    }
}

/// What a well-behaved Java client puts in its JoinGroup metadata (version 3): under EAGER it has revoked
/// everything before joining, so it advertises no owned partitions; under COOPERATIVE it keeps, and
/// advertises, the previous partitions of topics it still subscribes to. `rebalance_protocol` defaults to
/// the assignor's preferred one. The leader decodes this metadata (`MemberSubscription::from_metadata`'s
/// work, the reference's `client_subscription`).
pub fn client_metadata(
    protocol_name: &str,
    topics: &[String],
    previous_assignment: Option<&Partitions>,
    generation: Int,
    rack: Option<&str>,
    rebalance_protocol: Option<RebalanceProtocol>,
) -> Result<Vec<u8>, ClientError> {
    let assignor = lookup(protocol_name)?;
    let protocol = rebalance_protocol.unwrap_or(assignor.protocols[0]);
    if !assignor.protocols.contains(&protocol) {
        return Err(AssignorError::Value(format!(
            "{} does not support the {} rebalance protocol",
            model::py_repr(protocol_name),
            protocol.name()
        ))
        .into());
    }
    let owned = match previous_assignment {
        Some(previous) if protocol == RebalanceProtocol::Cooperative && !previous.is_empty() => {
            previous.iter().filter(|(t, _)| topics.contains(t)).cloned().collect()
        }
        _ => Vec::new(),
    };
    let subscription = SubscriptionToWrite {
        topics: topics.to_vec(),
        user_data: (assignor.user_data)(previous_assignment, generation)?,
        owned_partitions: owned,
        generation_id: (generation >= 0).then_some(generation),
        rack_id: rack.map(str::to_string),
    };
    Ok(cp::encode_subscription(&subscription, Int::from(cp::HIGHEST_VERSION))?)
}

/// Run the named assignor as the group leader would. The result has one entry per member, in `members`
/// order.
pub fn assign(
    protocol_name: &str,
    members: &[MemberSubscription],
    partitions_per_topic: &FxHashMap<Rc<str>, i32>,
) -> Result<Vec<(String, Vec<TopicPartition>)>, AssignorError> {
    let assign = lookup(protocol_name)?.assign;
    let inp = GroupAssignmentInput::build(members, partitions_per_topic)?;
    let mut result = assign(&inp)?;
    let index: FxHashMap<&str, usize> =
        inp.members.iter().enumerate().map(|(i, m)| (m.member_id.as_str(), i)).collect();
    Ok(members
        .iter()
        .map(|m| (m.member_id.clone(), std::mem::take(&mut result[index[m.member_id.as_str()]])))
        .collect())
}
