"""Shared fixtures for the coordinator protocol tests.

`ctx` is a one-group context configured like Kafka's GroupMetadataManagerTestContext (initial rebalance
delay 3000 ms, session timeouts accepted from 10 ms to 10 minutes) so ported Kafka cases keep their
numbers. The Java helpers below are an *independent* re-implementation of String.hashCode and HashMap
iteration order (they deliberately do not import state.java_compat), used to predict the leader and vote
outcomes Kafka pins by HashMap order. `core` runs a module's tests on both cores, Python and native.
"""

from __future__ import annotations

import pytest

from tests.native import cores
from tests.state.assignors import helpers as assignor_helpers
from tests.state.harness import GroupContext

KAFKA_TEST_CONFIG = dict(group_min_session_timeout_ms=10, group_max_session_timeout_ms=600_000,
                         group_initial_rebalance_delay_ms=3_000)


def make_ctx(group_id: str = "group-id", **config) -> GroupContext:
    return GroupContext(group_id=group_id, **{**KAFKA_TEST_CONFIG, **config})


@pytest.fixture
def ctx() -> GroupContext:
    return make_ctx()


@pytest.fixture(params=cores.CORES)
def core(request, monkeypatch) -> str:
    """Runs a test once on the Python reference and once on the native engine (docs/native.md): a module
    opts in with `pytestmark = pytest.mark.usefixtures("core")`, and the ported functions it (and the
    assignor tests' helpers) call stand for that core's (tests/native/cores.py)."""
    cores.use(request.param, [request.module, assignor_helpers], monkeypatch)
    return request.param


# -- independent Java semantics ---------------------------------------------------------------------------

def java_hash(s: str) -> int:
    """java.lang.String#hashCode as a signed int."""
    h = 0
    units = s.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "little")) % 2**32
    return h - 2**32 if h >= 2**31 else h


def java_hashmap_order(keys_in_insertion_order, capacity: int = 16) -> list[str]:
    """Iteration order of a java.util.HashMap filled in this order (no treeified buckets)."""
    def bucket(k):
        h = java_hash(k) % 2**32
        return (h ^ (h >> 16)) & (capacity - 1)
    indexed = list(enumerate(keys_in_insertion_order))
    return [k for _, k in sorted(indexed, key=lambda ik: (bucket(ik[1]), ik[0]))]


def response_errors(ctx: GroupContext, api: str) -> list[str]:
    return [r["error"] for r in ctx.responses(api)]
