"""The report's panels: each a title, a one-line reading guide and an HTML body (inline SVG or a note).

The static report and the live dashboard both render `build_panels`, so they always show the same thing.
A panel without data says so in words, "none" when its figures are all zero; it never draws invented numbers
nor empty axes.
"""

from __future__ import annotations

from html import escape

from simulations.reports import figures, svg
from simulations.reports.capacity_panels import capacity_panels
from simulations.reports.figures import Bins
from simulations.reports.group_sets import METRICS_COLUMNS, group_sets_panel
from simulations.reports.panel import Panel, note, span
from simulations.views.lag_status import NO_LOG_END_OFFSET
from tableio.lag_status import INPUT_COLUMNS as LAG_INPUT_COLUMNS
from tableio.lag_status import GroupStatus, LagHistory
from simulations.views.run_tables import RunTables

TOP_GROUPS = 8  # groups in the state timeline and the in-rebalance stack; the others are summed as "other"
TOP_MOVED = 6  # groups with a partitions-moved chart
MAX_GENERATIONS = 60  # bars per group in the partitions-moved chart (the latest ones)
NEEDS_CLIENTS = "needs synthetic clients"
TOP_UNCONSUMED = 20  # groups in the unconsumed partition time chart
TOP_LAG = 4  # groups with a lag status heatmap
MAX_NOT_OK = 30  # groups listed as not OK at the end
# Colours of figures.LAG_CELLS: OK, WARN, STOP, STALL, REWIND, no status.
LAG_FILLS = ["#43a047", "#fdd835", "#e15759", "#b07aa1", "#f28e2b", svg.UNOWNED]
OK_CELL = 0
# What the summary and the panels read of the run's tables whole (few, narrow columns); the commit rates and
# the lag status, which read wide or many columns of every group, read theirs one range of groups at a time.
COLUMNS = {
    "responses": ("group_id", "request_ts", "response_ts", "api", "error", "repeat_count", "repeat_interval_ms",
                  "coordinator_partition"),
    "generations": ("group_id", "generation_id", "protocol_name", "rebalance_start_ts", "join_complete_ts",
                    "stable_ts", "cause", "coordinator_partition"),
    "assignments": ("group_id", "generation_id", "member_id", "group_instance_id", "topic", "partition", "assign_ts",
                    "out_seq"),
    "offsets": ("group_id", "write_ts", "repeat_count", "repeat_interval_ms", "coordinator_partition"),
    "group_metadata": ("group_id", "write_ts", "coordinator_partition"),
    "group_states": ("group_id", "ts", "group_type", "from_state", "to_state", "cause", "generation_id",
                     "coordinator_id", "out_seq"),
    "members": ("group_id", "ts"),  # only for the run's groups and time span (RunTables)
    "metrics": tuple(dict.fromkeys((*METRICS_COLUMNS, *figures.UNCONSUMED))),
    "rejects": ("line",),
    "coordinator_load": ("broker_id", "window_start_ts", "measure", "name", "value"),
}


def build_panels(run: RunTables, group: str | None = None) -> list[Panel]:
    """Every panel for `run`; `group` is the heatmap's group (default: the busiest)."""
    start, end = run.start_ts, run.end_ts
    if start is None:
        return [Panel("empty", "No activity", "", '<p class="note">The run has no group activity yet.</p>')]
    ranked = figures.rank_groups(run)
    bins = Bins.over(start, end)
    chosen = group if group in ranked else ranked[0]
    sets = group_sets_panel(run)
    return [
        *([] if sets is None else [sets]),
        _timeline(run, ranked[:TOP_GROUPS], bins, end),
        _rebalances(run, bins),
        _unconsumed(run),
        _in_rebalance(run, ranked, bins, end),
        _moved(run, ranked[:TOP_MOVED]),
        _heatmap(run, chosen, bins, end),
        _consumption(run),
        _commits(run, bins),
        _lag(run, ranked[:TOP_GROUPS], bins, end),
        _load(run),
        *capacity_panels(run, bins),
    ]


def _timeline(run: RunTables, groups: list[str], bins: Bins, end: int) -> Panel:
    rows = [figures.state_segments(run, g, end) for g in groups]
    return Panel("timeline", "Group state timeline",
                 f"The {len(groups)} groups with the most rebalances; a tick marks each new generation. Hatched: "
                 f"the group's coordinator was not available (from an unload, its broker failing or its "
                 f"partition moving, to the next load); Dead is a group that ended.",
                 svg.state_legend() + svg.state_bands(rows, bins.start, bins.end))  # the time axis of every panel


def _rebalances(run: RunTables, bins: Bins) -> Panel:
    counts = figures.rebalances_by_cause(run, bins)
    title, guide = "Rebalances over time by cause", f"Rebalances started per {span(bins.width_ms)}, by cause."
    if not counts:
        return Panel("rebalances", title, guide, note("No rebalance in this run."))
    series = [(cause, svg.color(i), values) for i, (cause, values) in enumerate(counts.items())]
    return Panel("rebalances", title, guide,
                 svg.legend([(c, f) for c, f, _ in series]) + svg.stacked_bars(bins.start, bins.width_ms, series,
                                                                               "rebalances"))


def _unconsumed(run: RunTables) -> Panel:
    per_group = figures.unconsumed(run)
    title = "Unconsumed partition time"
    guide = ("The consumers' view: partition-seconds during which no consumer was processing a partition "
             "(revoked, lost, crashed, closed, until a consumer resumes it), per group, and the p99 of the "
             "individual gaps; the groups with the most (metrics table).")
    if per_group is None:
        return Panel("unconsumed", title, guide, note(
            f"{NEEDS_CLIENTS.capitalize()}: only synthetic consumers say when they stop and resume processing "
            "(a replay of captured requests does not)."))
    top = per_group.sort_values("unconsumed_partition_ms", ascending=False, kind="stable").head(TOP_UNCONSUMED)
    if not top["unconsumed_partition_ms"].any():
        return Panel("unconsumed", title, guide, note("No partition was ever left unconsumed."))
    labels = list(top.index)
    titles = [f"{g}: {r.unconsumed_partition_ms / 1000:,.1f} partition-s over {int(r.unconsumed_gaps)} gaps; "
              f"gap p50 {r.unconsumed_gap_ms_p50 / 1000:,.1f} s, p99 {r.unconsumed_gap_ms_p99 / 1000:,.1f} s, "
              f"max {r.unconsumed_gap_ms_max / 1000:,.1f} s" for g, r in top.iterrows()]
    return Panel("unconsumed", title, guide,
                 "<h3>partition-seconds unconsumed</h3>"
                 + svg.bars(labels, (top["unconsumed_partition_ms"] / 1000).tolist(), svg.PALETTE[0],
                            "partition-s", titles=titles)
                 + "<h3>gap p99</h3>"
                 + svg.bars(labels, (top["unconsumed_gap_ms_p99"] / 1000).tolist(), svg.PALETTE[3], "s",
                            titles=titles))


def _in_rebalance(run: RunTables, ranked: list[str], bins: Bins, end: int) -> Panel:
    per_group = figures.partition_seconds_in_rebalance(run, ranked, bins, end)
    title = "Partition time in rebalance over time"
    guide = (f"The coordinator's view, of classic groups: partitions of a Stable generation's assignment held "
             f"from a rebalance's start until the group is next Stable, in partition-seconds per "
             f"{span(bins.width_ms)}, stacked by group. A static member's restart causes no rebalance, and a "
             f"consumer group's members keep what they keep through its epochs: see Unconsumed partition time "
             f"for the time nobody processed a partition.")
    if not per_group:
        return Panel("in_rebalance", title, guide, note("No partition was held in a rebalance of a Stable group."))
    top = sorted(per_group, key=lambda g: -sum(per_group[g]))
    series = [(g, svg.color(i), per_group[g]) for i, g in enumerate(top[:TOP_GROUPS])]
    if len(top) > TOP_GROUPS:
        rest = [sum(per_group[g][b] for g in top[TOP_GROUPS:]) for b in range(bins.count)]
        series.append((f"{len(top) - TOP_GROUPS} other groups", "#9e9e9e", rest))
    return Panel("in_rebalance", title, guide, svg.legend([(g, f) for g, f, _ in series])
                 + svg.stacked_bars(bins.start, bins.width_ms, series, "partition-s"))


def _moved(run: RunTables, groups: list[str]) -> Panel:
    charts, generations = [], False
    for group in groups:
        moved = figures.partitions_reassigned(run, group)[-MAX_GENERATIONS:]
        generations = generations or bool(moved)
        if not any(m for _, m, _ in moved):
            continue
        total = sum(m for _, m, _ in moved)
        charts.append(f"<h3>{escape(group)} <small>{total} reassigned over {len(moved)} generations</small></h3>"
                      + svg.bars([str(g) for g, _, _ in moved], [m for _, m, _ in moved], svg.PALETTE[0],
                                 "partitions", height=90,
                                 titles=[f"generation {g}: {m} of {n} partitions reassigned" for g, m, n in moved]))
    guide = ("The coordinator's view: per Stable generation (x: generation id; a consumer group's group epoch once "
             "every member reconciled to it), partitions whose owner changed since the group's previous Stable "
             "generation; the groups with the most rebalances. The summary's partitions moved is the consumers' "
             "view (a client starting on a partition another client had).")
    empty = ("None: no partition changed owner between Stable generations." if generations
             else "No group had two Stable generations with assignments.")
    return Panel("moved", "Partitions reassigned per Stable generation", guide, "".join(charts) or note(empty))


def _heatmap(run: RunTables, group: str, bins: Bins, end: int) -> Panel:
    partitions, owners, cells = figures.ownership(run, group, bins, end)
    title = f"Partition ownership over time: {group}"
    guide = ("Each row a partition, each colour the member owning it for most of the time slice; pale: no owner. "
             "A static member keeps its colour across restarts.")
    if not partitions:
        return Panel("heatmap", title, guide, note(f"Group {group} has no assignment."))
    if not any(cell >= 0 for row in cells for cell in row):
        return Panel("heatmap", title, guide, note(f"None: no member of {group} owned a partition for most of "
                                                    f"a time slice."))
    fills = [svg.color(i) for i in range(len(owners))]
    return Panel("heatmap", title, guide,
                 svg.legend(list(zip(owners, fills)) + [("no owner", svg.UNOWNED)])
                 + svg.heatmap([f"{t}-{p}" for t, p in partitions], cells, fills, owners, bins.start, bins.width_ms))


def _consumption(run: RunTables) -> Panel:
    figures_ = figures.consumption(run)
    title, guide = "Duplicate and skipped records", "Records processed twice, or never, because of rebalances."
    if figures_ is None:
        return Panel("consumption", title, guide, note(
            f"{NEEDS_CLIENTS.capitalize()}: records are consumed only by synthetic clients, and this run has none "
            "(a replay of captured requests carries no records)."))
    if not figures_.to_numpy().any():
        return Panel("consumption", title, guide, note("None: no record was processed twice or skipped."))
    top = figures_.sort_values(["duplicate_records", "skipped_records"], ascending=False).head(20)
    labels = list(top.index)
    return Panel("consumption", title, guide,
                 "<h3>duplicates</h3>" + svg.bars(labels, top["duplicate_records"].tolist(), svg.PALETTE[2], "records")
                 + "<h3>skipped</h3>" + svg.bars(labels, top["skipped_records"].tolist(), svg.PALETTE[1], "records"))


def _commits(run: RunTables, bins: Bins) -> Panel:
    rates = figures.commit_rates(run, bins)
    guide = "Per second, averaged over each time slice: partitions committed, and OffsetCommit requests by outcome."
    if not any(any(values) for values in rates.values()):
        return Panel("commits", "Commit rate", guide, note("No offset commit in this run."))
    fills = {"partitions committed": svg.PALETTE[0], "commit requests ok": svg.PALETTE[4],
             "commit requests failed": svg.PALETTE[2]}
    parts = [f"<h3>{escape(name)}</h3>" + svg.stacked_bars(bins.start, bins.width_ms, [(name, fills[name], values)],
                                                         "per s", height=80)
             for name, values in rates.items() if any(values)]
    return Panel("commits", "Commit rate", guide, "".join(parts))


def _lag(run: RunTables, groups: list[str], bins: Bins, end: int) -> Panel:
    title = "Consumer lag status (Burrow)"
    guide = (f"Burrow's status of each committed partition at the end of every time slice, for the groups with "
             f"the most rebalances that were not always OK (at most {TOP_LAG}); then every group not OK at the "
             f"end. Rules and defaults: docs/tables.md#lag_status.")
    # Burrow's history holds every commit: it is built one range of groups at a time.
    committed, statuses, at_end = False, {}, []
    for part in run.ranges(LAG_INPUT_COLUMNS):
        history = LagHistory.from_run(part)
        committed = committed or bool(history.groups)
        known = set(history.groups)
        statuses.update({group: figures.lag_statuses(history, group, bins, end) for group in groups if group in known})
        at_end += [history.evaluate(g, end) for g in history.groups]
    if not committed:
        return Panel("lag", title, guide, note("No offset commit in this run."))
    charts = []
    for group in groups:
        partitions, cells = statuses.get(group, ([], []))
        if not any(c not in (OK_CELL, figures.NO_STATUS) for row in cells for c in row):
            continue
        charts.append(f"<h3>{escape(group)}</h3>" + svg.heatmap([f"{t}-{p}" for t, p in partitions], cells,
                                                                 LAG_FILLS, figures.LAG_CELLS, bins.start,
                                                                 bins.width_ms))
        if len(charts) == TOP_LAG:
            break
    if not charts:
        charts.append(note(f"No partition of the {len(groups)} groups with the most rebalances was WARN, STOP, "
                            "STALL or REWIND at the sampled times."))
    not_ok = [g for g in at_end if g is not None and g.status != "OK"]
    ending = "<h3>Groups not OK at the end</h3>"
    if not_ok:
        ending += "<ul>" + "".join(
            f"<li>{escape(g.group_id)}: {escape(g.status or 'no status: ' + NO_LOG_END_OFFSET)}"
            f"{escape(_worst(g))}</li>" for g in not_ok[:MAX_NOT_OK]) + "</ul>"
        if len(not_ok) > MAX_NOT_OK:
            ending += note(f"and {len(not_ok) - MAX_NOT_OK} more (coordsim lag RUN_DIR lists them all).")
    else:
        ending += note("None: every group with commits was OK at the end of the run.")
    legend = svg.legend(list(zip(figures.LAG_CELLS, LAG_FILLS)))
    return Panel("lag", title, guide, legend + "".join(charts) + ending)


def _worst(g: GroupStatus) -> str:
    bad = [p for p in g.partitions if p.status not in ("OK", None)]
    listed = ", ".join(f"{p.topic}-{p.partition} {p.status}" for p in bad[:6])
    return f" ({listed}{', …' if len(bad) > 6 else ''}; total lag {g.total_lag})" if bad else ""


def _load(run: RunTables) -> Panel:
    load = figures.partition_load(run)
    guide = ("Per __consumer_offsets partition (the group's coordinator, abs(hashCode(group.id)) % partitions): "
             "groups it coordinates and requests per second over the run.")
    labels = [str(p) for p in load.index]
    titles = [f"partition {p}: {int(r.groups)} groups, {r.requests_per_second:.2f} requests/s "
              f"(busiest second {int(r.peak_per_second)})" for p, r in load.iterrows()]
    return Panel("load", "Load per __consumer_offsets partition", guide,
                 "<h3>groups</h3>" + svg.bars(labels, load["groups"].tolist(), svg.PALETTE[0], "groups", 80, titles)
                 + "<h3>requests per second</h3>"
                 + svg.bars(labels, load["requests_per_second"].tolist(), svg.PALETTE[1], "req/s", 80, titles))
