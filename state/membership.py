"""Group membership: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, and the rebalance they drive
(Kafka 4.x GroupMetadataManager for classic groups).

Checks run in Kafka's order so the first failing one decides the error. A mixin of `GroupRuntime`: handlers
use its clock (`self.now`), timers, output and record writes. Decisions that Kafka takes in java.util.HashMap
order (leader re-election, the leader's member list, vote ties) use `JavaHashMap` so they match a broker.
"""

from __future__ import annotations

from state.config import NEW_MEMBER_JOIN_TIMEOUT_MS
from state.errors import append_error_to_response_error
from state.events import Heartbeat, JoinGroup, LeaveGroup, SyncGroup
from state.group import ClassicGroup, ClassicGroupMember, decode_assignment_partitions
from state.group_state import GroupState
from state.output import partitions_column
from state.records import GroupMetadataRecord, group_metadata_value

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    GroupState.EMPTY, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
    GroupState.DEAD)


class MemberError(Exception):
    """A request failed member validation; `error` is the Kafka error name to answer with."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def validate_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> None:
    if group_instance_id is not None:
        existing = group.static_members.get(group_instance_id)
        if existing is None:
            raise MemberError("UNKNOWN_MEMBER_ID")
        if existing != member_id:
            raise MemberError("FENCED_INSTANCE_ID")
    if not group.has_member(member_id):
        raise MemberError("UNKNOWN_MEMBER_ID")


class MembershipHandlers:
    group: ClassicGroup | None

    # ======================================================================================================
    # JoinGroup
    # ======================================================================================================
    def join_request_error(self, req: JoinGroup) -> str | None:
        """GroupCoordinatorService.joinGroup's checks, whatever the group: its id and the session timeout."""
        config = self.config
        if req.group_id == "":
            return "INVALID_GROUP_ID"
        if not config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms:
            return "INVALID_SESSION_TIMEOUT"
        return None

    def handle_join_group(self, req: JoinGroup) -> None:
        error = self.join_request_error(req)
        if error is not None:
            self.respond(req, error, generation_id=-1, leader_id="")
            return
        if self.group is None:
            if req.member_id != "":
                self.respond(req, "UNKNOWN_MEMBER_ID", generation_id=-1, leader_id="")
                return
            # A new group is committed with an empty GroupMetadata record: the write's outcome decides whether
            # the group exists, and its state change precedes the record's row.
            error = self.write()
            if error is not None:
                self._answer_failed_group_creation(req, error)
                return
            if self.consumer_group is not None:
                self.delete_empty_consumer_group("group_converted")  # its tombstones open this append
            self.group = ClassicGroup(self.group_id, self.now)
            self.record_state_change(None, EMPTY, "group_created")
            self.appended([GroupMetadataRecord(group_metadata_value(self.group, None, protocol_type=""))])
        group = self.group
        if not self._accept_joining_member(group, req.member_id):
            self.remove_member(group, req.member_id, "group_max_size_reached")
            self.respond(req, "GROUP_MAX_SIZE_REACHED", member_id="", generation_id=-1, leader_id="")
        elif req.member_id == "":
            self._join_new_member(group, req)
        else:
            self._join_existing_member(group, req)

    def _answer_failed_group_creation(self, req: JoinGroup, error: str) -> None:
        # Kafka reverts the new group. A join answered inside the same operation (rejected protocols, or
        # MEMBER_ID_REQUIRED) keeps that answer; only a parked join learns about the failed append.
        if req.protocol_type == "" or not req.protocols:
            self.respond(req, "INCONSISTENT_GROUP_PROTOCOL", generation_id=-1, leader_id="")
        elif req.api_version >= 4 and req.group_instance_id is None:
            self.respond(req, "MEMBER_ID_REQUIRED", member_id=self.new_member_id(req.client_id, req),
                         generation_id=-1, leader_id="")
        else:
            self.respond(req, append_error_to_response_error(error), member_id="", generation_id=-1,
                         leader_id="")

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.is_in(EMPTY, DEAD):
            return True
        if group.is_in(PREPARING):
            return ((group.has_member(member_id) and group.member(member_id).awaiting_join is not None)
                    or group.num_members_awaiting_join < max_size)
        return group.has_member(member_id) or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, req: JoinGroup) -> None:
        if group.is_in(DEAD):
            self.respond(req, "COORDINATOR_NOT_AVAILABLE", generation_id=-1, leader_id="")
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self.respond(req, "INCONSISTENT_GROUP_PROTOCOL", generation_id=-1, leader_id="")
            return
        new_id = self.new_member_id(req.group_instance_id if req.group_instance_id is not None else req.client_id,
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
            self.timers.schedule(("heartbeat", new_id), self.now + req.session_timeout_ms, "heartbeat", new_id)
            self.respond(req, "MEMBER_ID_REQUIRED", member_id=new_id, generation_id=-1, leader_id="")
        else:
            self._add_member_and_rebalance(group, req, new_id)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroup) -> None:
        member_id = req.member_id
        if group.is_in(DEAD):
            self.respond(req, "COORDINATOR_NOT_AVAILABLE", generation_id=-1, leader_id="")
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self.respond(req, "INCONSISTENT_GROUP_PROTOCOL", generation_id=-1, leader_id="")
            return
        if group.is_pending_member(member_id):
            if req.group_instance_id is not None:
                # Kafka throws IllegalStateException here: the client sees a bare server error.
                self.respond_generic_error(req, "UNKNOWN_SERVER_ERROR")
                return
            self._add_member_and_rebalance(group, req, member_id)
            return
        try:
            validate_member(group, member_id, req.group_instance_id)
        except MemberError as e:
            self.respond(req, e.error, generation_id=-1, leader_id="")
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
            self.respond(req, "UNKNOWN_MEMBER_ID", generation_id=-1, leader_id="")

    def _answer_join_now(self, group: ClassicGroup, member: ClassicGroupMember, req: JoinGroup,
                         with_members: bool) -> None:
        self.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
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
        self.add_member(group, member, req, "member_join")
        # A new member cannot heartbeat while its JoinGroup is parked, so it gets the fixed 5-minute join
        # timeout rather than its session timeout.
        self.schedule_heartbeat(member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete_join(group, "member_join")

    def _update_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember, req: JoinGroup,
                                     cause: str) -> None:
        group.update_member(member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, req)
        self._rebalance_or_complete_join(group, cause)

    def _rebalance_or_complete_join(self, group: ClassicGroup, cause: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(cause)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        # During the initial delay (entered from Empty) only the timer may complete the join phase.
        if group.is_in(PREPARING) and group.has_all_members_joined() and group.previous_state != EMPTY:
            self.complete_join(cause="all_members_joined")

    def _replace_static_member(self, group: ClassicGroup, req: JoinGroup, old_id: str, new_id: str) -> None:
        previous_leader = group.leader_id
        old, member = self._replace_static_member_id(group, req.group_instance_id, old_id, new_id,
                                                     "static_member_replacement")
        self._fence_replaced_member(old)
        self.timers.cancel(("heartbeat", old_id))
        self.schedule_heartbeat(member)
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
            self.prepare_rebalance("static_member_rejoin")
        elif group.is_in(EMPTY, DEAD):  # pragma: no cover - a static mapping implies members
            raise AssertionError("static member replacement in an empty group")
        else:
            self._maybe_complete_join_phase(group)

    def _fence_replaced_member(self, old: ClassicGroupMember) -> None:
        if old.awaiting_join is not None:
            join, old.awaiting_join = old.awaiting_join, None
            self.respond(join, "FENCED_INSTANCE_ID", member_id=old.member_id, generation_id=-1, leader_id="",
                         members=[], skip_assignment=False)
        if old.awaiting_sync is not None:
            sync, old.awaiting_sync = old.awaiting_sync, None
            self.respond(sync, "FENCED_INSTANCE_ID", assignment=[])

    def _persist_static_replacement(self, group: ClassicGroup, req: JoinGroup, member: ClassicGroupMember,
                                    old_id: str, previous_leader: str | None, old_settings) -> None:
        """The selected protocol does not change: keep the generation, store the assignment under the new id."""
        assignment = {m.member_id: m.assignment for m in group.all_members()}
        error = self.write_group_metadata(assignment)
        if error is not None:
            protocols, rebalance, session = old_settings
            group.update_member(member, protocols, rebalance, session, None)
            self._replace_static_member_id(group, req.group_instance_id, member.member_id, old_id,
                                           "static_member_replacement_failed")
            self.timers.cancel(("heartbeat", member.member_id))
            self.schedule_heartbeat(group.member(old_id))
            self.respond(req, append_error_to_response_error(error), member_id="",
                         generation_id=group.generation_id, protocol_type=group.protocol_type,
                         protocol_name=group.protocol_name, leader_id=previous_leader or "", skip_assignment=False)
            return
        group.take_join(member)
        if req.api_version >= 9:
            is_leader = group.is_leader(member.member_id)
            self.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                         protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                         leader_id=group.leader_id or "", skip_assignment=is_leader,
                         members=self._member_list(group) if is_leader else [])
        else:
            # Older clients are told the previous leader id, so a returning static leader does not re-run
            # its assignor while the group is Stable.
            self.respond(req, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                         protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                         leader_id=previous_leader or "", skip_assignment=False, members=[])

    # ======================================================================================================
    # Rebalance
    # ======================================================================================================
    def prepare_rebalance(self, cause: str) -> None:
        group = self.group
        if group.is_in(COMPLETING):
            self._reset_and_propagate_assignment(group, "REBALANCE_IN_PROGRESS")
        self.timers.cancel(("sync",))
        group.pending_sync_members.clear()
        initial = group.is_in(EMPTY)
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(("join",), self.now + delay, "initial_join", delay, remaining)
        if group.is_in(COMPLETING):
            self._flush_generation(stable_ts=None)
        self.transition(PREPARING, cause)
        self.pending_generation = {"rebalance_start_ts": self.now, "cause": cause}
        if not initial:
            if group.has_all_members_joined():
                self.complete_join(cause="all_members_joined")
            else:
                self.timers.schedule(("join",), self.now + group.rebalance_timeout_ms(), "join")

    def try_complete_initial_rebalance(self, delay: int, remaining: int) -> None:
        group = self.group
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            # Kafka subtracts the previous delay, not the new one.
            new_remaining = max(remaining - delay, 0)
            self.timers.schedule(("join",), self.now + new_delay, "initial_join", new_delay, new_remaining)
        else:
            self.complete_join(cause="initial_rebalance_delay")

    def complete_join(self, cause: str) -> None:
        group = self.group
        self.timers.cancel(("join",))
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                self.remove_member(group, member.member_id, cause)
                self.timers.cancel(("heartbeat", member.member_id))
        if group.is_in(DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and len(group.members) > 0:
            # Only static members that did not rejoin are left: wait another rebalance timeout for them to
            # rejoin or for their sessions to expire.
            self.timers.schedule(("join",), self.now + group.rebalance_timeout_ms(), "join")
            return
        group.init_next_generation(self.now)
        self.record_state_change(group.previous_state, group.state, cause)
        pending = self.pending_generation or {"rebalance_start_ts": self.now, "cause": cause}
        self.pending_generation = dict(pending, join_complete_ts=self.now)
        if group.is_in(EMPTY):
            error = self.write_group_metadata({})
            del error  # Kafka only logs a failed write of the empty group's record
            self._flush_generation(stable_ts=None)
            return
        self.pending_generation["snapshot"] = self._generation_snapshot(group)
        for member in group.all_members():
            join = group.take_join(member)
            if join is not None:
                self.respond(join, "NONE", member_id=member.member_id, generation_id=group.generation_id,
                             protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                             leader_id=group.leader_id or "", skip_assignment=False,
                             members=self._member_list(group) if group.is_leader(member.member_id) else [])
            self.schedule_heartbeat(member)
            member.is_new = False
            group.pending_sync_members[member.member_id] = None
        self.timers.schedule(("sync",), self.now + group.rebalance_timeout_ms(), "sync", group.generation_id)

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
        """Write the generations row once its outcome is known: Stable, abandoned, or end of run."""
        row = self.pending_generation_row(stable_ts)
        if row is None:
            return
        self.pending_generation = None
        self.record_generation()
        self.out.generation(row)

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

    def expire_pending_sync(self, generation_id: int) -> None:
        group = self.group
        if group is None or generation_id != group.generation_id or not group.is_in(COMPLETING, STABLE):
            return
        if not group.pending_sync_members:
            return
        for member_id in list(group.pending_sync_members):
            self.remove_member(group, member_id, "pending_sync_timeout")
            self.timers.cancel(("heartbeat", member_id))
        self.prepare_rebalance("pending_sync_timeout")

    # ======================================================================================================
    # SyncGroup
    # ======================================================================================================
    def handle_sync_group(self, req: SyncGroup) -> None:
        if req.group_id == "":
            self.respond(req, "INVALID_GROUP_ID", assignment=[])
            return
        group = self.group
        if group is None:
            self.respond(req, "UNKNOWN_MEMBER_ID", assignment=[])
            return
        error = self._validate_sync(group, req)
        if error is not None:
            self.respond(req, error, assignment=[])
            return
        if group.is_in(PREPARING):
            self.respond(req, "REBALANCE_IN_PROGRESS", assignment=[])
        elif group.is_in(COMPLETING):
            member = group.member(req.member_id)
            member.awaiting_sync = req
            self._remove_pending_sync_member(group, req.member_id)
            if group.is_leader(req.member_id):
                self._store_leader_assignment(group, req)
        elif group.is_in(STABLE):
            self._remove_pending_sync_member(group, req.member_id)
            member = group.member(req.member_id)
            self.respond(req, "NONE", protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                         assignment=partitions_column(member.assignment_partitions))

    def _validate_sync(self, group: ClassicGroup, req: SyncGroup) -> str | None:
        if group.is_in(DEAD):
            return "COORDINATOR_NOT_AVAILABLE"
        try:
            validate_member(group, req.member_id, req.group_instance_id)
        except MemberError as e:
            return e.error
        if req.generation_id != group.generation_id:
            return "ILLEGAL_GENERATION"
        if ((req.protocol_type is not None and group.protocol_type is not None
             and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and group.protocol_name is not None
                    and req.protocol_name != group.protocol_name)):
            return "INCONSISTENT_GROUP_PROTOCOL"
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.pop(member_id, None)
        if not group.is_in(COMPLETING, STABLE) or not group.pending_sync_members:
            self.timers.cancel(("sync",))

    def _store_leader_assignment(self, group: ClassicGroup, req: SyncGroup) -> None:
        plan: dict[str, tuple[bytes, tuple | None]] = {}
        for entry in req.assignments:
            plan[entry.member_id] = (entry.assignment, entry.partitions)
        assignment = {m.member_id: plan.get(m.member_id, (b"", ()))[0] for m in group.all_members()}
        error = self.write_group_metadata(assignment)
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
        self.record_assignments(group)
        self.transition(STABLE, "leader_sync_stored")
        self._flush_generation(stable_ts=self.now)

    def record_assignments(self, group: ClassicGroup) -> None:
        for member in group.all_members():
            for plist in member.assignment_partitions or ():
                for partition in plist.partitions:
                    self.out.assignment({
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
                self.respond(sync, error, protocol_type=group.protocol_type if ok else None,
                             protocol_name=group.protocol_name if ok else None,
                             assignment=partitions_column(member.assignment_partitions))
                # A session that expired while the member waited for its assignment was ignored; restart it.
                self.schedule_heartbeat(member)

    # ======================================================================================================
    # Heartbeat and session expiry
    # ======================================================================================================
    def handle_heartbeat(self, req: Heartbeat) -> None:
        if req.group_id == "":
            self.respond(req, "INVALID_GROUP_ID")
            return
        group = self.group
        if group is None:
            self.respond(req, "UNKNOWN_MEMBER_ID")
            return
        if group.is_in(DEAD):
            self.respond(req, "COORDINATOR_NOT_AVAILABLE")
            return
        try:
            validate_member(group, req.member_id, req.group_instance_id)
        except MemberError as e:
            self.respond(req, e.error)
            return
        if req.generation_id != group.generation_id:
            self.respond(req, "ILLEGAL_GENERATION")
        elif group.is_in(EMPTY):
            self.respond(req, "UNKNOWN_MEMBER_ID")
        elif group.is_in(PREPARING):
            self.schedule_heartbeat(group.member(req.member_id))
            self.respond(req, "REBALANCE_IN_PROGRESS")
        else:
            self.schedule_heartbeat(group.member(req.member_id))
            self.respond(req, "NONE")

    def schedule_heartbeat(self, member: ClassicGroupMember, timeout_ms: int | None = None) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        self.timers.schedule(("heartbeat", member.member_id), self.now + timeout, "heartbeat", member.member_id)

    def expire_member_heartbeat(self, member_id: str) -> None:
        group = self.group
        if group is None or group.is_in(DEAD):
            return
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if group.is_in(PREPARING) and group.has_all_members_joined():
                self.complete_join(cause="all_members_joined")
            return
        if not group.has_member(member_id):
            return
        member = group.member(member_id)
        if member.has_satisfied_heartbeat():
            return
        self._remove_expired_member(group, member, "new_member_join_timeout" if member.is_new else "session_timeout")

    def _remove_expired_member(self, group: ClassicGroup, member: ClassicGroupMember, cause: str) -> None:
        join = group.take_join(member)
        if join is not None:
            self.respond(join, "UNKNOWN_MEMBER_ID", member_id="", generation_id=-1, leader_id="")
        self.remove_member(group, member.member_id, cause)
        if group.is_in(STABLE, COMPLETING):
            self.prepare_rebalance(cause)
        elif group.is_in(PREPARING) and group.has_all_members_joined():
            self.complete_join(cause="all_members_joined")

    # ======================================================================================================
    # LeaveGroup
    # ======================================================================================================
    def handle_leave_group(self, req: LeaveGroup) -> None:
        def result(identity, error: str) -> dict:
            return {"member_id": identity.member_id, "group_instance_id": identity.group_instance_id,
                    "topic": None, "partition": None, "error": error, "offset": None, "leader_epoch": None,
                    "metadata": None}

        single = req.api_version < 3
        if req.group_id == "":
            self.respond(req, "INVALID_GROUP_ID", results=[])
            return
        group = self.group
        if group is None:
            results = [result(i, "UNKNOWN_MEMBER_ID") for i in req.members]
            self.respond(req, "UNKNOWN_MEMBER_ID" if single else "NONE", results=results,
                         member_id=req.members[0].member_id if single else None)
            return
        if group.is_in(DEAD):
            self.respond(req, "COORDINATOR_NOT_AVAILABLE", results=[])
            return
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
                self.timers.cancel(("heartbeat", identity.member_id))
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
        self.respond(req, top_error, results=results, member_id=req.members[0].member_id if single else None)
        if left and group.is_in(STABLE, COMPLETING):
            self.prepare_rebalance("member_leave")
        elif left:
            self._maybe_complete_join_phase(group)

    def _remove_leaving_member(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        self.timers.cancel(("heartbeat", member.member_id))
        join = group.take_join(member)
        if join is not None:
            self.respond(join, "UNKNOWN_MEMBER_ID", member_id="", generation_id=-1, leader_id="")
        self.remove_member(group, member.member_id, "member_leave")

    # ======================================================================================================
    # The member map's changes, as the members table records them
    # ======================================================================================================
    def add_member(self, group: ClassicGroup, member: ClassicGroupMember, join: JoinGroup | None,
                   cause: str) -> None:
        group.add(member, join)
        self.record_member_change("added", member, cause)

    def remove_member(self, group: ClassicGroup, member_id: str, cause: str) -> None:
        """Remove a member or a pending member id. Only members get a row: a pending id (KIP-394) is not in
        the member map, so DescribeGroups does not list it and no member count includes it."""
        member = group.remove(member_id)
        if member is not None:
            self.record_member_change("removed", member, cause)

    def _replace_static_member_id(self, group: ClassicGroup, instance_id: str, old_id: str, new_id: str,
                                  cause: str) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        old, new = group.replace_static_member(instance_id, old_id, new_id)
        # The count in between is one less: the old id leaves the map before the new one enters it.
        self.record_member_change("removed", old, cause, len(group.members) - 1)
        self.record_member_change("added", new, cause)
        return old, new

    def record_loaded_members(self) -> None:
        """A loaded group's members, in the order of its record: the order they entered the member map."""
        for count, stored in enumerate(self.log.group_metadata()["members"], 1):
            self.record_member_change("added", self.group.member(stored["member_id"]), "coordinator_load", count)

    def record_departed_members(self, cause: str) -> None:
        """An unloaded (or converted) group's members go with it (Kafka drops the group object without
        emptying it)."""
        members = self.group.all_members()
        for count, member in enumerate(members):
            self.record_member_change("removed", member, cause, len(members) - 1 - count)

    def record_member_change(self, change: str, member: ClassicGroupMember, cause: str,
                             member_count: int | None = None) -> None:
        """A `members` row; `member_count` is after the change (the group's own count unless given)."""
        group = self.group
        self.out.member_change(self.now, change, member, cause, group.generation_id,
                               len(group.members) if member_count is None else member_count)
