"""The two implementations of each ported function, called alike: the Python reference (state/) and the
native engine (coordsim_native, docs/native.md).

The native functions are wrapped to look exactly like the reference's: partitions come back as
TopicPartition, topic ids as TopicId, and the native exceptions become the reference's exception types with
the native message, so a test written against the reference runs unchanged on either core (`use`).

Where coordsim_native is not importable (no Rust toolchain at setup) the native cases skip, saying why,
except under CI (the `CI` environment variable set), where CI has a Rust toolchain and a missing native
module is a failure.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType, SimpleNamespace
from typing import Callable, Iterable

import pytest

from state import assignors as python_assignors
from state.classic import consumer_protocol as python_consumer_protocol
from state.assignors import AssignorError, TopicPartition
from state.consumer_group import range as python_server_range, uniform as python_uniform
from state.consumer_group.group_spec import PartitionAssignorError
from state.consumer_group.topic_id import TopicId

try:
    import coordsim_native.assignors as _native_assignors
    import coordsim_native.consumer_protocol as _native_consumer_protocol
    import coordsim_native.java_compat as _native_java_compat
    import coordsim_native.record_bytes as _native_record_bytes
except ImportError as error:  # no Rust toolchain at setup, or the crate failed to build
    _native_assignors = _native_consumer_protocol = _native_java_compat = _native_record_bytes = None
    MISSING = f"coordsim_native is not importable ({error}); `bash scripts/setup` builds it where cargo is on the PATH"
else:
    MISSING = ""

CORES = ("python", "native")

# The record_bytes and consumer_protocol functions the native engine has, under the reference's names.
RECORD_BYTES = ("key_bytes", "value_bytes", "record_bytes", "record_size", "batch_size", "varint", "varlong")
CONSUMER_PROTOCOL = ("decode_version", "decode_subscription", "decode_assignment", "decode_sticky_user_data",
                     "decode_cooperative_user_data", "encode_subscription", "encode_assignment",
                     "encode_sticky_user_data", "encode_cooperative_user_data")


def require_native() -> None:
    """Skip the calling test when the native engine is not built; fail instead under CI."""
    if MISSING:
        if os.environ.get("CI"):
            pytest.fail(f"CI has a Rust toolchain, so the native engine must be built: {MISSING}")
        pytest.skip(MISSING)


def _native_classic_assign(protocol_name, members, partitions_per_topic):
    try:
        result = _native_assignors.assign(protocol_name, members, partitions_per_topic)
    except _native_assignors.AssignorError as error:
        raise AssignorError(str(error)) from None
    return {member_id: [TopicPartition(*tp) for tp in partitions] for member_id, partitions in result.items()}


def _native_server_assign(name: str) -> Callable:
    def assign(group, partition_counts, kafka_4_0=False):
        try:
            result = _native_assignors.assign_server(name, group, partition_counts, kafka_4_0)
        except _native_assignors.PartitionAssignorError as error:
            raise PartitionAssignorError(str(error)) from None
        return {member_id: {TopicId(*topic_id): partitions for topic_id, partitions in topics.items()}
                for member_id, topics in result.items()}

    return assign


def _native_classic_errors(function: Callable) -> Callable:
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except _native_assignors.AssignorError as error:
            raise AssignorError(str(error)) from None
        except _native_consumer_protocol.ConsumerProtocolError as error:
            raise python_consumer_protocol.ConsumerProtocolError(str(error)) from None

    return call


def client_side(core: str) -> ModuleType | SimpleNamespace:
    """state.assignors' client side (supported_protocols, client_user_data, client_subscription) on `core`.
    The native engine makes the JoinGroup metadata; the leader's decoding of it is the reference's."""
    if core == "python":
        return python_assignors
    require_native()

    def client_subscription(protocol_name, member_id, topics, *, previous_assignment=None, generation=-1,
                            group_instance_id=None, rack=None, rebalance_protocol=None):
        metadata = _native_classic_errors(_native_assignors.client_metadata)(
            protocol_name, tuple(topics), previous_assignment, generation, rack,
            None if rebalance_protocol is None else int(rebalance_protocol))
        return python_assignors.MemberSubscription.from_metadata(member_id, metadata, group_instance_id)

    def supported_protocols(protocol_name):
        protocols = _native_classic_errors(_native_assignors.supported_protocols)(protocol_name)
        return tuple(python_assignors.RebalanceProtocol(p) for p in protocols)

    return SimpleNamespace(supported_protocols=supported_protocols, client_subscription=client_subscription,
                           client_user_data=_native_classic_errors(_native_assignors.client_user_data))


def classic_assign(core: str) -> Callable:
    """state.assignors.assign on `core`."""
    if core == "python":
        return python_assignors.assign
    require_native()
    return _native_classic_assign


def server_assignor(core: str, name: str) -> SimpleNamespace:
    """The server-side assignor module `name` ("uniform", "range") on `core`, as a namespace with `assign`."""
    if core == "python":
        return SimpleNamespace(assign={"uniform": python_uniform, "range": python_server_range}[name].assign)
    require_native()
    return SimpleNamespace(assign=_native_server_assign(name))


def record_bytes(core: str) -> ModuleType | SimpleNamespace:
    """state.records.record_bytes's functions on `core`."""
    if core == "python":
        from state.records import record_bytes as python_record_bytes

        return python_record_bytes
    require_native()
    return SimpleNamespace(**{name: getattr(_native_record_bytes, name) for name in RECORD_BYTES})


def regex(core: str) -> ModuleType | SimpleNamespace:
    """state.consumer_group.regex's compile_regex and resolve_regular_expressions on `core`: the native pattern
    answers `fullmatch` (the name, or None), the native refusal is the reference's InvalidRegularExpression."""
    from state.consumer_group import regex as python_regex
    from state.consumer_group.records import ResolvedRegularExpression

    if core == "python":
        return python_regex
    native = native_module("consumer_group")

    class Pattern:
        def __init__(self, regex: str) -> None:
            self.regex = regex

        def fullmatch(self, name: str) -> str | None:
            return name if native.regex_fullmatch(self.regex, [name])[0] else None

    def compile_regex(regex: str) -> Pattern:
        try:
            native.regex_fullmatch(regex, [])
        except native.InvalidRegularExpression as error:
            raise python_regex.InvalidRegularExpression(str(error)) from None
        return Pattern(regex)

    def resolve_regular_expressions(regexes, topic_names, version: int, now: int) -> dict:
        resolved = native.resolve_regular_expressions(list(regexes), list(topic_names), version, now)
        return {r: ResolvedRegularExpression(tuple(topics), v, ts) for r, (topics, v, ts) in resolved}

    return SimpleNamespace(compile_regex=compile_regex, resolve_regular_expressions=resolve_regular_expressions)


def native_module(name: str) -> ModuleType:
    """coordsim_native.NAME, or skip as `require_native` (and where the installed build predates NAME)."""
    require_native()
    try:
        return importlib.import_module(f"coordsim_native.{name}")
    except ImportError as error:
        stale = f"the installed coordsim_native has no {name} ({error}): rebuild it with `pip install ./native`"
        if os.environ.get("CI"):
            pytest.fail(stale)
        pytest.skip(stale)


def native_java_compat() -> ModuleType:
    """coordsim_native.java_compat (its functions take plain values; tests/native/test_java_compat.py)."""
    require_native()
    return _native_java_compat


def consumer_protocol(core: str) -> ModuleType | SimpleNamespace:
    """state.classic.consumer_protocol's codecs on `core`: the native decoders' tuples become the reference's
    Subscription, Assignment and StickyUserData, the native ConsumerProtocolError the reference's."""
    if core == "python":
        return python_consumer_protocol
    require_native()
    native = _native_consumer_protocol
    shapes = {"decode_subscription": python_consumer_protocol.Subscription,
              "decode_assignment": python_consumer_protocol.Assignment,
              "decode_sticky_user_data": lambda partitions, generation: python_consumer_protocol.StickyUserData(
                  tuple(TopicPartition(*tp) for tp in partitions), generation)}

    def wrapped(name: str) -> Callable:
        function, shape = getattr(native, name), shapes.get(name)

        def call(*args, **kwargs):
            try:
                result = function(*args, **kwargs)
            except native.ConsumerProtocolError as error:
                raise python_consumer_protocol.ConsumerProtocolError(str(error)) from None
            return result if shape is None else shape(*result)

        return call

    return SimpleNamespace(**{name: wrapped(name) for name in CONSUMER_PROTOCOL})


def use(core: str, modules: Iterable[ModuleType], monkeypatch) -> None:
    """Make each module call `core`'s implementation through the names it imported the reference's by:
    `assign` and the registry's client side (the classic assignors), `uniform` and `range_assignor` (the
    server-side ones), state.records.record_bytes's and state.classic.consumer_protocol's functions, and
    state.consumer_group.regex's compile_regex and resolve_regular_expressions. On the
    native core, every classic group and offsets manager is shadowed by the native one
    (tests/native/classic/shadow.py), and every consumer group by the native group
    (tests/native/consumer_group/shadow.py)."""
    if core == "python":
        return
    from tests.native.classic import shadow
    from tests.native.consumer_group import shadow as consumer_group_shadow

    shadow.shadow(monkeypatch, native_module("classic"), native_module("offsets"))
    consumer_group_shadow.shadow(monkeypatch, native_module("consumer_group"))
    native = {"assign": classic_assign(core), "uniform": server_assignor(core, "uniform"),
              "range_assignor": server_assignor(core, "range")}
    native.update(vars(record_bytes(core)))
    native.update(vars(consumer_protocol(core)))
    native.update(vars(regex(core)))
    native.update({name: getattr(client_side(core), name)
                   for name in ("supported_protocols", "client_user_data", "client_subscription")})
    for module in modules:
        for name, function in native.items():
            if hasattr(module, name):
                monkeypatch.setattr(module, name, function)
