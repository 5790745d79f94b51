"""The stored form of a group's state (`GroupRuntime.encode`/`decode`): an explicit schema of what each class
of the state keeps, and a schema id derived from it.

The Spark engine keeps each group's runtime between micro-batches and its checkpoint keeps it across
restarts, so a stored state must be read back exactly when it was written with the same fields, and refused
otherwise. `STORED` names, for every class of the state, the attributes stored, in order: an object is
written as its class and the tuple of those values, and read back by setting them. Objects of the input
contract (state.events' dataclasses) are written as their constructor's arguments (state/pickling.py), named
tuples and enums as pickle writes them. `SCHEMA_ID` digests all of it: the field lists, the input contract's
fields, the named tuples' fields and the enums' values. A release that changes any of them writes and reads
another id, and a state of another id is refused naming both, never read into the wrong fields.

Writing an object whose attributes are not exactly its listed ones, or an object of a `state` class the
schema does not know, fails: a new attribute cannot be dropped or stored unlisted without a test noticing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import pickle
from operator import attrgetter
from typing import Any, Callable

from state import events as events_module
from state.clients.fleet import Phase
from state.clients.consumer_group.member_state import ClientMemberState
from state.clients.consumer_group.membership_manager import GroupMembershipOperation, Step
from state.consumer_group.reconciliation import MemberState
from state.consumer_group.topic_id import TopicId
from state.classic.consumer_protocol import TopicPartition
from state.classic.group_state import GroupState
from state.pickling import ValuesPickler
from state.runtime.timers import Timer

STATE_FORMAT = b"coordsim-group-state/"

# Per class ("module.Class"), its stored attributes. The transient ones (the configuration, the output buffer,
# the links back to the runtime, the lookup loop's brokers' half, a cache) are rebuilt by GroupRuntime.decode.
STORED: dict[str, tuple[str, ...]] = {
    "state.runtime.group_runtime.GroupRuntime": (
        "group_id", "coordinator_partition", "ids", "classic", "offset_manager", "timers", "fleet",
        "coordinator_epoch", "coordinators", "down_epochs", "live_brokers", "now", "write_failures",
        "last_write_error", "loading_until", "log",
        "last_sweep_ts", "_held", "_last_key", "last_event_ts", "image",
        "requests_sent_to", "quiet", "elision", "periodic_answers", "lookups", "steps", "metrics", "captured_ids",
        "_captured_retries", "consumer"),
    "state.cluster_image.ClusterImage": ("topics", "topic_ids", "topic_names", "metadata_version",
                                         "new_topics_version", "production"),
    "state.clients.fleet.ConsumerFleet": ("group_id", "clients", "timers"),
    "state.clients.fleet.SyntheticConsumer": (),
    "state.clients.config.ClientConfig": (),
    "state.classic.group.ClassicGroup": (),
    "state.classic.group.ClassicGroupMember": (),
    "state.java_compat.JavaHashMap": ("_data", "_seq", "_next_seq", "capacity", "_hash", "_order"),
    "state.metrics.GroupMetrics": (),
    "state.runtime.quiet_runs.QuietRuns": ("runs",),
    "state.runtime.quiet_runs.QuietRun": (),
    "state.clients.elision.PeriodicElision": ("elided",),
    "state.clients.elision.Chain": (),
    "state.runtime.periodic_answers.PeriodicAnswers": ("members",),
    "state.runtime.periodic_answers.AnsweredMember": (),
    "state.runtime.periodic_answers.Arrivals": (),
    "state.clients.elision.ElidedClient": (),
    "state.clients.lookup_loop.LookupLoops": ("loops",),
    "state.clients.lookup_loop.LookupLoop": (),
    "state.records.group_log.GroupLog": ("values",),
    "state.offsets.manager.OffsetMetadataManager": ("offsets", "version"),
    "state.classic.manager.ClassicGroupManager": ("group_id", "group", "pending_generation"),
    "state.runtime.member_ids.MemberIds": (),
    "state.consumer_group.manager.ConsumerGroupManager": ("group_id", "consumer_group", "consumer_generation"),
    "state.runtime.timers.TimerQueue": ("_by_key", "_heap", "_stamp", "clock", "item"),
    "state.runtime.captured_ids.IdMap": ("_by_identity", "_latest", "_generations", "_group_generations"),
    # A consumer group and what its log holds (state.consumer_group).
    "state.consumer_group.group.ConsumerGroup": (
        "group_id", "group_epoch", "metadata_hash", "assignment_epoch", "assignment_timestamp_ms", "members",
        "target_assignment", "static_members", "subscribed_topic_names", "server_assignors", "subscribed_regexes",
        "resolved_regexes", "regex_topic_names", "partition_epochs", "metadata_expired"),
    "state.consumer_group.group.ConsumerGroupMember": (),
    "state.consumer_group.reconciliation.CurrentAssignment": (),
    "state.consumer_group.reconciliation.CurrentPartitionEpochs": ("_epochs",),
    "state.consumer_group.records.GroupEpoch": (),
    "state.consumer_group.records.MemberSubscription": (),
    "state.consumer_group.records.ClassicMemberMetadata": (),
    "state.consumer_group.records.ClassicProtocol": (),
    "state.consumer_group.records.AssignmentMetadata": (),
    "state.consumer_group.records.ResolvedRegularExpression": (),
    # A consumer-protocol client's membership (state.clients.consumer_group), with its requests in flight.
    "state.clients.consumer_group.member.Membership": ("config", "_manager", "_heartbeat"),
    "state.clients.consumer_group.member_config.MemberConfig": (),
    "state.clients.consumer_group.membership_manager.MembershipManager": (
        "config", "member_id", "member_epoch", "state", "subscription", "pattern", "has_rebalance_listener", "owned",
        "current_assignment", "target_assignment", "leave_group_operation", "leave_in_progress",
        "_reconciliation_in_progress", "_rejoined_while_reconciliation_in_progress", "_subscription_updated",
        "_is_poll_timer_expired", "_stale_assignment_released", "_rejoin_when_stale_assignment_released",
        "actions"),
    "state.clients.consumer_group.local_assignment.LocalAssignment": (),
    "state.clients.consumer_group.member_actions.PendingActions": ("_outbox", "_waiting", "_next_seq"),
    "state.clients.consumer_group.member_actions.Then": (),
    "state.clients.consumer_group.member_actions.CommitBeforeRebalance": (),
    "state.clients.consumer_group.member_actions.CommitOnClose": (),
    "state.clients.consumer_group.member_actions.OnPartitionsRevoked": (),
    "state.clients.consumer_group.member_actions.OnPartitionsLost": (),
    "state.clients.consumer_group.member_actions.OnPartitionsAssigned": (),
    "state.clients.consumer_group.member_actions.ErrorEvent": (),
    "state.clients.consumer_group.heartbeat_manager.HeartbeatRequestManager": (
        "membership", "request_state", "heartbeat_state", "coordinator_known", "poll_deadline_ms", "in_flight"),
    "state.clients.consumer_group.heartbeat_manager.HeartbeatState": ("_group_id", "_membership", "sent"),
    "state.clients.consumer_group.heartbeat_manager.SentFields": (),
    "state.clients.consumer_group.heartbeat_timing.HeartbeatRequestState": (
        "heartbeat_interval_ms", "_backoff", "_timer_deadline_ms", "request_in_flight", "last_received_ms",
        "num_attempts", "backoff_ms"),
    "state.clients.consumer_group.heartbeat_timing.ExponentialBackoff": (
        "initial_ms", "multiplier", "max_ms", "jitter", "_rng", "_exp_max"),
    "state.clients.consumer_group.seeded_random.SeededRandom": ("seed", "drawn"),
    "state.consumer_group.messages.HeartbeatRequest": (),
}
TRANSIENT: dict[str, tuple[str, ...]] = {
    "state.runtime.group_runtime.GroupRuntime": ("config", "out", "_sweep_inputs_seen", "lookup_answers"),
    "state.clients.fleet.ConsumerFleet": ("host",),
    "state.offsets.manager.OffsetMetadataManager": ("config", "classic", "consumer", "image"),
    "state.classic.manager.ClassicGroupManager": ("config", "ids", "now", "op"),
    "state.consumer_group.manager.ConsumerGroupManager": ("config", "ids", "image", "classic", "now", "op"),
    "state.runtime.periodic_answers.PeriodicAnswers": ("runtime",),
}
# Classes of `state` stored the way pickle writes them; their shape is part of the schema id all the same.
NAMED_TUPLES = (Timer, TopicPartition, TopicId)
ENUMS = (GroupState, Phase, MemberState, ClientMemberState, GroupMembershipOperation, Step)


def _dataclass_fields(name: str) -> tuple[str, ...]:
    """A dataclass's stored attributes are its fields, in declaration order (listed as `()` above)."""
    module, _, cls = name.rpartition(".")
    return tuple(f.name for f in dataclasses.fields(getattr(__import__(module, fromlist=[cls]), cls)))


def _schema() -> dict[str, tuple]:
    fields = {name: listed or _dataclass_fields(name) for name, listed in STORED.items()}
    contract = {f"state.events.{cls.__name__}": tuple(f.name for f in dataclasses.fields(cls))
                for cls in vars(events_module).values()
                if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == "state.events"}
    shapes = {f"{cls.__module__}.{cls.__qualname__}": cls._fields for cls in NAMED_TUPLES}
    values = {f"{cls.__module__}.{cls.__qualname__}": tuple(m.value for m in cls) for cls in ENUMS}
    return {**fields, **contract, **shapes, **values}


SCHEMA = _schema()
SCHEMA_ID = hashlib.sha256(repr(sorted(SCHEMA.items())).encode()).hexdigest()[:12].encode()


class StateError(ValueError):
    """A stored state this release cannot read, or an object that does not fit the schema."""


def _restore(cls: type, values: tuple) -> Any:
    obj = cls.__new__(cls)
    try:
        names = _FIELDS[cls]
    except KeyError:
        names = _FIELDS[cls] = SCHEMA[f"{cls.__module__}.{cls.__qualname__}"]
    if hasattr(obj, "__dict__"):
        obj.__dict__.update(zip(names, values))
    else:
        for name, value in zip(names, values):
            object.__setattr__(obj, name, value)
    return obj


_FIELDS: dict[type, tuple[str, ...]] = {}


class StatePickler(ValuesPickler):
    """Writes the schema's classes as (class, stored values) and refuses objects that do not fit it."""

    _stored: dict[type, tuple[Callable[[Any], tuple], int, tuple[str, ...]] | None] = {}

    def reducer_override(self, obj):
        cls = type(obj)
        try:
            stored = self._stored[cls]
        except KeyError:
            stored = self._stored[cls] = _stored_form(cls)
        if stored is None:
            return super().reducer_override(obj)
        values, count, transient = stored
        attributes = getattr(obj, "__dict__", None)
        if attributes is not None and len(attributes) != count + len(transient):
            unlisted = sorted(set(attributes) - set(_FIELDS[cls]) - set(transient))
            raise StateError(f"{cls.__qualname__} has attributes the stored schema does not list: "
                             f"{', '.join(unlisted) or '(some listed ones are missing)'} (state/runtime/encoding.py)")
        return _restore, (cls, values(obj))


def _stored_form(cls: type):
    name = f"{cls.__module__}.{cls.__qualname__}"
    if name not in SCHEMA:
        if cls.__module__.startswith("state."):
            raise StateError(f"{name} is not in the stored schema (state/runtime/encoding.py)")
        return None
    if name not in STORED:
        return None  # the input contract, a named tuple or an enum: pickled by value
    names = SCHEMA[name]
    _FIELDS[cls] = names
    getter = attrgetter(*names) if len(names) > 1 else (lambda obj, get=attrgetter(names[0]): (get(obj),))
    return getter, len(names), TRANSIENT.get(name, ())


def dumps(state: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(STATE_FORMAT + SCHEMA_ID + b"\n")
    StatePickler(buffer, protocol=5).dump(state)
    return buffer.getvalue()


def loads(blob: bytes) -> Any:
    if not blob.startswith(STATE_FORMAT):
        raise StateError("not a coordsim group state")
    header_end = blob.index(b"\n", len(STATE_FORMAT))
    schema_id = blob[len(STATE_FORMAT):header_end]
    if schema_id != SCHEMA_ID:
        raise StateError(f"group state schema {schema_id.decode(errors='replace')} is not this release's "
                         f"({SCHEMA_ID.decode()}): resume the query with the release that wrote its checkpoint, "
                         f"or start it from a new checkpoint")
    return pickle.loads(blob[header_end + 1:])
