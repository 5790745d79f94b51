"""A sweep on the Spark engine: its tables (variant column, per-variant settings, keys apart) byte for byte
those of the local engine's sweep, sliced as `coordsim sweep` runs it by default. Its group sets are classic
and consumer-protocol (KIP-848) synthetic clients, whose memberships the Spark engine stores between slices."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from simulations.engines.local import run_local_to
from simulations.scenarios import generate, load_sweep, to_jsonl
from tableio.coordinator_settings import load_config
from tableio.inputs import read_events
from tableio.parquet import PART_FILE

from .conftest import assert_same_counts, assert_same_tables

SCENARIO = """\
duration: 90s
seed: 2
cluster:
  brokers: 3
  offsets.topic.num.partitions: 6
  offsets.topic.replication.factor: 2
group_sets:
  - name: svc
    groups: 2
    members: 2
    topics: [{name: orders, partitions: 4, records_per_second: 20}]
  - name: cg
    groups: 1
    members: 2
    topics: [{name: payments, partitions: 4, records_per_second: 20}]
    config: {group.protocol: consumer, group.remote.assignor: range}
timeline:
  - {at: 20s, action: crash, members: 1, restart_after: 15s}
sweep:
  broker.group.initial.rebalance.delay.ms: [0, 3000]
  cluster.brokers: [2, 3]
"""


@pytest.mark.spark
def test_a_sliced_spark_sweep_writes_the_local_sweeps_tables(spark, tmp_path):
    from streaming.engine import run_spark

    path = tmp_path / "small.yaml"
    path.write_text(SCENARIO)
    sweep = load_sweep(path)
    configs = {variant.name: load_config(scenario=variant.scenario.broker) for variant in sweep.variants}
    rows = [dict(row, variant=variant.name) for variant in sweep.variants for row in generate(variant.scenario).rows]
    events = tmp_path / "events.jsonl"
    # A row of no variant of the sweep is a reject, whose variant is null.
    stray = json.dumps({**rows[0], "variant": "brokers=9"})
    events.write_text(to_jsonl(rows) + stray + "\n", encoding="utf-8")
    until = sweep.base.until_ms
    result = run_spark([str(events)], tmp_path / "spark", configs[sweep.variants[0].name], until,
                       {"streaming.watermark.delay.ms": 1000}, progress=False, slice_ms=30_000, variants=configs)
    inputs = read_events([events], configs)
    expected = run_local_to(tmp_path / "local", inputs.events, configs[sweep.variants[0].name], until,
                            inputs.rejects, variants=configs)
    assert_same_tables(tmp_path / "local", tmp_path / "spark")
    assert_same_counts(result, expected)
    assert result.groups == 12  # three groups in each of four variants
    # The consumer-protocol groups went through the crash and the restart (an epoch each: two joins, the
    # restarted member's join, the crashed one's removal), across slices.
    heartbeats = [r for r in pq.read_table(tmp_path / "local" / "responses" / PART_FILE).to_pylist()
                  if r["api"] == "ConsumerGroupHeartbeat"]
    assert len({r["generation_id"] for r in heartbeats}) >= 4
