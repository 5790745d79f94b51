"""Who owns each partition over time (simulations.views.ownership): from a Stable generation's start until the
group leaves Stable, through the coordinator reloads that give the group back at the same generation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simulations.views import load_run
from simulations.views.ownership import Holding, holdings
from simulations.views.run_tables import RunTables

from .runs import scenario_run


def _owners(run: RunTables, group: str, generation: int) -> dict:
    rows = run.group("assignments", group)
    rows = rows[rows["generation_id"] == generation]
    return {(t, int(p)): m for t, p, m in zip(rows["topic"], rows["partition"], rows["member_id"])}


def test_a_broker_failure_and_the_leader_s_return_leave_the_owners_in_place(failed_broker_run):
    run = load_run(failed_broker_run)
    # Unloaded at 3m (broker 3 fails), loaded Stable at generation 1 at 3m8.966s, unloaded and loaded again at
    # 8m8.965s (the preferred leader's return): one assignment, from the group's first Stable to the end of the run.
    [stable] = run.group("generations", "payments-17")["stable_ts"]
    assert holdings(run, "payments-17", run.end_ts) == [
        Holding(int(stable), run.end_ts, 1, _owners(run, "payments-17", 1))]


def test_a_move_while_stable_keeps_the_assignment_and_one_mid_rebalance_gives_it_back_at_the_load(moved_run):
    run = load_run(moved_run)
    held = [(h.since - run.start_ts, h.until - run.start_ts, h.generation_id) for h in
            holdings(run, "orders-0", run.end_ts)]
    # Stable at generation 1 from 6.004 s through the move at 2m (unloaded at 119.966 s, loaded at 124.966 s) to
    # the restart's first rebalance; generation 2 until a member joins (249.969 s), then the move mid-rebalance:
    # unloaded at 250.966 s, loaded Stable at generation 2 at 252.966 s, until the member joins again.
    assert held[:4] == [(6_004, 239_969, 1), (240_305, 249_969, 2), (252_966, 253_771, 2), (255_605, 269_969, 3)]


def test_a_consumer_group_s_assignment_outlives_a_move_too(tmp_path):
    run = load_run(scenario_run("coordinator-move", tmp_path / "run", groups=1, members=3,
                                config={"group.protocol": "consumer"}))
    first = holdings(run, "orders-0", run.end_ts)[1]
    # Reconciled to epoch 4 at 10.111 s, moved at 2m (Stable -> Dead -> loaded Stable at epoch 4 5 s later),
    # held until a member leaves in the rolling restart.
    assert (first.since - run.start_ts, first.until - run.start_ts, first.generation_id) == (10_111, 239_969, 4)
    assert len(set(first.owners.values())) == 3 and len(first.owners) == 12


def _run(states: list[tuple], assignments: list[tuple]) -> RunTables:
    """A run of group g from (ts, to_state, generation, cause) rows and (generation, member, partition, ts) rows,
    numbered (out_seq) in time order, a write's assignments before the state row it causes."""
    order = sorted([(row[0], 1, i) for i, row in enumerate(states)]
                   + [(row[3], 0, i) for i, row in enumerate(assignments)])
    seq = {(kind, i): n for n, (_, kind, i) in enumerate(order)}
    state_rows = pd.DataFrame(states, columns=["ts", "to_state", "generation_id", "cause"]).assign(
        group_id="g", out_seq=[seq[1, i] for i in range(len(states))])
    assignment_rows = pd.DataFrame(assignments, columns=["generation_id", "member_id", "partition", "assign_ts"])
    assignment_rows = assignment_rows.assign(group_id="g", topic="t", group_instance_id=None,
                                             out_seq=[seq[0, i] for i in range(len(assignments))])
    return RunTables(Path("."), {"group_states": state_rows, "assignments": assignment_rows}, live=False)


def test_an_outage_that_does_not_give_the_generation_back_ends_the_assignment_at_the_unload():
    stable = [(0, "Stable", 1, "leader_sync_stored")]
    assignment = [(1, "a", 0, 0)]
    cases = {
        "loaded Empty": [(10, "Dead", 1, "coordinator_unload"), (20, "Empty", 1, "coordinator_load")],
        "not loaded by the end": [(10, "Dead", 1, "coordinator_unload")],
        "a Dead group": [(10, "Dead", 1, "group_expired")],
    }
    for case, rows in cases.items():
        assert holdings(_run(stable + rows, assignment), "g", 50) == [Holding(0, 10, 1, {("t", 0): "a"})], case
    reloaded = _run(stable + [(10, "Dead", 1, "coordinator_unload"), (20, "Stable", 1, "coordinator_load")],
                    assignment)
    assert holdings(reloaded, "g", 50) == [Holding(0, 50, 1, {("t", 0): "a"})]


def test_a_group_created_again_owns_only_its_own_generation_s_partitions():
    # Deleted and created again, the group numbers generation 1 again: only the new life's rows are its own.
    run = _run([(0, "Stable", 1, "leader_sync_stored"), (10, "Dead", 1, "group_expired"),
                (20, "Empty", 0, "group_created"), (30, "Stable", 1, "leader_sync_stored")],
               [(1, "a", 0, 0), (1, "a", 1, 0), (1, "b", 0, 30)])
    assert holdings(run, "g", 50)[-1] == Holding(30, 50, 1, {("t", 0): "b"})
