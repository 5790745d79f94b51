"""The report's capacity page: each broker's group-coordinator load over time (from the `coordinator_load`
table, the figures `coordsim capacity` reads), the brokers side by side as a heatmap, and what coordinator
moves cost the groups that moved (`figures.coordinator_moves`)."""

from __future__ import annotations

from html import escape

import numpy as np
import pandas as pd

from simulations.reports import figures, svg
from simulations.reports.figures import Bins
from simulations.reports.panel import Panel, note, span
from simulations.views.run_tables import RunTables

# Fills of the heatmap's load levels, from idle to the busiest broker-bin of the run.
LEVEL_FILLS = ["#f1f8e9", "#c5e1a5", "#9ccc65", "#fb8c00", "#d84315"]


def capacity_panels(run: RunTables, bins: Bins) -> list[Panel]:
    per_broker = figures.broker_requests(run, bins)
    return [_requests(per_broker, bins), _heatmap(per_broker, bins), _moves(run)]


def _requests(per_broker: dict[str, list[float]], bins: Bins) -> Panel:
    title = "Requests per broker"
    guide = (f"Requests each broker's group coordinator received per second, averaged over {span(bins.width_ms)}, "
             "stacked by broker (coordinator_load; FindCoordinator goes to any broker).")
    if not per_broker:
        return Panel("broker-requests", title, guide, note("No coordinator_load table yet: it is written when "
                                                           "the run ends."))
    series = [(name, svg.color(i), values) for i, (name, values) in enumerate(per_broker.items())]
    return Panel("broker-requests", title, guide,
                 svg.legend([(n, f) for n, f, _ in series]) + svg.stacked_bars(bins.start, bins.width_ms, series,
                                                                               "requests/s"))


def _heatmap(per_broker: dict[str, list[float]], bins: Bins) -> Panel:
    title = "Broker load heatmap"
    top = max((max(values, default=0) for values in per_broker.values()), default=0)
    guide = (f"Each broker's requests per second per {span(bins.width_ms)}, in five levels of the busiest "
             f"broker-{span(bins.width_ms)} of the run ({top:.0f}/s); pale: idle or down.")
    if not per_broker or not top:
        return Panel("broker-heatmap", title, guide, note("No broker received requests."))
    edges = [top * k / len(LEVEL_FILLS) for k in range(1, len(LEVEL_FILLS))]
    cells = [[int(np.searchsorted(edges, v, side="left")) if v else 0 for v in values]
             for values in per_broker.values()]
    names = [f"up to {edge:.0f} requests/s" for edge in edges] + [f"up to {top:.0f} requests/s"]
    return Panel("broker-heatmap", title, guide,
                 svg.legend(list(zip(names, LEVEL_FILLS)))
                 + svg.heatmap(list(per_broker), cells, LEVEL_FILLS, names, bins.start, bins.width_ms))


def _moves(run: RunTables) -> Panel:
    title = "Coordinator moves"
    guide = ("Groups whose coordinator moved (a broker failing, shutting down or getting its partitions back), "
             "and how long each was without an answer from a coordinator: from the unload to its clients' "
             "first successful request other than FindCoordinator.")
    moves = figures.coordinator_moves(run)
    if moves.empty:
        return Panel("moves", title, guide, note("No group's coordinator moved in this run."))
    rows = []
    for (source, target), part in moves.groupby(["from_broker", "to_broker"], dropna=False, sort=True):
        gaps = part["gap_ms"].dropna()
        rows.append((_name(source), _name(target), len(part), part["group_id"].nunique(),
                     _seconds(gaps.quantile(0.5, interpolation="higher")) if len(gaps) else "–",
                     _seconds(gaps.max()) if len(gaps) else "–", int(part["unanswered"].sum())))
    head = ("from broker", "to broker", "moves", "groups", "without coordinator p50", "max", "groups never answered")
    table = "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows) + "</table>"
    return Panel("moves", title, guide, table)


def _name(broker) -> str:
    return "none" if broker is None or pd.isna(broker) else str(int(broker))


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"
