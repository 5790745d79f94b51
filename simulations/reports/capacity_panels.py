"""The report's capacity page: each broker's group-coordinator load over time (from the `coordinator_load`
table, the figures `coordsim capacity` reads), the brokers side by side as two heatmaps, and what coordinator
moves cost the groups that moved (`figures.coordinator_moves`).

The heatmaps split the APIs in two, each on its own scale: the group coordinator's (JoinGroup, SyncGroup,
Heartbeat, OffsetCommit, ...), the load a broker takes for the groups it leads, and FindCoordinator, which
any broker answers from its metadata, each counted at the broker its client sent it to. A broker failure's
lookups come in bursts up to several times a broker's steady load (`broker-failure` on 3 brokers: 394 a
second on broker 2, 62 steady): on one scale, they would leave the steady load in the palest levels."""

from __future__ import annotations

from collections import Counter
from html import escape

import numpy as np
import pandas as pd

from simulations.reports import figures, svg
from simulations.reports.figures import Bins
from simulations.reports.panel import Panel, note, span
from simulations.views.run_tables import RunTables
from state.metrics import nearest_rank

# Fills of a heatmap's load levels, from idle to its busiest broker-bin.
LEVEL_FILLS = ["#f1f8e9", "#c5e1a5", "#9ccc65", "#fb8c00", "#d84315"]


def capacity_panels(run: RunTables, bins: Bins) -> list[Panel]:
    return [_requests(figures.broker_requests(run, bins), bins),
            _heatmap("broker-heatmap", "Broker load heatmap", "the group coordinator's requests (every API but "
                     "FindCoordinator, below)", figures.broker_requests(run, bins, lookups=False), bins),
            _heatmap("lookup-heatmap", "FindCoordinator lookups per broker", "FindCoordinator requests (at the broker "
                     "each client sent them to)", figures.broker_requests(run, bins, lookups=True), bins),
            _moves(run)]


def _requests(per_broker: dict[str, list[float]], bins: Bins) -> Panel:
    title = "Requests per broker"
    guide = (f"Requests each broker's group coordinator received per second, averaged over {span(bins.width_ms)}, "
             "stacked by broker (coordinator_load; a FindCoordinator at the broker its client sent it to).")
    if not per_broker:
        return Panel("broker-requests", title, guide, note("No coordinator_load table yet: it is written when "
                                                           "the run ends."))
    series = [(name, svg.color(i), values) for i, (name, values) in enumerate(per_broker.items())]
    return Panel("broker-requests", title, guide,
                 svg.legend([(n, f) for n, f, _ in series]) + svg.stacked_bars(bins.start, bins.width_ms, series,
                                                                               "requests/s"))


def _heatmap(panel_id: str, title: str, what: str, per_broker: dict[str, list[float]], bins: Bins) -> Panel:
    top = max((max(values, default=0) for values in per_broker.values()), default=0)
    guide = (f"Each broker's {what} per second per {span(bins.width_ms)}, in five levels of this chart's "
             f"busiest broker-{span(bins.width_ms)} ({top:.0f}/s): its own scale, so that a burst of the other "
             f"chart's requests does not hide its steady load; pale: idle or down.")
    if not per_broker or not top:
        return Panel(panel_id, title, guide, note("No broker received such requests."))
    edges = [top * k / len(LEVEL_FILLS) for k in range(1, len(LEVEL_FILLS))]
    cells = [[int(np.searchsorted(edges, v, side="left")) if v else 0 for v in values]
             for values in per_broker.values()]
    names = [f"up to {edge:.0f} requests/s" for edge in edges] + [f"up to {top:.0f} requests/s"]
    return Panel(panel_id, title, guide,
                 svg.legend(list(zip(names, LEVEL_FILLS)))
                 + svg.heatmap(list(per_broker), cells, LEVEL_FILLS, names, bins.start, bins.width_ms))


def _moves(run: RunTables) -> Panel:
    title = "Coordinator moves"
    guide = ("Groups whose coordinator moved (a broker failing, shutting down or getting its partitions back): "
             "how long each was without a coordinator, from the unload to the load at its next coordinator "
             "(what `coordsim capacity` and a sweep's comparison give), and how long its clients waited for an "
             "answer, from the unload to their first successful request other than FindCoordinator. "
             "Percentiles are nearest-rank.")
    moves = figures.coordinator_moves(run)
    if moves.empty:
        return Panel("moves", title, guide, note("No group's coordinator moved in this run."))
    rows = []
    for (source, target), part in moves.groupby(["from_broker", "to_broker"], dropna=False, sort=True):
        rows.append((_name(source), _name(target), len(part), part["group_id"].nunique(),
                     *_spread(part["without_coordinator_ms"]), *_spread(part["answer_gap_ms"].dropna()),
                     int(part["unanswered"].sum())))
    head = ("from broker", "to broker", "moves", "groups", "without coordinator p50", "max", "until answered p50",
            "max", "groups never answered")
    table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows) + "</table>"
    return Panel("moves", title, guide, table)


def _spread(gaps: pd.Series) -> tuple[str, str]:
    """p50 and max, in seconds; dashes without a value."""
    if gaps.empty:
        return "–", "–"
    counts = Counter(int(gap) for gap in gaps)
    return _seconds(nearest_rank(counts, 50)), _seconds(nearest_rank(counts, 100))


def _name(broker) -> str:
    return "none" if broker is None or pd.isna(broker) else str(int(broker))


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"
