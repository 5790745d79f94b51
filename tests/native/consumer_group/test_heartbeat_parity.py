"""Parity of state/consumer_group/heartbeat.py and the native engine's: both handle the same
Hypothesis-generated ConsumerGroupHeartbeats (joins of new, known and static members, v0 joins given an id,
steady heartbeats at the member's epoch, its previous one and wrong ones, acknowledgements of owned partitions,
subscription, regex, rack and assignor changes, leaves with epoch -1 and -2, malformed requests) and timers
(session and rebalance timeouts, regexes resolved after the heartbeat that asked, a coordinator's load) against
groups of every shape (none, a group of another type, groups of their own making), under trunk's and Kafka 4.0's
rules, server assignors uniform and range, assignment intervals, group size limits and migration policies. Each
result (records, response, timer changes, metadata refresh, downgrade, regexes to resolve) must be the same
field for field in order; the records are then replayed on both groups, as the runtime does, and the groups
must agree (tests/native/consumer_group/shadow.py's `snapshot`), and so must offset_commit.py's checks of
commits and fetches by their members.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.classic import consumer_protocol
from state.classic.manager import ClassicGroupManager
from state.config import CoordinatorConfig
from state.consumer_group import classic_members as classic
from state.consumer_group import downgrade as downgrades
from state.consumer_group import heartbeat as hb
from state.consumer_group import records as cg
from state.consumer_group.group import ConsumerGroup
from state.consumer_group.messages import HeartbeatRequest
from state.consumer_group.offset_commit import validate_offset_commit, validate_offset_fetch
from state.consumer_group.regex import resolve_regular_expressions
from state.consumer_group.topic_id import TopicId
from state.consumer_group.topics import TopicsImage
from state.runtime.member_ids import MemberIds
from tests.native import cores
from tests.native.classic import shadow as classic_shadow
from tests.native.consumer_group.shadow import epochs, member_snapshot, snapshot

PARITY = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

GROUP = "g"
TOPICS = {"foo": (TopicId(1, 2), 3), "bar": (TopicId(-5, 7), 2), "baz": (TopicId(1, -2), 4)}
# "Aa" and "BB" share a String.hashCode, so a java.util.HashMap bucket.
MEMBERS = ["m1", "m2", "Aa", "BB"]


def record(r) -> tuple:
    """A reference record in the native layout (native/src/py/heartbeat.rs); a current assignment's topics
    and partitions sorted (their order reaches no output)."""
    name, v = type(r).__name__, r.value
    key = getattr(r, "member_id", getattr(r, "regex", None))
    if v is None:
        return name, key, None
    if isinstance(r, cg.ConsumerGroupMetadata):
        return name, key, (v.epoch, v.metadata_hash)
    if isinstance(r, cg.ConsumerGroupMemberMetadata):
        classic = v.classic_member_metadata
        if classic is not None:
            classic = (classic.session_timeout_ms, [(p.name, p.metadata) for p in classic.supported_protocols])
        return name, key, ((v.instance_id, v.rack_id, v.client_id, v.client_host), list(v.subscribed_topic_names),
                           v.subscribed_topic_regex, v.server_assignor, v.rebalance_timeout_ms, classic)
    if isinstance(r, cg.ConsumerGroupTargetAssignmentMetadata):
        return name, key, (v.assignment_epoch, v.assignment_timestamp_ms)
    if isinstance(r, cg.ConsumerGroupTargetAssignmentMember):
        return name, key, [(tuple(t), list(ps)) for t, ps in v]
    if isinstance(r, cg.ConsumerGroupCurrentMemberAssignment):
        return native_record((name, key, (int(v.state), v.member_epoch, v.previous_member_epoch,
                                          epochs(v.assigned_partitions), epochs(v.partitions_pending_revocation))))
    return name, key, (list(v.topics), v.version, v.timestamp)


def native_record(r) -> tuple:
    name, key, v = r
    if name == "ConsumerGroupCurrentMemberAssignment" and v is not None:
        state, epoch, previous, assigned, pending = v
        sort = lambda ps: sorted((t, sorted(p)) for t, p in ps)  # noqa: E731
        v = (state, epoch, previous, sort(assigned), sort(pending))
    return name, key, v


def native_member(m) -> tuple:
    """A member snapshot with its partitions sorted (their order reaches no output)."""
    *fields, (state, epoch, previous, assigned, pending) = m
    sort = lambda ps: sorted((t, sorted(p)) for t, p in ps)  # noqa: E731
    return (*fields, (state, epoch, previous, sort(assigned), sort(pending)))


def python_result(result: hb.CoordinatorResult) -> tuple:
    response = result.response
    if isinstance(response, classic.ClassicResponse):
        assignment = None if response.assignment is None else [(tuple(t), list(ps)) for t, ps in response.assignment]
        response = ("classic", response.error, response.member_id, response.generation_id, response.protocol_type,
                    response.protocol_name, assignment)
    elif response is not None:
        assignment = None if response.assignment is None else [(tuple(t), list(ps)) for t, ps in response.assignment]
        response = ("heartbeat", response.error, response.error_message, response.member_id, response.member_epoch,
                    response.heartbeat_interval_ms, assignment)
    timers = [(t.key[0], t.key[1], t.deadline, t.kind, list(t.args), t.if_absent) for t in result.timers]
    downgrade = result.downgrade
    if downgrade is not None:
        joining = None if downgrade.joining is None else native_member(member_snapshot(downgrade.joining))
        downgrade = (sorted(downgrade.leaving), joining, downgrade.rebalance)
    regexes = None if result.resolve_regexes is None else list(result.resolve_regexes)
    return ([record(r) for r in result.records], response, timers, result.metadata_refreshed, downgrade, regexes)


def native_result(result: tuple) -> tuple:
    records, response, timers, refreshed, downgrade, regexes = result
    if downgrade is not None and downgrade[1] is not None:
        downgrade = (downgrade[0], native_member(downgrade[1]), downgrade[2])
    return ([native_record(r) for r in records], response, [tuple(t) for t in timers], refreshed, downgrade, regexes)


maybe = st.none().__or__
configs = st.builds(
    CoordinatorConfig, group_consumer_max_size=st.sampled_from([3, 100, 100]),
    group_consumer_assignors=st.sampled_from([("uniform", "range"), ("range", "uniform")]),
    group_consumer_migration_policy=st.sampled_from(["bidirectional", "bidirectional", "upgrade", "downgrade", "disabled"]),
    group_consumer_assignment_interval_ms=st.sampled_from([0, 1_000]),
    group_consumer_regex_refresh_interval_ms=st.sampled_from([10_000, 600_000]),
    coordsim_kafka_version=st.sampled_from(["trunk", "4.0"]),
)
NAMES = st.lists(st.sampled_from(["foo", "bar", "baz", "gone"]), min_size=1, max_size=3, unique=True).map(tuple)
REGEXES = st.sampled_from(["", "f.*", "ba.", "(?i)BA[RZ]", "a)"])
# What a member sends: mostly what a client sends at its point in the protocol, sometimes anything.
heartbeats = st.fixed_dictionaries({
    "kind": st.sampled_from(["join", "join", "steady", "steady", "ack", "ack", "change", "previous", "leave",
                             "static-leave", "anything"]),
    "member": st.sampled_from(MEMBERS), "v0": st.sampled_from([False, False, False, True]),
    "instance_id": maybe(st.sampled_from(["i1", "i2"])), "rack_id": maybe(st.just("r")),
    "rebalance_timeout_ms": st.sampled_from([1_000, 30_000]), "names": maybe(NAMES), "regex": maybe(REGEXES),
    "assignor": maybe(st.sampled_from(["uniform", "range"])),
    "anything": st.fixed_dictionaries({
        "epoch": st.integers(-3, 6), "member": st.sampled_from(MEMBERS + ["", " "]),
        "group_id": st.sampled_from([GROUP, " "]), "instance_id": maybe(st.sampled_from(["i1", " "])),
        "rack_id": maybe(st.sampled_from(["r", ""])), "rebalance_timeout_ms": st.sampled_from([-1, 1_000]),
        "assignor": maybe(st.sampled_from(["uniform", "other"])), "api_version": st.sampled_from([0, 1]),
        "owned": st.sampled_from(["none", "empty", "held"])}),
})
PROTOCOLS = st.sampled_from([("range",)] * 3 + [("range", "roundrobin"), ("roundrobin", "range"), ("roundrobin",)])
classic_joins = st.fixed_dictionaries({
    "member": st.sampled_from(["c1", "c2", "c1", "c2", "m1", ""]), "instance_id": maybe(st.sampled_from(["i1", "i3"])),
    "protocol_type": st.sampled_from(["consumer"] * 9 + ["connect"]), "protocols": PROTOCOLS,
    "names": NAMES, "owned": st.sampled_from(["held", "none", "subset"]), "version": st.integers(0, 3),
    "garbage": st.sampled_from([False] * 9 + [True]), "session_timeout_ms": st.sampled_from([10_000, 45_000]),
    "rebalance_timeout_ms": st.sampled_from([1_000, 30_000]), "api_version": st.sampled_from([3, 5]),
})
classic_requests = st.fixed_dictionaries({
    "member": st.integers(0, 7), "generation": st.sampled_from(["current", "current", "other"]),
    "static": st.booleans(), "protocol_type": maybe(st.sampled_from(["consumer", "connect"])),
    "protocol_name": maybe(st.sampled_from(["range", "roundrobin"])),
})
steps = st.one_of(
    st.tuples(st.just("classic-join"), classic_joins), st.tuples(st.just("classic-join"), classic_joins),
    st.tuples(st.just("classic-sync"), classic_requests), st.tuples(st.just("classic-heartbeat"), classic_requests),
    st.tuples(st.just("heartbeat"), heartbeats), st.tuples(st.just("heartbeat"), heartbeats),
    st.tuples(st.just("heartbeat"), heartbeats),
    st.tuples(st.just("session"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("rebalance"), st.tuples(st.sampled_from(MEMBERS), st.integers(0, 6))),
    st.tuples(st.just("resolve"), st.just(None)), st.tuples(st.just("advance"), st.integers(1, 20_000)),
    st.tuples(st.just("loaded"), st.just(None)),
)


def classic_description(g) -> tuple:
    """A reference ClassicGroup in the layout of the native description (native/src/py/heartbeat.rs)."""
    members = [((m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                 m.session_timeout_ms), [(p.name, p.metadata) for p in m.protocols], m.assignment,
                None if m.assignment_partitions is None else [(p.topic, list(p.partitions))
                                                              for p in m.assignment_partitions])
               for m in g.all_members()]
    topics = None if g.subscribed_topics is None else sorted(g.subscribed_topics)
    return ((g.state.value, g.generation_id, g.protocol_type, g.protocol_name, g.leader_id), topics, members,
            sorted(g.static_members.items()), sorted(g.supported_protocols.items()))


def check_downgrade(both: "Both", downgrade, now: int) -> None:
    """The conversion a downgrade makes: the same tombstones and the same classic group, which a classic
    manager then adopts alike (ClassicGroupManager.adopt_downgraded: the same effects and group)."""
    records, group = downgrades.convert_to_classic_group(both.python, downgrade, TopicsImage(TOPICS), now)
    topics = {name: (tuple(topic_id), count) for name, (topic_id, count) in TOPICS.items()}
    native_records, description = both.module.convert_to_classic_group(
        both.native, sorted(downgrade.leaving), downgrade.joining, downgrade.rebalance, topics, now)
    assert [native_record(r) for r in native_records] == [record(r) for r in records]
    assert description == classic_description(group)
    python_manager = ClassicGroupManager(GROUP, both.config, MemberIds(GROUP))
    native_manager = cores.native_module("classic").ClassicGroupManager(GROUP, both.config)
    effects = python_manager.adopt_downgraded(now, group, downgrade.rebalance).effects
    native_effects = native_manager.adopt_downgraded(now, both.native, sorted(downgrade.leaving), downgrade.joining,
                                                     downgrade.rebalance, topics)
    classic_shadow.check(python_manager, native_manager, "adopt_downgraded", None, effects, native_effects, None)


class Both:
    """The reference's group and the native one, kept in step as the runtime keeps a group: what a result's
    records replay to, with the metadata refresh the manager then notes."""

    def __init__(self, config: CoordinatorConfig, other_type: bool) -> None:
        self.config = config
        self.python = self.native = None
        self.other_type = other_type  # the group id holds a group of another type
        self.module = cores.native_module("consumer_group")

    def held(self):
        if self.python is None:
            return ("classic", "classic") if self.other_type else (None, None)
        return self.python, self.native

    def apply(self, result: hb.CoordinatorResult) -> bool:
        """Replay the result's records on both (False: the group became a classic group)."""
        if result.downgrade is not None:
            return False
        if self.python is None and result.records:
            self.python = ConsumerGroup(GROUP, self.config.kafka_4_0)
            self.native = self.module.ConsumerGroup(GROUP, self.config.kafka_4_0)
        for r in result.records:
            self.python.replay(r)
            self.native.replay(r)
        if self.python is not None:
            expired = self.python.metadata_expired and not result.metadata_refreshed
            expired = expired or bool(self.python.subscribed_regexes)  # ConsumerGroupManager.written
            self.python.metadata_expired = self.native.metadata_expired = expired
            assert self.native.snapshot() == snapshot(self.python)
        return True


def classic_join_of(step: dict, group: ConsumerGroup, now: int, context, generated: str) -> dict:
    """The arguments of classic_group_join (the native function takes them in this order)."""
    member = group.members.get(step["member"])
    owned = owned_of(member, step["owned"]) or ()
    names = {topic_id: name for name, (topic_id, _) in TOPICS.items()}
    partitions = tuple(consumer_protocol.TopicPartition(names[t], p) for t, ps in owned for p in ps)
    metadata = b"garbage" if step["garbage"] else consumer_protocol.encode_subscription(
        consumer_protocol.Subscription(step["names"], owned_partitions=partitions, rack_id="r"), step["version"])
    protocols = tuple(cg.ClassicProtocol(name, metadata) for name in step["protocols"])
    kwargs = dict(member_id=step["member"], instance_id=step["instance_id"], protocol_type=step["protocol_type"],
                  protocols=protocols, session_timeout_ms=step["session_timeout_ms"],
                  rebalance_timeout_ms=step["rebalance_timeout_ms"], api_version=step["api_version"], now=now,
                  context=context, client_id="client", client_host="host", generated_member_id=generated)
    return kwargs


def classic_request_of(step: dict, group: ConsumerGroup) -> dict:
    """The member id, instance id and generation of a SyncGroup or Heartbeat (in the native order): mostly a
    member using the classic protocol's."""
    classic_ids = sorted(m.member_id for m in group.members.values() if m.use_classic_protocol)
    member_id = classic_ids[step["member"] % len(classic_ids)] if classic_ids and step["member"] < 6 else \
        (MEMBERS + [""])[step["member"] % len(MEMBERS)]
    member = group.members.get(member_id)
    epoch = -1 if member is None else member.member_epoch
    instance_id = None if member is None or not step["static"] else member.instance_id
    return dict(member_id=member_id, instance_id=instance_id,
                generation_id=epoch if step["generation"] == "current" else epoch + 1)


def owned_of(member, how: str):
    held = {} if member is None else member.assigned_partitions
    partitions = tuple((t, tuple(sorted(ps))) for t, ps in sorted(held.items()))
    return {"none": None, "empty": (), "held": partitions, "subset": tuple((t, ps[:1]) for t, ps in partitions[:1])}[how]


def check_offset_validation(both: "Both", probe: int, kafka_4_0: bool) -> None:
    """offset_commit.py's checks of one member (by turns) of the group as it is: commits at its epoch, its
    previous one, an older one and -1, of the partitions it holds or is revoking with and without one it does
    not, at OffsetCommit v8 and v9; a TxnOffsetCommit without group fields; fetches at those epochs."""
    group = both.python
    if group is None:
        return
    ids = sorted(group.members) + ["unknown"]
    member_id = ids[probe % len(ids)]
    member = group.members.get(member_id)
    current = -1 if member is None else member.member_epoch
    previous = -1 if member is None else member.previous_member_epoch
    held = [] if member is None else [(t, p) for ps in (member.assigned_partitions,
                                                        member.current.partitions_pending_revocation)
                                      for t, partitions in ps.items() for p in partitions]
    for epoch in dict.fromkeys([current, previous, current - 1, -1]):
        for partitions in (held, [*held, (TopicId(9, 9), 0)]):
            for api_version in (8, 9):
                args = (member_id, None, epoch, partitions)
                expected = validate_offset_commit(group, *args, api_version=api_version, kafka_4_0=kafka_4_0)
                native = [(tuple(t), p) for t, p in partitions]
                got = both.module.validate_offset_commit(both.native, member_id, None, epoch, native, False,
                                                         api_version, kafka_4_0)
                assert got == expected, (args, api_version)
        assert both.module.validate_offset_fetch(both.native, member_id, epoch) == validate_offset_fetch(
            group, member_id, epoch)
    assert both.module.validate_offset_commit(both.native, "", None, -1, [], True, 9, kafka_4_0) == \
        validate_offset_commit(group, "", None, -1, [], transactional=True, kafka_4_0=kafka_4_0)
    assert both.module.validate_offset_fetch(both.native, None, -1) == validate_offset_fetch(group, None, -1)


def request_of(step: dict, group: ConsumerGroup | None) -> HeartbeatRequest:
    """The request of a generated step, against the reference's group as it is."""
    kind = step["kind"]
    member = None if group is None else group.members.get(step["member"])
    if member is None and kind in ("steady", "ack", "change", "previous"):
        kind = "join"  # what a client not in the group sends
    epoch = 0 if member is None else member.member_epoch
    request = HeartbeatRequest(GROUP, step["member"], epoch, instance_id=None if member is None else member.instance_id)
    if kind == "join":
        v0 = step["v0"]
        return dataclasses.replace(
            request, member_id="" if v0 else step["member"], member_epoch=0, instance_id=step["instance_id"],
            rack_id=step["rack_id"], rebalance_timeout_ms=step["rebalance_timeout_ms"],
            subscribed_topic_names=step["names"] or (("foo",) if v0 or step["regex"] is None else None),
            subscribed_topic_regex=None if v0 else step["regex"], server_assignor=step["assignor"],
            topic_partitions=(), api_version=0 if v0 else 1)
    if kind == "steady":
        return request
    if kind == "ack":
        return dataclasses.replace(request, topic_partitions=owned_of(member, "held"))
    if kind == "change":
        return dataclasses.replace(request, rack_id=step["rack_id"], subscribed_topic_names=step["names"],
                                   subscribed_topic_regex=step["regex"], server_assignor=step["assignor"],
                                   topic_partitions=owned_of(member, "held"))
    if kind == "previous":
        previous = -1 if member is None else member.previous_member_epoch
        return dataclasses.replace(request, member_epoch=previous, topic_partitions=owned_of(member, "subset"))
    if kind == "leave":
        return dataclasses.replace(request, member_epoch=-1)
    if kind == "static-leave":
        return dataclasses.replace(request, member_epoch=-2, instance_id=request.instance_id or step["instance_id"])
    anything = step["anything"]
    return HeartbeatRequest(
        anything["group_id"], anything["member"], anything["epoch"], instance_id=anything["instance_id"],
        rack_id=anything["rack_id"], rebalance_timeout_ms=anything["rebalance_timeout_ms"],
        subscribed_topic_names=step["names"], subscribed_topic_regex=step["regex"], server_assignor=anything["assignor"],
        topic_partitions=owned_of(member, anything["owned"]), api_version=anything["api_version"])


@PARITY
@given(config=configs, other_type=st.sampled_from([False, False, False, True]), steps=st.lists(steps, max_size=30),
       new_topics_version=st.integers(-1, 2))
def test_heartbeats_and_timers_give_the_references_results(config, other_type, steps, new_topics_version) -> None:
    both = Both(config, other_type)
    module = both.module
    context = hb.HeartbeatContext.from_config(config, TopicsImage(TOPICS), metadata_version=3,
                                              new_topics_version=new_topics_version)
    now, pending, generated = 1_000, None, 0
    first_join = {"kind": "join", "member": "m1", "v0": False, "instance_id": None, "rack_id": None,
                  "rebalance_timeout_ms": 30_000, "names": ("foo", "bar"), "regex": None, "assignor": None}
    for probe, (kind, arg) in enumerate([("heartbeat", first_join), *steps]):
        python, native = both.held()
        if kind == "advance":
            now += arg
            continue
        if kind == "heartbeat":
            request = request_of(arg, both.python)
            generated += 1
            gen = f"gen-{generated}" if request.member_id == "" and request.member_epoch == 0 else None
            expected = hb.consumer_group_heartbeat(python, request, now, context, "client", "host", gen)
            got = module.heartbeat(native, request, now, context, "client", "host", gen)
        elif kind.startswith("classic-"):
            if both.python is None or not both.python.members:
                continue  # the manager sends these to a non-empty consumer group only
            if kind == "classic-join":
                generated += 1
                kwargs = classic_join_of(arg, both.python, now, context, f"gen-{generated}")
                expected = classic.classic_group_join(python, **kwargs)
                got = module.classic_group_join(native, *kwargs.values())
            elif kind == "classic-sync":
                kwargs = classic_request_of(arg, both.python)
                kwargs.update(protocol_type=arg["protocol_type"], protocol_name=arg["protocol_name"], now=now,
                              context=context)
                expected = classic.classic_group_sync(python, **kwargs)
                got = module.classic_group_sync(native, *kwargs.values())
            else:
                kwargs = dict(classic_request_of(arg, both.python), now=now, context=context)
                expected = classic.classic_group_heartbeat(python, **kwargs)
                got = module.classic_group_heartbeat(native, *kwargs.values())
        elif kind == "session":
            expected = hb.on_member_timeout(python, arg, context)
            got = module.on_member_timeout(native, arg, context)
        elif kind == "rebalance":
            member_id, epoch = arg
            expected = hb.on_rebalance_timeout(python, member_id, epoch, context)
            got = module.on_rebalance_timeout(native, member_id, epoch, context)
        elif kind == "resolve":
            if not pending:
                continue
            resolved = resolve_regular_expressions(pending, TOPICS, context.metadata_version, now)
            pending = None
            expected = hb.on_regular_expressions_resolved(python, resolved, context)
            got = module.on_regular_expressions_resolved(
                native, [(r, (list(v.topics), v.version, v.timestamp)) for r, v in resolved.items()], context)
        else:
            if both.python is None:
                continue
            expected = hb.CoordinatorResult(timers=hb.on_loaded(python, now, context))
            got = ([], None, module.on_loaded(native, now, context), False, None, None)
        assert native_result(got) == python_result(expected)
        pending = expected.resolve_regexes or pending
        if expected.downgrade is not None:
            check_downgrade(both, expected.downgrade, now)
        if not both.apply(expected):
            return
        check_offset_validation(both, probe, config.kafka_4_0)


def test_static_member_leave_keeps_its_partitions_at_epoch_zero() -> None:
    """A case the generated steps reach rarely on their own: a static member leaving with epoch -2 while it
    holds partitions, then another process taking its instance id."""
    module = cores.native_module("consumer_group")
    config = CoordinatorConfig()
    context = hb.HeartbeatContext.from_config(config, TopicsImage(TOPICS))
    both = Both(config, False)
    join = HeartbeatRequest(GROUP, "m1", 0, instance_id="i1", rebalance_timeout_ms=1_000,
                            subscribed_topic_names=("foo", "bar"), topic_partitions=())
    for request in (join, dataclasses.replace(join, member_epoch=-2),
                    dataclasses.replace(join, member_id="m2")):
        python, native = both.held()
        expected = hb.consumer_group_heartbeat(python, request, 5_000, context)
        assert native_result(module.heartbeat(native, request, 5_000, context)) == python_result(expected)
        both.apply(expected)
    assert list(both.python.members) == ["m2"] and both.python.members["m2"].assigned_partitions


def test_classic_members_join_sync_heartbeat_and_downgrade() -> None:
    """A scripted walk the generated steps reach rarely: classic members join a consumer group (one static),
    sync and heartbeat at their generation, then the last member using the consumer protocol leaves, which
    downgrades the group; and, from the same start, a classic static member replacing that member. Each
    downgrade converts the group alike (convert_to_classic_group)."""
    module = cores.native_module("consumer_group")
    config = CoordinatorConfig()
    context = hb.HeartbeatContext.from_config(config, TopicsImage(TOPICS))
    metadata = consumer_protocol.encode_subscription(consumer_protocol.Subscription(("foo", "bar")))
    protocols = (cg.ClassicProtocol("range", metadata),)

    def join(both, member_id, instance_id, generated, now):
        kwargs = dict(member_id=member_id, instance_id=instance_id, protocol_type="consumer", protocols=protocols,
                      session_timeout_ms=10_000, rebalance_timeout_ms=5_000, api_version=5, now=now,
                      context=context, client_id="client", client_host="host", generated_member_id=generated)
        expected = classic.classic_group_join(both.python, **kwargs)
        assert native_result(module.classic_group_join(both.native, *kwargs.values())) == python_result(expected)
        return expected

    def start():
        both = Both(config, False)
        request = HeartbeatRequest(GROUP, "m1", 0, instance_id="i1", rebalance_timeout_ms=30_000,
                                   subscribed_topic_names=("foo",), topic_partitions=())
        both.apply(hb.consumer_group_heartbeat(None, request, 1_000, context))
        for member_id, instance_id, now in (("c1", None, 2_000), ("", "i2", 3_000)):
            assert both.apply(join(both, member_id, instance_id, "gen-1", now))
        return both

    both = start()
    answers = []
    for member_id in sorted(both.python.members):
        member = both.python.members[member_id]
        if not member.use_classic_protocol:
            continue
        for call in ("sync", "heartbeat"):
            kwargs = dict(member_id=member_id, instance_id=member.instance_id, generation_id=member.member_epoch)
            if call == "sync":
                kwargs.update(protocol_type="consumer", protocol_name="range", now=5_000, context=context)
                expected = classic.classic_group_sync(both.python, **kwargs)
                got = module.classic_group_sync(both.native, *kwargs.values())
            else:
                kwargs.update(now=5_000, context=context)
                expected = classic.classic_group_heartbeat(both.python, **kwargs)
                got = module.classic_group_heartbeat(both.native, *kwargs.values())
            assert native_result(got) == python_result(expected)
            answers.append(expected.response.error)
    assert answers.count("NONE") >= 2, answers
    leave = HeartbeatRequest(GROUP, "m1", -1, instance_id="i1")
    expected = hb.consumer_group_heartbeat(both.python, leave, 6_000, context)
    assert native_result(module.heartbeat(both.native, leave, 6_000, context)) == python_result(expected)
    assert expected.downgrade is not None and expected.downgrade.leaving == {"m1"}
    check_downgrade(both, expected.downgrade, 6_000)

    both = start()
    expected = join(both, "", "i1", "gen-2", 6_000)
    assert expected.downgrade is not None and expected.downgrade.joining.member_id == "gen-2"
    check_downgrade(both, expected.downgrade, 6_000)
