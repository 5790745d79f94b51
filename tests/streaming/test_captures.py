"""Import -> replay -> report on each committed capture, on the Spark engine (the default of `coordsim replay`)
and on the local engine: the same tables and the same divergence report, byte for byte."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from simulations.capture.compare import DIVERGENCES_TABLE, compare_captured, write_divergences
from simulations.capture.importer import import_capture, write_import
from tableio.captured_answers import attach_captured, captured_answers
from simulations.cli import main
from simulations.engines.local import run_local
from tableio.inputs import read_events
from tableio.parquet import write_tables
from state.tables import TABLES
from streaming.engine import run_spark
from tests.simulations.capture.conftest import (CAPTURES, MANIFEST, MOCK_CONFIG, MOCK_PIPELINED, SCENARIOS,
                                               needs_tshark)
from tests.streaming.conftest import assert_same_tables

pytestmark = [pytest.mark.spark, needs_tshark]


def imported(name, folder):
    manifest = MANIFEST[name]
    events, captured, _ = write_import(import_capture(CAPTURES / manifest["file"], manifest["ports"],
                                                      MOCK_PIPELINED), folder / f"{name}.jsonl")
    return events, captured


def replay(out, events, captured, *engine):
    outcome = CliRunner().invoke(main, ["replay", str(events), "--out", str(out), "--compare-captured", str(captured),
                                        "--set", "group.initial.rebalance.delay.ms=1000", *engine])
    assert outcome.exit_code == 0, outcome.output
    assert "by kind" in outcome.output and "final offsets" in outcome.output


@pytest.mark.parametrize("name", SCENARIOS)
def test_spark_replays_a_capture_as_the_local_engine_does(spark, tmp_path, monkeypatch, name):
    events, captured = imported(name, tmp_path)
    replay(tmp_path / "local", events, captured, "--engine", "local")
    # The command stops its SparkSession when it is done; this one is shared by the whole test session.
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)
    replay(tmp_path / "spark", events, captured)
    assert_same_tables(tmp_path / "local", tmp_path / "spark", (*TABLES, DIVERGENCES_TABLE))


def test_the_id_map_survives_micro_batches(spark, tmp_path):
    # The capture cut in three files read one per micro-batch: every group's runtime, id map included, goes
    # through its encoded state between them.
    events, captured = imported("cooperative-kill", tmp_path)
    lines = events.read_text().splitlines(keepends=True)
    parts = []
    for i in range(3):
        parts.append(tmp_path / f"part-{i}.jsonl")
        parts[-1].write_text("".join(lines[i * len(lines) // 3:(i + 1) * len(lines) // 3]))
    local = run_local(attach_captured(read_events(parts).events, captured_answers(captured)), MOCK_CONFIG)
    write_tables(tmp_path / "local", local.tables)
    write_divergences(tmp_path / "local", compare_captured(local.tables, captured))
    settings = {"streaming.files.per.trigger": 1, "streaming.watermark.delay.ms": 1_000}
    result = run_spark([str(p) for p in parts], str(tmp_path / "spark"), MOCK_CONFIG, settings=settings,
                       progress=False, captured=captured)
    write_divergences(tmp_path / "spark", compare_captured(result.tables, captured))
    assert result.batches > 3
    assert_same_tables(tmp_path / "local", tmp_path / "spark", (*TABLES, DIVERGENCES_TABLE))
