"""Scenarios: YAML descriptions of consumer fleets and what happens to them, turned into synthetic-client
events (`coordsim generate`, `coordsim run`).

`schema` reads and checks a scenario file (`document` keeps the line of every value for error messages),
`sweep` reads a sweep of variants of one, `generator` turns a scenario into directive events, `summary`
condenses a run's tables per group set. The shipped
scenarios are the YAML files of this folder; `shipped()` lists them and `resolve()` finds one by name.
"""

from __future__ import annotations

from pathlib import Path

from simulations.scenarios.document import ScenarioError
from simulations.scenarios.generator import Generated, generate, to_jsonl
from simulations.scenarios.schema import Scenario, load_scenario, parse_scenario
from simulations.scenarios.sweep import Sweep, generate_variants, load_sweep

FOLDER = Path(__file__).resolve().parent


def shipped() -> dict[str, Path]:
    """Shipped scenario name -> file."""
    return {path.stem: path for path in sorted(FOLDER.glob("*.yaml"))}


def resolve(argument: str) -> Path:
    """A scenario file as given, or else the shipped scenario of that name (`default`, `crash`, ...)."""
    path = Path(argument)
    if path.exists() or path.suffix in (".yaml", ".yml"):
        return path
    return shipped().get(argument, path)


__all__ = ["Generated", "Scenario", "ScenarioError", "Sweep", "generate", "generate_variants", "load_sweep",
           "load_scenario", "parse_scenario", "resolve", "shipped", "to_jsonl"]
