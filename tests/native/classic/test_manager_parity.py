"""Parity of state/classic/manager.py's ClassicGroupManager and the native engine's: the two managers are driven
with the same Hypothesis-generated sequence of operations and must return the same effects, effect for
effect and field for field in order, take the same injected write failures, and hold the same group after
each one.

The operations: JoinGroups of new members (v3, v4 with KIP-394's MEMBER_ID_REQUIRED, v9), of known, pending,
unknown and static members (with a fresh or a fenced instance id), with one or two protocols in either order,
metadata that changes or not, consumer subscriptions or opaque bytes, a wrong protocol type or none, an
invalid session timeout, and captured member ids (docs/captures.md); SyncGroups from the leader (with
assignments decoded, opaque, for unknown members or missing some) and from followers, at the right or a
wrong generation, protocol type and name; Heartbeats with right and wrong generations, member and instance
ids; LeaveGroups of one member (v0-2) or several (v3+), by member id or by instance id alone; time passing, the
coordinator timers the effects set (session and new-member join timeouts, the initial rebalance delay and
its extensions, the rebalance and pending-sync timeouts) firing at their deadlines, earliest first; the group
unloaded (its broker crashed or not) and loaded again from its last GroupMetadata value; a simple group's
creation and deletion, a rebalance the runtime starts, the conversion to a consumer group, the end of the
run; and write failures (`outcomes`) of every kind offered to any operation. Two configs: Kafka's test
context's (initial delay 3 s) and group.max.size 3 with no initial delay.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.classic import consumer_protocol
from state.classic.group_state import GroupState
from state.classic.manager import ClassicGroupManager
from state.config import CoordinatorConfig
from state.events import (
    CapturedAnswer, Heartbeat, JoinGroup, LeaveGroup, LeaveIdentity, MemberAssignment, Protocol, SyncGroup,
    group_partitions,
)
from state.records.group_log import GroupMetadataRecord
from state.runtime import result as R
from state.runtime.member_ids import MemberIds
from tests.native import cores
from tests.native.classic import shadow

GROUP = "group-id"
CONFIGS = (
    CoordinatorConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=600_000,
                      group_initial_rebalance_delay_ms=3_000),
    CoordinatorConfig(group_min_session_timeout_ms=10, group_max_session_timeout_ms=600_000,
                      group_initial_rebalance_delay_ms=0, group_max_size=3),
)
CLIENTS = ("client-a", "client-b", "c")
INSTANCES = ("instance-1", "instance-2")
TOPICS = ("foo", "bar")
FAILURES = ("NOT_ENOUGH_REPLICAS", "NOT_LEADER_OR_FOLLOWER", "MESSAGE_TOO_LARGE", "UNKNOWN_TOPIC_OR_PARTITION",
            "REQUEST_TIMED_OUT")


def _subscription(topics) -> Protocol:
    return consumer_protocol.encode_subscription(consumer_protocol.Subscription(tuple(topics)))


def protocol(name: str, variant: int) -> Protocol:
    """Protocol `name` with one of three metadata: two consumer subscriptions and an opaque blob."""
    if variant == 2:
        return Protocol(name, b"\x7f" + name.encode(), None)
    topics = TOPICS[:variant + 1]
    return Protocol(name, _subscription(topics), tuple(sorted(topics)))


class Driver:
    """The two managers, the coordinator timers the reference's effects set, and what a runtime would keep:
    the group's last GroupMetadata value (for a load) and the time."""

    def __init__(self, config: CoordinatorConfig) -> None:
        self.python = ClassicGroupManager(GROUP, config, MemberIds(GROUP))
        self.native = cores.native_module("classic").ClassicGroupManager(GROUP, config)
        self.now = 0
        self.seq = 0
        self.timers: dict[tuple, tuple[int, int, str, tuple]] = {}  # key -> (deadline, order, kind, args)
        self.order = 0
        self.last_value = None
        self.pending: dict[str, JoinGroup] = {}  # a pending member id's JoinGroup (KIP-394)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def run(self, name: str, *args, outcomes: list[str] | None = None) -> None:
        """Call `name` on both managers (`outcomes`, when the method takes them, a copy each) and compare."""
        python_args, native_args = list(args), list(args)
        python_outcomes = native_outcomes = None
        if outcomes is not None:
            python_outcomes, native_outcomes = list(outcomes), list(outcomes)
            python_args.append(python_outcomes)
            native_args.append(native_outcomes)
        if name == "join_group":  # the consumer_group_exists flag comes after the outcomes
            python_args.append(False)
            native_args.append(False)
        result = getattr(self.python, name)(*python_args)
        effects = getattr(self.native, name)(*native_args)
        shadow.check(self.python, self.native, name, python_outcomes, result.effects, effects, native_outcomes)
        for effect in result.effects:
            self.carry_out(effect)

    def carry_out(self, effect: tuple) -> None:
        kind = effect[0]
        if kind == R.SCHEDULE or (kind == R.SCHEDULE_IF_ABSENT and effect[1] not in self.timers):
            self.order += 1
            self.timers[effect[1]] = (effect[2], self.order, effect[3], effect[4])
        elif kind == R.CANCEL:
            self.timers.pop(effect[1], None)
        elif kind == R.CANCEL_ALL:
            self.timers.clear()
        elif kind == R.RESPOND and effect[2] == "MEMBER_ID_REQUIRED":
            self.pending[effect[3]["member_id"]] = effect[1]  # the client rejoins with that id
        elif kind == R.APPEND:
            for record in effect[1]:
                if isinstance(record, GroupMetadataRecord):  # the group's last value, for a load
                    self.last_value = record.value

    def advance(self, ms: int) -> None:
        """Time passes: the timers due fire, earliest first (then in the order they were set)."""
        until = self.now + ms
        while self.timers:
            key, (deadline, _, kind, args) = min(self.timers.items(), key=lambda item: item[1][:2])
            if deadline > until:
                break
            del self.timers[key]
            self.now = max(self.now, deadline)
            self.fire(kind, args)
        self.now = until

    def fire(self, kind: str, args: tuple) -> None:
        if self.python.group is None:  # the runtime drops a group's timers with the group
            return
        if kind == "heartbeat":
            self.run("on_heartbeat_expired", self.now, *args, outcomes=[])
        elif kind == "initial_join":
            self.run("on_initial_join_timeout", self.now, *args, outcomes=[])
        elif kind == "join":
            self.run("on_join_timeout", self.now, outcomes=[])
        else:
            self.run("on_sync_timeout", self.now, *args, outcomes=[])


@st.composite
def join(draw, d: Driver) -> tuple:
    group = d.python.group
    known = list(group.members.keys()) + list(group.pending_join_members) if group is not None else []
    member_id = draw(st.sampled_from(["", "", "", "unknown-member"])) if not known or draw(st.integers(0, 9)) < 4 else draw(
        st.sampled_from(known))
    instance = draw(st.none() | st.sampled_from(INSTANCES))
    if member_id and group is not None and member_id in group.members and draw(st.booleans()):
        instance = group.members[member_id].group_instance_id  # the member's own instance id
    # Both orders of two protocols often: the vote ties, and Java's HashMap order of the names decides.
    names = draw(st.sampled_from([("range", "roundrobin"), ("roundrobin", "range")] * 2 + [("range",)] * 2 + [
        ("roundrobin",)]))
    protocols = tuple(protocol(n, draw(st.integers(0, 2))) for n in names)
    protocol_type = draw(st.sampled_from(["consumer"] * 8 + ["", "connect"]))
    if draw(st.integers(0, 19)) == 19:  # Hypothesis draws small integers most often
        protocols = ()
    client_id = draw(st.sampled_from(CLIENTS))
    captured = None
    if draw(st.integers(0, 4)) == 4:
        prefix = instance if instance is not None else client_id
        captured_id = draw(st.sampled_from([f"{prefix}-{'0' * 8}-0000-4000-8000-{'0' * 12}", f"{prefix}-short", ""]))
        captured = CapturedAnswer("conn", draw(st.sampled_from(["NONE", "MEMBER_ID_REQUIRED", None])), captured_id, 1)
    req = JoinGroup(
        ts=d.now, group_id=GROUP, type="JOIN_GROUP", seq=d.next_seq(), request_id=f"join-{d.seq}", client_id=client_id,
        api_version=draw(st.sampled_from([3, 4, 4, 9])), captured=captured, member_id=member_id,
        group_instance_id=instance, protocol_type=protocol_type, protocols=protocols,
        session_timeout_ms=draw(st.sampled_from([10_000] * 6 + [30_000, 5])),
        rebalance_timeout_ms=draw(st.sampled_from([5_000, 20_000])), client_host="/127.0.0.1")
    return ("join_group", d.now, req)


@st.composite
def assignments(draw, d: Driver) -> tuple[MemberAssignment, ...]:
    group = d.python.group
    ids = list(group.members.keys()) if group is not None else []
    chosen = draw(st.lists(st.sampled_from(ids + ["unknown-member"]), max_size=len(ids) + 1)) if draw(
        st.integers(0, 3)) else ids
    out = []
    for member_id in chosen:
        kind = draw(st.sampled_from(["decoded", "decoded", "bytes", "opaque", "empty"]))
        partitions = [(t, p) for t in TOPICS for p in range(3) if draw(st.integers(0, 2)) == 0]
        data = consumer_protocol.encode_assignment(consumer_protocol.Assignment(tuple(partitions)))
        if kind == "decoded":
            out.append(MemberAssignment(member_id, data, group_partitions(partitions)))
        elif kind == "bytes":
            out.append(MemberAssignment(member_id, data, None))
        elif kind == "opaque":
            out.append(MemberAssignment(member_id, b"\x00\x05junk", None))
        else:
            out.append(MemberAssignment(member_id, b"", None))
    return tuple(out)


@st.composite
def identity(draw, d: Driver) -> tuple[str, str | None]:
    """A member id and instance id, mostly a member's own."""
    group = d.python.group
    ids = list(group.members.keys()) + list(group.pending_join_members) if group is not None else []
    if ids and draw(st.integers(0, 9)) < 8:
        member_id = draw(st.sampled_from(ids))
    else:
        member_id = draw(st.sampled_from(["unknown-member", ""]))
    instance = None
    if group is not None and member_id in group.members:
        instance = group.members[member_id].group_instance_id
    if draw(st.integers(0, 4)) == 4:
        instance = draw(st.none() | st.sampled_from(INSTANCES))
    return member_id, instance


def generation(draw, d: Driver) -> int:
    current = d.python.group.generation_id if d.python.group is not None else 0
    return draw(st.sampled_from([current, current, current, current - 1, current + 1]))


@st.composite
def sync(draw, d: Driver) -> tuple:
    member_id, instance = draw(identity(d))
    group = d.python.group
    if group is not None and group.leader_id is not None and draw(st.booleans()):
        member_id, instance = group.leader_id, group.members[group.leader_id].group_instance_id
    protocol_type = draw(st.sampled_from([None, None, "consumer", "consumer", "connect"]))
    protocol_name = draw(st.sampled_from([None, None, group.protocol_name if group else None] * 2 + ["roundrobin"]))
    req = SyncGroup(ts=d.now, group_id=GROUP, type="SYNC_GROUP", seq=d.next_seq(), request_id=f"sync-{d.seq}",
                    client_id="c", api_version=5, member_id=member_id, group_instance_id=instance,
                    generation_id=generation(draw, d), protocol_type=protocol_type, protocol_name=protocol_name,
                    assignments=draw(assignments(d)) if group is not None and group.leader_id == member_id else ())
    return ("sync_group", d.now, req)


@st.composite
def heartbeat(draw, d: Driver) -> tuple:
    member_id, instance = draw(identity(d))
    req = Heartbeat(ts=d.now, group_id=draw(st.sampled_from([GROUP] * 19 + [""])), type="HEARTBEAT", seq=d.next_seq(),
                    request_id=f"hb-{d.seq}", client_id="c", api_version=4, member_id=member_id,
                    group_instance_id=instance, generation_id=generation(draw, d))
    return ("heartbeat", d.now, req)


@st.composite
def leave(draw, d: Driver) -> tuple:
    version = draw(st.sampled_from([0, 2, 3, 5]))
    count = 1 if version < 3 else draw(st.integers(1, 3))
    members = []
    for _ in range(count):
        member_id, instance = draw(identity(d))
        if version >= 3 and instance is not None and draw(st.booleans()):
            member_id = ""  # by instance id alone (KIP-345)
        members.append(LeaveIdentity(member_id, instance if version >= 3 else None, None))
    req = LeaveGroup(ts=d.now, group_id=GROUP, type="LEAVE_GROUP", seq=d.next_seq(), request_id=f"leave-{d.seq}",
                     client_id="c", api_version=version, members=tuple(members))
    return ("leave_group", d.now, req)


def rejoin(draw, d: Driver, outcomes: list[str]) -> None:
    """A member (or a pending member id) joins again as a client does: its id, instance id and protocols."""
    group = d.python.group
    ids = list(group.members.keys()) + list(group.pending_join_members) if group is not None else []
    if not ids:
        return
    member_id = draw(st.sampled_from(ids))
    member = group.members.get(member_id) or d.pending[member_id]
    req = JoinGroup(ts=d.now, group_id=GROUP, type="JOIN_GROUP", seq=d.next_seq(), request_id=f"join-{d.seq}",
                    client_id=member.client_id, api_version=draw(st.sampled_from([4, 9])), member_id=member_id,
                    group_instance_id=member.group_instance_id, protocol_type="consumer", protocols=member.protocols,
                    session_timeout_ms=10_000, rebalance_timeout_ms=member.rebalance_timeout_ms,
                    client_host="/127.0.0.1")
    d.run("join_group", d.now, req, outcomes=outcomes)


def static_restart(draw, d: Driver, outcomes: list[str]) -> None:
    """A static member's process restarts: a JoinGroup without member id, with its instance id (KIP-345), its
    protocols or new ones."""
    group = d.python.group
    static = [m for m in group.all_members() if m.group_instance_id is not None] if group is not None else []
    if not static:
        return
    member = draw(st.sampled_from(static))
    protocols = member.protocols if draw(st.integers(0, 3)) < 3 else (protocol("roundrobin", 1),)
    req = JoinGroup(ts=d.now, group_id=GROUP, type="JOIN_GROUP", seq=d.next_seq(), request_id=f"join-{d.seq}",
                    client_id=member.client_id, api_version=draw(st.sampled_from([9, 5])), member_id="",
                    group_instance_id=member.group_instance_id, protocol_type="consumer", protocols=protocols,
                    session_timeout_ms=10_000, rebalance_timeout_ms=member.rebalance_timeout_ms,
                    client_host="/127.0.0.1")
    d.run("join_group", d.now, req, outcomes=outcomes)


def sync_all(draw, d: Driver, outcomes: list[str]) -> None:
    """Every member sends SyncGroup at the group's generation, the leader with an assignment for all."""
    group = d.python.group
    if group is None:
        return
    for member_id in group.members.keys():
        if d.python.group is None or member_id not in d.python.group.members:
            continue
        member = d.python.group.members[member_id]
        leader = d.python.group.leader_id == member_id
        req = SyncGroup(ts=d.now, group_id=GROUP, type="SYNC_GROUP", seq=d.next_seq(), request_id=f"sync-{d.seq}",
                        client_id=member.client_id, api_version=5, member_id=member_id,
                        group_instance_id=member.group_instance_id, generation_id=d.python.group.generation_id,
                        protocol_type="consumer", protocol_name=d.python.group.protocol_name,
                        assignments=draw(assignments(d)) if leader else ())
        d.run("sync_group", d.now, req, outcomes=outcomes if leader else [])


def step(draw, d: Driver) -> None:
    group = d.python.group
    # What clients do next, most likely first (Hypothesis draws the first choices most often): in a
    # rebalance, they rejoin and then sync, so the group gets Stable.
    choices = []
    if group is None:
        choices += ["join", "simple"]
    elif group.state == GroupState.COMPLETING_REBALANCE:
        choices += ["sync_all"] * 6
    elif group.state == GroupState.PREPARING_REBALANCE:
        choices += ["rejoin", "advance"] * 2
    if group is not None and any(m.group_instance_id is not None for m in group.all_members()):
        choices += ["static_restart"]
    choices += ["join"] * 4 + ["rejoin"] * 3 + ["sync"] * 2 + ["sync_all"] * 2 + ["heartbeat"] * 2 + ["leave"] + [
        "advance"] * 3
    if group is not None and draw(st.integers(0, 7)) == 7:  # the group's existence changes now and then
        choices = ["unload", "unload", "convert"] + (["delete"] if group.state == GroupState.EMPTY else []) + (
            ["rebalance"] if group.can_rebalance() and group.members else [])
    choice = draw(st.sampled_from(choices))
    outcomes = draw(st.lists(st.sampled_from(FAILURES), max_size=2)) if draw(st.integers(0, 5)) == 5 else []
    if choice == "join":
        d.run(*draw(join(d)), outcomes=outcomes)
    elif choice == "rejoin":
        rejoin(draw, d, outcomes)
    elif choice == "static_restart":
        static_restart(draw, d, outcomes)
    elif choice == "sync_all":
        sync_all(draw, d, outcomes)
    elif choice == "sync":
        d.run(*draw(sync(d)), outcomes=outcomes)
    elif choice == "heartbeat":
        d.run(*draw(heartbeat(d)), outcomes=outcomes)
    elif choice == "leave":
        d.run(*draw(leave(d)), outcomes=outcomes)
    elif choice == "advance":
        d.advance(draw(st.sampled_from([1, 100, 2_999, 3_000, 5_000, 10_000, 20_000, 300_000])))
    elif choice == "simple":
        d.run("create_simple_group", d.now)
    elif choice == "delete":
        d.run("delete", d.now, "group_expired")
        d.timers.clear()
    elif choice == "rebalance":
        d.run("prepare_rebalance", d.now, "group_max_size_on_load", outcomes=outcomes)
    elif choice == "convert":
        d.run("replace_by_consumer_group", d.now)
        d.timers.clear()
        d.last_value = None
    else:  # the coordinator moves: unloaded here, loaded from the partition (after a while, maybe)
        d.run("unload", d.now, draw(st.booleans()))
        d.timers.clear()
        d.advance(draw(st.sampled_from([0, 1_000])))
        d.run("load", d.now, d.last_value, draw(st.booleans()))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), config=st.sampled_from(CONFIGS), steps=st.integers(5, 40))
def test_the_native_manager_answers_as_the_reference(data, config, steps) -> None:
    d = Driver(config)
    for _ in range(steps):
        step(data.draw, d)
    d.run("finish", d.now)
    python_row, native_row = d.python.pending_generation_row(None), d.native.pending_generation_row(None)
    assert shadow.normal(native_row) == shadow.normal(python_row)


def test_a_captured_member_id_handed_out_twice_is_pending_once() -> None:
    """Two v4 JoinGroups without a member id whose captured answer (docs/captures.md) names the same member id:
    the id is pending once, as in the reference's insertion-ordered set (the native manager listed it twice)."""
    d = Driver(CONFIGS[0])
    captured = CapturedAnswer(connection="conn", error="NONE", member_id="client-a-00000000-0000-4000-8000-000000000000",
                              generation_id=1)
    for seq in (1, 2):
        d.run("join_group", 0, JoinGroup(
            ts=0, group_id=GROUP, type="JOIN_GROUP", seq=seq, request_id=f"join-{seq}", client_id="client-a",
            api_version=4, captured=captured, member_id="", group_instance_id=None, protocol_type="consumer",
            protocols=(protocol("range", 0),), session_timeout_ms=10_000, rebalance_timeout_ms=5_000),
            outcomes=[])
    assert list(d.python.group.pending_join_members) == ["client-a-00000000-0000-4000-8000-000000000000"]
