"""A classic group and its members as the coordinator holds them in memory (Kafka's ClassicGroup and
ClassicGroupMember): membership, the static-member map, pending join/sync sets, protocol votes, the leader,
and the parked JoinGroup/SyncGroup requests waiting for their responses.

Data and the group's own invariants only; the protocol handlers that change it live in `state.classic.manager`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.classic import consumer_protocol
from state.events import JoinGroup, PartitionList, Protocol, SyncGroup, group_partitions
from state.classic.group_state import GroupState, check_transition
from state.java_compat import JavaHashMap

CONSUMER_PROTOCOL_TYPE = "consumer"


def subscription_topics(protocol_type: str | None, metadata: bytes) -> tuple[str, ...] | None:
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    try:
        return tuple(sorted(set(consumer_protocol.decode_subscription(metadata).topics)))
    except ValueError:
        return None


def decode_assignment_partitions(protocol_type: str | None, data: bytes) -> tuple[PartitionList, ...] | None:
    if not data:
        return ()
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    try:
        return group_partitions(consumer_protocol.decode_assignment(data).partitions)
    except ValueError:
        return None


@dataclass
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    assignment_partitions: tuple[PartitionList, ...] | None = ()
    awaiting_join: JoinGroup | None = None
    awaiting_sync: SyncGroup | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [p.name for p in self.protocols]

    def metadata(self, protocol_name: str | None) -> bytes:
        for p in self.protocols:
            if p.name == protocol_name:
                return p.metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol_name}")

    def subscribed_topics(self, protocol_name: str) -> tuple[str, ...] | None:
        for p in self.protocols:
            if p.name == protocol_name:
                return p.topics
        return None

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        """Same ordered protocol names and metadata bytes: a rejoin that changes nothing."""
        return [(p.name, p.metadata) for p in self.protocols] == [(p.name, p.metadata) for p in protocols]

    def vote(self, candidates: set[str]) -> str:
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise ValueError(f"member {self.member_id} does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        # New members expire even while parked; others parked in a rebalance count as alive.
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class ClassicGroup:
    group_id: str
    created_ts: int
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    current_state_ts: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: JavaHashMap = field(default_factory=JavaHashMap)
    static_members: dict[str, str] = field(default_factory=dict)
    # Insertion-ordered dicts used as sets, so iteration never depends on Python's string hashing.
    pending_join_members: dict[str, None] = field(default_factory=dict)
    pending_sync_members: dict[str, None] = field(default_factory=dict)
    num_members_awaiting_join: int = 0
    supported_protocols: dict[str, int] = field(default_factory=dict)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False

    def __post_init__(self) -> None:
        if self.current_state_ts < 0:
            self.current_state_ts = self.created_ts

    # -- state ---------------------------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now: int) -> GroupState:
        check_transition(self.state, target)
        previous = self.state
        self.previous_state = previous
        self.state = target
        self.current_state_ts = now
        return previous

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- membership ----------------------------------------------------------------------------------------
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    def all_members(self) -> list[ClassicGroupMember]:
        return self.members.values()

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_join_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.all_members() if m.awaiting_join is None]

    def add(self, member: ClassicGroupMember, join: JoinGroup | None) -> None:
        if len(self.members) == 0:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        member.awaiting_join = join
        if join is not None:
            self.num_members_awaiting_join += 1
        self.pending_join_members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        """Drop a member (or a pending member id); returns the member, None when it was only pending."""
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self._count_protocols(removed, -1)
            if removed.awaiting_join is not None:
                self.num_members_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            # Kafka re-picks the first key of its member HashMap: no preference for age or join order.
            self.leader_id = self.members.first_key()
        self.pending_join_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)
        return removed

    def update_member(self, member: ClassicGroupMember, protocols: tuple[Protocol, ...], rebalance_timeout_ms: int,
                      session_timeout_ms: int, join: JoinGroup | None) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, +1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join is not None and member.awaiting_join is None:
            self.num_members_awaiting_join += 1
        elif join is None and member.awaiting_join is not None:
            self.num_members_awaiting_join -= 1
        member.awaiting_join = join

    def take_join(self, member: ClassicGroupMember) -> JoinGroup | None:
        """Detach the member's parked JoinGroup so the caller can answer it."""
        join = member.awaiting_join
        if join is not None:
            member.awaiting_join = None
            self.num_members_awaiting_join -= 1
        return join

    def take_sync(self, member: ClassicGroupMember) -> SyncGroup | None:
        sync = member.awaiting_sync
        member.awaiting_sync = None
        return sync

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> tuple[ClassicGroupMember, ClassicGroupMember]:
        """Move a static member to a new member id; returns (removed old member, new member). The caller
        fences the old member's parked requests."""
        old = self.members.pop(old_id)
        if old.awaiting_join is not None:
            self.num_members_awaiting_join -= 1
        new = ClassicGroupMember(
            member_id=new_id, group_instance_id=old.group_instance_id, client_id=old.client_id,
            client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms, protocol_type=old.protocol_type, protocols=old.protocols,
            assignment=old.assignment, assignment_partitions=old.assignment_partitions,
        )
        self.members[new_id] = new
        if self.is_leader(old_id):
            self.leader_id = new_id
        # The pending-sync set keeps the old id (as Kafka's does): if that member never synced, the sync
        # deadline still finds it missing and rebalances.
        self.static_members[instance_id] = new_id
        return old, new

    def _count_protocols(self, member: ClassicGroupMember, delta: int) -> None:
        for name in member.protocol_names():
            count = self.supported_protocols.get(name, 0) + delta
            if count:
                self.supported_protocols[name] = count
            else:
                self.supported_protocols.pop(name, None)

    # -- protocols -----------------------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocols: tuple[Protocol, ...]) -> bool:
        if self.state == GroupState.EMPTY:
            return protocol_type != "" and len(protocols) > 0
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(p.name, 0) == len(self.members) for p in protocols))

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """Each member votes for its first candidate; the most votes win. Ties go to the first name in Java
        HashMap order of the vote map (range beats roundrobin), as Kafka's stream max() keeps the first."""
        candidates = self.candidate_protocols()
        votes: JavaHashMap = JavaHashMap()
        for member in self.all_members():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best, best_votes = None, -1
        for name, count in votes.items():
            if count > best_votes:
                best, best_votes = name, count
        return best

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if len(self.members) == 0:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.all_members():
            member_topics = member.subscribed_topics(self.protocol_name)
            if member_topics is None:
                return None  # unparsable subscription: the coordinator knows nothing about topics
            topics.update(member_topics)
        return frozenset(topics)

    def init_next_generation(self, now: int) -> GroupState:
        self.generation_id += 1
        if len(self.members) > 0:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            previous = self.transition_to(GroupState.COMPLETING_REBALANCE, now)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            previous = self.transition_to(GroupState.EMPTY, now)
        self.pending_sync_members.clear()
        return previous

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member in self.all_members():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_topics is not None and topic in self.subscribed_topics
