"""The native classic group and offsets managers as shadows of the reference's: every operation a
state.classic.manager.ClassicGroupManager or a state.offsets.manager.OffsetMetadataManager runs is run on a
coordsim_native.classic.ClassicGroupManager (coordsim_native.offsets.OffsetMetadataManager) of the same group
as well, with the same arguments, and the two must return the same effects (effect for effect, every field
in order), leave the same write failures and hold the same group (the same offsets). The parity tests drive
both directly; `shadow` makes every runtime a test builds (tests/state/classic's and tests/state/offsets'
Kafka-named cases, through the `core` fixture) check the native managers this way.

A manager that the reference changes outside these operations (a consumer group downgraded into it, a
runtime decoded from its stored state or given a new config) loses its shadow from then on, and so does an
offsets manager whose group is a consumer group (not ported yet) or whose classic manager has no shadow.
"""

from __future__ import annotations

import weakref

from state.classic.group_state import GroupState
from state.classic.manager import ClassicGroupManager
from state.offsets.manager import OffsetMetadataManager
from state.events import Heartbeat, JoinGroup, LeaveGroup, OffsetCommit, OffsetFetch, SyncGroup
from state.records.group_log import OffsetCommitRecord
from state.runtime import result as R

# The operations, and whether each takes the partition's write failures (`outcomes`) after its arguments.
OPERATIONS = {
    "join_group": True, "sync_group": True, "heartbeat": True, "leave_group": True, "prepare_rebalance": True,
    "on_initial_join_timeout": True, "on_join_timeout": True, "on_sync_timeout": True,
    "on_heartbeat_expired": True, "create_simple_group": False, "delete": False, "load": False, "unload": False,
    "replace_by_consumer_group": False, "finish": False,
}


def describe(manager: ClassicGroupManager):
    """The reference's group as the native manager's `describe` gives it."""
    group = manager.group
    if group is None:
        return None
    members = [(m.member_id, m.awaiting_join is not None, m.awaiting_sync is not None, m.is_new, m.assignment,
                None if m.assignment_partitions is None
                else [{"topic": p.topic, "partitions": list(p.partitions)} for p in m.assignment_partitions])
               for m in group.all_members()]
    return (str(group.state), group.generation_id, group.protocol_type, group.protocol_name, group.leader_id,
            group.members.keys(), list(group.pending_join_members), list(group.pending_sync_members),
            group.num_members_awaiting_join, members)


def normal(value):
    """A value compared in full: dicts as their items in order, sequences as lists, requests by identity."""
    if isinstance(value, dict):
        return ("dict", [(k, normal(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return [normal(v) for v in value]
    if isinstance(value, GroupState):
        return str(value)
    if isinstance(value, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch)):
        return ("request", id(value))
    return value


def _record(record):
    """A record as the native managers give it: a GroupMetadata record's value, an OffsetCommit record as
    (topic, partition, value, context)."""
    if isinstance(record, OffsetCommitRecord):
        return (record.topic, record.partition, record.value, record.context)
    return record.value


def normal_python(effects: list[tuple]) -> list:
    """The reference's effects, an APPEND's records as the native managers give them."""
    return [normal((R.APPEND, [_record(r) for r in e[1]]) if e[0] == R.APPEND else e) for e in effects]


def check(python: ClassicGroupManager, native, name: str, outcomes: list[str] | None,
          effects: list[tuple], native_effects: list, native_outcomes: list[str] | None) -> None:
    """The two managers' answers to one operation are the same."""
    assert normal(native_effects) == normal_python(effects), name
    assert native_outcomes == outcomes, name
    assert native.describe() == describe(python), name
    assert native.ids_counter == python.ids.counter, name


def shadow(monkeypatch, native_classic, native_offsets) -> None:
    """Make every ClassicGroupManager and OffsetMetadataManager built from now on shadowed by a native one
    (`native_classic`, `native_offsets`: coordsim_native.classic and .offsets)."""
    shadows: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    init = ClassicGroupManager.__init__

    def __init__(self, group_id, config, ids) -> None:
        init(self, group_id, config, ids)
        shadows[self] = (native_classic.ClassicGroupManager(group_id, config, ids.counter), config)

    monkeypatch.setattr(ClassicGroupManager, "__init__", __init__)
    for name, takes_outcomes in OPERATIONS.items():
        monkeypatch.setattr(ClassicGroupManager, name, _shadowed(getattr(ClassicGroupManager, name), name,
                                                                 takes_outcomes, shadows))
    adopt = ClassicGroupManager.adopt_downgraded

    def adopt_downgraded(self, *args):
        shadows.pop(self, None)  # a consumer group's members: not ported yet
        return adopt(self, *args)

    monkeypatch.setattr(ClassicGroupManager, "adopt_downgraded", adopt_downgraded)
    _shadow_offsets(monkeypatch, native_offsets, shadows)


def _shadow_offsets(monkeypatch, native_offsets, classic_shadows: weakref.WeakKeyDictionary) -> None:
    """Make every OffsetMetadataManager built from now on shadowed by a native one, which reads the group of
    its classic manager's shadow."""
    shadows: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    init, next_expiry_due = OffsetMetadataManager.__init__, OffsetMetadataManager.next_expiry_due

    def __init__(self, config, classic, consumer, image) -> None:
        init(self, config, classic, consumer, image)
        shadows[self] = (native_offsets.OffsetMetadataManager(config), config)

    def native_of(self):
        """The native manager and the native classic manager it reads, or None (the shadow dropped)."""
        pair, classic = shadows.get(self), classic_shadows.get(self.classic)
        if pair is None:
            return None
        if pair[1] is not self.config or classic is None or self.consumer.consumer_group is not None:
            del shadows[self]
            return None
        return pair[0], classic[0]

    def compared(name: str, image: bool):
        operation = getattr(OffsetMetadataManager, name)

        def run(self, *args):
            natives = native_of(self)
            if natives is None:
                return operation(self, *args)
            native, classic = natives
            outcomes, native_outcomes = args[-1], list(args[-1])
            result = operation(self, *args)
            effects = getattr(native, name)(*args[:-1], native_outcomes, classic, *((self.image,) if image else ()))
            assert normal(effects) == normal_python(result.effects), name
            assert native_outcomes == outcomes, name
            return result

        return run

    def due(self, now):
        natives = native_of(self)
        expected = next_expiry_due(self, now)
        if natives is not None:
            assert natives[0].next_expiry_due(now, natives[1]) == expected
        return expected

    def kept(name: str, native_call):
        operation = getattr(OffsetMetadataManager, name)

        def run(self, *args):
            natives = native_of(self)
            operation(self, *args)
            if natives is not None:
                native_call(natives[0], *args)
                assert natives[0].offsets() == dict(sorted(self.offsets.items())), name
                assert natives[0].version == self.version, name

        return run

    monkeypatch.setattr(OffsetMetadataManager, "__init__", __init__)
    monkeypatch.setattr(OffsetMetadataManager, "commit_offset", compared("commit_offset", True))
    monkeypatch.setattr(OffsetMetadataManager, "fetch_offsets", compared("fetch_offsets", False))
    monkeypatch.setattr(OffsetMetadataManager, "cleanup_expired_offsets", compared("cleanup_expired_offsets", False))
    monkeypatch.setattr(OffsetMetadataManager, "next_expiry_due", due)
    monkeypatch.setattr(OffsetMetadataManager, "replay", kept(
        "replay", lambda native, record: native.replay(record.topic, record.partition, record.value)))
    monkeypatch.setattr(OffsetMetadataManager, "load", kept("load", lambda native, log: native.load(log.offsets())))
    monkeypatch.setattr(OffsetMetadataManager, "unload", kept("unload", lambda native: native.unload()))


def _shadowed(operation, name: str, takes_outcomes: bool, shadows: weakref.WeakKeyDictionary):
    def run(self, *args):
        pair = shadows.get(self)
        if pair is not None and pair[1] is not self.config:
            del shadows[self]  # reconfigured: the native manager was built with the old config
            pair = None
        if pair is None:
            return operation(self, *args)
        native, _ = pair
        native.ids_counter = self.ids.counter  # the consumer group manager draws from the same counter
        # The outcomes come last, but for join_group's consumer_group_exists.
        at = (2 if name == "join_group" else len(args) - 1) if takes_outcomes else None
        outcomes = native_outcomes = None
        native_args = args
        if at is not None:
            outcomes, native_outcomes = args[at], list(args[at])
            native_args = (*args[:at], native_outcomes, *args[at + 1:])
        try:
            result = operation(self, *args)
        except BaseException:
            del shadows[self]
            raise
        native_effects = getattr(native, name)(*native_args)
        check(self, native, name, outcomes, result.effects, native_effects, native_outcomes)
        return result

    run.__name__ = name
    return run
