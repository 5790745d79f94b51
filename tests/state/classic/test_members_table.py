"""The `members` table: one row each time a member enters or leaves the coordinator's member map, with its
cause and the count after the change, so a group's membership is known at any time (PreparingRebalance
included, which no other table lists)."""

from __future__ import annotations

import pytest

from tests.state.runtime.test_faults import fail_next_write, move
from tests.state.classic.test_static_membership import FOLLOWER, SUPERSET

# Every classic group and offsets manager these cases build runs on both cores (tests/native/classic/shadow.py).
pytestmark = pytest.mark.usefixtures("core")


def changes(ctx, since: int = 0) -> list[tuple[str, str, str, int]]:
    return [(r["change"], r["member_id"], r["cause"], r["member_count"]) for r in ctx.rows("members")[since:]]


def test_a_member_joining_and_one_leaving_during_preparing_rebalance_have_rows(ctx):
    a, b = ctx.stable_group(2)
    assert changes(ctx) == [("added", a, "member_join", 1), ("added", b, "member_join", 2)]
    joined = ctx.join_new_dynamic()
    assert changes(ctx, 2) == []  # a member id handed out with MEMBER_ID_REQUIRED is only pending
    ctx.join(member_id=joined)
    ctx.leave(b)
    assert ctx.state == "PreparingRebalance"  # a has not rejoined yet
    assert changes(ctx, 2) == [("added", joined, "member_join", 3), ("removed", b, "member_leave", 2)]
    added, removed = ctx.rows("members")[2:]
    assert (added["ts"], removed["ts"]) == (ctx.time, ctx.time)
    assert added["generation_id"] == removed["generation_id"] == 1
    assert added["client_id"] == "client" and added["group_instance_id"] is None
    preparing = ctx.rows("group_states")[-1]
    assert (preparing["to_state"], preparing["member_count"]) == ("PreparingRebalance", 3)
    assert preparing["out_seq"] > added["out_seq"]  # the member is in before the rebalance it starts


def test_members_that_do_not_rejoin_are_removed_when_the_rebalance_times_out(ctx):
    a, b = ctx.stable_group(2, rebalance_ms=10_000, session_ms=60_000)
    ctx.join(member_id=a)
    ctx.sleep(ctx.timer_deadline("join") - ctx.time)
    assert changes(ctx, 2) == [("removed", b, "rebalance_timeout", 1)]
    completing = ctx.rows("group_states")[-1]
    assert (completing["to_state"], completing["member_count"]) == ("CompletingRebalance", 1)


def test_a_session_expiry_removes_the_member_when_its_session_ends(ctx):
    a, b = ctx.stable_group(2, session_ms=10_000)
    deadline = ctx.heartbeat_deadline(b)
    while ctx.time + 3_000 < deadline:
        ctx.sleep(3_000)
        ctx.heartbeat(a, 1)
    ctx.sleep(deadline - ctx.time)
    assert changes(ctx, 2) == [("removed", b, "session_timeout", 1)]
    assert ctx.rows("members")[-1]["ts"] == deadline


def test_a_restarted_static_member_replaces_its_old_member_id(ctx):
    result = ctx.static_members_join_and_rebalance()
    assert changes(ctx) == [("added", result.leader_id, "member_join", 1),
                            ("added", result.follower_id, "member_join", 2)]
    join = ctx.join(instance_id=FOLLOWER, names=SUPERSET)
    assert join.error == "NONE" and ctx.state == "Stable"
    assert changes(ctx, 2) == [("removed", result.follower_id, "static_member_replacement", 1),
                               ("added", join.member_id, "static_member_replacement", 2)]
    assert {r["group_instance_id"] for r in ctx.rows("members")[2:]} == {FOLLOWER}


def test_a_static_replacement_whose_record_fails_to_store_is_reverted(ctx):
    old = ctx.join_and_complete(instance_id="group-instance-id", rebalance_ms=4000, session_ms=3000)
    ctx.sync(old.member_id, 1)
    fail_next_write(ctx)
    ctx.join(instance_id="group-instance-id", rebalance_ms=4000, session_ms=3000)
    [new_id] = {r["member_id"] for r in ctx.rows("members")} - {old.member_id}
    assert changes(ctx, 1) == [("removed", old.member_id, "static_member_replacement", 0),
                               ("added", new_id, "static_member_replacement", 1),
                               ("removed", new_id, "static_member_replacement_failed", 0),
                               ("added", old.member_id, "static_member_replacement_failed", 1)]


def test_a_coordinator_move_takes_the_members_away_and_the_load_brings_them_back(ctx):
    a, b = ctx.stable_group(2)
    order = ctx.member_ids
    record_order = [m["member_id"] for m in ctx.rows("group_metadata")[-1]["members"]]
    move(ctx, load_delay_ms=100)
    assert changes(ctx, 2) == [("removed", order[0], "coordinator_unload", 1),
                               ("removed", order[1], "coordinator_unload", 0)]
    dead = ctx.rows("group_states")[-1]
    assert dead["to_state"] == "Dead" and dead["out_seq"] < ctx.rows("members")[2]["out_seq"]
    ctx.sleep(100)
    assert changes(ctx, 4) == [("added", record_order[0], "coordinator_load", 1),
                               ("added", record_order[1], "coordinator_load", 2)]
    loaded = ctx.rows("group_states")[-1]
    assert (loaded["cause"], loaded["member_count"]) == ("coordinator_load", 2)
    assert loaded["out_seq"] > ctx.rows("members")[-1]["out_seq"]
