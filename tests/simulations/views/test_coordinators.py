"""Which broker coordinates which group when, and what a coordinator move costs, from hand-written
group_states rows: a group created at broker 2, crashed away at 5 s and loaded at broker 1 at 14 s; another
created at broker 2 and never loaded again; a third at broker 1 throughout."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulations.views.coordinators import coordinating, coordinator_moves, move_figures, windows_touched

END = 20_000


def state(group, ts, from_state, to_state, cause, broker):
    return {"group_id": group, "ts": ts, "from_state": from_state, "to_state": to_state, "cause": cause,
            "coordinator_id": broker}


STATES = pd.DataFrame([
    state("a", 0, None, "Empty", "group_created", 2),
    state("a", 100, "Empty", "Stable", "leader_sync_stored", 2),
    state("a", 5_000, "Stable", "Dead", "coordinator_unload", 2),
    state("a", 14_000, None, "Stable", "coordinator_load", 1),
    state("b", 200, None, "Empty", "group_created", 2),
    state("b", 5_000, "Empty", "Dead", "coordinator_unload", 2),
    state("c", 300, None, "Empty", "group_created", 1),
]).astype({"coordinator_id": "Int32"})


def test_a_broker_coordinates_from_a_groups_creation_or_load_until_its_unload():
    assert coordinating(STATES, END) == {1: [(300, END + 1)], 2: [(0, 5_000)]}  # still there at the end


def test_a_run_without_broker_ids_names_no_broker():
    assert coordinating(STATES.assign(coordinator_id=pd.array([None] * len(STATES), dtype="Int32")), END) == {}


def test_the_windows_an_interval_touches():
    # [0, 5000) touches windows 0-4 of 1 s, not window 5, which starts at its end; an instant touches its own.
    assert windows_touched([(0, 5_000)], 0, 1000, 8).tolist() == [True] * 5 + [False] * 3
    assert np.flatnonzero(windows_touched([(2_500, 2_500), (6_000, 9_000)], 0, 1000, 8)).tolist() == [2, 6, 7]


def test_a_group_is_without_a_coordinator_from_its_unload_to_its_next_load_or_the_run_end():
    moves = coordinator_moves(STATES, END)
    assert moves[["group_id", "ts", "from_broker", "to_broker", "loaded_ts", "without_coordinator_ms"]
                 ].astype(object).where(moves.notna(), None).values.tolist() == [
        ["a", 5_000, 2, 1, 14_000, 9_000], ["b", 5_000, 2, None, None, 15_000]]
    assert move_figures(moves) == {"coordinator_moves": 2, "groups_without_coordinator": 2,
                                   "without_coordinator_ms": 24_000, "without_coordinator_ms_max": 15_000}


def test_no_move_costs_nothing():
    figures = move_figures(coordinator_moves(STATES[STATES["cause"] == "group_created"], END))
    assert figures == {"coordinator_moves": 0, "groups_without_coordinator": 0, "without_coordinator_ms": 0,
                       "without_coordinator_ms_max": None}
