"""The input layouts the engine tests replay, written once per test session under a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

from simulations.scenarios import generate, parse_scenario, to_jsonl
from tests.streaming import histories
from tests.streaming.conftest import SAMPLE

# Small against the histories' time span, so the main phase really advances groups between micro-batches.
DELAY_MS = 2_000
FILES = 3
# Synthetic clients (the runtime's own client model: recurring heartbeat and commit timers), with a crash;
# a second set commits by itself (enable.auto.commit=false: commitSync after every poll and on revocation)
# through a cooperative rolling restart (the shipped scenario manual-commit's behaviour, cooperative here).
# The last era of the inputs: its clients run until the run's final time, and they heartbeat one by one.
SCENARIO = """
name: tiny-fleet
start: 2026-06-01T00:00:00Z
duration: 2m
seed: 3
group_sets:
  - name: fleet
    groups: 3
    members: 3
    topics:
      - {name: orders, partitions: 6, records_per_second: 10}
  - name: manual
    groups: 2
    members: 3
    topics:
      - {name: orders, partitions: 6, records_per_second: 10}
    assignors: [cooperative-sticky]
    config: {enable.auto.commit: false}
timeline:
  - {at: 10s, action: rolling_restart, target: manual, downtime: 5s, gap: 5s}
  - {at: 40s, action: crash}
"""
BAD_ROWS = [
    "not json at all",
    json.dumps({"ts": 1_700_000_001_000, "type": "HEARTBEAT", "member_id": "m"}),
    json.dumps({"ts": 1_700_000_001_000, "group_id": "x", "type": "BOGUS"}),
    json.dumps({"ts": "yesterday", "group_id": "x", "type": "HEARTBEAT"}),
]


def write_layouts(root: Path) -> dict[str, list[str]]:
    """name -> the EVENTS paths of a run. 'ordered': the combined history in FILES time-ordered files;
    'shuffled': the same rows out of order within DELAY_MS; both with malformed rows in their first file.
    Both go on with the sample trace and a synthetic-client scenario: later eras, in time order, since a file
    of a later era before the history would make every history row late."""
    rows = histories.combined_history()
    scenario = root / "scenario.jsonl"
    scenario.parent.mkdir(parents=True, exist_ok=True)
    scenario.write_text(to_jsonl(generate(parse_scenario(SCENARIO)).rows), encoding="utf-8")
    tail = [str(SAMPLE), str(scenario)]
    layouts = {}
    for name, layout_rows in (("ordered", rows), ("shuffled", histories.shuffled_within(rows, DELAY_MS))):
        folder = histories.split_files(root / name, layout_rows, FILES)
        first = folder / "part-000.jsonl"  # malformed rows have no time: anywhere is on time
        first.write_text("".join(line + "\n" for line in BAD_ROWS) + first.read_text(encoding="utf-8"),
                         encoding="utf-8")
        layouts[name] = [str(folder)] + tail
    return layouts
