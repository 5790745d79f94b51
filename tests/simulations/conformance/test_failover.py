"""The replay's COORDINATOR_FAULT rows for a coordinator failover (simulations/conformance/failover.py): the
coordinator named at the capture's start, its crash when the suite killed it, and the move to the broker the
first FindCoordinator answer after the kill names (after that broker's own last NOT_COORDINATOR), its load
covering the new coordinator's COORDINATOR_LOAD_IN_PROGRESS answers."""

from __future__ import annotations

import pytest

from simulations.conformance import ConformanceError
from simulations.conformance.failover import fault_rows


def answer(api, ts, error="NONE", coordinator=None, broker=9003):
    return {"api": api, "request_ts": ts, "error": error, "coordinator": coordinator,
            "connection": f"127.0.0.1:50000>127.0.0.1:{broker}"}


CAPTURED = [answer("FindCoordinator", 100, coordinator="node 2 at 127.0.0.1:9002"),
            answer("Heartbeat", 5000),
            answer("FindCoordinator", 5100, coordinator="node 2 at 127.0.0.1:9002"),  # stale metadata
            answer("FindCoordinator", 8000, "COORDINATOR_NOT_AVAILABLE"),
            answer("FindCoordinator", 9000, coordinator="node 3 at 127.0.0.1:9003"),
            answer("FindCoordinator", 9001, coordinator="node 3 at 127.0.0.1:9003"),
            answer("Heartbeat", 9002, "NOT_COORDINATOR"),  # node 3 does not know it leads yet
            answer("OffsetCommit", 9004, "NOT_COORDINATOR", broker=9001),
            answer("OffsetCommit", 9010, "COORDINATOR_LOAD_IN_PROGRESS"),
            answer("OffsetCommit", 9050)]


def test_a_killed_coordinator_crashes_and_the_group_moves_where_the_next_lookup_says():
    rows = fault_rows("g", 0, 2, [(5050, 2)], CAPTURED)
    assert [(r["ts"], r["fault"], r.get("coordinator_id"), r.get("load_delay_ms")) for r in rows] == [
        (0, "move", 2, None), (5050, "crash", None, None), (9003, "move", 3, 8)]
    assert {(r["group_id"], r["type"]) for r in rows} == {("g", "COORDINATOR_FAULT")}


def test_killing_another_broker_moves_nothing():
    assert [r["fault"] for r in fault_rows("g", 0, 2, [(5050, 1)], CAPTURED)] == ["move"]


def test_no_lookup_naming_another_broker_is_one_line():
    with pytest.raises(ConformanceError, match="no FindCoordinator answer after broker 2 was killed"):
        fault_rows("g", 0, 2, [(9500, 2)], CAPTURED[:4])
