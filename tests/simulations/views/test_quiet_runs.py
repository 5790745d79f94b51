"""Readers of quiet runs: `simulations.views.quiet_runs` (whole columns) and `state.quiet_run.Run` (one row,
request by request) read a run's row as `state.quiet_run.expand_row` expands it, and a run whose periodic
requests are written as runs reads the same, through every view and report figure, as the same run written
one row per request."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tableio.parquet import write_tables
from simulations.reports.figures import Bins, commit_rates, partition_load
from simulations.views.describe import describe
from simulations.views.offsets_log import offsets_log
from simulations.views.quiet_runs import (count_requests, counts_per_window, expand_runs, last_repeat,
                                          repeat_counts, repeat_times)
from simulations.views.run_tables import load_run
from state.quiet_run import Run, expand_row, expand_rows
from tableio.lag_status import LagHistory

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
    assert partition_load(runs).equals(partition_load(single))


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


# -- the reader's semantics ----------------------------------------------------------------------------------

def _responses(counts, intervals, times) -> pd.DataFrame:
    return pd.DataFrame({"group_id": ["g"] * len(counts), "request_ts": times,
                         "repeat_count": pd.array(counts, dtype="Int32"),
                         "repeat_interval_ms": pd.array(intervals, dtype="Int64")})


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_a_missing_repeat_count_reads_as_one_request(missing):
    frame = pd.DataFrame({"request_ts": [100, 200], "repeat_count": [missing, 3.0],
                          "repeat_interval_ms": [missing, 10.0], "error": ["NONE", "X"]})
    assert repeat_counts(frame).tolist() == [1, 3]
    assert count_requests(frame) == 4
    assert count_requests(frame, by="error").to_dict() == {"NONE": 1, "X": 3}
    assert repeat_times(frame, "request_ts").tolist() == [100, 200, 210, 220]
    assert last_repeat(frame, "request_ts").tolist() == [100, 220]
    assert Run.of({"repeat_count": missing, "repeat_interval_ms": missing}).count == 1
    nullable = _responses([None, 3], [None, 10], [100, 200])
    assert count_requests(nullable) == 4 and repeat_times(nullable, "request_ts").tolist() == [100, 200, 210, 220]


def test_a_table_without_the_columns_reads_as_lone_requests():
    frame = pd.DataFrame({"request_ts": [5, 7]})
    assert count_requests(frame) == 2
    assert counts_per_window(frame, "request_ts", [6]) == [1, 1]
    assert expand_runs("responses", frame) is frame


def test_counting_needs_no_interval_column():
    frame = pd.DataFrame({"repeat_count": pd.array([3, None], dtype="Int32"), "error": ["NONE", "X"]})
    assert count_requests(frame) == 4
    assert count_requests(frame, by="error").to_dict() == {"NONE": 3, "X": 1}


def test_count_one_is_a_lone_request_whatever_its_interval():
    frame = _responses([1, 1], [None, 50], [100, 130])
    assert repeat_times(frame, "request_ts").tolist() == [100, 130]
    assert last_repeat(frame, "request_ts", at=1_000).tolist() == [100, 130]
    assert counts_per_window(frame, "request_ts", [100, 131]) == [0, 2, 0]
    assert expand_runs("responses", frame) is frame
    assert Run.of({"repeat_count": 1, "repeat_interval_ms": 50}).time(100, 0) == 100


def test_a_request_on_a_window_edge_belongs_to_the_later_window():
    run = _responses([4], [10], [100])  # requests at 100, 110, 120, 130
    assert counts_per_window(run, "request_ts", [100, 110, 111, 130, 131]) == [0, 1, 1, 1, 1, 0]
    assert counts_per_window(run, "request_ts", [50, 200]) == [0, 4, 0]
    # "At or before" includes a request at that instant.
    assert last_repeat(run, "request_ts", at=120).tolist() == [120]
    assert last_repeat(run, "request_ts", at=129).tolist() == [120]
    assert last_repeat(run, "request_ts", at=10_000).tolist() == [130]


def test_window_counts_are_the_expanded_requests_per_window():
    frame = _responses([1, 5, 3, 2, 1], [None, 7, 1_000, 3, None], [0, 3, 10, 41, 60])
    times = repeat_times(frame, "request_ts").to_numpy()
    edges = [-5, 0, 4, 10, 24, 45, 47, 1_010, 3_000]
    expected = np.histogram(times, bins=[-10**9, *edges, 10**9])[0]
    assert counts_per_window(frame, "request_ts", edges) == expected.tolist()


OFFSETS_RUN = {"group_id": "g", "topic": "orders", "partition": 3, "offset": 1_000, "log_end_offset": 1_500,
               "commit_ts": 10_000, "write_ts": 10_002, "repeat_count": 6, "repeat_interval_ms": 5_000,
               "records_per_second": 33.3, "rate_origin_ts": 7_001, "log_end_origin_ts": 4_000, "out_seq": 9}


@pytest.mark.parametrize("rule", [{}, {"records_per_second": None, "rate_origin_ts": None, "log_end_origin_ts": None},
                                  {"log_end_origin_ts": None}, {"log_end_offset": None, "log_end_origin_ts": None}])
def test_a_commit_runs_offsets_follow_its_rule_as_expand_row_computes_them(rule):
    row = dict(OFFSETS_RUN, **rule)
    expanded = expand_row("offsets", row)
    run = Run.of(row)
    assert run.count == len(expanded) == 6
    for k, commit in enumerate(expanded):
        assert run.time(row["commit_ts"], k) == commit["commit_ts"]
        assert run.time(row["write_ts"], k) == commit["write_ts"]
        assert run.offset(row["offset"], row["commit_ts"], k) == commit["offset"]
        if row["log_end_offset"] is not None:
            assert run.log_end_offset(row["log_end_offset"], row["commit_ts"], k) == commit["log_end_offset"]
    rows = [row, dict(row, repeat_count=1, repeat_interval_ms=None, out_seq=10)]
    # Nullable integer columns, as the tables read.
    frame = expand_runs("offsets", pd.DataFrame(rows).convert_dtypes(convert_string=False, convert_floating=False))
    assert frame.astype(object).where(frame.notna(), None).to_dict("records") == expand_rows("offsets", rows)


def test_the_column_readers_agree_with_the_expanded_tables(both):
    runs, single = both
    for table, column in (("responses", "request_ts"), ("offsets", "write_ts"), ("requests", "ts")):
        kept, expanded = runs[table], single[table]
        assert (repeat_counts(kept) > 1).any(), table
        assert count_requests(kept) == len(expanded)
        assert sorted(repeat_times(kept, column)) == sorted(expanded[column].astype("int64"))
        edges = list(range(runs.start_ts, runs.end_ts, 7_919))
        assert counts_per_window(kept, column, edges) == counts_per_window(expanded, column, edges)
        assert count_requests(kept, by="group_id").equals(count_requests(expanded, by="group_id"))
    assert runs["offsets"]["records_per_second"].notna().any()
    at = (runs.start_ts + runs.end_ts) // 2
    responses = runs["responses"]
    heard = responses.assign(last=last_repeat(responses, "request_ts", at))[responses["request_ts"] <= at]
    expanded = single["responses"]
    assert (heard.groupby("member_id")["last"].max().to_dict()
            == expanded[expanded["request_ts"] <= at].groupby("member_id")["request_ts"].max().to_dict())
    pd.testing.assert_frame_equal(expand_runs("offsets", runs["offsets"]), single["offsets"])
