"""A group's live snapshot (state/runtime/snapshot.py): taken without changing the runtime, it reads at any time until
the group's next wakeup as the rows finish() would write then (open quiet runs grown by their elided chains,
pending generations, the metrics row with its open gaps)."""

from __future__ import annotations

import dataclasses

import pytest

from state.runtime import snapshot
from state.events import parse_event
from state.runtime.group_runtime import GroupRuntime

STOP_MS = 20_000


def scenario_group(name: str, elision: int):
    """The first group of a shipped scenario: its events, its settings (with `elision`) and its end."""
    from simulations import scenarios
    from tableio.coordinator_settings import load_config

    loaded = scenarios.load_scenario(scenarios.resolve(name))
    generated = scenarios.generate(loaded)
    group = generated.rows[0]["group_id"]
    rows = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows) if row["group_id"] == group]
    config = dataclasses.replace(load_config(scenario=loaded.broker), coordsim_periodic_elision=elision)
    return group, rows, config, generated.until_ms


def finished_at(runtime: GroupRuntime, at: int, config) -> dict[str, list[dict]]:
    """What a copy of the runtime writes when its run ends at `at`."""
    copy = GroupRuntime.decode(runtime.encode(), config)
    copy.advance_to(at)
    copy.finish()
    return copy.take_output().tables


@pytest.mark.parametrize("elision", [1, 0])
@pytest.mark.parametrize("name", ["crash", "rolling-restart-consumer-protocol", "broker-failure"])
def test_a_snapshot_reads_as_finish_at_any_time_until_the_next_wakeup(name: str, elision: int) -> None:
    group, rows, config, until = scenario_group(name, elision)
    runtime = GroupRuntime(group, config)
    runtime.offer(rows)
    # Stops where a run grew, or a gap lengthened, after the snapshot was taken; where a generation was pending.
    grown = open_gaps = pending = 0
    for stop in range(rows[0].ts, until, STOP_MS):
        runtime.advance_to(stop)
        runtime.take_output()
        before = runtime.encode()
        taken = runtime.live_snapshot()
        assert runtime.encode() == before  # the runtime is left as it was
        wakeup = runtime.next_wakeup()
        last = min(stop + 3 * STOP_MS, until) if wakeup is None else wakeup - 1
        at_stop = snapshot.rows_at(taken, stop).tables
        pending += bool(at_stop["generations"])
        for at in sorted({stop, (stop + last) // 2, last}):
            expected = finished_at(runtime, at, config)
            assert snapshot.rows_at(taken, at).tables == expected, (stop, at)
            grown += at > stop and _requests(expected) > _requests(at_stop)
            open_gaps += at > stop and _unconsumed(expected) > _unconsumed(at_stop)
    assert grown if elision else not grown  # only elided chains go on between two wakeups
    assert open_gaps or name == "broker-failure"
    assert pending or name != "rolling-restart-consumer-protocol"


def _requests(tables: dict[str, list[dict]]) -> int:
    return sum(row["repeat_count"] for row in tables["responses"])


def _unconsumed(tables: dict[str, list[dict]]) -> int:
    return tables["metrics"][0]["unconsumed_partition_ms"] or 0


def test_a_snapshot_is_not_read_before_it_was_taken() -> None:
    group, rows, config, _ = scenario_group("rolling-restart-cooperative", 1)
    runtime = GroupRuntime(group, config)
    runtime.offer(rows)
    runtime.advance_to(rows[0].ts + STOP_MS)
    with pytest.raises(snapshot.SnapshotError, match="read at"):
        snapshot.rows_at(runtime.live_snapshot(), rows[0].ts)
