"""Periodic elision changes the work, never the tables: every shipped scenario, shrunk, written byte for byte
the same with `coordsim.periodic.elision` 0 (every request simulated) and 1 (steady members in closed form)."""

from __future__ import annotations

import pytest

from simulations import scenarios
from tableio.parquet import write_tables
from tableio.coordinator_settings import load_config

from .helpers import run, shipped_small


@pytest.mark.parametrize("name", sorted(scenarios.shipped()))
def test_each_shipped_scenario_writes_the_same_bytes_with_and_without_elision(name, tmp_path):
    written = {}
    shipped = shipped_small(name, sets={"*": {"groups": 2}})
    for elision in (0, 1):
        scenario = shipped_small(name, sets={"*": {"groups": 2}},
                                 broker={**shipped.broker, "coordsim.periodic.elision": elision})
        assert load_config(scenario=scenario.broker).coordsim_periodic_elision == elision
        out = write_tables(tmp_path / f"elision-{elision}", run(scenario).result.tables)
        written[elision] = {path.relative_to(out): path.read_bytes() for path in sorted(out.rglob("*.parquet"))}
    assert written[0].keys() == written[1].keys() and len(written[0]) >= 9
    assert written[0] == written[1]
