"""Validation of consumer groups (KIP-848): the shipped consumer-protocol scenarios, shrunk, validate clean,
and each consumer-group rule of the invariants and suites catches rows Kafka cannot write."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from simulations.group_ranges import WHOLE
from simulations.validation import validate
from simulations.validation.consumer_groups import CURRENT, METADATA, split_protocols
from simulations.validation.invariants import Invariants
from simulations.validation.raw_tables import read_range, rows_frame
from simulations.validation.suites import Suites
from tableio.parquet import write_tables

from tests.state.consumer_group.test_migration import upgraded_fleet

from tableio.coordinator_load import coordinator_load_rows

from ..scenarios.helpers import run, shipped_small
from ..views.runs import replay

CG_SAMPLE = Path(__file__).resolve().parents[3] / "simulations" / "samples" / "consumer-group-heartbeats.jsonl"

GROW = "generations only grow within a life of a group"
CHAIN = "state transitions chain and are legal"
OWNER = "one owner per partition per generation"
STABLE = "Stable groups hold their stored assignment"
COMMITS = "accepted commits only from the current generation or standalone to an Empty group"


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """protocol-comparison (classic and consumer groups side by side) and rolling-restart-consumer-protocol,
    one group a set, as one run: every check is about one group at a time and their group ids differ, so
    one validation (seconds of great-expectations) checks both. Their `coordinator_load` is derived from
    the rows of both, as one run's would be."""
    tables: dict[str, list] = {}
    final = None
    for name in ("protocol-comparison", "rolling-restart-consumer-protocol"):
        result = run(shipped_small(name, sets={"*": {"groups": 1}})).result
        for table, rows in result.tables.items():
            tables.setdefault(table, []).extend(rows)
        final = max(final or 0, result.final_ts)
    tables["coordinator_load"] = coordinator_load_rows(tables, final)
    folder = tmp_path_factory.mktemp("both")
    write_tables(folder, tables)
    return folder


@pytest.fixture
def tables(both):
    """The tables, to corrupt."""
    return read_range(both, WHOLE)[0]


def failures(tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    invariants = Invariants()
    invariants.add(tables)
    return {c.name: c.detail for c in invariants.checks() if not c.passed}


def consumer(tables, table: str) -> pd.DataFrame:
    return split_protocols(tables)[1][table]


def set_value(tables, row: int, **changes) -> None:
    """Change fields of the JSON value of a `consumer_group_records` row."""
    records = tables["consumer_group_records"]
    records.at[row, "value"] = json.dumps(dict(json.loads(records.at[row, "value"]), **changes))


def test_the_consumer_protocol_scenarios_validate_clean(both):
    result = validate(both)
    assert result.success, result.summary()
    classic, consumer_rows = split_protocols(read_range(both, WHOLE)[0])
    assert set(consumer_rows["group_states"]["group_id"]) == {"consumer-0", "orders-0"}
    assert set(consumer_rows["group_states"]["to_state"]) >= {"Assigning", "Reconciling", "Stable"}
    assert classic["consumer_group_records"].empty and not consumer_rows["offsets"].empty
    assert set(classic["group_states"]["group_id"]) == {"classic-0"}


def test_a_consumer_group_moved_twice_validates_clean():
    """Unloaded and loaded (coordinator-move on the consumer protocol): loaded at the epoch of its last
    ConsumerGroupMetadata record, in the state its records derive, its members added before the load's row."""
    scenario = shipped_small("coordinator-move", sets={"*": {"groups": 1, "config": {"group.protocol": "consumer"}}})
    tables = {name: rows_frame(name, rows) for name, rows in run(scenario).result.tables.items()}
    assert (tables["group_states"]["cause"] == "coordinator_load").sum() == 2
    assert failures(tables) == {}


def test_a_group_upgraded_then_downgraded_validates_clean(tmp_path):
    """A classic fleet converted to a consumer group by a client using the consumer protocol, and back to a
    classic group when that client stops (its leave): `coordsim validate`'s checks pass, each life read as the
    protocol its `group_states` rows' group_type says."""
    ctx = upgraded_fleet()
    ctx.send("CLIENT_STOP", client_id="c3")
    ctx.sleep(60_000)
    ctx.finish()
    write_tables(tmp_path, {**ctx.tables, "coordinator_load": coordinator_load_rows(ctx.tables, ctx.time)})
    result = validate(tmp_path)
    assert result.success, result.summary()
    classic, consumer_rows = split_protocols(read_range(tmp_path, WHOLE)[0])
    assert consumer_rows["group_states"][["to_state", "cause"]].iloc[-1].tolist() == ["Dead", "group_converted"]
    assert consumer_rows["consumer_group_records"]["tombstone"].iloc[-1]
    assert classic["group_states"]["cause"].tolist()[-4:] == [
        "group_converted", "group_converted", "all_members_joined", "leader_sync_stored"]
    assert classic["group_metadata"]["generation_id"].tolist()[-2:] == [3, 4]  # the downgrade's, then the rebalance's


def test_a_group_epoch_going_back_fails(tables):
    epochs = consumer(tables, "consumer_group_records")
    epochs = epochs[epochs["record_type"] == METADATA]
    set_value(tables, epochs.index[1], epoch=1)
    assert failures(tables) == {GROW: f"1 generations out of order in their life, e.g. {epochs['group_id'].iloc[1]} "
                                      f"persisted generation 1 after {json.loads(epochs['value'].iloc[0])['epoch']}"}


def test_a_consumer_group_created_at_epoch_0_fails(tables):
    states = consumer(tables, "group_states")
    tables["group_states"].at[states[states["cause"] == "group_created"].index[0], "generation_id"] = 0
    assert "created at generation 0, not 1" in failures(tables)[GROW]


@pytest.mark.parametrize("before, after, detail", [
    ("Assigning", "CompletingRebalance", "Assigning -> CompletingRebalance is not a legal move"),
    (None, "Stable", "came into existence Stable (group_created)"),
])
def test_a_transition_the_consumer_group_state_machine_cannot_make_fails(tables, before, after, detail):
    states = consumer(tables, "group_states")
    row = states[states["from_state"].isna() if before is None else states["from_state"] == before].index[0]
    tables["group_states"].at[row, "to_state"] = after
    tables["group_states"].at[states.index[states.index.get_loc(row) + 1], "from_state"] = after  # still chains
    assert detail in failures(tables)[CHAIN]


def test_a_partition_given_while_another_member_holds_it_fails(tables):
    records = consumer(tables, "consumer_group_records")
    current = records[(records["record_type"] == CURRENT) & ~records["tombstone"].astype(bool)]
    held = current[current["value"].map(lambda v: bool(json.loads(v)["assigned_partitions"]))]
    first = json.loads(held["value"].iloc[0])
    intruder = current[(current["group_id"] == held["group_id"].iloc[0])
                       & (current["member_id"] != held["member_id"].iloc[0])
                       & (current["out_seq"] > held["out_seq"].iloc[0])].index[0]
    set_value(tables, intruder, assigned_partitions=first["assigned_partitions"])
    assert "while " + held["member_id"].iloc[0] + " holds it" in failures(tables)[OWNER]


def test_a_stable_group_whose_member_is_not_at_the_target_fails(tables):
    states = consumer(tables, "group_states")
    stable = states[(states["to_state"] == "Stable") & (states["from_state"] == "Reconciling")].iloc[0]
    records = consumer(tables, "consumer_group_records")
    last = records[(records["group_id"] == stable["group_id"]) & (records["out_seq"] < stable["out_seq"])
                   & (records["record_type"] == CURRENT)].index[-1]
    set_value(tables, last, partitions_pending_revocation={"AAAAAAAAAAAAAAAAAAAAAg": {"0": 1}})
    found = failures(tables)
    assert f"{stable['group_id']} Stable at group epoch {stable['generation_id']} at {stable['ts']} with member " \
           f"{tables['consumer_group_records'].at[last, 'member_id']}" in found[STABLE]


def test_an_accepted_commit_with_a_stale_member_epoch_fails(tables):
    commits = consumer(tables, "offsets")
    # The first commits of a group are its first member's, at the epoch it got its partitions with.
    row = commits.index[0]
    for epoch, why in [(int(commits.at[row, "generation_id"]) + 1, "STALE_MEMBER_EPOCH"),
                       (int(commits.at[row, "generation_id"]) - 1, "holding the partition since epoch")]:
        tables["offsets"].at[row, "generation_id"] = epoch
        found = failures(tables)
        assert list(found) == [COMMITS] and why in found[COMMITS] and f"at member epoch {epoch}:" in found[COMMITS]
    tables["offsets"].at[row, "generation_id"] = -1
    assert "committed at member epoch -1: the group has" in failures(tables)[COMMITS]


def test_join_complete_ts_is_null_only_for_a_consumer_group_epoch_never_computed(tables):
    generations = tables["generations"]
    skipped = generations["join_complete_ts"].isna()
    assert skipped.any() and generations.loc[skipped, ["leader_id", "protocol_name", "stable_ts"]].isna().all().all()
    classic = generations["leader_id"].notna()
    # A classic generation without one, and a consumer group epoch Stable without one.
    generations.loc[[classic.idxmax(), (~classic & ~skipped).idxmax()], "join_complete_ts"] = pd.NA
    suites = Suites()
    suites.add({"generations": generations})
    assert {c.name for c in suites.checks() if not c.passed} == {
        "generations.join_complete_ts: expect_column_values_to_not_be_null",
        "generations.stable_ts: expect_column_values_to_be_null"}


def test_a_consumer_group_subscribing_with_a_pattern_holds_the_invariants():
    """Members subscribing with a broker-side pattern through a rolling restart: the regex's resolution
    appends (ConsumerGroupRegularExpression records, their epoch bumps) keep every invariant."""
    scenario = shipped_small("rolling-restart-consumer-protocol", sets={"*": {"groups": 1, "topic_pattern": ".*"}})
    result = run(scenario).result
    tables = {name: rows_frame(name, rows) for name, rows in result.tables.items()}
    records = tables["consumer_group_records"]
    assert (records["record_type"] == "ConsumerGroupRegularExpression").any()
    assert not consumer(tables, "assignments").empty
    assert failures(tables) == {}


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """The bundled consumer-group sample replayed: its static member leaves with epoch -2 (answered -2)."""
    return replay(CG_SAMPLE, tmp_path_factory.mktemp("consumer-group-sample") / "run")


def test_the_bundled_consumer_group_sample_validates_clean(sample_run):
    result = validate(sample_run, events=[CG_SAMPLE])
    assert result.success, result.summary()
    responses = read_range(sample_run, WHOLE)[0]["responses"]
    static_leave = responses[responses["generation_id"] == -2]
    assert static_leave[["api", "group_instance_id", "error"]].values.tolist() == [
        ["ConsumerGroupHeartbeat", "orders-3", "NONE"]]


def test_member_epoch_minus_2_is_refused_where_kafka_never_answers_it(sample_run):
    """-2 answers only a static member's leave heartbeat (GroupMetadataManager.consumerGroupStaticMemberGroupLeave):
    not a dynamic member's leave, not a commit; and nothing below -2 answers even that."""
    responses = read_range(sample_run, WHOLE)[0]["responses"]
    dynamic_leave = responses[(responses["generation_id"] == -1) & (responses["api"] == "ConsumerGroupHeartbeat")]
    commit = responses[responses["api"] == "OffsetCommit"]
    static_leave = responses[responses["generation_id"] == -2]
    responses.loc[[dynamic_leave.index[0], commit.index[0]], "generation_id"] = -2
    responses.loc[static_leave.index, "generation_id"] = -3
    suites = Suites()
    suites.add({"responses": responses})
    assert [(c.name, c.detail.split(" fail")[0]) for c in suites.checks() if not c.passed] == [
        ("responses.generation_id: expect_column_values_to_be_between",
         "2 of 16 rows where api != ConsumerGroupHeartbeat or group_instance_id is null or error != NONE"),
        ("responses.generation_id: expect_column_values_to_be_between",
         "1 of 7 rows where api == ConsumerGroupHeartbeat and group_instance_id is not null and error == NONE"),
    ]
