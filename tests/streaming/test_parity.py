"""The Spark engine writes the local engine's tables, byte for byte, whatever the micro-batching, shuffle
partitions, keying or arrival order within the allowed lateness."""

from __future__ import annotations

import contextlib
import json
import os

import pyarrow.parquet as pq
import pytest

from simulations.scenarios import generate, parse_scenario, to_jsonl
from state.config import CoordinatorConfig
from state.tables import GROUP_TABLES
from streaming.engine import run_spark
from tests.streaming import histories
from tableio.parquet import PART_FILE
from tests.streaming.conftest import REPO, assert_same_counts, assert_same_tables, local_run
from tests.streaming.inputs import DELAY_MS, write_layouts
from tests.simulations.scenarios.helpers import small_broker_failure

pytestmark = pytest.mark.spark

CONFIG = CoordinatorConfig()
UNTIL = histories.START_MS + 12_000  # mid-history; the sample trace lies entirely after it
PER_FILE = {"streaming.files.per.trigger": 1}

# One micro-batch per input file is the rule except in "all-at-once"; the default 2 partitions are covered
# by the other test modules. Each Spark run costs 15-25 s, so independent factors share runs: every factor
# (partitions, keying, arrival order, until, paths) is varied, not every combination.
VARIANTS = {
    "all-at-once-relative-paths": ("ordered", {}, None),
    "partitions-1-until": ("ordered", dict(PER_FILE, **{"spark.sql.shuffle.partitions": 1}), UNTIL),
    "partitions-4-shuffled": ("shuffled", dict(PER_FILE, **{"spark.sql.shuffle.partitions": 4}), None),
    "buckets-8": ("ordered", dict(PER_FILE, **{"streaming.state.buckets": 8}), None),
    "until-buckets-8": ("ordered", dict(PER_FILE, **{"streaming.state.buckets": 8}), UNTIL),
}


@pytest.fixture(scope="module")
def inputs_root(tmp_path_factory):
    return tmp_path_factory.mktemp("inputs")


@pytest.fixture(scope="module")
def layouts(inputs_root):
    return write_layouts(inputs_root)


def given(paths: list[str], relative: bool, root) -> list[str]:
    """The EVENTS arguments: absolute, or relative to `root` (the working folder of such a run)."""
    return [os.path.relpath(p, root) for p in paths] if relative else paths


@pytest.fixture(scope="module")
def oracle(layouts, inputs_root, tmp_path_factory):
    """The local engine's tables for (layout, until, relative paths), computed once."""
    cache = {}

    def tables(layout: str, until: int | None, relative: bool = False):
        key = layout, until, relative
        if key not in cache:
            out = tmp_path_factory.mktemp(f"local-{layout}")
            with contextlib.chdir(inputs_root):
                cache[key] = local_run(given(layouts[layout], relative, inputs_root), out, CONFIG, until)
        return cache[key]

    return tables


def test_shuffled_layout_is_the_same_history(oracle):
    # Rows carry explicit seqs: reordering them within the lateness changes nothing for the local engine
    # (rejects name their file, which differs), so the shuffled Spark run below compares arrival orders.
    assert_same_tables(oracle("ordered", None)[0], oracle("shuffled", None)[0], GROUP_TABLES)


@pytest.mark.parametrize("variant", VARIANTS)
def test_spark_tables_equal_local_tables(spark, layouts, inputs_root, oracle, tmp_path, variant):
    layout, settings, until = VARIANTS[variant]
    settings = dict(settings, **{"streaming.watermark.delay.ms": DELAY_MS})
    # Rejects name their file as given: a relative path must stay relative, as with the local engine.
    relative = variant.endswith("relative-paths")
    with contextlib.chdir(inputs_root):
        paths = given(layouts[layout], relative, inputs_root)
        result = run_spark(paths, tmp_path / "out", CONFIG, until, settings, progress=False)
    expected_dir, expected = oracle(layout, until, relative)
    assert_same_tables(expected_dir, tmp_path / "out")
    assert_same_counts(result, expected)
    assert result.late_rows == 0
    assert result.late_rows_unknown_batches == []
    if settings.get("streaming.files.per.trigger") == 1:
        assert result.batches > 5  # one per file, plus the drain


CONSUMER_GROUP_SAMPLE = REPO / "simulations" / "samples" / "consumer-group-heartbeats.jsonl"
# Read after the sample, as the next micro-batch: rows the contract rejects, then the members' next heartbeats,
# which the Spark engine answers from the consumer group it stored between the two batches.
CONSUMER_GROUP_FOLLOW_UP = [
    {"ts": 1772442034000, "group_id": "orders-cg", "type": "CONSUMER_GROUP_HEARTBEAT", "member_id": "x"},
    {"ts": 1772442034000, "group_id": "orders-cg", "type": "CONSUMER_GROUP_HEARTBEAT", "member_id": "x",
     "member_epoch": 0, "api_version": 2},
    {"ts": 1772442034000, "group_id": "orders-cg", "type": "TOPIC_METADATA",
     "topics": [{"topic": "orders", "partitions": 6, "topic_id": "not-a-uuid"}]},
    {"ts": 1772442037000, "group_id": "orders-cg", "type": "CONSUMER_GROUP_HEARTBEAT", "request_id": "b-next",
     "member_id": "Rr0bP2hXS1Gq5c8Wm7Lx4A", "member_epoch": 5,
     "topic_partitions": [{"topic": "orders", "partitions": [2, 3, 4, 5]}]},
    {"ts": 1772442038000, "group_id": "orders-cg", "type": "CONSUMER_GROUP_HEARTBEAT", "request_id": "c-next",
     "member_id": "Tz7Qm1Lp8Ra2Wc4Xk6Nd0g", "member_epoch": 5, "instance_id": "orders-3",
     "topic_partitions": [{"topic": "orders", "partitions": [0, 1]}, {"topic": "payments", "partitions": [0, 1]}]},
]


def test_consumer_group_heartbeats_on_spark_equal_local(spark, tmp_path):
    follow_up = tmp_path / "follow-up.jsonl"
    follow_up.write_text("".join(json.dumps(row) + "\n" for row in CONSUMER_GROUP_FOLLOW_UP))
    paths = [str(CONSUMER_GROUP_SAMPLE), str(follow_up)]
    expected_dir, expected = local_run(paths, tmp_path / "local", CONFIG)
    assert len(pq.read_table(expected_dir / "rejects" / PART_FILE)) == 3
    assert len(pq.read_table(expected_dir / "consumer_group_records" / PART_FILE)) > 0
    settings = dict(PER_FILE, **{"streaming.watermark.delay.ms": DELAY_MS})
    result = run_spark(paths, tmp_path / "spark", CONFIG, None, settings, progress=False)
    assert_same_tables(expected_dir, tmp_path / "spark")
    assert_same_counts(result, expected)


# An online upgrade: a classic group whose members a rolling restart brings back with group.protocol=consumer.
# The first one's heartbeat converts the group (group_converted); the classic members go on inside the
# consumer group until their own restart. Spark's state holds a classic group, then a consumer group, for
# the same key: two 30 s slices, the first ending with the group converted and a classic member still in it.
UPGRADE = """
name: upgrade
start: 2026-06-01T00:00:00Z
duration: 60s
seed: 2
group_sets:
  - name: up
    members: 3
    topics:
      - {name: orders, partitions: 6, records_per_second: 10}
    assignors: [cooperative-sticky]
timeline:
  - at: 15s
    action: rolling_restart
    downtime: 5s
    gap: 5s
    config: {group.protocol: consumer, partition.assignment.strategy: null}
"""


def local_scenario(scenario, tmp_path):
    """The scenario's events written to `tmp_path`, and the local engine's run of them: (its generated
    events, their file, the run's tables' folder, its result)."""
    generated = generate(scenario)
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(generated.rows), encoding="utf-8")
    return generated, events, *local_run([str(events)], tmp_path / "local", CONFIG, generated.until_ms)


def test_an_online_upgrade_on_spark_equals_local(spark, tmp_path):
    generated, events, expected_dir, expected = local_scenario(parse_scenario(UPGRADE), tmp_path)
    states = pq.read_table(expected_dir / "group_states" / PART_FILE).to_pylist()
    converted = [row["ts"] for row in states if row["cause"] == "group_converted"]
    second_slice = generated.start_ms + 30_000
    assert len(converted) == 2 and max(converted) < second_slice  # the classic group to Dead, the consumer one
    responses = pq.read_table(expected_dir / "responses" / PART_FILE).to_pylist()  # a classic member in it
    assert any(row["api"] == "SyncGroup" and row["request_ts"] >= second_slice for row in responses)
    result = run_spark([str(events)], tmp_path / "spark", CONFIG, generated.until_ms,
                       {"streaming.watermark.delay.ms": DELAY_MS}, progress=False, slice_ms=30_000)
    assert_same_tables(expected_dir, tmp_path / "spark")
    assert_same_counts(result, expected)


# The shipped broker failure, small: broker 3 of 3 fails at 12 s and is fenced 9 s later, while its groups'
# clients go round the lookup loop (their lookups at brokers 1 and 2, their heartbeats and commits failed
# connections to broker 3), in closed form across micro-batches of 8 s, the loops' state stored between them.
def test_a_broker_failure_on_spark_equals_local(spark, tmp_path):
    generated, events, expected_dir, expected = local_scenario(small_broker_failure(), tmp_path)
    responses = pq.read_table(expected_dir / "responses" / PART_FILE).to_pylist()
    assert {row["api"] for row in responses if row["error"] == "NETWORK_EXCEPTION"} == {"Heartbeat", "OffsetCommit"}
    assert {row["node_id"] for row in responses if row["api"] == "FindCoordinator"} == {1, 2}
    result = run_spark([str(events)], tmp_path / "spark", CONFIG, generated.until_ms,
                       {"streaming.watermark.delay.ms": DELAY_MS}, progress=False, slice_ms=8_000)
    assert_same_tables(expected_dir, tmp_path / "spark")
    assert_same_counts(result, expected)
