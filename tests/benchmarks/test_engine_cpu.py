"""benchmarks/engine_cpu.py drives the Spark engine's step in this process, the way the engine's phases call it,
and compares its tables with the local engine's: run small, it is a parity check of the step that needs no
Spark session, and it keeps the benchmark runnable."""

from __future__ import annotations

import json
import sys

from benchmarks import engine_cpu


def test_the_step_driven_as_the_engine_drives_it_writes_the_local_engines_tables(tmp_path, monkeypatch, capsys):
    results = tmp_path / "engine_cpu.jsonl"
    monkeypatch.setattr(engine_cpu.gc, "freeze", lambda: None)  # the test session's heap is not the benchmark's
    monkeypatch.setattr(sys, "argv", ["engine_cpu.py", "--groups", "40", "--work", str(tmp_path / "work"),
                                      "--results", str(results)])
    engine_cpu.main()
    (row,) = [json.loads(line) for line in results.read_text().splitlines()]
    assert row["events"] == 400 and row["same_tables"] is True
    assert "| spark driver: compaction |" in capsys.readouterr().out
