"""The classic group manager: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, the rebalance they drive and
its timers (session expiry, the join and initial-delay timeouts, pending-sync expiry), for a classic group
(Kafka 4.x GroupMetadataManager's classic group handlers).

`ClassicGroupManager` holds the group (`group`, None when the id names no classic group) and changes it in
memory as Kafka's handlers do, and every operation returns a `CoordinatorResult` (state/runtime/result.py):
the GroupMetadata records to append (Kafka's replayRecords = false: the group is already changed; a load
replays the last one), the responses to the request and to the parked requests it releases, the coordinator
timers it sets, and the rows the run's tables observe (state changes, members, generations, assignments), in
the order the operation produces them. The runtime carries the result out; the manager answers, writes and
schedules nothing itself. An operation's time is `now`, set when it starts.

Checks run in Kafka's order so the first failing one decides the error. Decisions that Kafka takes in
java.util.HashMap order (leader re-election, the leader's member list, vote ties) use `JavaHashMap` so they
match a broker.
"""

from __future__ import annotations

from state.config import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from state.runtime.result import CoordinatorResult, Operations
from state.errors import append_error_to_response_error
from state.events import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from state.classic.group import ClassicGroup, ClassicGroupMember, decode_assignment_partitions
from state.classic.group_state import GroupState
from state.runtime.member_ids import MemberIds
from state.tables import partitions_column
from state.records.group_log import GroupMetadataRecord, group_from_value, group_metadata_value

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
    GroupState.DEAD)


class MemberError(Exception):
    """A request failed member validation; `error` is the Kafka error name to answer with."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def join_request_error(config: CoordinatorConfig, req: JoinGroup) -> str | None:
    """GroupCoordinatorService.joinGroup's checks, whatever the group: its id and the session timeout."""
    if req.group_id == "":
        return "INVALID_GROUP_ID"
    if not config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms:
        return "INVALID_SESSION_TIMEOUT"
    return None


# What a JoinGroup error leaves in the response besides the error (Kafka's defaults).
JOIN_ERROR = {"generation_id": -1, "leader_id": ""}


def validate_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> None:
    if group_instance_id is not None:
        existing = group.static_members.get(group_instance_id)
        if existing is None:
            raise MemberError("UNKNOWN_MEMBER_ID")
        if existing != member_id:
            raise MemberError("FENCED_INSTANCE_ID")
    if not group.has_member(member_id):
        raise MemberError("UNKNOWN_MEMBER_ID")


def generation_member_error(group: ClassicGroup, member_id: str, group_instance_id: str | None,
                            generation_id: int) -> str | None:
    """Why a request is not from a current member at the group's generation (ClassicGroup.validateMember, then
    the generation check of validateSyncGroup, validateHeartbeat and validateOffsetCommit), or None."""
    try:
        validate_member(group, member_id, group_instance_id)
    except MemberError as e:
        return e.error
    return "ILLEGAL_GENERATION" if generation_id != group.generation_id else None


class ClassicGroupManager(Operations):
    """One group id's classic group and the operations on it (see the module's docstring)."""

    def __init__(self, group_id: str, config: CoordinatorConfig, ids: MemberIds) -> None:
        self.group_id = group_id
        self.config = config
        self.ids = ids
        self.group: ClassicGroup | None = None
        # The generation whose `generations` row is still to write: from its rebalance's start until its
        # outcome is known (Stable, abandoned, or the end of the run).
        self.pending_generation: dict | None = None
        # The operation being decided: its time and its result (transient: only during an operation).
        self.now = -1
        self.op: CoordinatorResult | None = None

    # ======================================================================================================
    # JoinGroup
    # ======================================================================================================
    def join_group(self, now: int, req: JoinGroup, outcomes: list[str], consumer_group_exists: bool
                   ) -> CoordinatorResult:
        """`consumer_group_exists`: the id names an Empty consumer group, which a new classic group replaces
        (its tombstones open the new group's append)."""
        self._begin(now, outcomes)
        error = join_request_error(self.config, req)
        if error is not None:
            self.op.respond(req, error, **JOIN_ERROR)
            return self._end()
        if self.group is None:
            if req.member_id != "":
                self.op.respond(req, "UNKNOWN_MEMBER_ID", **JOIN_ERROR)
                return self._end()
            # A new group is committed with an empty GroupMetadata record: the write's outcome decides whether
            # the group exists, and its state change precedes the record's row.
            error = self.op.outcome()
            if error is not None:
                self._answer_failed_group_creation(req, error)
                return self._end()
            if consumer_group_exists:
                self.op.delete_consumer_group("group_converted")
            self.group = ClassicGroup(self.group_id, self.now)
            self._state(None, EMPTY, "group_created")
            self.op.written([GroupMetadataRecord(group_metadata_value(self.group, None, protocol_type=""))])
        group = self.group
        if not self._accept_joining_member(group, req.member_id):
            self._remove_member(group, req.member_id, "group_max_size_reached")
            self.op.respond(req, "GROUP_MAX_SIZE_REACHED", member_id="", **JOIN_ERROR)
        elif req.member_id == "":
            self._join_new_member(group, req)
        else:
            self._join_existing_member(group, req)
        return self._end()

    def _answer_failed_group_creation(self, req: JoinGroup, error: str) -> None:
        # Kafka reverts the new group. A join answered inside the same operation (rejected protocols, or
        # MEMBER_ID_REQUIRED) keeps that answer; only a parked join learns about the failed append.
        if req.protocol_type == "" or not req.protocols:
            self.op.respond(req, "INCONSISTENT_GROUP_PROTOCOL", **JOIN_ERROR)
        elif req.api_version >= 4 and req.group_instance_id is None:
            self.op.respond(req, "MEMBER_ID_REQUIRED", member_id=self._new_member_id(req.client_id, req), **JOIN_ERROR)
        else:
            self.op.respond(req, append_error_to_response_error(error), member_id="", **JOIN_ERROR)

    def _new_member_id(self, prefix: str, req: JoinGroup) -> str:
        """clientId (or group.instance.id) + "-" + a UUID, as Kafka does (state/runtime/member_ids.py). A replayed
        request whose captured broker handed out an id of that form gets the captured id: Kafka's member HashMap
        orders members by their ids, and that order picks the leader when the leader leaves and the members'
        order in GroupMetadata (docs/captures.md)."""
        generated = self.ids.member_id(prefix)
        captured = req.captured
        if (captured is not None and captured.error in ("NONE", "MEMBER_ID_REQUIRED") and captured.member_id
                and _same_form(captured.member_id, generated, prefix)
                and not (self.group is not None and self.group.has_member(captured.member_id))):
            return captured.member_id
        return generated

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(EMPTY, DEAD):
            return True
        if group.is_in(PREPARING):
            return ((group.has_member(member_id) and group.member(member_id).awaiting_join is not None)
                    or group.num_members_awaiting_join < max_size)
        return group.has_member(member_id) or len(group.members) < max_size

    def _join_refused(self, group: ClassicGroup, req: JoinGroup) -> bool:
        """Answered already: the group is Dead, or does not support the join's protocols (both join paths)."""
        if group.is_in(DEAD):
            self.op.respond(req, "COORDINATOR_NOT_AVAILABLE", **JOIN_ERROR)
        elif not group.supports_protocols(req.protocol_type, req.protocols):
            self.op.respond(req, "INCONSISTENT_GROUP_PROTOCOL", **JOIN_ERROR)
        else:
            return False
        return True

    def _join_new_member(self, group: ClassicGroup, req: JoinGroup) -> None:
        if self._join_refused(group, req):
            return
        new_id = self._new_member_id(req.group_instance_id if req.group_instance_id is not None else req.client_id,
                                     req)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None:
                self._replace_static_member(group, req, old_id, new_id)
            else:
                self._add_member_and_rebalance(group, req, new_id)
        elif req.api_version >= 4:
            # KIP-394: the member must come back with the id we hand out; until then it is only pending.
            group.pending_join_members[new_id] = None
            self.op.schedule(("heartbeat", new_id), self.now + req.session_timeout_ms, "heartbeat", new_id)
            self.op.respond(req, "MEMBER_ID_REQUIRED", member_id=new_id, **JOIN_ERROR)
        else:
            self._add_member_and_rebalance(group, req, new_id)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroup) -> None:
        member_id = req.member_id
        if self._join_refused(group, req):
            return
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                # Kafka throws IllegalStateException here: the client sees a bare server error.
                self.op.respond(req, "UNKNOWN_SERVER_ERROR", member_id="", **JOIN_ERROR)
                return
            self._add_member_and_rebalance(group, req, member_id)
            return
        try:
            validate_member(group, member_id, req.group_instance_id)
        except MemberError as e:
            self.op.respond(req, e.error, **JOIN_ERROR)
            return
        member = group.member(member_id)
        if group.is_in(PREPARING):
            self._update_member_and_rebalance(group, member, req, "member_metadata_update")
        elif group.is_in(COMPLETING):
            if member.matches(req.protocols):
                # The member lost our JoinGroup response: send the current generation again.
                self._answer_join_now(group, member, req, with_members=group.is_leader(member_id))
            else:
                self._update_member_and_rebalance(group, member, req, "member_metadata_update")
        elif group.is_in(STABLE):
            if group.is_leader(member_id):
                # A leader rejoin always rebalances: that is how it reacts to topic metadata changes.
                self._update_member_and_rebalance(group, member, req, "leader_rejoin")
            elif not member.matches(req.protocols):
                self._update_member_and_rebalance(group, member, req, "member_metadata_update")
            else:
                self._answer_join_now(group, member, req, with_members=False)
        else:
            self.op.respond(req, "UNKNOWN_MEMBER_ID", **JOIN_ERROR)

    def _answer_join_now(self, group: ClassicGroup, member: ClassicGroupMember, req: JoinGroup,
                         with_members: bool) -> None:
        self.op.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader_id=group.leader_id or "", skip_assignment=False,
                        members=self._member_list(group) if with_members else [])

    def _member_list(self, group: ClassicGroup) -> list[dict]:
        return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(group.protocol_name)} for m in group.all_members()]

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinGroup, member_id: str) -> None:
        member = ClassicGroupMember(
            member_id=member_id, group_instance_id=req.group_instance_id, client_id=req.client_id,
            client_host=req.client_host, rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type, protocols=req.protocols,
            is_new=True,
        )
        if group.is_in(PREPARING) and group.previous_state == EMPTY:
            group.new_member_added = True  # lets the initial rebalance delay be extended
        self._add_member(group, member, req, "member_join")
        # A new member cannot heartbeat while its JoinGroup is parked, so it gets the fixed 5-minute join
        # timeout rather than its session timeout.
        self._schedule_heartbeat(member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete_join(group, "member_join")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember, req: JoinGroup,
                                     cause: str) -> None:
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, req)
        self._rebalance_or_complete_join(group, cause)

    def _rebalance_or_complete_join(self, group: ClassicGroup, cause: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(cause)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        # During the initial delay (entered from Empty) only the timer may complete the join phase.
        if group.is_in(PREPARING) and group.has_all_members_joined() and group.previous_state != EMPTY:
            self._complete_join(cause="all_members_joined")

    def _replace_static_member(self, group: ClassicGroup, req: JoinGroup, old_id: str, new_id: str) -> None:
        previous_leader = group.leader_id
        old, member = self._replace_static_member_id(group, req.group_instance_id, old_id, new_id,
                                                     "static_member_replacement")
        self._fence_replaced_member(old)
        self.op.cancel(("heartbeat", old_id))
        self._schedule_heartbeat(member)
        old_protocols, old_rebalance, old_session = member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, req)
        if group.is_in(STABLE):
            if (group.protocol_name or "") == group.select_protocol():
                self._persist_static_replacement(group, req, member, old_id, previous_leader,
                                                 (old_protocols, old_rebalance, old_session))
            else:
                self._rebalance_or_complete_join(group, "static_member_protocol_change")
        elif group.is_in(COMPLETING):
            # The leader may already hold an assignment keyed by the old member id.
            self._prepare_rebalance("static_member_rejoin")
        elif group.is_in(EMPTY, DEAD):  # pragma: no cover - a static mapping implies members
            raise AssertionError("static member replacement in an empty group")
        else:
            self._maybe_complete_join_phase(group)

    def _fence_replaced_member(self, old: ClassicGroupMember) -> None:
        if old.awaiting_join is not None:
            join, old.awaiting_join = old.awaiting_join, None
            self.op.respond(join, "FENCED_INSTANCE_ID", member_id=old.member_id, generation_id=-1, leader_id="",
                            members=[], skip_assignment=False)
        if old.awaiting_sync is not None:
            sync, old.awaiting_sync = old.awaiting_sync, None
            self.op.respond(sync, "FENCED_INSTANCE_ID", assignment=[])

    def _persist_static_replacement(self, group: ClassicGroup, req: JoinGroup, member: ClassicGroupMember,
                                    old_id: str, previous_leader: str | None, old_settings) -> None:
        """The selected protocol does not change: keep the generation, store the assignment under the new id."""
        assignment = {m.member_id: m.assignment for m in group.all_members()}
        error = self._write_group_metadata(assignment)
        if error is not None:
            protocols, rebalance, session = old_settings
            group.update_member(member, protocols, rebalance, session, None)
            self._replace_static_member_id(group, req.group_instance_id, member.member_id, old_id,
                                           "static_member_replacement_failed")
            self.op.cancel(("heartbeat", member.member_id))
            self._schedule_heartbeat(group.member(old_id))
            self.op.respond(req, append_error_to_response_error(error), member_id="",
                            generation_id=group.generation_id, protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name, leader_id=previous_leader or "",
                            skip_assignment=False)
            return
        group.take_join(member)
        if req.api_version >= 9:
            is_leader = group.is_leader(member.member_id)
            self.op.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader_id=group.leader_id or "", skip_assignment=is_leader,
                            members=self._member_list(group) if is_leader else [])
        else:
            # Older clients are told the previous leader id, so a returning static leader does not re-run
            # its assignor while the group is Stable.
            self.op.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            leader_id=previous_leader or "", skip_assignment=False, members=[])

    # ======================================================================================================
    # Rebalance
    # ======================================================================================================
    def prepare_rebalance(self, now: int, cause: str, outcomes: list[str]) -> CoordinatorResult:
        """A rebalance the runtime starts (a load finding more members than group.max.size)."""
        self._begin(now, outcomes)
        self._prepare_rebalance(cause)
        return self._end()

    def _prepare_rebalance(self, cause: str) -> None:
        group = self.group
        if group.is_in(COMPLETING):
            self._reset_and_propagate_assignment(group, "REBALANCE_IN_PROGRESS")
        self.op.cancel(("sync",))
        group.pending_sync_members.clear()
        initial = group.is_in(EMPTY)
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.op.schedule(("join",), self.now + delay, "initial_join", delay, remaining)
        if group.is_in(COMPLETING):
            self._flush_generation(stable_ts=None)
        self._transition(PREPARING, cause)
        self.pending_generation = {"rebalance_start_ts": self.now, "cause": cause}
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(cause="all_members_joined")
            else:
                self.op.schedule(("join",), self.now + group.rebalance_timeout_ms(), "join")

    def on_initial_join_timeout(self, now: int, delay: int, remaining: int, outcomes: list[str]
                                ) -> CoordinatorResult:
        """The initial rebalance delay ran out: extended while members keep arriving, else the join completes."""
        self._begin(now, outcomes)
        group = self.group
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            # Kafka subtracts the previous delay, not the new one.
            new_remaining = max(remaining - delay, 0)
            self.op.schedule(("join",), self.now + new_delay, "initial_join", new_delay, new_remaining)
        else:
            self._complete_join(cause="initial_rebalance_delay")
        return self._end()

    def on_join_timeout(self, now: int, outcomes: list[str]) -> CoordinatorResult:
        """The rebalance timeout ran out: the join phase completes without the members that did not rejoin."""
        self._begin(now, outcomes)
        self._complete_join(cause="rebalance_timeout")
        return self._end()

    def _complete_join(self, cause: str) -> None:
        group = self.group
        self.op.cancel(("join",))
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                self._remove_member(group, member.member_id, cause)
                self.op.cancel(("heartbeat", member.member_id))
        if group.is_in(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and len(group.members) > 0:
            # Only static members that did not rejoin are left: wait another rebalance timeout for them to
            # rejoin or for their sessions to expire.
            self.op.schedule(("join",), self.now + group.rebalance_timeout_ms(), "join")
            return
        group.init_next_generation(self.now)
        self._state(group.previous_state, group.state, cause)
        pending = self.pending_generation or {"rebalance_start_ts": self.now, "cause": cause}
        self.pending_generation = dict(pending, join_complete_ts=self.now)
        if group.is_in(EMPTY):
            error = self._write_group_metadata({})
            del error  # Kafka only logs a failed write of the empty group's record
            self._flush_generation(stable_ts=None)
            return
        self.pending_generation["snapshot"] = self._generation_snapshot(group)
        for member in group.all_members():
            join = group.take_join(member)
            if join is not None:
                self.op.respond(join, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                leader_id=group.leader_id or "", skip_assignment=False,
                                members=self._member_list(group) if group.is_leader(member.member_id) else [])
            self._schedule_heartbeat(member)
            member.is_new = False
            group.pending_sync_members[member.member_id] = None
        self.op.schedule(("sync",), self.now + group.rebalance_timeout_ms(), "sync", group.generation_id)

    def _generation_snapshot(self, group: ClassicGroup) -> dict:
        return {
            "generation_id": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader_id": group.leader_id,
            "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                         "client_id": m.client_id, "client_host": m.client_host} for m in group.all_members()],
        }

    def _flush_generation(self, stable_ts: int | None) -> None:
        """The generations row, once the generation's outcome is known: Stable, abandoned, or end of run."""
        row = self.pending_generation_row(stable_ts)
        if row is None:
            return
        self.pending_generation = None
        self.op.generation(row)

    def pending_generation_row(self, stable_ts: int | None) -> dict | None:
        """The generations row of the generation still pending, if its join phase completed (else None)."""
        pending = self.pending_generation
        if pending is None or "join_complete_ts" not in pending:
            return None
        snapshot = pending.get("snapshot")
        if snapshot is None:  # the join phase completed with no members: an Empty generation
            group = self.group
            snapshot = {"generation_id": group.generation_id, "protocol_type": group.protocol_type,
                        "protocol_name": None, "leader_id": None, "members": []}
        return dict(
            snapshot,
            member_count=len(snapshot["members"]),
            rebalance_start_ts=pending["rebalance_start_ts"],
            join_complete_ts=pending["join_complete_ts"],
            stable_ts=stable_ts,
            cause=pending["cause"],
        )

    def finish(self, now: int) -> CoordinatorResult:
        """The end of the run: a generation still completing is written without a stable time."""
        self._begin(now, [])
        self._flush_generation(stable_ts=None)
        return self._end()

    def on_sync_timeout(self, now: int, generation_id: int, outcomes: list[str]) -> CoordinatorResult:
        """Members that did not send SyncGroup within the rebalance timeout are removed, and the group
        rebalances (pending-sync expiry, KAFKA-12890)."""
        self._begin(now, outcomes)
        group = self.group
        if (group is not None and generation_id == group.generation_id and group.is_in(COMPLETING, STABLE)
                and group.pending_sync_members):
            for member_id in list(group.pending_sync_members):
                self._remove_member(group, member_id, "pending_sync_timeout")
                self.op.cancel(("heartbeat", member_id))
            self._prepare_rebalance("pending_sync_timeout")
        return self._end()

    # ======================================================================================================
    # SyncGroup
    # ======================================================================================================
    def sync_group(self, now: int, req: SyncGroup, outcomes: list[str]) -> CoordinatorResult:
        self._begin(now, outcomes)
        if req.group_id == "":
            self.op.respond(req, "INVALID_GROUP_ID", assignment=[])
            return self._end()
        group = self.group
        if group is None:
            self.op.respond(req, "UNKNOWN_MEMBER_ID", assignment=[])
            return self._end()
        error = self._validate_sync(group, req)
        if error is not None:
            self.op.respond(req, error, assignment=[])
            return self._end()
        if group.is_in(PREPARING):
            self.op.respond(req, "REBALANCE_IN_PROGRESS", assignment=[])
        elif group.is_in(COMPLETING):
            member = group.member(req.member_id)
            member.awaiting_sync = req
            self._remove_pending_sync_member(group, req.member_id)
            if group.is_leader(req.member_id):
                self._store_leader_assignment(group, req)
        elif group.is_in(STABLE):
            self._remove_pending_sync_member(group, req.member_id)
            member = group.member(req.member_id)
            self.op.respond(req, "NONE", protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                            assignment=partitions_column(member.assignment_partitions))
        return self._end()

    def _validate_sync(self, group: ClassicGroup, req: SyncGroup) -> str | None:
        if group.is_in(DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        error = generation_member_error(group, req.member_id, req.group_instance_id, req.generation_id)
        if error is not None:
            return error
        if ((req.protocol_type is not None and group.protocol_type is not None
             and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and group.protocol_name is not None
                    and req.protocol_name != group.protocol_name)):
            return "INCONSISTENT_GROUP_PROTOCOL"
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.pop(member_id, None)
        if not group.is_in(COMPLETING, STABLE) or not group.pending_sync_members:
            self.op.cancel(("sync",))

    def _store_leader_assignment(self, group: ClassicGroup, req: SyncGroup) -> None:
        plan: dict[str, tuple[bytes, tuple | None]] = {}
        for entry in req.assignments:
            plan[entry.member_id] = (entry.assignment, entry.partitions)
        assignment = {m.member_id: plan.get(m.member_id, (b"", ()))[0] for m in group.all_members()}
        error = self._write_group_metadata(assignment)
        if error is not None:
            self._reset_and_propagate_assignment(group, append_error_to_response_error(error))
            self._rebalance_or_complete_join(group, "sync_store_failure")
            return
        for member in group.all_members():
            data, partitions = plan.get(member.member_id, (b"", ()))
            member.assignment = data
            member.assignment_partitions = (
                partitions if partitions is not None else decode_assignment_partitions(group.protocol_type, data))
        self._propagate_assignment(group, "NONE")
        self._assignment_rows(group)
        self._transition(STABLE, "leader_sync_stored")
        self._flush_generation(stable_ts=self.now)

    def _assignment_rows(self, group: ClassicGroup) -> None:
        for member in group.all_members():
            for plist in member.assignment_partitions or ():
                for partition in plist.partitions:
                    self.op.assignment({
                        "generation_id": group.generation_id, "member_id": member.member_id,
                        "group_instance_id": member.group_instance_id, "client_id": member.client_id,
                        "topic": plist.topic, "partition": partition, "assign_ts": self.now,
                    })

    def _reset_and_propagate_assignment(self, group: ClassicGroup, error: str) -> None:
        for member in group.all_members():
            member.assignment = b""
            member.assignment_partitions = ()
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: str) -> None:
        for member in group.all_members():
            sync = group.take_sync(member)
            if sync is not None:
                ok = error == "NONE"
                self.op.respond(sync, error, protocol_type=group.protocol_type if ok else None,
                                protocol_name=group.protocol_name if ok else None,
                                assignment=partitions_column(member.assignment_partitions))
                # A session that expired while the member waited for its assignment was ignored; restart it.
                self._schedule_heartbeat(member)

    # ======================================================================================================
    # Heartbeat and session expiry
    # ======================================================================================================
    def heartbeat(self, now: int, req: Heartbeat, outcomes: list[str]) -> CoordinatorResult:
        self._begin(now, outcomes)
        self.op.respond(req, self._heartbeat_error(req))
        return self._end()

    def _heartbeat_error(self, req: Heartbeat) -> str:
        if req.group_id == "":
            return "INVALID_GROUP_ID"
        group = self.group
        if group is None:
            return "UNKNOWN_MEMBER_ID"
        if group.is_in(DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        error = generation_member_error(group, req.member_id, req.group_instance_id, req.generation_id)
        if error is not None:
            return error
        if group.is_in(EMPTY):
            return "UNKNOWN_MEMBER_ID"
        self._schedule_heartbeat(group.member(req.member_id))
        return "REBALANCE_IN_PROGRESS" if group.is_in(PREPARING) else "NONE"

    def _schedule_heartbeat(self, member: ClassicGroupMember, timeout_ms: int | None = None) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.op.schedule(("heartbeat", member.member_id), self.now + timeout, "heartbeat", member.member_id)

    def on_heartbeat_expired(self, now: int, member_id: str, outcomes: list[str]) -> CoordinatorResult:
        """A member's session (or a new member's join) deadline passed without a heartbeat."""
        self._begin(now, outcomes)
        group = self.group
        if group is None or group.is_in(DEAD):
            return self._end()
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if group.is_in(PREPARING) and group.has_all_members_joined():
                self._complete_join(cause="all_members_joined")
            return self._end()
        if group.has_member(member_id):
            member = group.member(member_id)
            if not member.has_satisfied_heartbeat():
                self._remove_expired_member(group, member,
                                            "new_member_join_timeout" if member.is_new else "session_timeout")
        return self._end()

    def _remove_expired_member(self, group: ClassicGroup, member: ClassicGroupMember, cause: str) -> None:
        join = group.take_join(member)
        if join is not None:
            self.op.respond(join, "UNKNOWN_MEMBER_ID", member_id="", **JOIN_ERROR)
        self._remove_member(group, member.member_id, cause)
        if group.is_in(STABLE, COMPLETING):
            self._prepare_rebalance(cause)
        elif group.is_in(PREPARING) and group.has_all_members_joined():
            self._complete_join(cause="all_members_joined")

    # ======================================================================================================
    # LeaveGroup
    # ======================================================================================================
    def leave_group(self, now: int, req: LeaveGroup, outcomes: list[str]) -> CoordinatorResult:
        def result(identity, error: str) -> dict:
            return {"member_id": identity.member_id, "group_instance_id": identity.group_instance_id,
                    "topic": None, "partition": None, "error": error, "offset": None, "leader_epoch": None,
                    "metadata": None}

        self._begin(now, outcomes)
        single = req.api_version < 3
        if req.group_id == "":
            self.op.respond(req, "INVALID_GROUP_ID", results=[])
            return self._end()
        group = self.group
        if group is None:
            results = [result(i, "UNKNOWN_MEMBER_ID") for i in req.members]
            self.op.respond(req, "UNKNOWN_MEMBER_ID" if single else "NONE", results=results,
                            member_id=req.members[0].member_id if single else None)
            return self._end()
        if group.is_in(DEAD):
            self.op.respond(req, "COORDINATOR_NOT_AVAILABLE", results=[])
            return self._end()
        results, left = [], 0
        for identity in req.members:
            if identity.member_id == "":
                target = group.static_members.get(identity.group_instance_id) if identity.group_instance_id else None
                if target is None:
                    results.append(result(identity, "UNKNOWN_MEMBER_ID"))
                    continue
                self._remove_leaving_member(group, group.member(target))
            elif group.is_pending_member(identity.member_id):
                group.remove(identity.member_id)
                self.op.cancel(("heartbeat", identity.member_id))
            else:
                try:
                    validate_member(group, identity.member_id, identity.group_instance_id)
                except MemberError as e:
                    results.append(result(identity, e.error))
                    continue
                self._remove_leaving_member(group, group.member(identity.member_id))
            results.append(result(identity, "NONE"))
            left += 1
        top_error = results[0]["error"] if single else "NONE"
        self.op.respond(req, top_error, results=results, member_id=req.members[0].member_id if single else None)
        if left and group.is_in(STABLE, COMPLETING):
            self._prepare_rebalance("member_leave")
        elif left:
            self._maybe_complete_join_phase(group)
        return self._end()

    def _remove_leaving_member(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        self.op.cancel(("heartbeat", member.member_id))
        join = group.take_join(member)
        if join is not None:
            self.op.respond(join, "UNKNOWN_MEMBER_ID", member_id="", **JOIN_ERROR)
        self._remove_member(group, member.member_id, "member_leave")

    # ======================================================================================================
    # The group's existence: created without members, loaded, unloaded, deleted, converted
    # ======================================================================================================
    def create_simple_group(self, now: int) -> CoordinatorResult:
        """Offsets committed without the membership protocol: a "simple" group, no protocol type, no members
        (Kafka's getOrMaybeCreateClassicGroup as an offset commit's validation or replay calls it)."""
        self._begin(now, [])
        self.group = ClassicGroup(self.group_id, self.now)
        self._state(None, EMPTY, "group_created")
        return self._end()

    def delete(self, now: int, cause: str) -> CoordinatorResult:
        """The group goes Dead and is deleted (its tombstone was appended: the offsets sweep's `group_expired`)."""
        self._begin(now, [])
        self._transition(DEAD, cause)
        self.group = None
        return self._end()

    def load(self, now: int, value: dict | None, has_offsets: bool) -> CoordinatorResult:
        """A coordinator loading the group from its partition: Stable at the last persisted generation if that
        record has members, Empty otherwise (a simple group if only offsets were written, none if nothing);
        each member gets a fresh session deadline, and a group over group.max.size rebalances."""
        self._begin(now, [])
        self.group = None
        if value is None:
            if has_offsets:
                self.group = ClassicGroup(self.group_id, self.now)
                self._state(None, EMPTY, "coordinator_load")
            return self._end()
        self.group = group = group_from_value(self.group_id, value, self.now)
        # Its members in the order of its record: the order they entered the member map.
        for count, stored in enumerate(value["members"], 1):
            self._member_row("added", group.member(stored["member_id"]), "coordinator_load", count)
        self._state(None, group.state, "coordinator_load")
        for member in group.all_members():
            self._schedule_heartbeat(member)
        if len(group.members) > self.config.group_max_size:
            self._prepare_rebalance("group_max_size_on_load")
        return self._end()

    def unload(self, now: int, crashed: bool) -> CoordinatorResult:
        """The coordinator lost the group: its parked requests are answered NOT_COORDINATOR (or, when its
        broker `crashed`, their connections fail), a generation still completing is abandoned, and the group is
        Dead; its members leave with it (Kafka drops the group object without emptying it)."""
        self._begin(now, [])
        group = self.group
        if group is None:
            return self._end()
        for member in group.all_members():
            for request, fields in ((group.take_join(member), {"member_id": member.member_id}),
                                    (group.take_sync(member), {"assignment": None})):
                if request is None:
                    continue
                if crashed:
                    self.op.disconnect(request)
                else:
                    self.op.respond(request, "NOT_COORDINATOR", **fields)
        self._flush_generation(stable_ts=None)
        self._transition(DEAD, "coordinator_unload")
        self._departed_members("coordinator_unload")
        self.group = None
        return self._end()

    def replace_by_consumer_group(self, now: int) -> CoordinatorResult:
        """The classic group's GroupMetadata tombstone (ClassicGroup.createGroupTombstoneRecords), in the append
        that converts it to a consumer group. Its parked JoinGroup and SyncGroup requests are answered
        REBALANCE_IN_PROGRESS (convertToConsumerGroup's completeAllJoinFutures / completeAllSyncFutures: their
        members rejoin), its timers go, its members leave the `members` table after it goes Dead; its committed
        offsets stay, the consumer group's now."""
        self._begin(now, [])
        group = self.group
        self.op.written([GroupMetadataRecord(None)])
        for member in group.all_members():
            join, sync = group.take_join(member), group.take_sync(member)
            if join is not None:
                self.op.respond(join, "REBALANCE_IN_PROGRESS", member_id=member.member_id)
            if sync is not None:
                self.op.respond(sync, "REBALANCE_IN_PROGRESS", assignment=None)
            self.op.cancel(("heartbeat", member.member_id))
        self.op.cancel(("join",))
        self.op.cancel(("sync",))
        self._flush_generation(stable_ts=None)
        self.pending_generation = None
        # As an unload: the row to Dead counts the members, then each one's `removed` row (docs/tables.md).
        self._transition(DEAD, "group_converted")
        self._departed_members("group_converted")
        self.group = None
        return self._end()

    def adopt_downgraded(self, now: int, group: ClassicGroup, rebalance: bool) -> CoordinatorResult:
        """A consumer group downgraded to this classic group (state.consumer_group.downgrade), its GroupMetadata
        record closing the downgrade's append: its members added, Stable at the group epoch as generation,
        their assignments; their sessions start, and it rebalances (`group_converted`) if `rebalance`."""
        self._begin(now, [])
        self.group = group
        self.op.written([GroupMetadataRecord(group_metadata_value(group, {m.member_id: m.assignment
                                                                         for m in group.all_members()}))])
        for count, member in enumerate(group.all_members(), 1):
            self._member_row("added", member, "group_converted", count)
        self._state(None, STABLE, "group_converted")
        self._assignment_rows(group)
        for member in group.all_members():
            self._schedule_heartbeat(member)
        if rebalance:
            self._prepare_rebalance("group_converted")
        return self._end()

    # ======================================================================================================
    # Writes, transitions and the member map's changes, as the tables record them
    # ======================================================================================================
    def _write_group_metadata(self, assignment: dict[str, bytes] | None) -> str | None:
        """Append a GroupMetadata record with every member, its subscription and the given assignment."""
        return self.op.append([GroupMetadataRecord(group_metadata_value(self.group, assignment))])

    def _transition(self, target: GroupState, cause: str) -> None:
        previous = self.group.transition_to(target, self.now)
        self._state(previous, target, cause)

    def _state(self, previous: GroupState | None, target: GroupState, cause: str) -> None:
        group = self.group
        self.op.state(previous, target, cause, group.generation_id, group.leader_id, len(group.members))

    def _add_member(self, group: ClassicGroup, member: ClassicGroupMember, join: JoinGroup | None,
                    cause: str) -> None:
        group.add(member, join)
        self._member_row("added", member, cause)

    def _remove_member(self, group: ClassicGroup, member_id: str, cause: str) -> None:
        """Remove a member or a pending member id. Only members get a row: a pending id (KIP-394) is not in
        the member map, so DescribeGroups does not list it and no member count includes it."""
        member = group.remove(member_id)
        if member is not None:
            self._member_row("removed", member, cause)

    def _replace_static_member_id(self, group: ClassicGroup, instance_id: str, old_id: str, new_id: str,
                                  cause: str) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        old, new = group.replace_static_member(instance_id, old_id, new_id)
        # The count in between is one less: the old id leaves the map before the new one enters it.
        self._member_row("removed", old, cause, len(group.members) - 1)
        self._member_row("added", new, cause)
        return old, new

    def _departed_members(self, cause: str) -> None:
        members = self.group.all_members()
        for count, member in enumerate(members):
            self._member_row("removed", member, cause, len(members) - 1 - count)

    def _member_row(self, change: str, member: ClassicGroupMember, cause: str, member_count: int | None = None
                    ) -> None:
        """A `members` row; `member_count` is after the change (the group's own count unless given)."""
        group = self.group
        self.op.member(change, member, cause, group.generation_id,
                       len(group.members) if member_count is None else member_count)


def _same_form(captured: str, generated: str, prefix: str) -> bool:
    """A member id the captured broker generated as Kafka does (the prefix, "-", a UUID's 36 characters)."""
    return captured.startswith(prefix + "-") and len(captured) == len(generated)
