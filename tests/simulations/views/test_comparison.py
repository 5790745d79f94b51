"""A sweep's comparison table from hand-written tables of two variants (1 s windows, final time 20 s): the
busiest broker-second over every API (FindCoordinator rows with a broker id included) over the run and during
the actions, the FindCoordinator lookups of every broker together, and what the coordinator moves cost."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from simulations.views.capacity import ACTIONS_FILE
from simulations.views.comparison import write_comparison
from tableio.parquet import PartFileWriter, to_arrow

CRASH, FENCED = "brokers=3", "brokers=6"


def load(variant, broker, window, name, value):
    return {"variant": variant, "broker_id": broker, "window_start_ts": window * 1000, "window_ms": 1000,
            "measure": "requests", "name": name, "value": value}


def state(variant, group, ts, from_state, to_state, cause, broker):
    return {"variant": variant, "group_id": group, "ts": ts, "group_type": "classic", "from_state": from_state,
            "to_state": to_state, "generation_id": 1, "leader_id": None, "member_count": 0, "cause": cause,
            "coordinator_partition": 0, "coordinator_id": broker, "out_seq": ts}


@pytest.fixture(scope="module")
def comparison(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    loads = [
        load(CRASH, 1, 9, "OffsetCommit", 250),                                         # the run's busiest
        load(CRASH, 2, 5, "Heartbeat", 10), load(CRASH, 2, 5, "FindCoordinator", 200),  # during the action
        load(CRASH, 3, 6, "FindCoordinator", 150), load(CRASH, None, 6, "FindCoordinator", 300),  # any broker
        load(FENCED, 1, 2, "Heartbeat", 40),
    ]
    states = [
        state(CRASH, "a", 0, None, "Empty", "group_created", 2),
        state(CRASH, "a", 5_000, "Empty", "Dead", "coordinator_unload", 2),
        state(CRASH, "a", 14_000, None, "Empty", "coordinator_load", 1),
        state(CRASH, "b", 0, None, "Empty", "group_created", 2),
        state(CRASH, "b", 5_000, "Empty", "Dead", "coordinator_unload", 2),  # never loaded again
        state(FENCED, "a", 0, None, "Empty", "group_created", 1),
    ]
    for table, rows in (("coordinator_load", loads), ("group_states", states), ("metrics", [])):
        with PartFileWriter(out, table, sweep=True) as writer:
            writer.write(to_arrow(table, rows, sweep=True))
    (out / "_run.json").write_text(json.dumps({"engine": "local", "final_ts": 20_000}))
    (out / "scenario").mkdir()
    (out / "scenario" / ACTIONS_FILE).write_text(json.dumps(
        {CRASH: [{"action": "timeline[0] (broker_down, line 9)", "start_ts": 5_000, "end_ts": 6_999}], FENCED: []}))
    sweep = SimpleNamespace(variants=[SimpleNamespace(name=name, values={"cluster.brokers": name[-1]})
                                      for name in (CRASH, FENCED)],
                            axes=[SimpleNamespace(name="cluster.brokers")], base=SimpleNamespace(until_ms=20_000))
    write_comparison(out, sweep)
    return {row["variant"]: row for row in pq.read_table(out / "comparison").to_pylist()}


def figures(row, *names):
    return tuple(row[name] for name in names)


def test_the_busiest_broker_second_over_the_run_and_during_the_actions(comparison):
    peak = ("peak_broker_id", "peak_broker_requests", "peak_window_start_ts")
    during = ("actions_peak_broker_id", "actions_peak_broker_requests", "actions_peak_window_start_ts")
    assert figures(comparison[CRASH], *peak) == (1, 250, 9_000)
    # Broker 2's second at the crash: its FindCoordinator requests count with its other APIs; the null broker's
    # (any broker) are no one broker's.
    assert figures(comparison[CRASH], *during) == (2, 210, 5_000)
    assert figures(comparison[FENCED], *peak) == (1, 40, 2_000)
    assert figures(comparison[FENCED], *during) == (None, None, None)  # no action


def test_the_lookups_of_every_broker_together(comparison):
    names = ("find_coordinator_requests", "find_coordinator_peak_requests")
    assert figures(comparison[CRASH], *names) == (650, 450)  # second 6: 150 at broker 3, 300 at any broker
    assert figures(comparison[FENCED], *names) == (0, 0)


def test_what_the_coordinator_moves_cost(comparison):
    names = ("coordinator_moves", "groups_without_coordinator", "without_coordinator_ms",
             "without_coordinator_ms_max")
    # a: 9 s until its load at broker 1; b: never loaded, 15 s until the run's end.
    assert figures(comparison[CRASH], *names) == (2, 2, 24_000, 15_000)
    assert figures(comparison[FENCED], *names) == (0, 0, 0, None)
