"""CooperativeStickyAssignor ("cooperative-sticky", CooperativeStickyAssignor.java): the sticky engine, then one
post-step that keeps the incremental protocol safe. A partition that would pass from its current owner to
another member in this round is withheld from everyone; its owner sees it revoked, rejoins, and the next
round hands it out while nobody owns it.

Ownership comes from the Subscription itself: OwnedPartitions, plus GenerationId when it is present (v2+).
A v1 subscription carries the generation in this assignor's userData instead.
"""

from __future__ import annotations

from state import consumer_protocol
from state.assignors import sticky
from state.assignors.model import GroupAssignmentInput, MemberSubscription, TopicPartition
from state.assignors.sticky import NO_GENERATION, MemberData


def cooperative_member_data(member: MemberSubscription) -> MemberData:
    if member.has_generation:
        return MemberData(member.owned_partitions, member.generation_id)
    if member.user_data is None:
        return MemberData(member.owned_partitions, None)
    try:
        generation = consumer_protocol.decode_cooperative_user_data(member.user_data)
    except consumer_protocol.ConsumerProtocolError:
        generation = NO_GENERATION
    return MemberData(member.owned_partitions, generation)


def assign(inp: GroupAssignmentInput) -> dict[str, list[TopicPartition]]:
    outcome = sticky.run(inp, cooperative_member_data)
    transferring = outcome.transferring
    if transferring is None:
        transferring = _owner_changes(inp, outcome.assignment)
    for tp, new_owner in transferring.items():
        outcome.assignment[new_owner].remove(tp)
    return outcome.assignment


def _owner_changes(inp: GroupAssignmentInput, assignment: dict[str, list[TopicPartition]]) -> dict[TopicPartition, str]:
    """The general builder does not track moves, so compare with what members say they own: a partition
    newly given to one member while another owner loses it."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for m in inp.members:
        owned = set(m.owned_partitions)
        assigned = assignment[m.member_id]
        added.update((tp, m.member_id) for tp in assigned if tp not in owned)
        assigned_set = set(assigned)
        revoked.update(tp for tp in m.owned_partitions if tp not in assigned_set)
    return {tp: member_id for tp, member_id in added.items() if tp in revoked}
