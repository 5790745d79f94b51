"""Readers of quiet runs: a run whose periodic requests are written as runs reads the same, through every
view and report figure, as the same run written one row per request."""

from __future__ import annotations

import pytest

from simulations.parquet_tables import write_tables
from simulations.reports.figures import Bins, commit_rates, coordinator_load
from simulations.views.describe import describe
from simulations.views.lag_status import LagHistory
from simulations.views.offsets_log import offsets_log
from simulations.views.run_tables import load_run
from state.periodic import expand_rows

from ..scenarios.helpers import run, shipped_small


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The crash scenario written as the engines write it, and the same rows one per request."""
    result = run(shipped_small("crash", sets={"*": {"groups": 2, "members": 3}})).result
    root = tmp_path_factory.mktemp("quiet")
    runs = load_run(write_tables(root / "runs", result.tables))
    rows = {table: expand_rows(table, found) for table, found in result.tables.items()}
    assert len(rows["responses"]) > 5 * len(result.tables["responses"])
    single = load_run(write_tables(root / "single", rows))
    return runs, single


def test_describe_and_the_offsets_log_read_runs_request_by_request(both):
    runs, single = both
    assert runs.end_ts == single.end_ts
    assert list(offsets_log(runs)) == list(offsets_log(single))
    start, end = runs.start_ts, runs.end_ts
    for group in runs.groups:
        for at in range(start, end + 1, (end - start) // 23):
            for mode in ("offsets", "members", "state"):
                assert describe(runs, group, at, mode) == describe(single, group, at, mode), (group, at, mode)


def test_report_figures_count_every_repeat(both):
    runs, single = both
    bins = Bins.over(runs.start_ts, runs.end_ts)
    assert commit_rates(runs, bins) == commit_rates(single, bins)
    assert coordinator_load(runs).equals(coordinator_load(single))


def test_lag_status_reads_runs_commit_by_commit(both):
    runs, single = both
    kept, expanded = LagHistory.from_run(runs), LagHistory.from_run(single)
    assert kept.groups == expanded.groups
    start, end = runs.start_ts, runs.end_ts
    evaluated = 0
    for group in runs.groups:
        for at in range(start, end + 1, (end - start) // 37):
            found = kept.evaluate(group, at)
            assert found == expanded.evaluate(group, at), (group, at)
            evaluated += found is not None and any(p.window for p in found.partitions)
    assert evaluated > 20
