"""Synthetic consumers read their committed offsets with OffsetFetch, as ConsumerCoordinator's
refreshCommittedOffsetsIfNeeded does for partitions that have no position yet."""

from __future__ import annotations

import pytest

from tests.state.harness import GroupContext
from tests.state.clients.test_fleet import start

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def fetches(ctx: GroupContext) -> list[dict]:
    return [r for r in ctx.rows("responses") if r["api"] == "OffsetFetch"]


def fetched_partitions(response: dict) -> list[tuple[str, int]]:
    return sorted((r["topic"], r["partition"]) for r in response["results"])


def test_after_an_eager_rebalance_each_member_fetches_all_its_partitions_once():
    ctx = GroupContext()
    start(ctx, 3)
    ctx.sleep(20_000)
    by_client = {r["client_id"]: r for r in fetches(ctx)}
    assert sorted(by_client) == ["c0", "c1", "c2"] and len(fetches(ctx)) == 3
    for client in ctx.runtime.fleet.clients.values():
        response = by_client[client.client_id]
        assert response["error"] == "NONE"
        assert fetched_partitions(response) == sorted(tuple(tp) for tp in client.owned)
        assert not client.unpositioned
    # Nothing was committed yet: the broker answers offset -1 for every partition.
    assert {r["offset"] for resp in fetches(ctx) for r in resp["results"]} == {-1}


def test_partitions_are_neither_processed_nor_committed_before_their_offsets_arrive():
    ctx = GroupContext()
    start(ctx, 1, config={"coordsim.network.rtt.ms": 400})
    ctx.sleep(20_000)
    sync = next(r for r in ctx.rows("responses") if r["api"] == "SyncGroup" and r["error"] == "NONE")
    fetch = fetches(ctx)[0]
    # The fetch leaves when the SyncGroup answer arrives and is answered half a round trip later.
    assert fetch["request_ts"] == sync["response_ts"] + 400
    first_commit = min(r["commit_ts"] for r in ctx.rows("offsets"))
    assert first_commit > fetch["response_ts"]


def test_a_cooperative_member_fetches_only_the_partitions_it_did_not_own():
    ctx = GroupContext()
    config = {"partition.assignment.strategy": ["cooperative-sticky"]}
    start(ctx, 2, config=config)
    ctx.sleep(20_000)
    before = {c.client_id: set(c.owned) for c in ctx.runtime.fleet.clients.values()}
    seen = len(fetches(ctx))
    start(ctx, 1, config=config, prefix="new")
    ctx.sleep(30_000)
    later = fetches(ctx)[seen:]
    assert later and all(r["error"] == "NONE" for r in later)
    for r in later:
        if r["client_id"] in before:
            assert not set(fetched_partitions(r)) & before[r["client_id"]]
    newcomer = ctx.runtime.fleet.clients["new0"]
    assert newcomer.owned and set(fetched_partitions(next(r for r in later if r["client_id"] == "new0"))) \
        == {tuple(tp) for tp in newcomer.owned}


def test_a_new_owner_reads_from_the_committed_offset_it_fetched():
    ctx = GroupContext()
    config = {"coordsim.consume.records.per.second": 20, "auto.offset.reset": "earliest"}
    start(ctx, 2, config=config)
    ctx.sleep(30_000)
    ctx.send("CLIENT_STOP", client_id="c1")
    ctx.sleep(30_000)
    survivor = ctx.runtime.fleet.clients["c0"]
    last = fetches(ctx)[-1]
    assert last["client_id"] == "c0"
    committed = {(r["topic"], r["partition"]): r["offset"] for r in last["results"]}
    assert all(offset > 0 for offset in committed.values())  # c1 committed on close
    started = {tuple(tp): position for tp, (_, position) in survivor.started.items()}
    assert {tp: started[tp] for tp in committed} == committed


def test_a_fetch_refused_while_the_group_loads_is_retried():
    ctx = GroupContext()
    start(ctx, 1)
    ctx.sleep(2_900)  # inside the initial rebalance delay (3 s here)
    while not any(r["api"] == "SyncGroup" for r in ctx.rows("responses")):
        ctx.sleep(1)
    ctx.fault(fault="move", load_delay_ms=2_000)
    ctx.sleep(10_000)
    answers = [r["error"] for r in fetches(ctx)]
    assert answers[0] in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS") and answers[-1] == "NONE"
    client = ctx.runtime.fleet.clients["c0"]
    assert client.owned and not client.unpositioned
