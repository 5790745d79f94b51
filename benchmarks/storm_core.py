"""The core's work for GROUPS storm group-hours, nothing else: the storm scenario of `benchmarks/storm.py`
(10 members each) run through `GroupRuntime` on the default (elided) core, for an instruction count that does
not depend on the machine's load:

    valgrind --tool=callgrind .venv/bin/python benchmarks/storm_core.py 1
    valgrind --tool=callgrind .venv/bin/python benchmarks/storm_core.py 4

The difference of the two totals is three storm group-hours of the core (imports and start-up cancel out).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from simulations import scenarios
from state.events import parse_event
from state.runtime.group_runtime import GroupRuntime
from tableio.coordinator_settings import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
import storm  # noqa: E402 (the storm scenario's text, shared with benchmarks/storm.py)


def main() -> None:
    groups = int(sys.argv[1])
    scenario_file = Path(tempfile.mkdtemp()) / "storm.yaml"
    scenario_file.write_text(storm.scenario(groups, 10, True))
    loaded = scenarios.load_scenario(scenario_file)
    generated = scenarios.generate(loaded)
    by_group: dict[str, list] = {}
    for line, row in enumerate(generated.rows, start=1):
        by_group.setdefault(row["group_id"], []).append(parse_event(row, "scenario", line))
    config = load_config(scenario=loaded.broker)
    steps = 0
    for group_id, events in by_group.items():
        runtime = GroupRuntime(group_id, config)
        runtime.offer(events)
        runtime.advance_to(generated.until_ms)
        runtime.finish()
        steps += runtime.steps
    print(f"{groups} storm group-hours, {steps} steps")


if __name__ == "__main__":
    main()
