"""Small versions of the shipped scenarios, run on the local engine, and accessors over their tables."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from simulations import scenarios
from simulations.engines import run_local
from simulations.scenarios import Generated, Scenario
from tableio.coordinator_settings import load_config
from state.events import parse_event
from state.quiet_run import expand_rows
from tableio.run_result import RunResult

# The smallest valid scenario: one group set, no timeline.
MINIMAL = """\
duration: 10m
group_sets:
  - name: orders
    members: 3
    topics:
      - {name: orders, partitions: 6}
"""


def shipped_small(name: str, sets: dict | None = None, timeline: list | None = None, then: list | None = None,
                  **top) -> Scenario:
    """The shipped scenario `name` with changes: `sets` maps a set name (or "*": every set) to keys to replace,
    `timeline` replaces the timeline's actions' keys one by one, `then` appends actions, `top` replaces
    top-level keys."""
    document = yaml.safe_load(scenarios.shipped()[name].read_text())
    for group_set in document["group_sets"]:
        group_set.update((sets or {}).get("*", {}))
        group_set.update((sets or {}).get(group_set["name"], {}))
    for action, changes in zip(document.get("timeline") or [], timeline or []):
        action.update(changes)
    document["timeline"] = [*(document.get("timeline") or []), *(then or [])]
    document.update(top)
    return scenarios.parse_scenario(yaml.safe_dump(document, sort_keys=False), f"{name}.yaml", name)


def small_broker_failure() -> Scenario:
    """The shipped broker failure, small: 6 groups of 2 on 3 brokers for 40 s, broker 3 failing at 12 s (fenced
    9 s later: meanwhile its groups' clients go round the lookup loop) and coming back at 27 s."""
    return shipped_small("broker-failure", sets={"*": {"groups": 6, "members": 2}}, duration="40s",
                         timeline=[{"at": "12s", "restart_after": "15s"}],
                         cluster={"brokers": 3, "offsets.topic.num.partitions": 6,
                                  "offsets.topic.replication.factor": 2})


@dataclass
class Run:
    scenario: Scenario
    generated: Generated
    result: RunResult

    def rows(self, table: str, group_id: str | None = None) -> list[dict]:
        """The table's rows (of `group_id`) in written order, a quiet run as one row per request."""
        rows = [r for r in self.result.tables[table] if group_id is None or r["group_id"] == group_id]
        return expand_rows(table, sorted(rows, key=lambda r: (r["group_id"], r["out_seq"])))

    def metrics(self, group_id: str) -> dict:
        [row] = self.rows("metrics", group_id)
        return row

    def rebalances(self, group_id: str) -> list[tuple[int, str]]:
        """(ms after the scenario start, cause) of every transition to PreparingRebalance."""
        return [(r["ts"] - self.scenario.start_ms, r["cause"]) for r in self.rows("group_states", group_id)
                if r["to_state"] == "PreparingRebalance"]

    def directives(self, etype: str, group_id: str | None = None) -> list[dict]:
        return [r for r in self.generated.rows if r["type"] == etype and (group_id is None or r["group_id"] == group_id)]

    def group_ids(self, set_name: str | None = None) -> list[str]:
        return [g for name, ids in self.generated.groups.items() if set_name in (None, name) for g in ids]

    def client_config(self, key: str, default: int) -> int:
        [group_set] = self.scenario.group_sets
        return group_set.config.get(key, default)


def run(scenario: Scenario) -> Run:
    generated = scenarios.generate(scenario)
    events = [parse_event(row, "scenario", line) for line, row in enumerate(generated.rows, start=1)]
    result = run_local(events, load_config(scenario=scenario.broker), generated.until_ms)
    assert result.tables["rejects"] == [], result.tables["rejects"][:3]
    return Run(scenario, generated, result)
