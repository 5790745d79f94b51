"""The HTML report: one file, every panel, no network, small; and the figures behind the panels."""

from __future__ import annotations

import re
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest

from simulations.reports import build_report, figures, svg
from tableio.parquet import PART_FILE
from simulations.reports.figures import Bins
from simulations.reports.page import summary
from simulations.reports.panel import span
from simulations.reports.panels import NEEDS_CLIENTS, build_panels
from simulations.views import load_run
from simulations.views.history import UNAVAILABLE
from simulations.views.run_tables import RunTables
from tableio.lag_status import LagHistory

from ..views.runs import T0, scenario_run

PANELS = {
    "timeline": "Group state timeline",
    "rebalances": "Rebalances over time by cause",
    "unconsumed": "Unconsumed partition time",
    "in_rebalance": "Partition time in rebalance over time",
    "moved": "Partitions reassigned per Stable generation",
    "heatmap": "Partition ownership over time",
    "consumption": "Duplicate and skipped records",
    "commits": "Commit rate",
    "lag": "Consumer lag status (Burrow)",
    "load": "Load per __consumer_offsets partition",
    "broker-requests": "Requests per broker",
    "broker-heatmap": "Broker load heatmap",
    "lookup-heatmap": "FindCoordinator lookups per broker",
    "moves": "Coordinator moves",
}


def test_report_is_one_small_file_with_every_panel_and_no_url(sample_run, tmp_path):
    path = build_report(sample_run, tmp_path / "out" / "report.html")
    html = path.read_text(encoding="utf-8")
    for panel_id, title in PANELS.items():
        section = re.search(f'<section id="{panel_id}"><h2>([^<]*)</h2>(.*?)</section>', html, re.S)
        assert section and section.group(1).startswith(title), panel_id
    assert "<svg" in html and "<rect" in html
    assert not re.search(r"https?:|//[a-z]|\b(src|href)=", html), "the report must open without a network"
    assert path.stat().st_size < 100_000


def test_report_defaults_to_the_run_folder_and_the_busiest_group(tiny_run):
    path = build_report(tiny_run)
    assert path == tiny_run / "report.html"
    html = path.read_text(encoding="utf-8")
    assert "Partition ownership over time: orders" in html
    assert NEEDS_CLIENTS in html.lower()  # a replay has no consumption figures, and shows none


def test_partitions_are_in_rebalance_from_rebalance_start_to_the_next_stable(tiny_run):
    run = load_run(tiny_run)
    # c2 left at +8.0 s; the group was Stable again at +8.2 s: the four partitions of generation 1 waited.
    assert figures.in_rebalance_intervals(run, "orders", run.end_ts) == [(T0 + 8_000, T0 + 8_200, 4)]
    seconds = figures.partition_seconds_in_rebalance(run, ["orders", "exporter"],
                                                     Bins.over(run.start_ts, run.end_ts), run.end_ts)
    assert list(seconds) == ["orders"] and sum(seconds["orders"]) == 0.8


def _scenario_run(name: str, out, groups: int = 1) -> RunTables:
    """A small shipped scenario (`groups` groups of three), its tables written to `out` and read as the report
    does."""
    return load_run(scenario_run(name, out, groups=groups, members=3))


def test_a_static_restart_leaves_partitions_unconsumed_but_never_in_rebalance(tmp_path):
    run = _scenario_run("rolling-restart-static", tmp_path)
    [m] = run["metrics"].to_dict("records")
    # Nobody consumes a restarted member's partitions for its downtime (20 s): each of the 24 partitions once,
    # and the coordinator never rebalances: the two views answer differently, each under its own name.
    assert m["unconsumed_gaps"] == 24 and 20_000 <= m["unconsumed_gap_ms_p50"] <= m["unconsumed_gap_ms_max"] <= 20_100
    assert figures.partition_seconds_in_rebalance(run, run.groups, Bins.over(run.start_ts, run.end_ts),
                                                  run.end_ts) == {}
    panels = {p.id: p for p in build_panels(run)}
    assert "partition-s over 24 gaps" in panels["unconsumed"].body
    assert "No partition was held in a rebalance" in panels["in_rebalance"].body


def test_an_eager_restart_leaves_partitions_unconsumed_and_in_rebalance(tmp_path):
    run = _scenario_run("rolling-restart-dynamic-eager", tmp_path)
    [m] = run["metrics"].to_dict("records")
    seconds = figures.partition_seconds_in_rebalance(run, run.groups, Bins.over(run.start_ts, run.end_ts),
                                                     run.end_ts)
    in_rebalance_ms = sum(sum(values) for values in seconds.values()) * 1000
    # Every member revokes everything at each of the 6 rebalances; the coordinator counts from the rebalance's
    # start, the consumers only from when each learns of it, so the consumers' view is the smaller.
    assert 0 < m["unconsumed_partition_ms"] < in_rebalance_ms
    assert m["unconsumed_gaps"] > 0 and m["unconsumed_gap_ms_max"] <= m["rebalance_ms_max"]
    panels = {p.id: p for p in build_panels(run)}
    assert "<svg" in panels["unconsumed"].body and "<svg" in panels["in_rebalance"].body


def test_partitions_reassigned_count_owner_changes(tiny_run):
    # Generation 2 gave c1 the static member's orders-2 and orders-3.
    assert figures.partitions_reassigned(load_run(tiny_run), "orders") == [(2, 2, 4)]


def test_ownership_cells_follow_the_assignments(tiny_run):
    run = load_run(tiny_run)
    bins = Bins(T0, 1_000, 20)
    partitions, owners, cells = figures.ownership(run, "orders", bins, T0 + 20_000)
    assert partitions == [("orders", p) for p in range(4)] and owners == ["c2-static", owners[1]]
    c2, c1 = 0, 1
    # Seconds 6 (Stable from 6.2 s), 8 (Stable again from 8.2 s), 19 (expired at 19 s):
    assert [row[6] for row in cells] == [c1, c1, c2, c2]
    assert [row[8] for row in cells] == [c1, c1, c1, c1]
    assert [row[5] for row in cells] == [-1] * 4 and [row[19] for row in cells] == [-1] * 4


def test_consumption_panel_draws_the_metrics_of_synthetic_clients(tiny_run):
    run = load_run(tiny_run)
    run.tables["metrics"] = pd.DataFrame({"group_id": ["orders"], "duplicate_records": [120],
                                          "skipped_records": [3]})
    panel = next(p for p in build_panels(run) if p.id == "consumption")
    assert NEEDS_CLIENTS not in panel.body.lower() and "orders: 120 records" in panel.body


def test_rebalances_are_counted_by_cause_per_bin(sample_run):
    run = load_run(sample_run)
    bins = Bins.over(run.start_ts, run.end_ts)
    assert bins.count <= 61 and bins.width_ms in figures.NICE_WIDTHS
    counts = figures.rebalances_by_cause(run, bins)
    states = run["group_states"]
    expected = states[states["to_state"] == "PreparingRebalance"]["cause"].value_counts().to_dict()
    assert {cause: sum(v) for cause, v in counts.items()} == expected and len(expected) >= 2


def test_lag_panel_draws_statuses_over_time_and_lists_the_groups_not_ok_at_the_end(lagging_run):
    run = load_run(lagging_run)
    [panel] = [p for p in build_panels(run) if p.id == "lag"]
    assert "<h3>etl</h3>" in panel.body and "<svg" in panel.body
    assert re.search(r"<title>t-0: WARN [^<]*</title>", panel.body) and re.search(r"<title>t-1: OK ", panel.body)
    assert "<li>etl: WARN (t-0 WARN; total lag 6000)</li>" in panel.body
    bins = Bins.over(run.start_ts, run.end_ts)
    partitions, cells = figures.lag_statuses(LagHistory.from_run(run), "etl", bins, run.end_ts)
    assert partitions == [("t", 0), ("t", 1)]
    warn, ok, stall = (figures.LAG_CELLS.index(name) for name in ("WARN", "OK", "STALL"))
    # After its first commit the window holds one offset, not moving, with lag: STALL. Not STOP: the broker's
    # offsets, sampled since production began, were at or below it a few samples ago (as in Burrow).
    assert cells[0][0] == stall and cells[0][-1] == warn and set(cells[1]) == {ok}


def test_lag_panel_of_a_replay_without_production_says_there_is_no_status(tiny_run):
    [panel] = [p for p in build_panels(load_run(tiny_run)) if p.id == "lag"]
    assert "<li>orders: no status: no log-end offset in the commits" in panel.body
    assert "No partition of the 2 groups with the most rebalances was WARN, STOP, STALL or REWIND" in panel.body


def test_panels_read_in_ranges_of_groups_give_the_same_page(sample_run, tmp_path, monkeypatch):
    from simulations import group_ranges

    whole = build_report(sample_run, tmp_path / "whole.html").read_text()
    monkeypatch.setattr(group_ranges, "ROWS_PER_RANGE", 1)
    assert len(group_ranges.group_ranges(sample_run)) >= 4  # a range per group
    assert build_report(sample_run, tmp_path / "ranged.html").read_text() == whole
    assert "Consumer lag status" in whole and "No offset commit" not in whole  # the ranged panels have data


def test_responses_without_a_repeat_count_are_one_request_each_in_every_figure(sample_run, tmp_path):
    """A responses table without `repeat_count` (a run folder written before quiet runs reads it as null):
    the header, the ranking and the coordinator load counted such rows as no request, the peak as one."""
    old = tmp_path / "old"
    shutil.copytree(sample_run, old)
    part = old / "responses" / PART_FILE
    pq.write_table(pq.read_table(part).drop_columns(["repeat_count", "repeat_interval_ms"]), part)
    run, current = load_run(old), load_run(sample_run)
    assert run["responses"]["repeat_count"].isna().all() and (current["responses"]["repeat_count"] == 1).all()
    responses = len(run["responses"])
    assert re.search(rf"<dt>responses</dt><dd>{responses} \(NONE \d+", summary(run))
    assert summary(run) == summary(current).replace(str(sample_run), str(old))
    assert figures.partition_load(run)["requests"].sum() == responses
    assert figures.rank_groups(run) == figures.rank_groups(current)


def test_the_capacity_page_shows_each_broker_and_what_a_broker_failure_cost_the_groups_that_moved(tmp_path):
    run = _scenario_run("broker-failure", tmp_path, groups=12)
    bins = Bins.over(run.start_ts, run.end_ts)
    per_broker = figures.broker_requests(run, bins)
    assert {f"broker {b}" for b in range(1, 7)} <= set(per_broker)
    crash_bin = (run.start_ts + 180_000 - bins.start) // bins.width_ms
    # Broker 3 is down from 3m to 5m: no request reaches it; the lookups go to the brokers that are up, each
    # counted at the broker its client sent it to (none at a null "any broker").
    assert per_broker["broker 3"][crash_bin + 1] == 0 and set(per_broker) == {f"broker {b}" for b in range(1, 7)}
    # The commits sent to broker 3 while it was down failed: the commit chart shows them at the crash.
    failed = figures.commit_rates(run, bins)["commit requests failed"]
    assert failed[crash_bin] > 0 and not any(failed[:crash_bin])
    responses = run["responses"]
    refused = responses[(responses["api"] == "OffsetCommit") & (responses["error"] == "NETWORK_EXCEPTION")]
    assert len(refused) and sum(failed) * bins.width_ms / 1000 == pytest.approx(run["metrics"]["failed_commits"].sum())
    moves = figures.coordinator_moves(run)
    away = moves[moves["from_broker"] == 3]
    back = moves[moves["to_broker"] == 3]
    assert len(away) and set(away["group_id"]) == set(back["group_id"])
    # Away: no coordinator until the controller fences broker 3 (7 to 9 s after the crash, by its heartbeat
    # phase) and the next replica loads the group; its clients are answered once they find it.
    assert away["without_coordinator_ms"].between(7_000, 10_000).all()
    assert back["without_coordinator_ms"].lt(1_000).all()
    assert (away["answer_gap_ms"] >= away["without_coordinator_ms"]).all() and back["answer_gap_ms"].lt(1_000).all()
    panels = {p.id: p for p in build_panels(run)}
    assert "<svg" in panels["broker-requests"].body and "<svg" in panels["broker-heatmap"].body
    assert "<svg" in panels["lookup-heatmap"].body
    assert "<td>3</td>" in panels["moves"].body


def test_a_coordinator_outage_is_drawn_as_such_and_dead_only_for_a_group_that_ended(failed_broker_run):
    run = load_run(failed_broker_run)
    segments = figures.state_segments(run, "payments-17", run.end_ts)["segments"]
    # Broker 3 fails at 3m and is fenced at 3m8.965s; the next replica loads the group 1 ms later; broker 3
    # takes it back at the controller's imbalance check, 300 s after the fence.
    start = 1767225600000  # the scenario's start, 2026-01-01T00:00:00Z
    assert [(t0 - start, t1 - start, state) for t0, t1, state in segments][-4:] == [
        (180_000, 188_966, UNAVAILABLE), (188_966, 488_965, "Stable"), (488_965, 488_968, UNAVAILABLE),
        (488_968, run.end_ts - start, "Stable")]
    assert "Dead" not in {state for _, _, state in segments}
    timeline = next(p for p in build_panels(run, "payments-17") if p.id == "timeline").body
    for entry in ("Assigning", "Reconciling", UNAVAILABLE, "Dead"):
        assert f"</i>{entry}</span>" in timeline  # the legend
    assert 'fill="url(#coordinator-unavailable)"><title>coordinator unavailable' in timeline
    assert 'fill="#999"' not in timeline


def test_ownership_goes_on_through_a_broker_failure_and_the_leader_s_return(failed_broker_run):
    run = load_run(failed_broker_run)
    bins = Bins.over(run.start_ts, run.end_ts)
    partitions, owners, cells = figures.ownership(run, "payments-17", bins, run.end_ts)
    # Generation 1 from 6.7 s to the end: 5 members with 2 partitions each, in every slice of 15 s.
    assert len(partitions) == 10 and len(owners) == 5
    assert all(cell >= 0 for row in cells for cell in row)
    heatmap = next(p for p in build_panels(run, "payments-17") if p.id == "heatmap").body
    assert "<svg" in heatmap and ": no owner " not in heatmap


def test_panels_with_nothing_but_zeros_say_none(failed_broker_run):
    run = load_run(failed_broker_run)
    panels = {p.id: p.body for p in build_panels(run)}
    # Synthetic consumers through a broker failure: no record twice or skipped, nothing reassigned.
    assert panels["consumption"] == '<p class="note">None: no record was processed twice or skipped.</p>'
    assert svg.bars(["a", "b"], [0, 0.0], svg.PALETTE[0], "records") == svg.NOTHING == '<p class="note">none</p>'
    assert svg.stacked_bars(0, 1_000, [("x", svg.PALETTE[0], [0, 0])], "per s") == svg.NOTHING


def test_bars_label_only_as_many_categories_as_fit():
    labels = [f"payments-{i:02d}" for i in range(20)]
    chart = svg.bars(labels, list(range(1, 21)), svg.PALETTE[0], "partition-s")
    assert chart.count('class="tick">payments-') == 10  # every other one: 11 characters need 76 px, a bar has 39


def test_each_broker_heatmap_has_its_own_scale(tmp_path):
    """A broker failure's lookup burst would set one scale for everything, leaving the steady load in the
    palest level; the coordinator's requests and FindCoordinator's have a heatmap each."""
    run = _scenario_run("broker-failure", tmp_path, groups=12)
    bins = Bins.over(run.start_ts, run.end_ts)
    coordinator = figures.broker_requests(run, bins, lookups=False)
    lookups = figures.broker_requests(run, bins, lookups=True)
    every = figures.broker_requests(run, bins)
    # Each lookup at the broker its client sent it to: broker 3, down, takes none while it is down.
    assert set(coordinator) == set(lookups) == {f"broker {b}" for b in range(1, 7)}
    top = max(max(values) for values in coordinator.values())
    burst = max(max(values) for values in lookups.values())  # the lookups of broker 3's groups while it is down
    panels = {p.id: p for p in build_panels(run)}
    assert f"busiest broker-{span(bins.width_ms)} ({top:.0f}/s)" in panels["broker-heatmap"].guide
    assert f"busiest broker-{span(bins.width_ms)} ({burst:.0f}/s)" in panels["lookup-heatmap"].guide
    assert sum(map(sum, every.values())) == pytest.approx(sum(map(sum, coordinator.values()))
                                                          + sum(map(sum, lookups.values())))
