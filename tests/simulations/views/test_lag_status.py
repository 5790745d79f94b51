"""Burrow's lag status on small simulated runs: a replayed consumer's status, and the `lag_status` table the
local engine writes at the final time (the evaluator's own tests: tests/tableio/test_lag_status.py)."""

from __future__ import annotations

import pytest

from simulations.engines import run_local
from tableio.coordinator_settings import load_config
from tableio.inputs import read_events
from tableio.lag_status import LagHistory, Settings

from .runs import manual_commits


def replay_status(tmp_path, offsets, every_ms=1000, **settings):
    events = manual_commits(tmp_path / "events.jsonl", [offsets], every_ms)
    result = run_local(read_events([events]).events, load_config())
    committed = [r["log_end_offset"] for r in result.tables["offsets"]]
    assert committed == [every_ms // 10 * (i + 1) for i in range(len(offsets))]
    history = LagHistory.from_tables(result.tables, Settings(offset_refresh_ms=1000, **settings))
    return history.evaluate("etl", result.final_ts).partitions[0].status, result


@pytest.mark.parametrize("offsets, status", [
    ([100 * (i + 1) for i in range(12)], "OK"),                # keeps up
    ([50 * (i + 1) for i in range(12)], "WARN"),               # half as fast as production
    ([150] * 12, "STALL"),                                     # commits the same offset
    ([60 * i + 50 for i in range(8)] + [100, 110, 120, 130], "REWIND"),  # went back and did not catch up
])
def test_a_replayed_consumer_gets_burrows_status(tmp_path, offsets, status):
    assert replay_status(tmp_path, offsets)[0] == status


def test_the_engine_writes_the_lag_status_table_at_the_final_time(tmp_path):
    # Half as fast as production, committing every 10 s: Burrow's default samples see every commit's lag.
    _, result = replay_status(tmp_path, [500 * (i + 1) for i in range(12)], every_ms=10_000)
    [row] = result.tables["lag_status"]
    assert row["evaluated_ts"] == result.final_ts == 120_000
    assert (row["group_status"], row["status"], row["maxlag"]) == ("WARN", "WARN", True)
    assert (row["window_commits"], row["window_size"], row["start_offset"], row["end_offset"]) == (10, 10, 1500, 6000)
    assert (row["start_lag"], row["end_lag"], row["current_lag"]) == (1500, 6000, 6000)
