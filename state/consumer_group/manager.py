"""The consumer group manager (KIP-848, `group.protocol=consumer`): ConsumerGroupHeartbeat, the classic
requests naming a consumer group, its members' timeouts, its regular expressions, its load, unload and
deletion, and the online conversions between it and a classic group (Kafka 4.x GroupMetadataManager's
consumer group handlers).

A group id hosts a classic group (state/classic/manager.py) or a consumer group (`consumer_group`), never both.
The broker-side logic is state.consumer_group's pure functions: a ConsumerGroupHeartbeat, or a session or
rebalance timeout firing, gives records, a response and timer changes. `ConsumerGroupManager` turns them into
the operation's `CoordinatorResult` (state/runtime/result.py): the records to append in one write (one
batch) and replay, the timer changes, the response once the records are written. A failed write answers the
append's error and changes nothing, timers included, as Kafka's CoordinatorRuntime rolls back. The runtime
carries the result out; the group changes only when the runtime replays the written records (`replay`),
which also writes the rows they lead to.

Rows (docs/tables.md says how each column reads for a consumer group): every record in
`consumer_group_records`; the derived group state's changes in `group_states`; members added and removed
(MemberMetadata records and their tombstones) in `members`; one `generations` row per group epoch, written
once the group is Stable at it, or when the next epoch or the end of the run supersedes it; and in
`assignments`, a member's partitions each time its current assignment moves to another member epoch or
other partitions.

A joining ConsumerGroupHeartbeat replaces an empty classic group, or converts a non-empty one when
group.consumer.migration.policy allows an upgrade (state.consumer_group.migration; GROUP_ID_NOT_FOUND
otherwise, as for any other heartbeat naming a classic group): the classic group's GroupMetadata tombstone
opens the heartbeat's append, then the records converting its members, then the heartbeat's own. Rows of a
conversion: the classic group goes Dead and its members are removed (cause `group_converted`); the consumer
group is created, its converted members added and its state entered with that cause, at the classic
generation, which gets no second `generations` row nor `assignments` rows (they are the classic group's).

Classic requests naming a consumer group are its classic members' (state.consumer_group.classic_members):
a JoinGroup to a non-empty consumer group joins it with the classic protocol (INCONSISTENT_GROUP_PROTOCOL
when group.consumer.migration.policy is `disabled`) and is written as a heartbeat is (rows with cause
`member_join` for a new member, `member_metadata_update` otherwise); SyncGroup and Heartbeat write nothing
and only move the member's timers; LeaveGroup fences the members it names (an admin's removal, or a member
leaving). A join or sync timeout fences a classic member with cause `rebalance_timeout` or
`pending_sync_timeout`.
The way back (state.consumer_group.downgrade): a fencing that would leave only members using the classic
protocol, or a classic static member replacing the last one using the consumer protocol, makes the group a
classic group under `downgrade` / `bidirectional`: the consumer group's tombstones and the classic group's
GroupMetadata record in one append, the consumer group Dead and its members removed, the classic group's
members added and its state Stable at the group epoch, then its rebalance (all with cause
`group_converted`). A JoinGroup to an Empty consumer group replaces it with a new classic group, whatever
the policy (its tombstones open the classic group's first append: state/classic/manager.py).
An Empty consumer group whose offsets all expired is deleted by the offsets sweep (state/offsets/manager.py,
`delete_empty_consumer_group`).
A heartbeat (or classic JoinGroup) that asks for the group's regular expressions to be resolved
(state.consumer_group.regex) is followed, once written and answered, by the resolution's own append at the
same ms (`resolve_regular_expressions`, cause `regex_resolved`).
"""

from __future__ import annotations

import base64
import dataclasses
import json

from state.consumer_group.classic_members import (
    classic_group_heartbeat,
    classic_group_join,
    classic_group_sync,
)
from state.consumer_group.group import ConsumerGroup, ConsumerGroupMember, ConsumerGroupState
from state.consumer_group.heartbeat import (
    CoordinatorResult as GroupResult,
    HeartbeatContext,
    HeartbeatError,
    TimerChange,
    consumer_group_heartbeat,
    fence_members,
    member_timer_cancels,
    on_loaded,
    on_member_timeout,
    on_rebalance_timeout,
    on_regular_expressions_resolved,
    validate_request,
)
from state.consumer_group.regex import resolve_regular_expressions
from state.consumer_group.messages import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, HeartbeatRequest, TopicPartitions
from state.consumer_group.downgrade import Downgrade, convert_to_classic_group
from state.consumer_group.migration import convert_to_consumer_group, validate_online_upgrade
from state.consumer_group.offset_commit import validate_offset_commit
from state.consumer_group.records import (
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMetadata,
)
from state.consumer_group.topic_id import TopicId, derived_topic_id
from state.consumer_group.topics import TopicsImage
from state.cluster_image import ClusterImage
from state.config import CoordinatorConfig
from state.runtime.result import CoordinatorResult, Operations
from state.errors import append_error_to_response_error
from state.events import (ConsumerGroupHeartbeat, Event, Heartbeat, JoinGroup, LeaveGroup, OffsetCommit, PartitionList,
                          SyncGroup, TopicMetadata)
from state.classic.group_state import CONSUMER, GroupState
from state.records.record_bytes import RECORD_BATCH_OVERHEAD, record_size
from state.runtime.member_ids import MemberIds
from state.classic.manager import ClassicGroupManager, join_request_error

# The kind (and the first element of the key) of the coordinator timers the consumer group arms.
CONSUMER_GROUP_TIMER = "consumer_group"
# The cause each member timeout's rows carry: a classic member not rejoining in time is the classic group's
# rebalance timeout, one not syncing in time its pending sync timeout.
_TIMER_CAUSES = {"on_session_timeout": "session_timeout", "on_rebalance_timeout": "rebalance_timeout",
                 "on_join_timeout": "rebalance_timeout", "on_sync_timeout": "pending_sync_timeout"}
CLASSIC_MEMBERSHIP_REQUESTS = ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "LEAVE_GROUP")


class ConsumerGroupManager(Operations):
    """One group id's consumer group and the operations on it (see the module's docstring). The topics'
    metadata (ids, partition counts, the image's versions) is the cluster's, read through `image`."""

    def __init__(self, group_id: str, config: CoordinatorConfig, ids: MemberIds, image: ClusterImage,
                 classic: ClassicGroupManager) -> None:
        self.group_id = group_id
        self.config = config
        self.ids = ids
        self.image = image
        self.classic = classic
        self.consumer_group: ConsumerGroup | None = None
        self.consumer_generation: dict | None = None  # the group epoch whose `generations` row is still to write
        # The operation being decided: its time and its result (transient: only during an operation).
        self.now = -1
        self.op: CoordinatorResult | None = None

    # -- topics ---------------------------------------------------------------------------------------------
    def topics_changed(self, topics) -> None:
        """Topics of the cluster's metadata changed: a group subscribed to one recomputes its metadata hash at
        its next heartbeat (Kafka: the metadata image changed)."""
        group = self.consumer_group
        if group is not None and any(group.is_subscribed_to(topic) for topic in topics):
            group.metadata_expired = True

    def _context(self) -> HeartbeatContext:
        image = self.image
        topics = TopicsImage({topic: (image.topic_id(topic), count) for topic, count in image.topics.items()})
        return HeartbeatContext.from_config(self.config, topics, metadata_version=image.metadata_version,
                                            new_topics_version=image.new_topics_version)

    def _by_topic_id(self, partitions: tuple[PartitionList, ...] | None) -> TopicPartitions | None:
        if partitions is None:
            return None
        merged: dict[TopicId, set[int]] = {}
        for plist in partitions:
            merged.setdefault(self.image.topic_id(plist.topic), set()).update(plist.partitions)
        return tuple((topic_id, tuple(sorted(ps))) for topic_id, ps in sorted(merged.items()))

    def by_topic_name(self, partitions) -> list[dict]:
        """(topic id, partitions) as the tables' partition lists, by name, in name order. An id no topic has any
        more (a TOPIC_METADATA row gave the topic another) is written as itself."""
        names = {topic_id: topic for topic, topic_id in self.image.topic_ids.items()}
        named = sorted((names.get(topic_id, str(topic_id)), sorted(ps)) for topic_id, ps in partitions)
        return [{"topic": topic, "partitions": ps} for topic, ps in named]

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------------------------
    def heartbeat(self, now: int, event: ConsumerGroupHeartbeat, outcomes: list[str]) -> CoordinatorResult:
        self._begin(now, outcomes)
        request = HeartbeatRequest(
            group_id=event.group_id, member_id=event.member_id, member_epoch=event.member_epoch,
            instance_id=event.instance_id, rack_id=event.rack_id, rebalance_timeout_ms=event.rebalance_timeout_ms,
            subscribed_topic_names=event.subscribed_topic_names, subscribed_topic_regex=event.subscribed_topic_regex,
            server_assignor=event.server_assignor, topic_partitions=self._by_topic_id(event.topic_partitions),
            api_version=event.api_version)
        # v0: the coordinator gives a joining member its id (Uuid.randomUuid().toString()).
        v0_join = event.api_version == 0 and event.member_id == "" and event.member_epoch == JOIN_EPOCH
        generated = self.ids.uuid() if v0_join else None
        classic = self.classic.group
        group = classic if classic is not None else self.consumer_group
        context = self._context()
        # getOrMaybeCreateConsumerGroup: a join replaces an empty classic group (maybeDeleteEmptyClassicGroup:
        # a simple one too, whatever the migration policy) or converts a non-empty one (migration.py); any
        # other heartbeat naming a classic group is refused (heartbeat.py).
        converted = None
        if classic is not None and event.member_epoch == JOIN_EPOCH:
            if classic.is_in(GroupState.EMPTY):
                group, converted = None, GroupResult()
            else:
                try:
                    validate_request(request, context)  # the request's checks come before the group's
                    validate_online_upgrade(classic, self.config)
                    group, converted = convert_to_consumer_group(classic, context.topics, self.now, self.config)
                except HeartbeatError as error:
                    self.op.respond(event, error.error)
                    return self._end()
        known = self.consumer_group is not None and event.member_id in self.consumer_group.members
        result = consumer_group_heartbeat(group, request, self.now, context, event.client_id,
                                          event.client_host, generated)
        response = result.response
        if response.error != "NONE":
            self.op.respond(event, response.error)
            return self._end()
        if event.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            cause = "member_leave"
        else:
            cause = "member_metadata_update" if known else "member_join"
        error = self._write(result, cause, converted)
        if error is not None:
            self.op.respond(event, append_error_to_response_error(error))
            return self._end()
        self.op.respond(event, "NONE", member_id=response.member_id, generation_id=response.member_epoch,
                        heartbeat_interval_ms=response.heartbeat_interval_ms,
                        assignment=None if response.assignment is None else self.by_topic_name(response.assignment))
        self._resolve_later(result.resolve_regexes)
        return self._end()

    def _resolve_later(self, regexes: tuple[str, ...] | None) -> None:
        if regexes:
            self.op.resolve_regexes(regexes)

    def resolve_regular_expressions(self, now: int, regexes: tuple[str, ...], outcomes: list[str]
                                    ) -> CoordinatorResult:
        """The resolution a heartbeat asked for (Kafka's executor running TopicRegexResolver, then
        handleRegularExpressionsResult): resolved against the coordinator's topics now and written as its own
        append, after the heartbeat's write and response, at the same ms (cause `regex_resolved`). Kafka
        only logs a failed write of it; the next heartbeat asks again."""
        self._begin(now, outcomes)
        if self.consumer_group is not None:
            context = self._context()
            resolved = resolve_regular_expressions(regexes, context.topics.topics, context.metadata_version,
                                                   self.now)
            self._write(on_regular_expressions_resolved(self.consumer_group, resolved, context), "regex_resolved")
        return self._end()

    def on_timer(self, now: int, kind: str, args: tuple, outcomes: list[str]) -> CoordinatorResult:
        """A member's session, rebalance, join or sync timeout: fence it (Kafka only logs a failed write of the
        fencing)."""
        self._begin(now, outcomes)
        handler = on_rebalance_timeout if kind == "on_rebalance_timeout" else on_member_timeout
        self._write(handler(self.consumer_group, *args, self._context()), _TIMER_CAUSES[kind])
        return self._end()

    # -- classic requests naming a consumer group -----------------------------------------------------------
    def classic_request(self, now: int, event: Event, outcomes: list[str]) -> CoordinatorResult:
        self._begin(now, outcomes)
        group = self.consumer_group
        if event.type == "LEAVE_GROUP":
            self._leave_consumer_group(event)
        elif event.type == "JOIN_GROUP":
            error = join_request_error(self.config, event)  # GroupCoordinatorService's checks
            if error is not None:
                self.op.respond(event, error, generation_id=-1, leader_id="")
            elif not group.members:
                # classicGroupJoinToClassicGroup: a new classic group replaces the empty consumer group.
                self.op.effects.extend(self.classic.join_group(self.now, event, self.op.outcomes, True).effects)
            else:
                self._classic_group_join(event)
        elif event.type == "SYNC_GROUP" and not group.members:
            self.op.respond_error(event, "UNKNOWN_MEMBER_ID")
        elif event.type == "SYNC_GROUP":
            self._classic_group_sync(event)
        else:
            self._classic_group_heartbeat(event)
        return self._end()

    def _classic_group_join(self, req: JoinGroup) -> None:
        known = req.member_id in self.consumer_group.members
        result = classic_group_join(
            self.consumer_group, member_id=req.member_id, instance_id=req.group_instance_id,
            protocol_type=req.protocol_type, protocols=tuple(ClassicProtocol(p.name, p.metadata) for p in req.protocols),
            session_timeout_ms=req.session_timeout_ms, rebalance_timeout_ms=req.rebalance_timeout_ms,
            api_version=req.api_version, now=self.now, context=self._context(), client_id=req.client_id,
            client_host=req.client_host, generated_member_id=self.ids.uuid() if req.member_id == "" else "")
        response = result.response
        if response.error == "MEMBER_ID_REQUIRED":
            self.op.respond(req, response.error, member_id=response.member_id, generation_id=-1, leader_id="")
            return
        if response.error != "NONE":
            self.op.respond_error(req, response.error)
            return
        error = self._write(result, "member_metadata_update" if known else "member_join")
        if error is not None:
            self.op.respond_error(req, append_error_to_response_error(error))
            return
        # No leader and no members: the member sends SyncGroup as a follower and gets its assignment.
        self.op.respond(req, "NONE", member_id=response.member_id, generation_id=response.generation_id,
                        protocol_type=response.protocol_type, protocol_name=response.protocol_name, leader_id="",
                        skip_assignment=False, members=[])
        self._resolve_later(result.resolve_regexes)

    def _classic_group_sync(self, req: SyncGroup) -> None:
        result = classic_group_sync(self.consumer_group, member_id=req.member_id, instance_id=req.group_instance_id,
                                    generation_id=req.generation_id, protocol_type=req.protocol_type,
                                    protocol_name=req.protocol_name, now=self.now, context=self._context())
        self._timers(result.timers)
        response = result.response
        if response.error != "NONE":
            self.op.respond_error(req, response.error)
            return
        self.op.respond(req, "NONE", protocol_type=response.protocol_type, protocol_name=response.protocol_name,
                        assignment=self.by_topic_name(response.assignment))

    def _classic_group_heartbeat(self, req: Heartbeat) -> None:
        result = classic_group_heartbeat(self.consumer_group, member_id=req.member_id,
                                         instance_id=req.group_instance_id, generation_id=req.generation_id,
                                         now=self.now, context=self._context())
        self._timers(result.timers)
        self.op.respond(req, result.response.error)

    def _leave_consumer_group(self, req: LeaveGroup) -> None:
        """classicGroupLeaveToConsumerGroup: each member named (by member id, or by instance id with an empty
        member id) leaves; the valid ones are fenced in one write (Kafka iterates them in a HashSet; here in
        request order)."""
        group, results, leaving = self.consumer_group, [], {}
        for identity in req.members:
            if identity.group_instance_id is None:
                member = group.members.get(identity.member_id)
                error = None if member is not None else "UNKNOWN_MEMBER_ID"
            else:
                member = group.static_member(identity.group_instance_id)
                error = "UNKNOWN_MEMBER_ID" if member is None else (
                    "FENCED_INSTANCE_ID" if identity.member_id not in ("", member.member_id) else None)
            if error is None:
                leaving[member.member_id] = member
            results.append({"member_id": identity.member_id, "group_instance_id": identity.group_instance_id,
                            "topic": None, "partition": None, "error": error or "NONE", "offset": None,
                            "leader_epoch": None, "metadata": None})
        if leaving:
            error = self._write(fence_members(group, leaving.values(), None, self._context()), "member_leave")
            if error is not None:
                self.op.respond(req, append_error_to_response_error(error), results=[])
                return
        single = req.api_version < 3
        self.op.respond(req, results[0]["error"] if single else "NONE", results=results,
                        member_id=req.members[0].member_id if single else None)

    # -- an operation's records and timers ------------------------------------------------------------------
    def _write(self, result: GroupResult, cause: str, converted: GroupResult | None = None) -> str | None:
        """The group's result into the operation's: its records in one append, replayed by the runtime (then
        its timer changes); returns the append's error (nothing is written then), None otherwise. `converted`:
        the consumer group takes the classic group's place; the append starts with the classic group's
        tombstone, then the records converting its members (none for an empty group), whose timers apply
        first. A result carrying a downgrade makes the group a classic group instead (`_convert_to_classic`)."""
        if result.downgrade is not None:
            return self._convert_to_classic(result)
        if result.records:
            error = self.op.outcome()
            if error is not None:
                return error
            first_delta = 0
            if converted is not None:
                self.op.effects.extend(self.classic.replace_by_consumer_group(self.now).effects)
                self.op.replay_consumer_group(converted.records, "group_converted", 1, True)
                self._timers(converted.timers)
                first_delta = 1 + len(converted.records)
            self.op.replay_consumer_group(result.records, cause, first_delta, False)
        self._timers(result.timers)
        self.op.consumer_group_written(result.metadata_refreshed)
        return None

    def _convert_to_classic(self, result: GroupResult) -> str | None:
        """convertToClassicGroup (state.consumer_group.downgrade), in one append: the result's records (a
        joining static member's), the consumer group's tombstones, the classic group's GroupMetadata record.
        They are not replayed: as in Kafka the classic group is set directly. Rows: the consumer group goes
        Dead and its members are removed, then the classic group's record, its members added and its state
        Stable at the group epoch (cause `group_converted`), its members' assignments at that generation; its
        members' sessions start, and it prepares a rebalance (cause `group_converted`) unless the joining
        member kept the target assignment. The consumer group's member timers are cancelled (Kafka leaves
        them to find no consumer group)."""
        group = self.consumer_group
        tombstones, classic = convert_to_classic_group(group, result.downgrade, self._context().topics, self.now)
        error = self.op.outcome()
        if error is not None:
            return error
        self.op.log_consumer_group([*result.records, *tombstones])
        self._timers(tuple(change for member_id in group.members for change in member_timer_cancels(member_id)))
        self.op.unload_consumer_group("group_converted")
        self.op.effects.extend(self.classic.adopt_downgraded(self.now, classic, result.downgrade.rebalance).effects)
        return None

    def _timers(self, changes: tuple[TimerChange, ...]) -> None:
        for change in changes:
            key = (CONSUMER_GROUP_TIMER, *change.key)
            if change.deadline is None:
                self.op.cancel(key)
            elif change.if_absent:
                self.op.schedule_if_absent(key, change.deadline, CONSUMER_GROUP_TIMER, change.kind, *change.args)
            else:
                self.op.schedule(key, change.deadline, CONSUMER_GROUP_TIMER, change.kind, *change.args)

    # ======================================================================================================
    # What the runtime carries out: replay, rows, load, unload, deletion. `out` takes the rows; what the group's
    # figures observe (state/metrics.py) is returned as a result of REBALANCE_STARTED and IN_STATE effects.
    # ======================================================================================================
    def replay(self, now: int, records, cause: str, first_delta: int, converted: bool, log, out
               ) -> CoordinatorResult:
        """Replay written records and write their rows. `converted`: the records convert a classic group,
        whose generation (the group epoch they set) and its assignments are already in the tables."""
        self.now = now
        seen = CoordinatorResult([])
        group = self.consumer_group
        if group is None:
            group = self.consumer_group = ConsumerGroup(self.group_id, self.config.kafka_4_0)
            self._state_row(out, seen, None, group, "group_created")
        before_state, before_members, before_epoch = group.state, dict(group.members), group.group_epoch
        # A member enters with its first MemberMetadata record and leaves with its tombstone, however many
        # records of it the write holds: a static member replaced by a process with another client.id gets
        # the old member's copy, then its update (GroupMetadataManager.replaceMember, then the heartbeat's own
        # subscription record).
        present = dict(before_members)
        changes: list[tuple[str, ConsumerGroupMember]] = []
        target_computed = False
        for delta, record in enumerate(records, first_delta):
            log.append(record)
            group.replay(record)
            self._record_row(out, record, delta)
            if isinstance(record, ConsumerGroupMemberMetadata):
                member_id = record.member_id
                if record.value is None and member_id in present:
                    changes.append(("removed", present.pop(member_id)))
                elif record.value is not None and member_id not in present:
                    present[member_id] = group.members[member_id]
                    changes.append(("added", present[member_id]))
            elif isinstance(record, ConsumerGroupMetadata) and record.value.epoch > before_epoch and not converted:
                self._start_generation(out, seen, record.value.epoch, cause)
            elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
                target_computed = True
        # An added member as the write leaves it (a replacing process's own client.id), a removed one as it was.
        self._member_rows(out, [(change, group.members.get(member.member_id, member) if change == "added"
                                 else member) for change, member in changes], len(before_members), group, cause)
        if not converted:
            self._assignment_rows(out, records, before_members, group)
        if target_computed:
            self._target_computed(group)
        if group.state is not before_state:
            self._state_row(out, seen, before_state, group, cause)
        self._maybe_stable(out, seen, group)
        return seen

    def written(self, metadata_refreshed: bool) -> None:
        """After the runtime replayed an operation's records: the metadata hash the heartbeat recomputed is
        fresh again; a group subscribed with regexes keeps it expired."""
        group = self.consumer_group
        if metadata_refreshed and group is not None:
            group.metadata_expired = False
        if group is not None and group.subscribed_regexes:
            # Any member's next heartbeat may resolve the group's regexes again (the periodic refresh), which
            # state/clients/elision.py's closed-form runs cannot foresee: the flag keeps such a group's heartbeats
            # simulated one by one. It costs each heartbeat a recomputation of the metadata hash, to the value
            # it has (a topic change sets the flag anyway), so the output is the same.
            group.metadata_expired = True

    def log_records(self, now: int, records, log, out) -> None:
        """Records appended without replay (a downgrade's: the classic group is set directly)."""
        self.now = now
        for delta, record in enumerate(records):
            log.append(record)
            self._record_row(out, record, delta)

    def delete_empty(self, now: int, cause: str, log, out) -> CoordinatorResult:
        """The Empty consumer group's tombstones (ConsumerGroup.createGroupTombstoneRecords), their write
        succeeded, and the group goes Dead with `cause`: `group_converted` when a JoinGroup replaces it
        (maybeDeleteEmptyConsumerGroup; the new classic group's record closes the append), `group_expired`
        when the offsets sweep deletes it (maybeDeleteGroup; the expired offsets' tombstones open the append)."""
        tombstones, _ = convert_to_classic_group(self.consumer_group, Downgrade(), self._context().topics, now)
        self.log_records(now, tombstones, log, out)
        return self.unload(now, out, cause)

    def _record_row(self, out, record: ConsumerGroupRecord, delta: int) -> None:
        """A `consumer_group_records` row: the record, its value as JSON, and its bytes at its offset delta in
        the append's batch (the batch header counted with the first record)."""
        header = RECORD_BATCH_OVERHEAD if delta == 0 else 0
        out.consumer_group_record({
            "write_ts": self.now, "record_type": type(record).__name__,
            "member_id": getattr(record, "member_id", None), "regex": getattr(record, "regex", None),
            "tombstone": record.value is None,
            "value": None if record.value is None else json.dumps(_json_value(record.value), sort_keys=True),
            "batch_bytes": header + record_size(record, self.group_id, offset_delta=delta,
                                                kafka_4_0=self.config.kafka_4_0)})

    def _member_rows(self, out, changes, count: int, group: ConsumerGroup, cause: str) -> None:
        for change, member in changes:
            count += 1 if change == "added" else -1
            out.member(self.now, change, member.member_id, member.instance_id, member.client_id,
                       member.client_host, cause, group.group_epoch, count)

    def _assignment_rows(self, out, records, before: dict[str, ConsumerGroupMember], group: ConsumerGroup) -> None:
        """A member's partitions, when the batch moved it to another member epoch or other partitions (the
        transient epochs below 1 of a leaving or replaced static member are not reconciliation)."""
        moved = dict.fromkeys(r.member_id for r in records
                              if isinstance(r, ConsumerGroupCurrentMemberAssignment) and r.value is not None)
        for member_id in moved:
            member, old = group.members.get(member_id), before.get(member_id)
            if member is None or member.member_epoch < 1:
                continue
            if old is not None and (old.member_epoch, _held(old)) == (member.member_epoch, _held(member)):
                continue
            for plist in self.by_topic_name(_held(member)):
                for partition in plist["partitions"]:
                    out.assignment({"generation_id": member.member_epoch, "member_id": member_id,
                                    "group_instance_id": member.instance_id, "client_id": member.client_id,
                                    "topic": plist["topic"], "partition": partition, "assign_ts": self.now})

    def _state_row(self, out, seen, previous: ConsumerGroupState | None, group: ConsumerGroup, cause: str,
                   target: ConsumerGroupState | None = None) -> None:
        target = target or group.state
        out.group_state(self.now, CONSUMER, None if previous is None else previous.value, target.value,
                        group.group_epoch, None, len(group.members), cause)
        seen.in_state(target.value)

    # -- generations: one per group epoch -------------------------------------------------------------------
    def _start_generation(self, out, seen, epoch: int, cause: str) -> None:
        self.flush_generation(out, stable_ts=None)
        self.consumer_generation = {"generation_id": epoch, "rebalance_start_ts": self.now, "cause": cause,
                                    "join_complete_ts": None, "protocol_name": None, "members": []}
        seen.rebalance_started(cause)

    def _target_computed(self, group: ConsumerGroup) -> None:
        """The target assignment of the pending epoch was computed (or, the group being Empty, set without
        one): the epoch's members and assignor are known."""
        pending = self.consumer_generation
        if pending is None or pending["generation_id"] != group.assignment_epoch:
            return
        pending["join_complete_ts"] = self.now
        if group.members:
            pending["protocol_name"] = group.preferred_server_assignor() or self._context().default_assignor
            pending["members"] = [{"member_id": m.member_id, "group_instance_id": m.instance_id,
                                   "client_id": m.client_id, "client_host": m.client_host}
                                  for m in group.members.values()]

    def _maybe_stable(self, out, seen, group: ConsumerGroup) -> None:
        pending = self.consumer_generation
        if pending is None or pending["generation_id"] != group.group_epoch:
            return
        if group.state is ConsumerGroupState.STABLE:
            # A write can bump the epoch of a Stable group and leave it Stable (its only member reconciled at
            # once): no state row, and still the end of the rebalance.
            seen.in_state(group.state.value)
            self.flush_generation(out, stable_ts=self.now)
        elif group.state is ConsumerGroupState.EMPTY and pending["join_complete_ts"] is not None:
            self.flush_generation(out, stable_ts=None)

    def flush_generation(self, out, stable_ts: int | None) -> None:
        """Write the pending epoch's `generations` row: Stable, superseded, Empty, unloaded or end of run."""
        row = self.generation_row(stable_ts)
        if row is None:
            return
        self.consumer_generation = None
        out.generation(row)

    def generation_row(self, stable_ts: int | None) -> dict | None:
        """The pending epoch's `generations` row, if an epoch is pending (else None)."""
        pending = self.consumer_generation
        if pending is None:
            return None
        members = pending["members"]
        return {
            "generation_id": pending["generation_id"], "protocol_type": "consumer",
            "protocol_name": pending["protocol_name"], "leader_id": None, "members": members,
            "member_count": len(members), "rebalance_start_ts": pending["rebalance_start_ts"],
            "join_complete_ts": pending["join_complete_ts"], "stable_ts": stable_ts, "cause": pending["cause"]}

    # -- coordinator moves ----------------------------------------------------------------------------------
    def load(self, now: int, log, out, outcomes: list[str]) -> CoordinatorResult | None:
        """Replay the consumer group's records, if the log holds any (else None), and the timers Kafka's
        onLoaded arms (a fresh session for every member, the rebalance timeout of every member still
        revoking), as a result."""
        records = log.consumer_group_records()
        if not records:
            return None
        self._begin(now, outcomes)
        group = self.consumer_group = ConsumerGroup(self.group_id, self.config.kafka_4_0)
        for record in records:
            group.replay(record)
        # The members first, as a classic group's load writes them: the state row counts them (docs/tables.md).
        self._member_rows(out, [("added", m) for m in group.members.values()], 0, group, "coordinator_load")
        self._state_row(out, self.op, None, group, "coordinator_load")
        self._timers(on_loaded(group, self.now, self._context()))
        return self._end()

    def unload(self, now: int, out, cause: str = "coordinator_unload") -> CoordinatorResult:
        """The coordinator lost the group (the log keeps its records), or a classic group takes its place
        (`group_converted`): it goes Dead with its members."""
        self.now = now
        seen = CoordinatorResult([])
        group = self.consumer_group
        if group is None:
            return seen
        self.flush_generation(out, stable_ts=None)
        self._state_row(out, seen, group.state, group, cause, ConsumerGroupState.DEAD)
        members = list(group.members.values())
        self._member_rows(out, [("removed", m) for m in members], len(members), group, cause)
        self.consumer_group = None
        return seen


def _held(member: ConsumerGroupMember) -> TopicPartitions:
    return tuple((topic_id, tuple(sorted(ps))) for topic_id, ps in sorted(member.assigned_partitions.items()))


def _json_value(value):
    """A record value as JSON: dataclasses as objects of Kafka's field names (snake case), topic ids in their
    base64 form, bytes (a classic protocol's metadata) in base64 (MemberState, an IntEnum, is its byte)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, TopicId):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {str(k) if isinstance(k, TopicId) else k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    return value
