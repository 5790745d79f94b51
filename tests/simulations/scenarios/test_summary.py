"""The per-set summary of `coordsim run`: the metrics table's figures, merged over a set's groups."""

from __future__ import annotations

import io

from rich.console import Console

from simulations.scenarios import parse_scenario
from simulations.scenarios.summary import render, summarize

SCENARIO = """\
duration: 1m
group_sets:
  - {name: orders, groups: 2, members: 2, topics: [{name: orders, partitions: 4}]}
"""


def metrics_row(group_id: str, rebalances: list[dict], gaps: list[dict] | None) -> dict:
    later = sum(entry["count"] for entry in rebalances)
    return {"group_id": group_id, "end_state": "Stable", "rebalance_causes": [
                {"cause": "member_join", "count": 1 + later}], "rebalances_after_formation": later,
            "time_to_stable_ms": 6_000, "rebalance_durations": rebalances,
            "unconsumed_partition_ms": None if gaps is None else sum(g["ms"] * g["count"] for g in gaps),
            "unconsumed_gap_durations": gaps, "partitions_moved": 0, "duplicate_records": 0, "skipped_records": 0,
            "failed_commits": 0, "unsent_commits": 0}


def rendered(summary) -> dict[str, str]:
    """Each line of the printed summary of one set: label -> value."""
    console = Console(file=io.StringIO(), width=120)
    render(console, [summary])
    return {label.strip(): value.strip() for label, value in
            (line.split("  ", 1) for line in console.file.getvalue().splitlines() if "  " in line)}


def test_percentiles_spread_over_the_sets_rebalances_and_gaps_not_over_its_groups():
    scenario = parse_scenario(SCENARIO)
    rows = [metrics_row("orders-0", [{"ms": 1_000, "count": 1}], [{"ms": 100, "count": 3}]),
            metrics_row("orders-1", [{"ms": 2_000, "count": 1}, {"ms": 4_000, "count": 2}],
                        [{"ms": 9_000, "count": 1}])]
    [summary] = summarize(scenario, {"orders": ["orders-0", "orders-1"]}, {"metrics": rows})
    lines = rendered(summary)
    # Formation apart; the rebalances after it: 1, 2, 4, 4 s.
    assert lines["formation p50/p99/max"] == "6.00 / 6.00 / 6.00 s"
    assert lines["rebalances after formation"] == "4" and lines["rebalances"] == "6"
    assert lines["later rebalance p50/p99/max"] == "2.00 / 4.00 / 4.00 s"
    # Four gaps, 0.1 s three times and 9 s once: the set's p50 is a gap's, not a p50 of the groups' p50s.
    assert lines["unconsumed gap p50/p99/max"] == "0.10 / 9.00 / 9.00 s"
    assert lines["unconsumed partition-seconds"] == "9.3"


def test_groups_without_synthetic_clients_show_no_unconsumed_figures():
    scenario = parse_scenario(SCENARIO)
    rows = [metrics_row("orders-0", [], None) | {"partitions_moved": None, "duplicate_records": None,
                                                 "skipped_records": None, "failed_commits": 0,
                                                 "unsent_commits": None}]
    [summary] = summarize(scenario, {"orders": ["orders-0"]}, {"metrics": rows})
    lines = rendered(summary)
    for label in ("later rebalance p50/p99/max", "unconsumed partition-seconds", "unconsumed gap p50/p99/max"):
        assert lines[label] == "-", label


def test_a_legend_under_the_lines_says_what_each_rebalance_line_counts_for_either_protocol():
    scenario = parse_scenario(SCENARIO)
    [summary] = summarize(scenario, {"orders": ["orders-0"]}, {"metrics": [metrics_row("orders-0", [], None)]})
    console = Console(file=io.StringIO(), width=200)
    render(console, [summary])
    legend = " ".join(console.file.getvalue().split("end states")[1].split())
    assert "formation: a group's first event until it is Stable with its first members" in legend
    assert "rebalances after formation: those started after it, alike for both protocols" in legend
    assert "consumer, a group epoch bump (one per member joining; Kafka's consumer-group-rebalance-count)" in legend
