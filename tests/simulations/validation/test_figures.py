"""`validate` on the figures a run derives (`metrics`, `coordinator_load`, `lag_status`) and on facts across
tables and groups (a leader is a member, every partition has an owner, a broker hosts only groups whose
partition it leads): a broker failure's tables, tampered with one figure at a time, fail the one check that
names it."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from simulations.group_ranges import WHOLE
from simulations.reports import commands
from simulations.validation.invariants import Invariants
from simulations.validation.raw_tables import read_range
from tableio.parquet import PART_FILE, write_tables

from ..scenarios.helpers import run, shipped_small

# Four groups on a 3-broker cluster with two __consumer_offsets partitions: two groups share each partition,
# and broker 1, which leads partition 1, fails at 1m.
CLUSTER = {"brokers": 3, "offsets.topic.num.partitions": 2, "offsets.topic.replication.factor": 2}


@pytest.fixture(scope="module")
def failure(tmp_path_factory):
    scenario = shipped_small("broker-failure", sets={"*": {"groups": 4, "members": 3}}, timeline=[{"broker": 1}],
                             cluster=CLUSTER, duration="4m")
    folder = tmp_path_factory.mktemp("failure")
    write_tables(folder, run(scenario).result.tables)
    return folder


@pytest.fixture
def tables(failure):
    return read_range(failure, WHOLE)[0]


def failures(tables) -> dict[str, str]:
    invariants = Invariants()
    invariants.add(tables)
    return {c.name: c.detail for c in invariants.checks() if not c.passed}


def row_of(frame, **where) -> int:
    matches = frame.index[(frame[list(where)] == list(where.values())).all(axis=1)]
    return matches[0]


def test_the_broker_failure_passes_every_invariant(tables):
    assert failures(tables) == {}
    states = tables["group_states"]
    loads = states[states["cause"] == "coordinator_load"]
    # The two groups of broker 1's partition, loaded by the other replica after the fencing.
    assert len(loads) == 2 and loads["coordinator_partition"].nunique() == 1 and set(loads["coordinator_id"]) != {1}


def test_a_group_loaded_by_another_broker_than_its_partitions_leader_fails(tables):
    states = tables["group_states"]
    loads = states[states["cause"] == "coordinator_load"].sort_values("group_id")
    first, second = loads.index[:2]
    states.at[second, "coordinator_id"] = 3
    detail = failures(tables)["a broker hosts only groups whose partition it leads"]
    assert detail == (f"1 groups hosted by a broker not leading their partition, e.g. "
                      f"__consumer_offsets-{states.at[first, 'coordinator_partition']} at {states.at[first, 'ts']}: "
                      f"{states.at[second, 'group_id']} hosted by broker 3 while {states.at[first, 'group_id']} is "
                      f"hosted by broker {states.at[first, 'coordinator_id']}")


def test_a_state_row_written_by_another_broker_than_the_groups_host_fails(tables):
    states = tables["group_states"]
    stable = row_of(states, to_state="Stable", cause="leader_sync_stored")
    host = states.at[stable, "coordinator_id"]
    states.at[stable, "coordinator_id"] = 1 if host != 1 else 2
    detail = failures(tables)["a broker hosts only groups whose partition it leads"]
    assert detail.startswith("1 groups hosted by a broker not leading their partition, e.g. "
                             f"{states.at[stable, 'group_id']} at {states.at[stable, 'ts']}: "
                             f"CompletingRebalance -> Stable at broker {states.at[stable, 'coordinator_id']}, "
                             f"hosted by broker {host}")


def test_a_coordinator_load_figure_that_the_rows_do_not_add_up_to_fails(tables):
    load = tables["coordinator_load"]
    heartbeats = row_of(load, measure="requests", name="Heartbeat")
    load.at[heartbeats, "value"] += 1
    responses = tables["responses"]
    # The heartbeats a broker answered: those sent to broker 1 while it was down reached none.
    answered = (responses["api"] == "Heartbeat") & (responses["error"] != "NETWORK_EXCEPTION")
    counted = int(responses.loc[answered, "repeat_count"].sum())
    assert failures(tables)["coordinator_load counts the rows it summarizes"] == (
        f"1 figures whose total disagrees with the rows, e.g. requests Heartbeat: {counted + 1} in "
        f"coordinator_load, {counted} in the rows")


@pytest.mark.parametrize("column, value, detail", [
    ("rebalances", 2, "metrics.rebalances 2, its causes add up to 1"),
    ("generations", 3, "metrics.generations 3, 1 generations rows"),
    ("rebalance_causes", [{"cause": "session_timeout", "count": 1}],
     "metrics.rebalance_causes session_timeout 1, group_states to PreparingRebalance member_join 1"),
    ("rebalance_ms_max", 5, "metrics.rebalance_ms_max 5, its rebalance distribution gives None"),
    ("rebalances_after_formation", 2, "metrics.rebalances_after_formation 2, of 1 rebalances"),
    ("rebalance_durations", [{"ms": 5, "count": 1}],
     "metrics.rebalance_durations 5 1, its last 0 rebalances give none"),
    ("unconsumed_partition_ms", 1000, "metrics.unconsumed_partition_ms 1000 in 0 gaps, its gap distribution "
                                      "gives 0 in 0"),
    ("end_members", 1, "metrics.end_members 1, its last members row counts 3"),
    ("end_state", "Empty", "metrics.end_state Empty, its last group_states row leaves it Stable"),
    ("duplicate_records", None, "client-side figures partly null: duplicate_records"),
])
def test_a_metrics_figure_its_rows_do_not_give_fails(tables, column, value, detail):
    metrics = tables["metrics"]
    metrics.at[0, column] = value
    group = metrics.at[0, "group_id"]
    assert failures(tables)["metrics agree with the rows they summarize"] == (
        f"1 groups whose figures disagree with their rows, e.g. {group} {detail}")


def test_failed_commits_other_than_the_failed_commit_requests_of_the_responses_fail(tables):
    metrics, responses = tables["metrics"], tables["responses"]
    group = metrics.at[0, "group_id"]
    failed = responses[(responses["group_id"] == group) & (responses["api"] == "OffsetCommit")
                       & (responses["error"] != "NONE")]
    assert metrics.at[0, "failed_commits"] == failed["repeat_count"].sum() > 0  # those sent to broker 1 among them
    metrics.at[0, "failed_commits"] = len(failed) + 1
    assert failures(tables)["metrics agree with the rows they summarize"] == (
        f"1 groups whose figures disagree with their rows, e.g. {group} metrics.failed_commits {len(failed) + 1}, "
        f"its responses hold {len(failed)} failed commit requests")


def test_a_leader_that_is_not_a_member_fails(tables):
    generations = tables["generations"]
    generations.at[0, "leader_id"] = "intruder"
    assert failures(tables)["a generation's leader is one of its members"] == (
        f"1 generations whose leader is not a member, e.g. {generations.at[0, 'group_id']} generations row of "
        f"generation 1: leader intruder is not one of its 3 members")


def test_a_partition_without_an_owner_fails(tables):
    assignments = tables["assignments"]
    dropped = row_of(assignments, partition=4)
    group, topic = assignments.at[dropped, "group_id"], assignments.at[dropped, "topic"]
    tables["assignments"] = assignments.drop(index=dropped)
    assert failures(tables)["every partition of a generation has an owner"] == (
        f"1 partitions without an owner, e.g. {group} generation 1 {topic}: partition 4 without an owner")


def test_a_group_lag_status_its_partitions_do_not_give_fails(tables):
    lag = tables["lag_status"]
    group = lag.at[0, "group_id"]
    lag.loc[lag["group_id"] == group, "group_status"] = "ERR"
    assert failures(tables)["a group's lag status is its partitions'"] == (
        f"1 groups whose lag status or maxlag disagrees with their partitions, e.g. {group} group status ERR, "
        f"its partitions give OK")


def test_a_second_maxlag_partition_fails(tables):
    lag = tables["lag_status"]
    group = lag.at[0, "group_id"]
    lag.loc[lag["group_id"] == group, "maxlag"] = True
    assert failures(tables)["a group's lag status is its partitions'"].startswith(
        f"1 groups whose lag status or maxlag disagrees with their partitions, e.g. {group} maxlag on ")


def test_tampered_figures_fail_validate_one_line_each(failure, tmp_path):
    folder = tmp_path / "tampered"
    shutil.copytree(failure, folder)

    def rewrite(table, column, change):
        path = folder / table / PART_FILE
        data = pq.read_table(path)
        index = data.schema.get_field_index(column)
        pq.write_table(data.set_column(index, column, change(data[column])), path)

    rewrite("metrics", "skipped_records", lambda c: pa.array([-5] + c.to_pylist()[1:], c.type))
    rewrite("coordinator_load", "window_ms", lambda c: pc.add(c, pa.scalar(1, c.type)))
    result = CliRunner().invoke(commands.validate, [str(folder)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    load_rows = pq.read_metadata(failure / "coordinator_load" / PART_FILE).num_rows
    assert lines[1].startswith("  FAIL tables: ") and lines[4:] == ["  ok   invariants: 13 of 13 passed"], result.output
    assert lines[2:4] == [
        "       metrics.skipped_records: expect_column_values_to_be_between: 1 of 4 rows fail, e.g. -5 "
        "(min_value=0.0)",
        f"       coordinator_load.window_ms: expect_column_values_to_be_in_set: {load_rows} of {load_rows} rows "
        "fail, e.g. 1001 (value_set=[1000, 10000, 60000, 600000, 3600000, 86400000])"], result.output
