"""`coordsim capacity` on a hand-written coordinator_load table of three brokers, ten 1 s windows, one action
in window 5: the figures per phase, the hottest broker and the skew, the three formats, and a user's
mistakes (one line, exit 2)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from simulations.cli import main
from simulations.views.capacity import ACTIONS_FILE, capacity
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
