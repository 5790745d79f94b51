"""The same run on either engine: the same run record but the engine's own fields, so `coordsim capacity`
reads the same figures from the same tables (a local run's record once had no final time: its windows ended
at the last event, one window short of the Spark run's)."""

from __future__ import annotations

import json

import pytest

from simulations.engines import run_local_to
from simulations.scenarios import generate, to_jsonl
from simulations.views.capacity import ACTIONS_FILE, capacity, render_json, render_text
from streaming.engine import run_spark
from tableio.coordinator_settings import load_config
from tableio.inputs import read_events
from tableio.run_record import RUN_FILE, input_names
from tests.simulations.scenarios.helpers import shipped_small
from tests.streaming.inputs import DELAY_MS

pytestmark = pytest.mark.spark

# What only one engine records.
SPARK_ONLY = {"batches", "late_rows", "late_rows_unknown_batches", "wall_s", "phases_s", "settings"}


def test_a_run_records_the_same_facts_and_reads_the_same_capacity_on_both_engines(spark, tmp_path):
    scenario = shipped_small("broker-failure", sets={"*": {"groups": 2, "members": 2}})
    generated = generate(scenario)
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(generated.rows), encoding="utf-8")
    config = load_config(scenario=scenario.broker)
    rows = read_events([events])
    run_local_to(tmp_path / "local", rows.events, config, generated.until_ms, rows.rejects,
                 inputs=input_names([events]))
    run_spark([str(events)], tmp_path / "spark", config, generated.until_ms,
              {"streaming.watermark.delay.ms": DELAY_MS}, progress=False)
    records = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        (out / "scenario").mkdir()
        (out / "scenario" / ACTIONS_FILE).write_text(json.dumps(generated.actions))
        records[engine] = {key: value for key, value in json.loads((out / RUN_FILE).read_text()).items()
                           if key not in SPARK_ONLY and key != "engine"}
    assert records["local"] == records["spark"]
    assert list(records["local"]) == list(records["spark"])
    assert records["local"]["final_ts"] == generated.until_ms
    local, on_spark = capacity(str(tmp_path / "local")), capacity(str(tmp_path / "spark"))
    assert render_text(local) == render_text(on_spark)
    assert render_json([local]) == render_json([on_spark]).replace(str(tmp_path / "spark"), str(tmp_path / "local"))
