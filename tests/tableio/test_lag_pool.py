"""The lag status on every core gives the rows of one process, in the same order, whatever the number of
processes (more than there are groups included)."""

from __future__ import annotations

import pytest

from tableio import lag_pool
from tableio.lag_status import INPUT_COLUMNS, lag_status_arrow_rows
from tableio.parquet import to_arrow
from tests.simulations.scenarios.helpers import run, shipped_small


@pytest.fixture(scope="module")
def crash_tables():
    result = run(shipped_small("crash", {"*": {"groups": 5}}))
    return {name: to_arrow(name, result.result.tables[name], False) for name in INPUT_COLUMNS}, result.result.final_ts


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_every_core_gives_the_rows_of_one_process(crash_tables, workers, monkeypatch):
    tables, final = crash_tables
    monkeypatch.setattr(lag_pool, "PARALLEL_ROWS", 0)
    expected = lag_status_arrow_rows(tables, final)
    assert len({r["group_id"] for r in expected}) == 5
    assert lag_pool.lag_status_rows_on_every_core(tables, final, workers) == expected
