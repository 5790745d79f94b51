"""One consumer-group member's reconciliation towards its target assignment: Kafka's
`CurrentAssignmentBuilder` (trunk), the states of `MemberState`, the member epoch rules, and the group's
current partition epochs (`CurrentPartitionEpochs`, from ConsumerGroup) that say who still holds what.

A member never holds a partition another member still owns: it first gives up what it loses (staying at
its epoch in UNREVOKED_PARTITIONS until its heartbeat's owned partitions no longer list them), then moves
to the target epoch and receives the partitions that are free now; the ones another member still holds
(`current_partition_epoch` != -1) come on a later heartbeat (UNRELEASED_PARTITIONS). Every partition a
member holds carries the assignment epoch at which it was granted (KIP-1251); a partition kept keeps its
epoch.

Trunk against Kafka 4.0.0 (docs/consumer-protocol.md), selected by `reconcile(..., kafka_4_0=True)`:
* leaving UNREVOKED_PARTITIONS, 4.0 reconciles from member epoch + 1 (trunk keeps the epoch, so a member
  still revoking after the target moved on stays at its old epoch; KAFKA-19974);
* 4.0 treats a partition the member itself has pending revocation as unreleased (KAFKA-19449);
* 4.0 ignores the member's subscription: no topic is dropped from the target for being unsubscribed and a
  subscription change alone changes nothing (KAFKA-19431).
4.0 also kept plain partition sets; the assignment epochs here are simply not read in that mode.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Collection, Iterable, Mapping

from state.consumer_group.topic_id import TopicId

# topicId -> {partition -> assignment epoch at which the member was given it}
PartitionEpochs = dict[TopicId, dict[int, int]]


class MemberState(enum.IntEnum):
    """The group coordinator's `MemberState` (group-coordinator's `modern/MemberState.java`), with the byte Kafka
    writes in the CurrentMemberAssignment record; the client's own is `client.member_state.ClientMemberState`."""

    STABLE = 0  # holds exactly what its epoch allows; nothing to revoke or wait for
    UNREVOKED_PARTITIONS = 1  # must revoke `partitions_pending_revocation` before its epoch can advance
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for partitions other members still own
    UNKNOWN = 127  # a state byte this coordinator does not know (written by a newer one): fenced

    @classmethod
    def from_value(cls, value: int) -> "MemberState":
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class FencedMemberEpochError(Exception):
    """The member must drop all its partitions and rejoin (error FENCED_MEMBER_EPOCH)."""


@dataclass(frozen=True)
class CurrentAssignment:
    """A member's reconciliation state, the content of its ConsumerGroupCurrentMemberAssignment record."""

    state: MemberState
    member_epoch: int
    previous_member_epoch: int
    assigned_partitions: PartitionEpochs = field(default_factory=dict)
    partitions_pending_revocation: PartitionEpochs = field(default_factory=dict)

    def _moved(self, state: MemberState, epoch: int, assigned: PartitionEpochs,
               pending: PartitionEpochs) -> "CurrentAssignment":
        """Kafka's Builder.updateMemberEpoch: the epoch before this move becomes the previous epoch."""
        return CurrentAssignment(state, epoch, self.member_epoch, assigned, pending)


def subscribed_topic_ids(
    topic_names: Collection[str],
    regex: str | None,
    resolved_regexes: Mapping[str, Collection[str]],
    topic_ids: Mapping[str, TopicId],
) -> frozenset[TopicId]:
    """The ids of the topics a member subscribes to: its names plus what its regex resolved to (an
    unresolved regex matches nothing), keeping only topics that exist (`topic_ids`: name -> id)."""
    names = set(topic_names)
    if regex:
        names |= set(resolved_regexes.get(regex, ()))
    return frozenset(topic_ids[name] for name in names if name in topic_ids)


def reconcile(
    member: CurrentAssignment,
    *,
    target_epoch: int,
    target: Mapping[TopicId, Collection[int]],
    subscribed: Collection[TopicId],
    current_partition_epoch: Callable[[TopicId, int], int],
    owned: Mapping[TopicId, Iterable[int]] | None = None,
    subscription_changed: bool = False,
    kafka_4_0: bool = False,
) -> CurrentAssignment:
    """The member's next state (`CurrentAssignmentBuilder.build`); `member` itself when nothing changes.

    `target`/`target_epoch`: the member's target assignment and the group's assignment epoch. `subscribed`:
    the member's subscribed topic ids (`subscribed_topic_ids`). `current_partition_epoch(topic, p)`: the
    member epoch of the partition's current owner, -1 when free. `owned`: the partitions the heartbeat
    reports as owned, None when it does not report them (then nothing counts as revoked).
    `subscription_changed`: the heartbeat changed the member's subscription.
    """
    step = _Reconciliation(member, target_epoch, target, frozenset(subscribed), current_partition_epoch,
                           owned, kafka_4_0)
    trim = subscription_changed and not kafka_4_0
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return step.next_assignment(member.member_epoch)
        return step.drop_unsubscribed() if trim else member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if step.owns_any(member.partitions_pending_revocation):
            return step.drop_unsubscribed() if trim else member
        return step.next_assignment(member.member_epoch + 1 if kafka_4_0 else member.member_epoch)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return step.next_assignment(member.member_epoch)
    if owned is None or owned:
        raise FencedMemberEpochError("The consumer group member is in a unknown state. "
                                     "The member must abandon all its partitions and rejoin.")
    return step.next_assignment(target_epoch)


@dataclass(frozen=True)
class _Reconciliation:
    member: CurrentAssignment
    target_epoch: int
    target: Mapping[TopicId, Collection[int]]
    subscribed: frozenset[TopicId]
    current_partition_epoch: Callable[[TopicId, int], int]
    owned: Mapping[TopicId, Iterable[int]] | None
    kafka_4_0: bool

    def owns_any(self, partitions: PartitionEpochs) -> bool:
        """Whether the heartbeat still reports any of `partitions` (always, when it reports nothing)."""
        if self.owned is None:
            return True
        return any(p in partitions.get(topic_id, ()) for topic_id, ps in self.owned.items() for p in ps)

    def drop_unsubscribed(self) -> CurrentAssignment:
        """Move the topics the member no longer subscribes to from its assignment to pending revocation,
        without reconciling towards the target (`updateCurrentAssignment`)."""
        member = self.member
        assigned = member.assigned_partitions
        pending = member.partitions_pending_revocation
        if not self.subscribed and not pending:
            new_assigned: PartitionEpochs = {}
            new_pending = assigned
        else:
            dropped = [topic_id for topic_id in assigned if topic_id not in self.subscribed]
            if not dropped:
                return member
            new_assigned = {t: ps for t, ps in assigned.items() if t in self.subscribed}
            new_pending = {t: dict(ps) for t, ps in pending.items()}
            for topic_id in dropped:
                new_pending.setdefault(topic_id, {}).update(assigned[topic_id])
        if new_pending and self.owns_any(new_pending):
            return member._moved(MemberState.UNREVOKED_PARTITIONS, member.member_epoch, new_assigned, new_pending)
        return member._moved(member.state, member.member_epoch, new_assigned, pending)

    def next_assignment(self, epoch: int) -> CurrentAssignment:
        """Reconcile towards the target from `epoch` (`computeNextAssignment`)."""
        member = self.member
        assigned = member.assigned_partitions
        own_pending = {} if self.kafka_4_0 else member.partitions_pending_revocation
        kept: PartitionEpochs = {}
        revoked: PartitionEpochs = {}
        added: dict[TopicId, list[int]] = {}
        unreleased = False
        for topic_id in {*self.target, *assigned}:
            wanted = set(self.target.get(topic_id, ()))
            if topic_id not in self.subscribed and not self.kafka_4_0:
                wanted = set()
            current = assigned.get(topic_id, {})
            keep = {p: e for p, e in current.items() if p in wanted}
            revoke = {p: e for p, e in current.items() if p not in wanted}
            free = []
            for partition in sorted(wanted.difference(keep)):
                if (self.current_partition_epoch(topic_id, partition) != -1
                        and partition not in own_pending.get(topic_id, ())):
                    unreleased = True
                else:
                    free.append(partition)
            if keep:
                kept[topic_id] = keep
            if revoke:
                revoked[topic_id] = revoke
            if free:
                added[topic_id] = free
        if revoked and self.owns_any(revoked):
            return member._moved(MemberState.UNREVOKED_PARTITIONS, epoch, kept, revoked)
        for topic_id, partitions in added.items():
            kept.setdefault(topic_id, {}).update(dict.fromkeys(partitions, self.target_epoch))
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return member._moved(state, self.target_epoch, kept, {})


class PartitionEpochConflict(Exception):
    """A member would take a partition another member still holds at the same or a later epoch (Kafka's
    IllegalStateException from ConsumerGroup.addPartitionEpochs): a coordinator bug, never a client error."""


class CurrentPartitionEpochs:
    """The group's `currentPartitionEpoch` map: for each partition some member holds (assigned or pending
    revocation), that member's epoch. Called as `(topic_id, partition) -> epoch`, -1 when nobody holds the
    partition, it is `reconcile`'s `current_partition_epoch`.

    It changes as members' CurrentAssignments are replayed (`update_member`): the old holdings are released
    only where they are still at the old member epoch, and the new ones claimed at the new member epoch,
    which must be later than any epoch the partition is held at.
    """

    def __init__(self) -> None:
        self._epochs: dict[TopicId, dict[int, int]] = {}

    def __call__(self, topic_id: TopicId, partition: int) -> int:
        return self._epochs.get(topic_id, {}).get(partition, -1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CurrentPartitionEpochs) and self._epochs == other._epochs

    def update_member(self, old: CurrentAssignment | None, new: CurrentAssignment | None) -> None:
        """A member's CurrentAssignment replaced (`old` None: it joined; `new` None: it was removed)."""
        if old is not None:
            self.remove(old.assigned_partitions, old.member_epoch)
            self.remove(old.partitions_pending_revocation, old.member_epoch)
        if new is not None:
            self.add(new.assigned_partitions, new.member_epoch)
            self.add(new.partitions_pending_revocation, new.member_epoch)

    def remove(self, partitions: Mapping[TopicId, Iterable[int]], expected_epoch: int) -> None:
        """Release `partitions` where they are held at `expected_epoch`; others are left as they are."""
        for topic_id, topic_partitions in partitions.items():
            held = self._epochs.get(topic_id)
            if held is None:
                continue
            for partition in topic_partitions:
                if held.get(partition) == expected_epoch:
                    del held[partition]
            if not held:
                del self._epochs[topic_id]

    def add(self, partitions: Mapping[TopicId, Iterable[int]], epoch: int) -> None:
        for topic_id, topic_partitions in partitions.items():
            held = self._epochs.setdefault(topic_id, {})
            for partition in topic_partitions:
                previous = held.get(partition)
                if previous is not None and previous >= epoch:
                    raise PartitionEpochConflict(f"Cannot set the epoch of {topic_id}-{partition} to {epoch} "
                                                 f"because the partition is still owned at epoch {previous}")
                held[partition] = epoch
