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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import storm  # noqa: E402 (the storm scenario and the core's run, shared with benchmarks/storm.py)


def main() -> None:
    groups = int(sys.argv[1])
    scenario_file = Path(tempfile.mkdtemp()) / "storm.yaml"
    scenario_file.write_text(storm.scenario(groups, 10, True))
    by_group, until_ms, config = storm.scenario_events(scenario_file)
    steps = storm.run_groups(by_group, config, until_ms)
    print(f"{groups} storm group-hours, {steps} steps")


if __name__ == "__main__":
    main()
