"""`coordsim capacity` on a hand-written coordinator_load table of three brokers, ten 1 s windows, one action
in window 5: the figures per phase, the hottest broker and the skew, the three formats, and a user's
mistakes (one line, exit 2)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.views.capacity import ACTIONS_FILE, BROKERS_FILE, capacity, render_text
from tableio.parquet import PartFileWriter, to_arrow, write_tables


def row(broker, window, measure, name, value):
    return {"broker_id": broker, "window_start_ts": window * 1000, "window_ms": 1000, "measure": measure,
            "name": name, "value": value}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = write_tables(tmp_path_factory.mktemp("capacity") / "run", {})
    (out / "_run.json").write_text(json.dumps({"engine": "local", "final_ts": 9_999}))
    rows = [row(1, w, "requests", "Heartbeat", 10) for w in range(10)]
    rows += [row(2, w, "requests", "Heartbeat", 25 if w == 5 else 5) for w in range(10)]
    rows += [row(3, 5, "requests", "JoinGroup", 1), row(1, 2, "bytes", "OffsetCommit", 1180),
             row(1, 2, "records", "OffsetCommit", 10), row(1, 0, "groups", "hosted", 4)]
    with PartFileWriter(out, "coordinator_load") as writer:
        writer.write(to_arrow("coordinator_load", rows))
    (out / "scenario").mkdir()
    (out / "scenario" / ACTIONS_FILE).write_text(json.dumps(
        [{"action": "timeline[0] (crash, line 9)", "start_ts": 5_000, "end_ts": 5_999}]))
    return str(out)


def figures(result, broker):
    return {(f.phase, f.measure, f.name): (round(f.mean, 3), f.p99, f.max) for f in result.figures
            if f.broker_id == broker}


def test_figures_per_phase(run_dir):
    result = capacity(run_dir)
    assert result.seconds == {"steady": 9.0, "actions": 1.0} and result.brokers == [1, 2, 3]
    assert figures(result, 2)[("steady", "requests", "Heartbeat")] == (5.0, 5.0, 5.0)
    assert figures(result, 2)[("actions", "requests", "Heartbeat")] == (25.0, 25.0, 25.0)
    assert figures(result, 3)[("steady", "requests", "JoinGroup")] == (0.0, 0.0, 0.0)
    # Nine steady windows: the nearest-rank 99th percentile is the ninth, the busiest.
    assert figures(result, 1)[("steady", "bytes", "OffsetCommit")] == (round(1180 / 9, 3), 1180.0, 1180.0)
    assert figures(result, 1)[("steady", "records", "all")] == (round(10 / 9, 3), 10.0, 10.0)
    assert not any(f.measure == "groups" for f in result.figures)
    # Requests over the whole run: 10, 7 and 0.1 per second.
    assert (result.hottest, result.hottest_rate) == (1, 10.0)
    assert result.skew == pytest.approx(10 / (17.1 / 3))


def test_a_longer_window_is_computed_again(run_dir):
    assert capacity(run_dir, 2000).window_ms == 2000


def invoke(*args):
    return CliRunner().invoke(main, ["capacity", *args])


def test_text_fits_80_columns(run_dir):
    result = invoke(run_dir)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80
    assert "hottest broker 1: 10.0 requests/s, skew 1.75 (max / mean of 3)" in lines
    assert "  timeline[0] (crash, line 9): 1970-01-01 00:00:05 to 1970-01-01 00:00:05" in lines
    assert invoke(run_dir, "--broker", "2").output.count("\nbroker ") == 1


def test_csv_and_json(run_dir):
    csv_lines = invoke(run_dir, "--format", "csv", "--broker", "2").output.splitlines()
    assert csv_lines[0] == "broker_id,phase,measure,name,mean_per_s,p99_per_s,max_per_s"
    assert "2,actions,requests,Heartbeat,25.000,25.000,25.000" in csv_lines
    document = json.loads(invoke(run_dir, "--format", "json").output)
    assert document["hottest"]["broker_id"] == 1 and document["window_ms"] == 1000


@pytest.mark.parametrize("args, message", [
    (["--broker", "7"], "--broker 7: not in this run (brokers: 1, 2, 3)"),
    (["--window", "0"], "--window: must be > 0"),
    (["--window", "soon"], "--window: must be a duration"),
])
def test_user_mistakes_are_one_line(run_dir, args, message):
    result = invoke(run_dir, *args)
    assert result.exit_code == 2 and message in result.output and len(result.output.splitlines()) == 1


def test_no_such_run(tmp_path):
    result = invoke(str(tmp_path / "nothing"))
    assert result.exit_code == 2 and "no such run folder" in result.output


def test_windows_before_every_group_first_became_stable_are_forming_not_steady(run_dir, tmp_path):
    formed = tmp_path / "run"
    shutil.copytree(run_dir, formed)
    states = [{"group_id": g, "ts": ts, "group_type": "classic", "from_state": None, "to_state": "Stable",
               "generation_id": 1, "leader_id": None, "member_count": 1, "cause": "initial_rebalance_delay",
               "coordinator_partition": 0, "coordinator_id": 1, "out_seq": 0}
              for g, ts in (("a", 1_500), ("b", 2_500))]
    with PartFileWriter(formed, "group_states") as writer:
        writer.write(to_arrow("group_states", states))
    result = capacity(str(formed))
    # Windows 0, 1 and 2 start before group b's first Stable at 2.5 s: forming, neither steady nor actions.
    assert result.seconds == {"steady": 6.0, "actions": 1.0} and (result.forming_s, result.formed_ts) == (3.0, 2_500)
    assert figures(result, 1)[("steady", "bytes", "OffsetCommit")] == (0.0, 0.0, 0.0)


def _cluster_run(out, load_rows, states, brokers):
    """A run folder of a cluster run: its coordinator_load and group_states rows and its recorded brokers."""
    write_tables(out, {"group_states": states})
    (out / "_run.json").write_text(json.dumps({"engine": "local", "final_ts": 9_999}))
    with PartFileWriter(out, "coordinator_load") as writer:
        writer.write(to_arrow("coordinator_load", load_rows))
    (out / "scenario").mkdir()
    (out / "scenario" / BROKERS_FILE).write_text(json.dumps(brokers))
    return str(out)


def state(group, ts, from_state, to_state, cause, broker):
    return {"group_id": group, "ts": ts, "group_type": "classic", "from_state": from_state, "to_state": to_state,
            "generation_id": 1, "leader_id": None, "member_count": 0, "cause": cause, "coordinator_partition": 0,
            "coordinator_id": broker, "out_seq": ts}


def test_a_brokers_steady_state_leaves_out_the_time_it_coordinates_no_group(tmp_path):
    """Broker 2 coordinates group b until it crashes at 3 s; b is loaded at broker 1 at 3.5 s and broker 2
    leads nothing after: its steady mean is over the 3 s it led, not the 10 s of the run."""
    states = [state("a", 0, None, "Empty", "group_created", 1), state("b", 0, None, "Empty", "group_created", 2),
              state("b", 3_000, "Empty", "Dead", "coordinator_unload", 2),
              state("b", 3_500, None, "Empty", "coordinator_load", 1)]
    rows = [row(1, w, "requests", "Heartbeat", 10) for w in range(10)]
    rows += [row(2, w, "requests", "Heartbeat", 6) for w in range(3)]
    result = capacity(_cluster_run(tmp_path / "run", rows, states, [1, 2]))
    assert figures(result, 2)[("steady", "requests", "Heartbeat")] == (6.0, 6.0, 6.0)
    assert result.seconds["steady"] == 10.0 and result.steady_by_broker == {1: 10.0, 2: 3.0}
    assert result.moves == {"coordinator_moves": 1, "groups_without_coordinator": 1,
                            "without_coordinator_ms": 500, "without_coordinator_ms_max": 500}
    lines = render_text(result)
    assert "  steady: the 3 s it coordinates groups (not the 7 s it coordinates none)" in lines
    assert lines[-2:] == ["coordinator moves: 1, of 1 groups",
                          "  without a coordinator: up to 0.50 s, 0.5 group-s in all"]


def test_the_skew_counts_every_broker_of_the_cluster_those_that_lead_nothing_too(tmp_path):
    """Four brokers, broker 1 leading every partition: broker 1 takes everything, skew 4 (docs/capacity.md)."""
    states = [state("a", 0, None, "Empty", "group_created", 1)]
    rows = [row(1, w, "requests", "Heartbeat", 10) for w in range(10)]
    result = capacity(_cluster_run(tmp_path / "run", rows, states, [1, 2, 3, 4]))
    assert (result.hottest, result.skew, result.brokers) == (1, 4.0, [1, 2, 3, 4])
    lines = render_text(result)
    assert "hottest broker 1: 10.0 requests/s, skew 4.00 (max / mean of 4)" in lines
    # The others coordinate no group: no steady state, and the run has no action.
    assert "brokers 2, 3, 4: no steady state (coordinating no group) and no action: no figures" in lines
    assert capacity(str(tmp_path / "run"), broker=3).figures == []
    assert "coordinator moves: none" in lines
