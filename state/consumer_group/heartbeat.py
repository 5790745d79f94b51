"""The broker side of ConsumerGroupHeartbeat (Kafka's GroupCoordinatorService request checks and
GroupMetadataManager.consumerGroupHeartbeat / consumerGroupLeave, trunk), the member timeouts that fence
members (session timeout, rebalance timeout; a classic member's join and sync timeouts) and the timers a
coordinator arms when it loads a group. `MemberUpdate`, the heartbeat's update of one member (subscription,
group epoch, target assignment, reconciliation), is also what a classic member's JoinGroup runs
(`classic_members`).

Every handler reads the group without changing it and returns a `CoordinatorResult`: the records to append
(the group changes when the runtime replays them), the response, and the changes to the coordinator's
timers. A failed request writes nothing, answers an error and leaves the timers alone.

Regular-expression subscriptions (SubscribedTopicRegex) follow `regex`: a new regex is checked
(INVALID_REGULAR_EXPRESSION), the heartbeat may ask for the group's regexes to be resolved
(`CoordinatorResult.resolve_regexes`), which the runtime does in a write of its own right after this one
(`on_regular_expressions_resolved`); a member's regex topics count as subscribed once resolved.

Not modelled, with the answer given instead:
* classic groups: a heartbeat naming a group that is not a consumer group gets GROUP_ID_NOT_FOUND; the
  runtime replaces an empty classic group on a join, or converts a non-empty one (`migration`), first;
* per-group configs (GroupConfig): the broker's group.consumer.* settings apply to every group;
* authorization and coordinator availability (pre-checks 1-4).

`kafka_4_0` selects Kafka 4.0.0's behaviour where it differs (docs/consumer-protocol.md): the first member epoch is 1,
not 2 (`group.initial_epoch`), even for a first member subscribing to nothing (trunk: no bump); an existing member's epoch 0 must equal its previous epoch; a returning static
member counts against group.consumer.max.size; a change of the group's preferred assignor does not bump the
group epoch; fencing the last member leaves the assignment epoch behind; the target assignment is computed
on every epoch bump (no assignment interval); and reconciliation follows 4.0 (see `reconciliation`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

from state.config import CoordinatorConfig
from state.consumer_group import SERVER_ASSIGNORS, SERVER_ASSIGNORS_4_0, Assignor
from state.consumer_group.downgrade import Downgrade, downgrade_with_fenced_members
from state.consumer_group.group import (
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    preferred_server_assignor,
    topic_partitions,
)
from state.consumer_group.group_spec import PartitionAssignorError, in_java_hash_map_order, subscription_type
from state.consumer_group.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    UNCHANGED_REBALANCE_TIMEOUT,
    HeartbeatRequest,
    HeartbeatResponse,
)
from state.consumer_group.reconciliation import (
    CurrentAssignment,
    FencedMemberEpochError,
    MemberState,
    reconcile,
    subscribed_topic_ids,
)
from state.consumer_group.records import (
    AssignmentMetadata,
    ClassicMemberMetadata,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpression,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    GroupEpoch,
    ResolvedRegularExpression,
    member_tombstones,
)
from state.consumer_group.regex import InvalidRegularExpression, RegexUpdate, maybe_update_regular_expressions
from state.consumer_group.target_assignment import TargetAssignmentBuilder
from state.consumer_group.topics import TopicsImage

# Since ConsumerGroupHeartbeat v1 (KIP-1082) the client generates its member id.
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1

SESSION_TIMEOUT = "session-timeout"
REBALANCE_TIMEOUT = "rebalance-timeout"
# A classic member's timers (consumerGroupJoinKey, consumerGroupSyncKey): it must rejoin, or sync, in time.
JOIN_TIMEOUT = "join-timeout"
SYNC_TIMEOUT = "sync-timeout"


@dataclass(frozen=True)
class TimerChange:
    """Schedule (or reschedule) the coordinator timer `key` for `deadline`, or cancel it (`deadline` None).
    The timer, when it fires, runs `kind` with `args`: `on_rebalance_timeout(group, member_id, member_epoch)`,
    or `on_member_timeout(group, member_id)` for the others (`kind` names the timeout: on_session_timeout,
    on_join_timeout, on_sync_timeout). `if_absent`: only if no timer `key` is pending (Kafka's
    scheduleIfAbsent). Keys are per group, as state.runtime.timers' are."""

    key: tuple
    deadline: int | None
    kind: str = ""
    args: tuple = ()
    if_absent: bool = False


@dataclass(frozen=True)
class CoordinatorResult:
    records: tuple[ConsumerGroupRecord, ...] = ()
    # A HeartbeatResponse, or a classic_members.ClassicResponse; None for a timer's work.
    response: object | None = None
    timers: tuple[TimerChange, ...] = ()
    # The heartbeat recomputed the group's metadata hash: the runtime clears `group.metadata_expired`.
    metadata_refreshed: bool = False
    # The group becomes a classic group (state.consumer_group.downgrade): `records` are then the join's records
    # that precede the downgrade's, and the runtime writes the downgrade instead of replaying them.
    downgrade: Downgrade | None = None
    # The regexes to resolve once these records are written (Kafka schedules TopicRegexResolver on its
    # executor); the runtime then writes `on_regular_expressions_resolved`'s result.
    resolve_regexes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class HeartbeatContext:
    """What the handler reads besides the group and the request: the broker's settings, the topics in the
    cluster, the server-side assignors by name (the first one is the default) and the Kafka release; and, for
    regexes, the metadata image's version and the last version that created a topic (Kafka's
    lastMetadataImageWithNewTopics, -1 before any)."""

    config: CoordinatorConfig
    topics: TopicsImage
    assignors: Mapping[str, Assignor]
    kafka_4_0: bool = False
    metadata_version: int = 0
    new_topics_version: int = -1

    @classmethod
    def from_config(cls, config: CoordinatorConfig, topics: TopicsImage, metadata_version: int = 0,
                    new_topics_version: int = -1) -> "HeartbeatContext":
        assignors = SERVER_ASSIGNORS_4_0 if config.kafka_4_0 else SERVER_ASSIGNORS
        return cls(config, topics, {name: assignors[name] for name in config.group_consumer_assignors},
                   config.kafka_4_0, metadata_version, new_topics_version)

    @property
    def default_assignor(self) -> str:
        return next(iter(self.assignors))


class HeartbeatError(Exception):
    """A request the coordinator refuses: `error` is Kafka's error name for it."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def consumer_group_heartbeat(group: object | None, request: HeartbeatRequest, now: int, context: HeartbeatContext,
                             client_id: str = "", client_host: str = "",
                             generated_member_id: str | None = None) -> CoordinatorResult:
    """Handle one ConsumerGroupHeartbeat. `group`: what the coordinator holds under the request's group id
    (None: nothing; anything but a ConsumerGroup: a group of another type). `generated_member_id`: the id to
    give a member joining with an empty member id (ConsumerGroupHeartbeat v0), which Kafka draws at random."""
    try:
        validate_request(request, context)
        if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return _leave(_consumer_group(group, request.group_id), request, context)
        return MemberUpdate(group, request, now, context, client_id, client_host, generated_member_id).run()
    except HeartbeatError as error:
        return CoordinatorResult(response=HeartbeatResponse(error=error.error, error_message=str(error)))


def session_timer(member_id: str, now: int, config: CoordinatorConfig, timeout_ms: int | None = None) -> TimerChange:
    """The member's session: group.consumer.session.timeout.ms, or `timeout_ms` (a classic member's own)."""
    timeout_ms = config.group_consumer_session_timeout_ms if timeout_ms is None else timeout_ms
    return TimerChange((SESSION_TIMEOUT, member_id), now + timeout_ms, "on_session_timeout", (member_id,))


def rebalance_timer(member: ConsumerGroupMember, now: int) -> TimerChange:
    """The time the member has to revoke, running from the epoch it is revoking at."""
    return TimerChange((REBALANCE_TIMEOUT, member.member_id), now + member.rebalance_timeout_ms,
                       "on_rebalance_timeout", (member.member_id, member.member_epoch))


def on_loaded(group: ConsumerGroup, now: int, context: HeartbeatContext) -> tuple[TimerChange, ...]:
    """The timers a coordinator arms when it loads the group (GroupMetadataManager.onLoaded): a new session
    for every member, and the whole rebalance timeout again for every member still revoking."""
    timers = []
    for member in group.members.values():
        timers.append(session_timer(member.member_id, now, context.config))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            timers.append(rebalance_timer(member, now))
    return tuple(timers)


def on_member_timeout(group: object | None, member_id: str, context: HeartbeatContext) -> CoordinatorResult:
    """The member's session expired, or a classic member did not rejoin or sync in time: fence it (nothing if it
    is already gone). consumerGroupFenceMemberOperation."""
    member = group.members.get(member_id) if isinstance(group, ConsumerGroup) else None
    return CoordinatorResult() if member is None else fence_members(group, [member], None, context)


def on_rebalance_timeout(group: object | None, member_id: str, member_epoch: int,
                         context: HeartbeatContext) -> CoordinatorResult:
    """The member did not revoke in time: fence it if it is still at the epoch the timer was armed at."""
    member = group.members.get(member_id) if isinstance(group, ConsumerGroup) else None
    if member is None or member.member_epoch != member_epoch:
        return CoordinatorResult()
    return fence_members(group, [member], None, context)


# ----------------------------------------------------------------------------------------------------------
# Request checks (GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid)

def _blank(value: str | None) -> bool:
    return value is not None and not value.strip()


def validate_request(request: HeartbeatRequest, context: HeartbeatContext) -> None:
    epoch = request.member_epoch
    invalid = [
        (_blank(request.member_id) and (request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
                                        or epoch > 0 or epoch == LEAVE_EPOCH), "MemberId is blank."),
        (_blank(request.group_id), "GroupId is blank."),
        (_blank(request.instance_id), "InstanceId is blank."),
        (_blank(request.rack_id), "RackId is blank."),
    ]
    if epoch == JOIN_EPOCH:
        invalid += [
            (request.rebalance_timeout_ms == UNCHANGED_REBALANCE_TIMEOUT,
             "RebalanceTimeoutMs must be given when (re-)joining."),
            (request.topic_partitions is None or len(request.topic_partitions) > 0,
             "TopicPartitions must be empty when (re-)joining."),
            (request.subscribed_topic_names is None and request.subscribed_topic_regex is None,
             "SubscribedTopicNames or SubscribedTopicRegex must be given when (re-)joining."),
        ]
    elif epoch == STATIC_LEAVE_EPOCH:
        invalid.append((request.instance_id is None, "InstanceId must be given to leave with epoch -2."))
    elif epoch < STATIC_LEAVE_EPOCH:
        invalid.append((True, f"MemberEpoch {epoch} is invalid."))
    for failed, message in invalid:
        if failed:
            raise HeartbeatError("INVALID_REQUEST", message)
    if request.server_assignor is not None and request.server_assignor not in context.assignors:
        raise HeartbeatError("UNSUPPORTED_ASSIGNOR", f"ServerAssignor {request.server_assignor} is not supported; "
                                                     f"supported: {', '.join(context.assignors)}.")


# ----------------------------------------------------------------------------------------------------------
# Leaving and fencing (consumerGroupLeave, consumerGroupStaticMemberGroupLeave, consumerGroupFenceMembers)

def _consumer_group(group: object | None, group_id: str) -> ConsumerGroup:
    if isinstance(group, ConsumerGroup):
        return group
    raise HeartbeatError("GROUP_ID_NOT_FOUND", f"{group_id} is a group of another type, not a consumer group."
                         if group is not None else f"No consumer group {group_id}.")


def _static_member(group: ConsumerGroup, request: HeartbeatRequest) -> ConsumerGroupMember:
    """The member holding the request's instance id, which must be the request's member."""
    member = group.static_member(request.instance_id)
    if member is None:
        raise HeartbeatError("UNKNOWN_MEMBER_ID", f"No member holds instance id {request.instance_id}.")
    if member.member_id != request.member_id:
        raise HeartbeatError("FENCED_INSTANCE_ID", f"Member {request.member_id} with instance id "
                             f"{request.instance_id} is fenced by member {member.member_id}.")
    return member


def _leave(group: ConsumerGroup, request: HeartbeatRequest, context: HeartbeatContext) -> CoordinatorResult:
    if request.instance_id is None:
        member = group.members.get(request.member_id)
        if member is None:
            raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {request.member_id} is not a member of the group.")
    else:
        member = _static_member(group, request)
        if request.member_epoch == STATIC_LEAVE_EPOCH:
            return _static_member_leave(member)
    response = HeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch)
    return fence_members(group, [member], response, context)


def _static_member_leave(member: ConsumerGroupMember) -> CoordinatorResult:
    """A static member leaving for now stays, at epoch -2, keeping its partitions (their assignment epochs
    reset to 0, so the member taking its place holds them from epoch 0) and dropping what it was revoking.
    No epoch bump, and its timers run on."""
    current = member.current
    assigned = {topic_id: dict.fromkeys(ps, 0) for topic_id, ps in current.assigned_partitions.items()}
    left = CurrentAssignment(current.state, STATIC_LEAVE_EPOCH, current.previous_member_epoch, assigned, {})
    return CoordinatorResult(
        records=(ConsumerGroupCurrentMemberAssignment(member.member_id, left),),
        response=HeartbeatResponse(member_id=member.member_id, member_epoch=STATIC_LEAVE_EPOCH))


def member_timer_cancels(member_id: str) -> tuple[TimerChange, ...]:
    """cancelTimers: every timer a member may have."""
    return tuple(TimerChange((name, member_id), None)
                 for name in (SESSION_TIMEOUT, REBALANCE_TIMEOUT, JOIN_TIMEOUT, SYNC_TIMEOUT))


def fence_members(group: ConsumerGroup, members: Iterable[ConsumerGroupMember], response: HeartbeatResponse | None,
                  context: HeartbeatContext) -> CoordinatorResult:
    """Remove members: their tombstones, one group epoch bump (always, with the hash of what the remaining
    members subscribe to) and, when nobody is left, the assignment epoch brought up to the new group epoch
    (4.4+) so the next member's assignment is not held back. The next heartbeat computes the new target.
    Unless only members using the classic protocol would remain and the policy allows a downgrade: then the
    group becomes a classic group instead (consumerGroupFenceMembers)."""
    members = list(members)
    downgrade = downgrade_with_fenced_members(group, members, context.config)
    if downgrade is not None:
        return CoordinatorResult(response=response, downgrade=downgrade)
    records: list[ConsumerGroupRecord] = []
    names = group.all_subscribed_topic_names()
    for member in members:
        records += member_tombstones(member.member_id)
        names.subtract(member.subscribed_topic_names)
    # maybeDeleteResolvedRegularExpressions: the regexes only the fenced members used go, with their topics.
    for regex in deleted_regexes(group, members):
        records.append(ConsumerGroupRegularExpression(regex, None))
        names.subtract(group.regex_topics(regex))
    group_epoch = group.group_epoch + 1
    metadata_hash = context.topics.metadata_hash(name for name, count in names.items() if count > 0)
    records.append(ConsumerGroupMetadata(GroupEpoch(group_epoch, metadata_hash)))
    if len(members) == len(group.members) and not context.kafka_4_0:
        records.append(ConsumerGroupTargetAssignmentMetadata(AssignmentMetadata(group_epoch, 0)))
    timers = tuple(change for member in members for change in member_timer_cancels(member.member_id))
    return CoordinatorResult(tuple(records), response, timers)


def deleted_regexes(group: ConsumerGroup, members: Iterable[ConsumerGroupMember]) -> list[str]:
    """maybeDeleteResolvedRegularExpressions: the regexes no member but `members` subscribes with, in the
    order of Kafka's HashMap of them."""
    counts = Counter(m.subscribed_topic_regex for m in members if m.subscribed_topic_regex)
    return [regex for regex, count in in_java_hash_map_order(counts).items()
            if group.subscribed_regexes.get(regex, 0) == count]


def on_regular_expressions_resolved(group: object | None, resolved: Mapping[str, ResolvedRegularExpression],
                                    context: HeartbeatContext) -> CoordinatorResult:
    """handleRegularExpressionsResult: a record for every resolved regex the group still subscribes with,
    and a group epoch bump if one resolved to other topics or the metadata hash changed (the group's
    metadata then counts as refreshed). Nothing if the group is gone."""
    if not isinstance(group, ConsumerGroup):
        return CoordinatorResult()
    names = group.all_subscribed_topic_names()
    records: list[ConsumerGroupRecord] = []
    bump = False
    for regex, new in in_java_hash_map_order(resolved).items():
        if group.subscribed_regexes.get(regex, 0) == 0:
            continue
        old = group.regex_topics(regex)
        if old != frozenset(new.topics):
            bump = True
            names.subtract(old)
            names.update(new.topics)
        records.append(ConsumerGroupRegularExpression(regex, new))
    metadata_hash = context.topics.metadata_hash(name for name, count in names.items() if count > 0)
    bump |= metadata_hash != group.metadata_hash
    if bump:
        records.append(ConsumerGroupMetadata(GroupEpoch(group.group_epoch + 1, metadata_hash)))
    return CoordinatorResult(tuple(records), metadata_refreshed=bump)


# ----------------------------------------------------------------------------------------------------------
# The regular heartbeat (GroupMetadataManager.consumerGroupHeartbeat)

def _is_subset(owned: Mapping[object, Iterable[int]] | None, assigned: Mapping[object, Mapping[int, int]]) -> bool:
    """Whether the heartbeat reports only partitions the member is assigned (unknown, None: no)."""
    if owned is None:
        return False
    return all(topic_id in assigned and all(p in assigned[topic_id] for p in ps) for topic_id, ps in owned.items())


def _check_member_epoch(member: ConsumerGroupMember, epoch: int, owned, kafka_4_0: bool) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: the request's epoch must be the member's, or its previous
    one when the heartbeat reports a subset of its partitions (the response bumping it may have been lost).
    Epoch 0 always rejoins (KAFKA-19233, 4.3); in 4.0 it is checked like any other."""
    if epoch == JOIN_EPOCH and not kafka_4_0:
        return
    if epoch > member.member_epoch:
        raise HeartbeatError("FENCED_MEMBER_EPOCH", f"Member epoch {epoch} is ahead of the coordinator's "
                             f"{member.member_epoch}: the member must give up its partitions and rejoin.")
    if epoch < member.member_epoch and (epoch != member.previous_member_epoch
                                        or not _is_subset(owned, member.assigned_partitions)):
        raise HeartbeatError("FENCED_MEMBER_EPOCH", f"Member epoch {epoch} is behind the coordinator's "
                             f"{member.member_epoch}: the member must give up its partitions and rejoin.")


class MemberUpdate:
    """One member's heartbeat (consumerGroupHeartbeat). With `classic` (the ClassicMemberMetadata it joined
    with), a classic member's JoinGroup to the consumer group instead (classicGroupJoinToConsumerGroup, whose
    steps are the heartbeat's: `classic_members` builds the request from the JoinGroup, a join at epoch 0):
    no member epoch is checked, a static member is looked up rather than created unless the JoinGroup came
    with an unknown member id (`unknown_member`), it replaces a static member without waiting for its leave,
    and a classic member gets no rebalance timer (its join and sync timers do that work)."""

    def __init__(self, group: object | None, request: HeartbeatRequest, now: int, context: HeartbeatContext,
                 client_id: str, client_host: str, generated_member_id: str | None = None,
                 classic: ClassicMemberMetadata | None = None, unknown_member: bool = False) -> None:
        self.request = request
        self.classic = classic
        self.unknown_member = unknown_member
        self.now = now
        self.context = context
        self.config = context.config
        self.joining = request.member_epoch == JOIN_EPOCH
        if group is None and self.joining:
            group = ConsumerGroup(request.group_id, context.kafka_4_0)  # created when its records are replayed
        self.group = _consumer_group(group, request.group_id)
        self.client_id = client_id
        self.client_host = client_host
        self.member_id = request.member_id or generated_member_id
        self.owned = None if request.topic_partitions is None else dict(request.topic_partitions)
        self.records: list[ConsumerGroupRecord] = []
        self.timers: list[TimerChange] = []
        self.stale_target = False
        self.resolve_regexes: tuple[str, ...] | None = None

    def run(self) -> CoordinatorResult:
        request = self.request
        self.throw_if_group_is_full()
        member = self.find_member()
        reconciled, refreshed = self.update(member)
        self.timers.append(session_timer(self.member_id, self.now, self.config))
        full = (request.rebalance_timeout_ms != UNCHANGED_REBALANCE_TIMEOUT
                and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
                and request.topic_partitions is not None)
        changed = reconciled.assigned_partitions != member.assigned_partitions
        response = HeartbeatResponse(
            member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.group_consumer_heartbeat_interval_ms,
            assignment=topic_partitions(reconciled.assigned_partitions) if self.joining or full or changed else None)
        return CoordinatorResult(tuple(self.records), response, tuple(self.timers), refreshed,
                                 resolve_regexes=self.resolve_regexes)

    def find_member(self) -> ConsumerGroupMember:
        """The member the request is from: existing, new, or replacing a static member (whose records the
        replacement adds)."""
        if self.member_id is None:
            raise ValueError("a v0 join with an empty member id needs generated_member_id")
        return self._member() if self.request.instance_id is None else self._static_member()

    def update(self, member: ConsumerGroupMember, downgrading: bool = False) -> tuple[ConsumerGroupMember, bool]:
        """Apply the request to the member: its new subscription, the group epoch bumped if that changes what
        the group subscribes to, the target assignment computed if the group epoch is ahead of it, the member
        reconciled towards its target. Returns the member as its records leave it, and whether the group's
        metadata hash was recomputed. `downgrading`: a classic JoinGroup about to downgrade the group computes
        no target; it reconciles the member to the current one unless the epoch is now ahead of it
        (`stale_target`: the classic group will rebalance instead)."""
        group = self.group
        updated = self._updated(member)

        names_changed = False
        if updated != member:
            self.records.append(ConsumerGroupMemberMetadata(updated.member_id, updated.subscription()))
            names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        regex_status = self._maybe_update_regular_expressions(member, updated)
        subscription_changed = names_changed or regex_status.regex_updated
        # Kafka 4.0 bumped a new group's epoch 0 on its first heartbeat whatever the member subscribed to.
        # A new regex not resolved yet bumps nothing: its resolution will.
        bump = (names_changed or regex_status is RegexUpdate.UPDATED_AND_RESOLVED
                or self._preferred_assignor_changed(member, updated)
                or (self.context.kafka_4_0 and group.group_epoch == 0))

        builder = TargetAssignmentBuilder(group.members, group.static_members, group.target_assignment,
                                          group.resolved_regexes)
        builder.add_or_update_member(updated)
        group_epoch, sub_type, refreshed = group.group_epoch, group.subscription_type, False
        if bump or group.metadata_expired:
            # ConsumerGroup.computeSubscribedTopicNames: the old regex's topics go if it was its last member's.
            names = group.all_subscribed_topic_names()
            names.subtract(member.subscribed_topic_names)
            names.update(updated.subscribed_topic_names)
            old_regex = member.subscribed_topic_regex
            if (old_regex and old_regex != updated.subscribed_topic_regex
                    and group.subscribed_regexes.get(old_regex, 0) == 1):
                names.subtract(group.regex_topics(old_regex))
            metadata_hash = self.context.topics.metadata_hash(name for name, count in names.items() if count > 0)
            sub_type = subscription_type((m.subscribed_topic_names, m.subscribed_topic_regex)
                                         for m in builder.members.values())
            if bump or metadata_hash != group.metadata_hash:
                group_epoch += 1
                self.records.append(ConsumerGroupMetadata(GroupEpoch(group_epoch, metadata_hash)))
            refreshed = True

        if downgrading:
            self.stale_target = group.assignment_epoch < group_epoch
            if self.stale_target:
                return updated, refreshed
            target = group.target_of(updated.member_id, updated.instance_id)
            return self._reconcile(updated, group.assignment_epoch, target, subscription_changed), refreshed
        target_epoch, target = self._target_assignment(builder, group_epoch, member, updated, sub_type)
        return self._reconcile(updated, target_epoch, target, subscription_changed), refreshed

    def _maybe_update_regular_expressions(self, member: ConsumerGroupMember,
                                          updated: ConsumerGroupMember) -> RegexUpdate:
        """maybeUpdateRegularExpressions (state.consumer_group.regex): its records, and the regexes to resolve
        after this write."""
        group, context = self.group, self.context
        try:
            status, records, self.resolve_regexes = maybe_update_regular_expressions(
                old_regex=member.subscribed_topic_regex, new_regex=updated.subscribed_topic_regex,
                subscribed=group.subscribed_regexes, resolved=group.resolved_regexes, now=self.now,
                refresh_interval_ms=self.config.group_consumer_regex_refresh_interval_ms,
                new_topics_version=context.new_topics_version)
        except InvalidRegularExpression as error:
            raise HeartbeatError("INVALID_REGULAR_EXPRESSION", str(error)) from None
        self.records += records
        return status

    def throw_if_group_is_full(self) -> None:
        group, member_id = self.group, self.request.member_id
        # A returning static member only ever replaces itself (4.4+).
        if group.static_member(self.request.instance_id) is not None and not self.context.kafka_4_0:
            return
        if len(group.members) >= self.config.group_consumer_max_size and (not member_id or member_id not in group.members):
            raise HeartbeatError("GROUP_MAX_SIZE_REACHED", "The consumer group has reached its maximum size of "
                                 f"{self.config.group_consumer_max_size} members.")

    def _member(self) -> ConsumerGroupMember:
        """getOrMaybeSubscribeDynamicConsumerGroupMember."""
        member = self.group.members.get(self.member_id)
        if member is None:
            if not self.joining:
                raise HeartbeatError("UNKNOWN_MEMBER_ID", f"Member {self.member_id} is not a member of the group.")
            member = ConsumerGroupMember(self.member_id)
        if self.classic is None:
            _check_member_epoch(member, self.request.member_epoch, self.owned, self.context.kafka_4_0)
        return member

    def _static_member(self) -> ConsumerGroupMember:
        """getOrMaybeSubscribeStaticConsumerGroupMember: a joining static member takes the place of the
        member holding its instance id if that one left with epoch -2 (UNRELEASED_INSTANCE_ID otherwise), or
        uses the classic protocol; a classic member always takes its place."""
        group, request, classic = self.group, self.request, self.classic is not None
        if not (self.unknown_member if classic else self.joining):
            member = _static_member(group, request)
            if not classic:
                _check_member_epoch(member, request.member_epoch, self.owned, self.context.kafka_4_0)
            return member
        existing = group.static_member(request.instance_id)
        if existing is None:
            return group.members.get(self.member_id) or ConsumerGroupMember(self.member_id)
        if not classic and not existing.use_classic_protocol and existing.member_epoch != STATIC_LEAVE_EPOCH:
            raise HeartbeatError("UNRELEASED_INSTANCE_ID", f"Instance id {request.instance_id} is still held by "
                                 f"member {existing.member_id}, which must leave first.")
        replacement = dataclasses.replace(existing, member_id=self.member_id, current=dataclasses.replace(
            existing.current, member_epoch=0, previous_member_epoch=0))
        # The old member's timers are left to run: they find it gone and do nothing.
        self.records += member_tombstones(existing.member_id)
        self.records += [
            ConsumerGroupMemberMetadata(self.member_id, replacement.subscription()),
            ConsumerGroupTargetAssignmentMember(self.member_id, topic_partitions(group.target_of(existing.member_id))),
            ConsumerGroupCurrentMemberAssignment(self.member_id, replacement.current),
        ]
        return replacement

    def _updated(self, member: ConsumerGroupMember) -> ConsumerGroupMember:
        """The member with the request's fields applied (a None field leaves it as it is)."""
        request = self.request
        # A ConsumerGroupHeartbeat means the member uses the consumer protocol from now on; a JoinGroup, the
        # classic protocol with the session timeout and protocols it carries.
        changes = {"client_id": self.client_id, "client_host": self.client_host,
                   "classic_member_metadata": self.classic}
        if request.instance_id is not None:
            changes["instance_id"] = request.instance_id
        if request.rack_id is not None:
            changes["rack_id"] = request.rack_id
        if request.rebalance_timeout_ms != UNCHANGED_REBALANCE_TIMEOUT:
            changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
        if request.server_assignor is not None:
            changes["server_assignor_name"] = request.server_assignor
        if request.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = frozenset(request.subscribed_topic_names)
        if request.subscribed_topic_regex is not None:
            changes["subscribed_topic_regex"] = request.subscribed_topic_regex
        return dataclasses.replace(member, **changes)

    def _assignor_counts(self, member: ConsumerGroupMember, updated: ConsumerGroupMember) -> Counter[str]:
        counts = Counter(self.group.server_assignors)
        if member.server_assignor_name is not None:
            counts[member.server_assignor_name] -= 1
        if updated.server_assignor_name is not None:
            counts[updated.server_assignor_name] += 1
        return Counter({name: count for name, count in counts.items() if count > 0})

    def _preferred_assignor(self, member: ConsumerGroupMember, updated: ConsumerGroupMember) -> str:
        return preferred_server_assignor(self._assignor_counts(member, updated)) or self.context.default_assignor

    def _preferred_assignor_changed(self, member: ConsumerGroupMember, updated: ConsumerGroupMember) -> bool:
        """The group's effective assignor changes (4.4+, KAFKA-20434): its target must be recomputed."""
        if self.context.kafka_4_0:
            return False
        current = self.group.preferred_server_assignor() or self.context.default_assignor
        return current != self._preferred_assignor(member, updated)

    def _target_assignment(self, builder: TargetAssignmentBuilder, group_epoch: int, member: ConsumerGroupMember,
                           updated: ConsumerGroupMember, sub_type) -> tuple[int, Assignment]:
        """maybeUpdateTargetAssignment: the member's target and its epoch, computing the group's next target
        assignment first if the group epoch is ahead of it and the assignment interval allows."""
        group = self.group
        if group.assignment_epoch >= group_epoch or not self._can_compute_next_assignment():
            return group.assignment_epoch, group.target_of(updated.member_id, updated.instance_id)
        assignor_name = self._preferred_assignor(member, updated)
        try:
            result = builder.build(group_epoch, self.context.assignors[assignor_name], sub_type,
                                   self.context.topics, self.now)
        except PartitionAssignorError as error:
            raise HeartbeatError("UNKNOWN_SERVER_ERROR", f"Failed to compute a new target assignment for epoch "
                                 f"{group_epoch}: {error}") from None
        self.records += result.records
        return group_epoch, result.target_assignment.get(updated.member_id, {})

    def _can_compute_next_assignment(self) -> bool:
        """KIP-1263 batching: at most one target computation per assignment interval, unless the last one's
        time is unknown (0)."""
        last, interval = self.group.assignment_timestamp_ms, self.config.group_consumer_assignment_interval_ms
        return self.context.kafka_4_0 or last == 0 or interval == 0 or self.now >= last + interval

    def _reconcile(self, member: ConsumerGroupMember, target_epoch: int, target: Assignment,
                   subscription_changed: bool) -> ConsumerGroupMember:
        """maybeReconcile: move the member towards its target; arm the rebalance timer while it has
        partitions to revoke, cancel it otherwise."""
        if not subscription_changed and member.is_reconciled_to(target_epoch):
            return member
        topics = self.context.topics
        resolved = {regex: value.topics for regex, value in self.group.resolved_regexes.items()}
        subscribed = subscribed_topic_ids(member.subscribed_topic_names, member.subscribed_topic_regex, resolved,
                                          {name: topic_id for name, (topic_id, _) in topics.topics.items()})
        try:
            current = reconcile(member.current, target_epoch=target_epoch, target=target, subscribed=subscribed,
                                current_partition_epoch=self.group.partition_epochs,
                                owned=self.owned,
                                subscription_changed=subscription_changed, kafka_4_0=self.context.kafka_4_0)
        except FencedMemberEpochError as error:
            raise HeartbeatError("FENCED_MEMBER_EPOCH", str(error)) from None
        if current == member.current:
            return member
        reconciled = dataclasses.replace(member, current=current)
        self.records.append(ConsumerGroupCurrentMemberAssignment(member.member_id, current))
        # A member using the classic protocol has join and sync timers instead of a rebalance timer.
        if not reconciled.use_classic_protocol:
            revoking = current.state is MemberState.UNREVOKED_PARTITIONS
            self.timers.append(rebalance_timer(reconciled, self.now) if revoking
                               else TimerChange((REBALANCE_TIMEOUT, member.member_id), None))
        return reconciled
