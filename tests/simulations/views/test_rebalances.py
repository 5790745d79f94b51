"""The run's rebalances read from its tables, one definition for both protocols: a classic group's entries
into PreparingRebalance, a consumer group's group epoch bumps (its `generations` rows while the group's
`group_states` rows say `group_type` consumer)."""

from __future__ import annotations

import pandas as pd

from simulations.views.rebalances import rebalance_starts


def frame(columns: str, rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns.split())


STATES = frame("group_id ts group_type to_state cause", [
    ("c", 0, "classic", "Empty", "group_created"), ("c", 10, "classic", "PreparingRebalance", "member_join"),
    ("c", 3010, "classic", "CompletingRebalance", "initial_rebalance_delay"),
    ("c", 3020, "classic", "Stable", "leader_sync_stored"),
    ("c", 9000, "classic", "PreparingRebalance", "member_leave"),
    # a consumer group's states are never PreparingRebalance
    ("k", 5, "consumer", "Empty", "group_created"), ("k", 5, "consumer", "Assigning", "member_join"),
    ("k", 6, "consumer", "Stable", "member_join"),
    # a classic group the consumer protocol replaced once it was Empty
    ("x", 1, "classic", "PreparingRebalance", "member_join"), ("x", 2, "classic", "Empty", "member_leave"),
    ("x", 50, "classic", "Dead", "group_converted"), ("x", 50, "consumer", "Empty", "group_created"),
    # a consumer group downgraded to a classic group, which rebalances at once
    ("d", 20, "consumer", "Empty", "group_created"), ("d", 20, "consumer", "Assigning", "member_join"),
    ("d", 70, "consumer", "Dead", "group_converted"), ("d", 70, "classic", "Stable", "group_converted"),
    ("d", 70, "classic", "PreparingRebalance", "group_converted")])
GENERATIONS = frame("group_id rebalance_start_ts cause", [
    ("c", 10, "member_join"), ("c", 9000, "member_leave"),
    ("k", 5, "member_join"), ("k", 7, "member_join"), ("k", 8, "member_leave"),  # 7: superseded at 8
    ("x", 1, "member_join"), ("x", 50, "member_join"),
    ("d", 20, "member_join"), ("d", 70, "group_converted")])  # 70: the classic group's generation


def test_a_classic_rebalance_is_an_entry_into_preparing_rebalance_and_a_consumer_ones_a_group_epoch():
    rows = rebalance_starts(STATES, GENERATIONS)
    assert list(rows.itertuples(index=False, name=None)) == [
        ("x", 1, "member_join", "classic"), ("k", 5, "member_join", "consumer"),
        ("k", 7, "member_join", "consumer"), ("k", 8, "member_leave", "consumer"),
        ("c", 10, "member_join", "classic"), ("d", 20, "member_join", "consumer"),
        ("x", 50, "member_join", "consumer"), ("d", 70, "group_converted", "classic"),
        ("c", 9000, "member_leave", "classic")]


def test_a_run_without_consumer_groups_counts_only_classic_rebalances():
    classic = ~STATES["group_id"].isin(["k", "d"]) & (STATES["group_type"] == "classic")
    rows = rebalance_starts(STATES[classic], GENERATIONS[GENERATIONS["group_id"].isin(["c"])])
    assert rows["protocol"].eq("classic").all() and len(rows) == 3
