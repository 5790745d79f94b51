//! Mirrors `state/consumer_group/downgrade.py`: online migration of a consumer group back to a classic group
//! (Kafka's GroupMetadataManager validateOnlineDowngradeWithFencedMembers,
//! validateOnlineDowngradeWithReplacedMember and convertToClassicGroup, trunk) under
//! `group.consumer.migration.policy` `downgrade` or `bidirectional`, and the order a TimelineHashMap, the
//! consumer group's member map, iterates its keys in (which the target assignment reads too).

use rustc_hash::FxHashMap;

use crate::classic::consumer_protocol;
use crate::classic::group::{
    CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupMember, decode_assignment_partitions, subscription_topics,
};
use crate::classic::group_state::GroupState;
use crate::config::CoordinatorConfig;
use crate::consumer_group::group::{Assignment, ConsumerGroup, ConsumerGroupMember};
use crate::consumer_group::group_spec::java_int_set_order;
use crate::consumer_group::records::ConsumerGroupRecord;
use crate::consumer_group::topic_id::TopicId;
use crate::consumer_group::topics::TopicsImage;
use crate::events::Protocol;
use crate::java_compat::{JavaHashMap, string_hash_code};

/// org.apache.kafka.timeline.BaseHashTable: Knuth's multiplicative hash picks a slot from the high bits.
const FIBONACCI: i64 = -7046029254386353131;

fn slot(key: &str, table_size: usize) -> usize {
    let shift = 65 - (usize::BITS - table_size.leading_zeros());
    ((i64::from(string_hash_code(key)).wrapping_mul(FIBONACCI) as u64) >> shift) as usize
}

/// The order a TimelineHashMap created empty and filled with `keys` in their order iterates them: slot by
/// slot, and within a slot last put first (a slot keeps its colliding keys in insertion order, and
/// SnapshottableHashTable's CurrentIterator unpacks a slot into a list it takes from the end).
pub fn in_timeline_hash_map_order<'a>(keys: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut slots: Vec<Vec<&String>> = vec![Vec::new(), Vec::new()]; // BaseHashTable.MIN_CAPACITY
    for (size, key) in keys.into_iter().enumerate() {
        // (size + 1) * 0.75 > slots, in integers.
        if (size + 1) * 3 > slots.len() * 4 {
            let grown = vec![Vec::new(); 2 * slots.len()];
            let old = std::mem::replace(&mut slots, grown);
            for moved in old.into_iter().flatten() {
                let i = slot(moved, slots.len());
                slots[i].push(moved);
            }
        }
        let i = slot(key, slots.len());
        slots[i].push(key);
    }
    slots.into_iter().flat_map(|chain| chain.into_iter().rev().cloned()).collect()
}

/// ConsumerGroupMigrationPolicy.isDowngradeEnabled.
pub const DOWNGRADE_POLICIES: [&str; 2] = ["downgrade", "bidirectional"];

/// A downgrade a request or a timer triggers: the fenced members' ids (`leaving`, sorted: the reference's
/// frozenset), or the member a classic JoinGroup made of its static member replacing the last one using the
/// consumer protocol (`joining`, as the join's records leave it), and whether the classic group then
/// rebalances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downgrade {
    pub leaving: Vec<String>,
    pub joining: Option<ConsumerGroupMember>,
    pub rebalance: bool,
}

/// The policy allows a downgrade and the classic group would not be larger than group.max.size.
fn downgrade_allowed(remaining: usize, config: &CoordinatorConfig) -> bool {
    DOWNGRADE_POLICIES.contains(&config.group_consumer_migration_policy.as_str())
        && remaining as i64 <= config.group_max_size
}

/// validateOnlineDowngradeWithFencedMembers: the downgrade fencing `fenced` triggers, if any.
pub fn downgrade_with_fenced_members(
    group: &ConsumerGroup,
    fenced: &[&ConsumerGroupMember],
    config: &CoordinatorConfig,
) -> Option<Downgrade> {
    let mut leaving: Vec<String> = fenced.iter().map(|m| m.member_id.clone()).collect();
    leaving.sort_unstable();
    leaving.dedup();
    let remaining: Vec<&ConsumerGroupMember> =
        group.members.values().filter(|m| leaving.binary_search(&m.member_id).is_err()).collect();
    if remaining.is_empty() || !remaining.iter().all(|m| m.use_classic_protocol()) {
        return None;
    }
    downgrade_allowed(remaining.len(), config).then_some(Downgrade { leaving, joining: None, rebalance: true })
}

/// validateOnlineDowngradeWithReplacedMember: `replaced` is the only member using the consumer protocol.
pub fn downgrade_allowed_with_replaced_member(
    group: &ConsumerGroup,
    replaced: &ConsumerGroupMember,
    config: &CoordinatorConfig,
) -> bool {
    !replaced.use_classic_protocol()
        && group.members.values().filter(|m| m.member_id != replaced.member_id).all(|m| m.use_classic_protocol())
        && downgrade_allowed(group.members.len(), config)
}

/// convertToClassicGroup: the consumer group's tombstones (every member's current assignment, target and
/// metadata, the target's metadata, the resolved regexes, the partition metadata, the group epoch; members in
/// the member map's TimelineHashMap order, the joining member's id standing for the member it replaces) and
/// the classic group taking its place: Stable at the group epoch, its members those of the consumer group but
/// the leaving ones (the joining member in place of the one it replaces, added last), the protocol their vote,
/// each member's assignment its target serialized at its subscription's version. Err: a joining member that
/// replaces no static member (the reference's ValueError).
pub fn convert_to_classic_group(
    group: &ConsumerGroup,
    downgrade: &Downgrade,
    topics: &TopicsImage,
    now: i64,
) -> Result<(Vec<ConsumerGroupRecord>, ClassicGroup), String> {
    let joining = downgrade.joining.as_ref();
    let replaced = joining.and_then(|j| group.static_member(j.instance_id.as_deref()));
    if joining.is_some() && replaced.is_none() {
        return Err("the joining member must replace a static member".into());
    }
    let order = in_timeline_hash_map_order(group.members.keys());
    let ids: Vec<String> = order
        .iter()
        .map(|m| match (joining, replaced) {
            (Some(j), Some(r)) if *m == r.member_id => j.member_id.clone(),
            _ => m.clone(),
        })
        .collect();
    let mut records: Vec<ConsumerGroupRecord> = ids
        .iter()
        .map(|m| ConsumerGroupRecord::CurrentMemberAssignment { member_id: m.clone(), value: None })
        .collect();
    records
        .extend(ids.iter().map(|m| ConsumerGroupRecord::TargetAssignmentMember { member_id: m.clone(), value: None }));
    records.push(ConsumerGroupRecord::TargetAssignmentMetadata(None));
    records.extend(ids.iter().map(|m| ConsumerGroupRecord::MemberMetadata { member_id: m.clone(), value: None }));
    // The resolved regexes' tombstones, in the order of the group's TimelineHashMap of them.
    records.extend(
        in_timeline_hash_map_order(group.resolved_regexes.keys())
            .into_iter()
            .map(|regex| ConsumerGroupRecord::RegularExpression { regex, value: None }),
    );
    records.push(ConsumerGroupRecord::PartitionMetadata);
    records.push(ConsumerGroupRecord::Metadata(None));

    let mut classic = ClassicGroup::new(&group.group_id, now);
    classic.state = GroupState::Stable;
    classic.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.into());
    classic.generation_id = group.group_epoch;
    let mut targets: FxHashMap<String, Assignment> = FxHashMap::default();
    let target_of = |member_id: &str| group.target_of(member_id, None).cloned().unwrap_or_default();
    for member_id in &order {
        let member = group.members.get(member_id.as_str()).expect("a member");
        if downgrade.leaving.contains(member_id) || replaced.is_some_and(|r| r.member_id == *member_id) {
            continue;
        }
        classic.add(classic_member(member), None);
        targets.insert(member_id.clone(), target_of(member_id));
    }
    if let (Some(joining), Some(replaced)) = (joining, replaced) {
        classic.add(classic_member(joining), None);
        targets.insert(joining.member_id.clone(), target_of(&replaced.member_id));
    }
    classic.protocol_name = classic.select_protocol();
    classic.subscribed_topics = classic.compute_subscribed_topics();
    let names: FxHashMap<TopicId, &str> = topics.topics.iter().map(|(name, (id, _))| (*id, name.as_str())).collect();
    let protocol_name = classic.protocol_name.clone();
    for member_id in classic.member_ids() {
        let member = classic.members.get_mut(&member_id).expect("a member");
        let version = consumer_protocol::decode_version(member.metadata(protocol_name.as_deref()))
            .map_err(|e| format!("member {member_id}: {e}"))?;
        let partitions = named_partitions(&targets[&member_id], &names);
        member.assignment = consumer_protocol::encode_assignment(&partitions, None, i64::from(version))
            .map_err(|e| format!("member {member_id}: {e}"))?;
        member.assignment_partitions = decode_assignment_partitions(Some(CONSUMER_PROTOCOL_TYPE), &member.assignment);
    }
    Ok((records, classic))
}

/// The classic group's member for a consumer group member using the classic protocol.
fn classic_member(member: &ConsumerGroupMember) -> ClassicGroupMember {
    let classic = member.classic_member_metadata.as_ref().expect("a member using the classic protocol");
    ClassicGroupMember {
        member_id: member.member_id.clone(),
        group_instance_id: member.instance_id.clone(),
        client_id: member.client_id.clone(),
        client_host: member.client_host.clone(),
        rebalance_timeout_ms: member.rebalance_timeout_ms,
        session_timeout_ms: classic.session_timeout_ms,
        protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
        protocols: classic
            .supported_protocols
            .iter()
            .map(|p| Protocol {
                name: p.name.clone(),
                metadata: p.metadata.clone(),
                topics: subscription_topics(Some(CONSUMER_PROTOCOL_TYPE), &p.metadata),
            })
            .collect(),
        assignment: Vec::new(),
        assignment_partitions: Some(Vec::new()),
        awaiting_join: None,
        awaiting_sync: None,
        is_new: false,
    }
}

/// toConsumerProtocolAssignment: the target's partitions by topic name, topics in its HashMap's order and
/// partitions in their HashSet's; a topic the cluster does not know any more is left out.
fn named_partitions(target: &Assignment, names: &FxHashMap<TopicId, &str>) -> Vec<(String, i64)> {
    let mut table = JavaHashMap::default();
    for (topic_id, partitions) in target.iter() {
        table.insert(*topic_id, partitions);
    }
    table
        .entries()
        .into_iter()
        .filter_map(|(topic_id, partitions)| names.get(topic_id).map(|name| (*name, *partitions)))
        .flat_map(|(name, partitions)| {
            java_int_set_order(partitions).into_iter().map(move |p| (name.to_string(), i64::from(p)))
        })
        .collect()
}
