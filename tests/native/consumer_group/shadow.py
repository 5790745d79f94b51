"""The native consumer group as a shadow of the reference's: every record a state.consumer_group.group
ConsumerGroup replays is replayed on a coordsim_native.consumer_group.ConsumerGroup as well, and the two must
refuse the same records with the same error and otherwise hold the same group (`snapshot`: every replayed
field, the maps in their order, the state, subscription type and preferred server assignor). The parity test
replays Hypothesis-generated records on both directly; `shadow` makes every group a test builds
(tests/state/consumer_group's Kafka-named cases, through the `core` fixture) check the native one this way, and
the member timeouts those cases fire run on both groups (`shadow_timeouts`).

A group the reference changes outside its replay (a test setting a field, a group decoded from stored state)
loses its shadow from then on: before each replay the two must still agree, or the shadow is dropped.
"""

from __future__ import annotations

import weakref

from state.consumer_group.group import ConsumerGroup
from state.java_compat import java_string_sort_key


def epochs(partitions) -> list:
    return [(tuple(t), list(ps.items())) for t, ps in partitions.items()]


def member_snapshot(m) -> tuple:
    """A reference ConsumerGroupMember in the layout of the native snapshot's members."""
    classic = m.classic_member_metadata
    if classic is not None:
        classic = (classic.session_timeout_ms, [(p.name, p.metadata) for p in classic.supported_protocols])
    c = m.current
    return (m.member_id, m.instance_id, m.rack_id, m.rebalance_timeout_ms, m.client_id, m.client_host,
            sorted(m.subscribed_topic_names, key=java_string_sort_key), m.subscribed_topic_regex,
            m.server_assignor_name, classic,
            (int(c.state), c.member_epoch, c.previous_member_epoch, epochs(c.assigned_partitions),
             epochs(c.partitions_pending_revocation)))


def snapshot(group: ConsumerGroup) -> tuple:
    """The reference's group in the layout of the native `snapshot()` (native/src/py/consumer_group.rs). The
    subscribed topic names' counts are sorted: the reference counts them in a frozenset's order, which
    varies from process to process."""
    g = group
    return (
        (g.group_id, g.group_epoch, g.metadata_hash, g.assignment_epoch, g.assignment_timestamp_ms),
        [member_snapshot(m) for m in g.members.values()],
        [(mid, [(tuple(t), sorted(ps)) for t, ps in a.items()]) for mid, a in g.target_assignment.items()],
        list(g.static_members.items()),
        (sorted(g.subscribed_topic_names.items()), list(g.server_assignors.items()),
         list(g.subscribed_regexes.items()),
         [(regex, (list(r.topics), r.version, r.timestamp)) for regex, r in g.resolved_regexes.items()],
         list(g.regex_topic_names.items())),
        sorted((tuple(t), sorted(ps.items())) for t, ps in g.partition_epochs._epochs.items()),
        (g.state.value, g.subscription_type.value, g.preferred_server_assignor()),
    )


def replayed(group, record):
    """None, or the error the replay raised as (its class's name, its message)."""
    try:
        group.replay(record)
    except Exception as error:  # the reference's ValueError and PartitionEpochConflict, and the native ones
        return type(error).__name__, str(error)
    return None


def shadow(monkeypatch, native_consumer_group) -> None:
    """Make every ConsumerGroup built from now on shadowed by a native one (`native_consumer_group`:
    coordsim_native.consumer_group). A group is unhashable (it is mutable), so shadows are kept by id and
    dropped with their group."""
    shadows: dict[int, object] = {}
    init, replay = ConsumerGroup.__init__, ConsumerGroup.replay

    def __init__(self, group_id, kafka_4_0=False) -> None:
        init(self, group_id, kafka_4_0)
        shadows[id(self)] = native_consumer_group.ConsumerGroup(group_id, kafka_4_0)
        weakref.finalize(self, shadows.pop, id(self), None)

    def replay_both(self, record) -> None:
        native = shadows.get(id(self))
        if native is not None and native.snapshot() != snapshot(self):
            del shadows[id(self)]  # changed outside its replay
            native = None
        if native is None:
            return replay(self, record)
        error = replayed(native, record)
        try:
            replay(self, record)
        except Exception as python_error:
            assert error == (type(python_error).__name__, str(python_error)), record
            raise
        assert error is None, record
        assert native.snapshot() == snapshot(self), record

    monkeypatch.setattr(ConsumerGroup, "__init__", __init__)
    monkeypatch.setattr(ConsumerGroup, "replay", replay_both)
    shadow_timeouts(monkeypatch, native_consumer_group, shadows)


def shadow_timeouts(monkeypatch, native_consumer_group, shadows: dict) -> None:
    """The member timeouts tests/state/consumer_group's Kafka-named cases fire (coordinator_context's
    Context.fire) run on the native group too, while it shadows the reference's: the same results (they compute
    no target, so the cases' MockAssignor is not needed)."""
    from tests.native.consumer_group.test_heartbeat_parity import native_result, python_result
    from tests.state.consumer_group import coordinator_context

    for name in ("on_member_timeout", "on_rebalance_timeout"):
        reference = getattr(coordinator_context, name)

        def both(group, *args, reference=reference, name=name):
            result = reference(group, *args)
            native = shadows.get(id(group))
            if native is not None and native.snapshot() == snapshot(group):
                assert native_result(getattr(native_consumer_group, name)(native, *args)) == python_result(result)
            return result

        monkeypatch.setattr(coordinator_context, name, both)
