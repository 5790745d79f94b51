"""The sticky family's shared engine (Kafka's AbstractStickyAssignor) and StickyAssignor
("sticky") itself.

Three stages, each reproducing Kafka's order of operations exactly:

1. Claim resolution: every member's owned partitions, in the leader's subscriptions-HashMap order; a
   partition claimed twice goes to the higher generation, or to nobody on a tie.
2. When every member's subscription is the same topic set, the constrained builder: keep owned partitions
   up to the quotas, then deal the rest round-robin, recording which partitions change owner.
3. Otherwise the general builder: keep what is still valid, give each unassigned partition to the least
   loaded subscriber, then move partitions while that improves balance, preferring moves back to a
   previous-generation owner and moves that undo an earlier move of the same topic.

Where Kafka's client throws (a NullPointerException when a previous-generation owner has been set aside as
"fixed", IllegalStateExceptions of the constrained builder), AssignorError is raised instead.

Performance notes, none of which changes the result: Kafka rescans a TreeSet of all members to find the
least loaded subscriber of a topic and recomputes "is it balanced?" before every partition it looks at.
Here members with identical topic sets share a lazily-updated heap ordered by (count, member id), and the
balance verdict is cached until the next move.

Rack awareness (KIP-881) needs replica racks, which our topic metadata does not have, so it never
activates; Kafka skips it in that case too.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import Callable, Iterable

from state import consumer_protocol
from state.assignors.model import AssignorError, GroupAssignmentInput, MemberSubscription, TopicPartition
from state.consumer_protocol import new_topic_partition
from state.java_compat import JavaHashSet, java_string_sort_key, to_int32, topic_partition_hash_code

NO_GENERATION = -1  # AbstractStickyAssignor.DEFAULT_GENERATION


@dataclass(frozen=True)
class MemberData:
    """What an assignor reads as a member's previous ownership: the partitions and their generation
    (None = Optional.empty(), which compares as -1)."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


MemberDataFn = Callable[[MemberSubscription], MemberData]


@dataclass
class StickyOutcome:
    assignment: dict[str, list[TopicPartition]]
    # partition -> new owner, from the constrained builder; None on the general path, where Kafka leaves the
    # cooperative assignor to derive it.
    transferring: dict[TopicPartition, str] | None


def sticky_member_data(member: MemberSubscription) -> MemberData:
    """StickyAssignor.memberData: always from userData, since eager clients have revoked everything before
    they join. Undecodable userData counts as "no partitions, generation -1", as in Kafka."""
    if not member.user_data:
        return MemberData((), None)
    try:
        decoded = consumer_protocol.decode_sticky_user_data(member.user_data)
    except consumer_protocol.ConsumerProtocolError:
        return MemberData((), NO_GENERATION)
    return MemberData(decoded.partitions, decoded.generation)


def assign(inp: GroupAssignmentInput) -> dict[str, list[TopicPartition]]:
    """StickyAssignor: the builder's output unchanged."""
    return run(inp, sticky_member_data).assignment


def run(inp: GroupAssignmentInput, member_data: MemberDataFn) -> StickyOutcome:
    data = {m.member_id: member_data(m) for m in inp.members}
    claims = _resolve_claims(inp, data)
    if claims.all_equal:
        return _constrained(inp, claims)
    return StickyOutcome(_GeneralBuilder(inp, claims, data).build(), None)


# ------------------------------------------------------------------------------------- claim resolution


@dataclass
class _Claims:
    all_equal: bool
    owned: dict[str, list[TopicPartition]]  # member -> resolved owned partitions, in subscriptions order
    multiply_claimed: set[TopicPartition]
    max_generation: int


def _remove_first(items: list, item) -> None:
    """java.util.List.remove(Object): drop the first occurrence, if any."""
    try:
        items.remove(item)
    except ValueError:
        pass


def _resolve_claims(inp: GroupAssignmentInput, data: dict[str, MemberData]) -> _Claims:
    existing = inp.partitions_per_topic
    subscription_generation = {m.member_id: m.subscription_generation for m in inp.members}
    all_equal = True
    reference: set[str] = set()
    claimed_by: dict[TopicPartition, str] = {}
    owned: dict[str, list[TopicPartition]] = {}
    multiply_claimed: set[TopicPartition] = set()
    max_generation = NO_GENERATION

    for m in inp.members:
        # Kafka takes the first non-empty topic set as the reference, so members with an empty subscription
        # that come before it in HashMap order do not make the subscriptions unequal.
        if not reference:
            reference.update(m.topics)
        elif all_equal and not (len(m.topics) == len(reference) and reference.issuperset(m.topics)):
            all_equal = False

        md = data[m.member_id]
        generation = NO_GENERATION if md.generation is None else md.generation
        max_generation = max(max_generation, generation)
        mine: list[TopicPartition] = []
        owned[m.member_id] = mine
        for tp in md.partitions:
            if tp.topic not in existing:
                continue
            other = claimed_by.get(tp)
            if other is None:
                mine.append(tp)
                claimed_by[tp] = m.member_id
                continue
            # The rival is judged by its Subscription's GenerationId field, not by its member data; the two
            # differ for v1 cooperative subscriptions, whose generation only travels in userData.
            other_generation = subscription_generation[other]
            if generation == other_generation:
                multiply_claimed.add(tp)
                _remove_first(owned[other], tp)
                claimed_by[tp] = m.member_id
            elif generation > other_generation:
                mine.append(tp)
                _remove_first(owned[other], tp)
                claimed_by[tp] = m.member_id
    return _Claims(all_equal, owned, multiply_claimed, max_generation)


def _partitions_of(topics: Iterable[str], partitions_per_topic: dict[str, int]) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    for t in topics:
        out.extend(map(new_topic_partition, zip(repeat(t), range(partitions_per_topic[t]))))
    return out


def _all_exist(partitions: Iterable[TopicPartition], partitions_per_topic: dict[str, int]) -> bool:
    return all(0 <= tp.partition < partitions_per_topic[tp.topic] for tp in partitions)


def _unassigned(
    all_partitions: list[TopicPartition],
    kept: list[TopicPartition],
    kept_exist: bool,
    order: Callable[[TopicPartition], object],
) -> list[TopicPartition]:
    """Kafka's getUnassignedPartitions: sort the kept partitions by `order` (the order of `all_partitions`)
    and walk both lists once, skipping each partition equal to the next kept one.

    Kept partitions are unique after claim resolution, so when they all exist this is a plain set
    difference. A kept partition beyond its topic's partition count stalls Kafka's walk, and every partition
    after it comes out unassigned even if kept; only that case needs the walk itself.
    """
    if kept_exist:
        kept_set = set(kept)
        return [tp for tp in all_partitions if tp not in kept_set]
    out: list[TopicPartition] = []
    remaining = iter(sorted(kept, key=order))
    next_kept = next(remaining, None)
    for tp in all_partitions:
        if next_kept is None or tp != next_kept:
            out.append(tp)
        else:
            next_kept = next(remaining, None)
    return out


# ---------------------------------------------------------------------------------- constrained builder


def _constrained(inp: GroupAssignmentInput, claims: _Claims) -> StickyOutcome:
    ppt = inp.partitions_per_topic
    owned = claims.owned
    multiply_claimed = claims.multiply_claimed
    if not owned:
        raise AssignorError("ArithmeticException: / by zero (the sticky assignor was given no members)")
    total = sum(ppt.values())
    min_quota, expected_over_min = divmod(total, len(owned))
    max_quota = min_quota + (1 if expected_over_min else 0)
    over_min = 0

    topic_key = {t: java_string_sort_key(t) for t in ppt}
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in owned}
    kept: list[TopicPartition] = []
    maybe_revoked: dict[TopicPartition, str] = {}
    under_min: list[str] = []
    exactly_min: list[str] = []

    for member_id, claimed in owned.items():
        # Partition index first, then topic (KAFKA-16277, 3.8+): a member cut down to its quota keeps
        # partition 0 of every topic before partition 1 of any.
        mine = sorted(claimed, key=lambda tp: (tp.partition, topic_key[tp.topic]))
        if multiply_claimed:
            mine = [tp for tp in mine if tp not in multiply_claimed]
        if len(mine) < min_quota:
            keep = len(mine)
            under_min.append(member_id)
        elif len(mine) >= max_quota and over_min < expected_over_min:
            keep = max_quota
            over_min += 1
            if over_min == expected_over_min:
                exactly_min.clear()
        else:
            keep = min_quota
            if over_min < expected_over_min:
                exactly_min.append(member_id)
        assignment[member_id].extend(mine[:keep])
        kept.extend(mine[:keep])
        for tp in mine[keep:]:
            maybe_revoked[tp] = member_id

    topics = sorted(ppt, key=topic_key.__getitem__)
    unassigned = _unassigned(
        _partitions_of(topics, ppt), kept, _all_exist(kept, ppt), lambda tp: (topic_key[tp.topic], tp.partition)
    )

    # Kafka walks a LinkedList of under-quota members with an iterator, drops a member through the iterator
    # once it reaches minQuota, and restarts from the head when the walk ends. Here each walk is a round over
    # `this_round`; members still under quota are carried, in order, into `next_round`.
    this_round = sorted(under_min, key=java_string_sort_key)
    next_round: list[str] = []
    position = 0
    waiting = deque(sorted(exactly_min, key=java_string_sort_key))
    transferring: dict[TopicPartition, str] = {}
    for tp in unassigned:
        in_round = True
        if position < len(this_round):
            member_id = this_round[position]
            position += 1
        elif next_round:
            this_round, next_round, position = next_round, [], 1
            member_id = this_round[0]
        elif waiting:
            member_id = waiting.popleft()
            in_round = False
        else:
            raise AssignorError("IllegalStateException: No more unfilled consumers to be assigned.")

        target = assignment[member_id]
        target.append(tp)
        previous = maybe_revoked.get(tp)
        if (previous is not None and previous != member_id) or tp in multiply_claimed:
            transferring[tp] = member_id
        if len(target) == min_quota:
            waiting.append(member_id)
        else:
            if len(target) == max_quota:
                over_min += 1
            if in_round:
                next_round.append(member_id)

    still_under = this_round[position:] + next_round
    if still_under:
        if over_min != expected_over_min:
            raise AssignorError(
                "IllegalStateException: We haven't reached the expected number of members with more than the "
                "minQuota partitions, but no more partitions to be assigned"
            )
        for member_id in still_under:
            if len(assignment[member_id]) != min_quota:
                raise AssignorError(
                    f"IllegalStateException: Consumer: [{member_id}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )
    return StickyOutcome(assignment, transferring)


# -------------------------------------------------------------------------------------- general builder


def _tp_hash(tp: TopicPartition) -> int:
    return topic_partition_hash_code(tp.topic, tp.partition)


class _PartitionMovements:
    """Kafka's PartitionMovements: per topic, which partitions went from which member to which, so a later
    move in the opposite direction sends back one of those partitions instead of a new one."""

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, tuple[str, str]] = {}
        self._by_topic: dict[str, dict[tuple[str, str], JavaHashSet[TopicPartition]]] = {}

    def partition_to_move(self, tp: TopicPartition, owner: str, target: str) -> TopicPartition:
        pairs = self._by_topic.get(tp.topic)
        if pairs is None:
            return tp
        record = self._by_partition.get(tp)
        source = owner if record is None else record[0]
        reverse = pairs.get((target, source))
        # Which one comes back is the first element of a java.util.HashSet<TopicPartition>.
        return tp if reverse is None else reverse.first()

    def record_move(self, tp: TopicPartition, old: str, new: str) -> None:
        record = self._by_partition.get(tp)
        if record is None:
            self._add(tp, (old, new))
            return
        self._remove(tp, record)
        if record[0] != new:
            self._add(tp, (record[0], new))

    def _add(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self._by_partition[tp] = pair
        pairs = self._by_topic.setdefault(tp.topic, {})
        if pair not in pairs:
            pairs[pair] = JavaHashSet(_tp_hash)
        pairs[pair].add(tp)

    def _remove(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        del self._by_partition[tp]
        pairs = self._by_topic[tp.topic]
        pairs[pair].discard(tp)
        if not pairs[pair]:
            del pairs[pair]
            if not pairs:
                del self._by_topic[tp.topic]


def _balance_score(counts: Iterable[int]) -> int:
    """Sum of |a - b| over all member pairs, in Java int arithmetic (it can overflow in very large groups,
    and Kafka compares the wrapped values)."""
    ordered = sorted(counts)
    n = len(ordered)
    return to_int32(sum(c * (2 * i - n + 1) for i, c in enumerate(ordered)))


class _GeneralBuilder:
    def __init__(self, inp: GroupAssignmentInput, claims: _Claims, data: dict[str, MemberData]) -> None:
        self.ppt = inp.partitions_per_topic
        self.members = [m.member_id for m in inp.members]
        self.data = data
        self.max_generation = claims.max_generation
        self.cur = claims.owned
        self.key = {m: java_string_sort_key(m) for m in self.members}

        # Members with the same existing topics form a group; Kafka's per-member questions ("least loaded
        # subscriber of t", "could it take more?") are answered per group.
        self.subscriber_count: dict[str, int] = dict.fromkeys(self.ppt, 0)
        group_index: dict[tuple[str, ...], int] = {}
        self.group_of: dict[str, int] = {}
        self.group_topics: list[tuple[str, ...]] = []
        self.group_topic_set: list[frozenset[str]] = []
        self.group_members: list[list[str]] = []
        self.group_max_size: list[int] = []
        self.groups_of_topic: dict[str, list[int]] = {t: [] for t in self.ppt}
        for subscribed, members in inp.topic_groups.items():
            topics = tuple(t for t in subscribed if t in self.ppt)
            g = group_index.get(topics)
            if g is None:
                g = group_index[topics] = len(self.group_topics)
                self.group_topics.append(topics)
                self.group_topic_set.append(frozenset(topics))
                self.group_members.append([])
                self.group_max_size.append(sum(self.ppt[t] for t in topics))
                for t in topics:
                    self.groups_of_topic[t].append(g)
            for m in members:
                self.group_members[g].append(m.member_id)
                self.group_of[m.member_id] = g
            for t in topics:
                self.subscriber_count[t] += len(members)

        self.owner: dict[TopicPartition, str] = {}
        self.holders: dict[str, dict[str, int]] = {t: {} for t in self.ppt}
        self.heaps: list[list[tuple[int, bytes, str]]] = [[] for _ in self.group_topics]
        # Members set aside once nothing they hold or lack can move (Kafka's fixedAssignments), and the rest.
        self.fixed: set[str] = set()
        self.active: list[str] = []
        self.active_groups: list[int] = []
        self.movements = _PartitionMovements()
        self.compute_balanced = self._compute_balanced
        self.balanced_cache: bool | None = None

    # -- bookkeeping -----------------------------------------------------------------------------------

    def _count_changed(self, member_id: str) -> None:
        heapq.heappush(self.heaps[self.group_of[member_id]], (len(self.cur[member_id]), self.key[member_id], member_id))
        self.balanced_cache = None

    def _add(self, tp: TopicPartition, member_id: str) -> None:
        self.cur[member_id].append(tp)
        self.owner[tp] = member_id
        held = self.holders[tp.topic]
        held[member_id] = held.get(member_id, 0) + 1
        self._count_changed(member_id)

    def _remove(self, tp: TopicPartition, member_id: str) -> None:
        self.cur[member_id].remove(tp)
        held = self.holders[tp.topic]
        held[member_id] -= 1
        if not held[member_id]:
            del held[member_id]
        self._count_changed(member_id)

    def _group_least_loaded(self, g: int) -> tuple[int, bytes, str]:
        heap = self.heaps[g]
        while heap[0][0] != len(self.cur[heap[0][2]]):
            heapq.heappop(heap)
        return heap[0]

    def _least_loaded(self, topic: str) -> tuple[int, str]:
        """The first member of Kafka's sortedCurrentSubscriptions (by count, then member id) subscribed to
        `topic`, with its partition count."""
        count, _, member_id = min(self._group_least_loaded(g) for g in self.groups_of_topic[topic])
        return count, member_id

    # -- the algorithm ---------------------------------------------------------------------------------

    def build(self) -> dict[str, list[TopicPartition]]:
        prev = self._previous_owners()
        revocation_required, kept = self._drop_unsubscribed()
        for m in self.members:
            for tp in self.cur[m]:
                self.owner[tp] = m
                held = self.holders[tp.topic]
                held[m] = held.get(m, 0) + 1
            self._count_changed(m)

        topic_order = {t: (self.subscriber_count[t], java_string_sort_key(t)) for t in self.ppt}
        sorted_topics = sorted(self.ppt, key=topic_order.__getitem__)
        all_partitions = _partitions_of(sorted_topics, self.ppt)
        kept_exist = _all_exist(kept, self.ppt)
        unassigned = _unassigned(all_partitions, kept, kept_exist, lambda tp: (topic_order[tp.topic], tp.partition))
        if not kept_exist:
            # Then Kafka hands some partitions out twice, and only its literal balance check gives its answer.
            self.compute_balanced = self._compute_balanced_literal

        initializing = all(not self.cur[m] for m in self.members)
        for tp in unassigned:
            self._add(tp, self._least_loaded(tp.topic)[1])

        # Only topics with two or more subscribers, and members holding or lacking some of those, can change.
        movable = {t for t, n in self.subscriber_count.items() if n >= 2}
        all_partitions = [tp for tp in all_partitions if tp.topic in movable]
        unassigned = [tp for tp in unassigned if tp.topic in movable]
        for m in self.members:
            g = self.group_of[m]
            if len(self.cur[m]) >= self.group_max_size[g] and not any(tp.topic in movable for tp in self.cur[m]):
                self.fixed.add(m)
        self.active = [m for m in self.members if m not in self.fixed]
        # A group is all fixed or all active: two members with the same topics make each topic movable.
        self.active_groups = sorted({self.group_of[m] for m in self.active})
        before = {m: list(self.cur[m]) for m in self.active}

        # Unless a subscription change already forces revocations, first try moving only new partitions.
        if not revocation_required:
            self._reassign_while_unbalanced(unassigned, prev)
        moved = self._reassign_while_unbalanced(all_partitions, prev)

        # Kafka keeps the moves of that last pass only if they improved the balance score.
        after_score = _balance_score(len(self.cur[m]) for m in self.active)
        if not initializing and moved and after_score >= _balance_score(len(p) for p in before.values()):
            self.cur.update(before)
        return self.cur

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """Partitions claimed by members one or more generations behind, with the newest such claimant."""
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for m in self.members:
            md = self.data[m]
            if md.generation is not None and md.generation < self.max_generation:
                generation = md.generation
            elif md.generation is None and self.max_generation > NO_GENERATION:
                generation = NO_GENERATION
            else:
                continue
            for tp in md.partitions:
                known = prev.get(tp)
                if known is None or generation > known[1]:
                    prev[tp] = (m, generation)
        return prev

    def _drop_unsubscribed(self) -> tuple[bool, list[TopicPartition]]:
        """Keep each member's resolved partitions of topics it still subscribes to (claim resolution already
        dropped topics that no longer exist)."""
        revocation_required = False
        kept: list[TopicPartition] = []
        for m in self.members:
            subscribed = self.group_topic_set[self.group_of[m]]
            mine = self.cur[m]
            still = [tp for tp in mine if tp.topic in subscribed]
            if len(still) != len(mine):
                revocation_required = True
                mine[:] = still
            kept.extend(still)
        return revocation_required, kept

    def _is_balanced(self) -> bool:
        if self.balanced_cache is None:
            self.balanced_cache = self.compute_balanced()
        return self.balanced_cache

    def _compute_balanced(self) -> bool:
        counts = [len(self.cur[m]) for m in self.active]
        if min(counts) >= max(counts) - 1:
            return True
        # Unbalanced if some member that could take more lacks a partition of one of its topics that is held
        # by a member with at least two more partitions: compare, per group, the most loaded holder of the
        # group's topics with the group's least loaded member that is not already full.
        most_loaded_holder: dict[str, int] = {}
        for g in self.active_groups:
            floor = self._least_unfilled_count(g)
            if floor is None:
                continue
            for t in self.group_topics[g]:
                top = most_loaded_holder.get(t)
                if top is None:
                    top = most_loaded_holder[t] = max((len(self.cur[h]) for h in self.holders[t]), default=0)
                if top > floor + 1:
                    return False
        return True

    def _compute_balanced_literal(self) -> bool:
        """Kafka's isBalanced as written, for assignments where a partition can have two holders: each
        partition is attributed to its last holder in map order, and a member does not lack a partition it
        holds itself."""
        counts = [len(self.cur[m]) for m in self.active]
        if min(counts) >= max(counts) - 1:
            return True
        holder: dict[TopicPartition, str] = {}
        for m in self.active:
            for tp in self.cur[m]:
                holder[tp] = m
        for m in sorted(self.active, key=lambda m: (len(self.cur[m]), self.key[m])):
            g = self.group_of[m]
            count = len(self.cur[m])
            if count == self.group_max_size[g]:
                continue
            mine = set(self.cur[m])
            for t in self.group_topics[g]:
                for i in range(self.ppt[t]):
                    tp = TopicPartition(t, i)
                    if tp in mine:
                        continue
                    other = holder.get(tp)
                    if other is None:
                        raise AssignorError(f"NullPointerException in AbstractStickyAssignor.isBalanced: nobody holds {tp}")
                    if count + 1 < len(self.cur[other]):
                        return False
        return True

    def _least_unfilled_count(self, g: int) -> int | None:
        """The smallest partition count among the group's members that Kafka would check, i.e. those whose
        count is not exactly the group's maximum assignment size."""
        full = self.group_max_size[g]
        least = self._group_least_loaded(g)[0]
        if least != full:
            return least
        # Only reachable when a partition was moved to a previous owner no longer subscribed to its topic.
        return min((n for n in (len(self.cur[m]) for m in self.group_members[g]) if n != full), default=None)

    def _reassign_while_unbalanced(self, partitions: list[TopicPartition], prev: dict[TopicPartition, tuple[str, int]]) -> bool:
        moved = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                owner = self.owner[tp]
                owner_count = len(self.cur[owner])
                previous = prev.get(tp)
                if previous is not None:
                    previous_owner = previous[0]
                    if previous_owner in self.fixed:
                        raise AssignorError(
                            f"NullPointerException in AbstractStickyAssignor.performReassignments: {tp} was last "
                            f"owned by {previous_owner!r} in generation {previous[1]}, but that member was set "
                            "aside as fixed (it can take no partition that another member could take)"
                        )
                    # No subscription check: Kafka hands the partition back to its previous owner even when
                    # that member has stopped subscribing to the topic.
                    if owner_count > len(self.cur[previous_owner]) + 1:
                        self._reassign(tp, previous_owner)
                        moved = modified = True
                        continue
                least_count, least = self._least_loaded(tp.topic)
                if owner_count > least_count + 1:
                    self._reassign(tp, least)
                    moved = modified = True
        return moved

    def _reassign(self, tp: TopicPartition, target: str) -> None:
        actual = self.movements.partition_to_move(tp, self.owner[tp], target)
        old = self.owner[actual]
        self.movements.record_move(actual, old, target)
        self._remove(actual, old)
        self._add(actual, target)
