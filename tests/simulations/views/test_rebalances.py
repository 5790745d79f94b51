"""The run's rebalances read from its tables, one definition for both protocols: a classic group's entries
into PreparingRebalance, a consumer group's group epoch bumps (its `generations` rows)."""

from __future__ import annotations

import pandas as pd

from simulations.views.rebalances import rebalance_starts


def frame(columns: str, rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns.split())


STATES = frame("group_id ts to_state cause", [
    ("c", 0, "Empty", "group_created"), ("c", 10, "PreparingRebalance", "member_join"),
    ("c", 3010, "CompletingRebalance", "initial_rebalance_delay"), ("c", 3020, "Stable", "leader_sync_stored"),
    ("c", 9000, "PreparingRebalance", "member_leave"),
    # a consumer group's states are never PreparingRebalance
    ("k", 5, "Empty", "group_created"), ("k", 5, "Assigning", "member_join"), ("k", 6, "Stable", "member_join"),
    # a classic group the consumer protocol replaced once it was Empty
    ("x", 1, "PreparingRebalance", "member_join"), ("x", 2, "Empty", "member_leave"),
    ("x", 50, "Dead", "group_converted")])
GENERATIONS = frame("group_id rebalance_start_ts cause", [
    ("c", 10, "member_join"), ("c", 9000, "member_leave"),
    ("k", 5, "member_join"), ("k", 7, "member_join"), ("k", 8, "member_leave"),  # 7: superseded at 8
    ("x", 1, "member_join"), ("x", 50, "member_join")])
RECORDS = frame("group_id write_ts", [("k", 5), ("k", 7), ("k", 8), ("x", 50)])


def test_a_classic_rebalance_is_an_entry_into_preparing_rebalance_and_a_consumer_ones_a_group_epoch():
    rows = rebalance_starts(STATES, GENERATIONS, RECORDS)
    assert list(rows.itertuples(index=False, name=None)) == [
        ("x", 1, "member_join", "classic"), ("k", 5, "member_join", "consumer"),
        ("k", 7, "member_join", "consumer"), ("k", 8, "member_leave", "consumer"),
        ("c", 10, "member_join", "classic"), ("x", 50, "member_join", "consumer"),
        ("c", 9000, "member_leave", "classic")]


def test_a_run_without_consumer_groups_counts_only_classic_rebalances():
    rows = rebalance_starts(STATES, GENERATIONS, RECORDS.iloc[0:0])
    assert rows["protocol"].eq("classic").all() and len(rows) == 3
