"""`coordsim capacity`: what each broker's group coordinator takes per second, from the run's
`coordinator_load` table (docs/capacity.md): per broker, for each API's requests and for the
`__consumer_offsets` records and bytes, the mean, the 99th-percentile window and the busiest window, in
steady state and during the run's actions separately; then the hottest broker and the skew, and what the
coordinator moves cost (`simulations.views.coordinators`).

Rates are per second of a window (value / window seconds); a window with nothing is a zero. A window is
"during actions" when it overlaps one of the actions `coordsim run` recorded in `scenario/actions.json`
(from the action's first group's start to its last directive); a run without that file (a replay) is all
steady state. A broker's steady state is the steady windows in which it coordinates at least one group: a
broker that leads nothing (down, or back but not yet given its partitions again) takes no coordinator load,
and averaging those windows in would understate what it takes when it leads. The 99th percentile is the
nearest rank (`state.metrics.nearest_rank`). The cluster's brokers are the ones `coordsim run` recorded in
`scenario/brokers.json` (a replay: those the tables name); every one counts in the skew, leading or not.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simulations.views.coordinators import (STATE_COLUMNS, coordinating, coordinator_moves, move_figures,
                                            windows_touched)
from simulations.views.run_tables import TIME_COLUMNS, load_run
from state.metrics import nearest_rank
from state.quiet_run import COUNT, INTERVAL
from state.tables import columns
from tableio.coordinator_load import (TABLE, WINDOW_MS, LoadError, coordinator_load, first_time, read_inputs,
                                     run_window_ms)

# Beside the run's scenario and events in RUN_DIR/scenario/ (written by `coordsim run`; a sweep's: per variant).
ACTIONS_FILE = "actions.json"
BROKERS_FILE = "brokers.json"
MEASURES = ("requests", "records", "bytes")
ALL = "all"  # the sum of a measure's names
PHASES = ("steady", "actions")


class CapacityError(ValueError):
    """A user's mistake: an unknown broker, a bad window."""


@dataclass
class Figure:
    broker_id: int | None
    phase: str               # steady | actions
    measure: str             # requests | records | bytes
    name: str                # an API, a record type, or `all`
    mean: float              # per second
    p99: float               # per second, the 99th-percentile window
    max: float               # per second, the busiest window


@dataclass
class Capacity:
    run_dir: str
    window_ms: int
    seconds: dict[str, float]                   # per phase
    actions: list[dict]
    actions_recorded: bool
    brokers: list[int | None]
    figures: list[Figure] = field(default_factory=list)
    hottest: int | None = None                  # broker id
    hottest_rate: float = 0.0                   # its mean requests per second over the run
    skew: float | None = None                   # hottest / mean over the brokers
    formed_ts: int | None = None                # the last group's first Stable: windows before it are forming
    forming_s: float = 0.0                      # seconds of forming windows (neither steady nor actions)
    variant: str | None = None                  # the sweep variant the figures are of
    # Per broker id, its steady seconds: the steady windows in which it coordinates at least one group.
    steady_by_broker: dict[int, float] = field(default_factory=dict)
    moves: dict = field(default_factory=dict)   # coordinators.move_figures
    broker: int | None = None                   # the one broker asked for (--broker), None: all


def parse_window(text: str) -> int:
    """`1s`, `500ms`, `1m` ... or whole milliseconds, as the scenarios' durations."""
    from simulations.scenarios.document import Node, ScenarioError, as_duration_ms

    value = int(text) if text.strip().isdigit() else text
    try:
        return as_duration_ms(Node(value, "--window", None, ""), positive=True)
    except ScenarioError as error:
        raise CapacityError(str(error)) from None


def capacity(run_dir: str, window_ms: int | None = None, broker: int | None = None,
             variant: str | None = None) -> Capacity:
    """`window_ms` None: the run's table's own window; `variant`: the variant of a sweep (its own figures, as
    if it had run alone)."""
    load, states, final, formed = _load(run_dir, window_ms, variant)
    window_ms = int(load["window_ms"].iloc[0]) if len(load) else (window_ms or WINDOW_MS)
    spans = coordinating(states, final)
    named = sorted(set(load["broker_id"].dropna().astype(int)) | set(recorded_brokers(Path(run_dir), variant) or ())
                   | set(spans))
    brokers = [None, *named] if load["broker_id"].isna().any() or not named else named
    if broker is not None and broker not in brokers:
        known = ", ".join(str(b) for b in brokers if b is not None)
        raise CapacityError(f"--broker {broker}: not in this run " +
                            (f"(brokers: {known})" if known else "(it has no cluster: one coordinator, no broker ids)"))
    actions, recorded = read_actions(Path(run_dir), variant)
    first = int(load["window_start_ts"].min()) if len(load) else (final // window_ms) * window_ms
    starts = np.arange(first, (final // window_ms) * window_ms + 1, window_ms, dtype="int64")
    during = during_actions(starts, window_ms, actions)
    # The groups' formation (every group's first JoinGroups) is neither steady state nor an action.
    forming = ~during & (starts < formed) if formed is not None else np.zeros(len(starts), dtype=bool)
    steady = ~during & ~forming
    # A broker's steady state: the steady windows in which it coordinates a group. All of them where the
    # tables tell no broker's groups (a run without a cluster: one coordinator), and for FindCoordinator's
    # null broker beside named ones (a lookup to a broker the input does not name).
    steady_of = {b: steady & windows_touched(spans.get(b, []), first, window_ms, len(starts)) for b in named
                 } if spans else {}
    result = Capacity(run_dir, window_ms,
                      {"steady": _seconds(steady, window_ms), "actions": _seconds(during, window_ms)},
                      actions, recorded, brokers, formed_ts=formed, forming_s=_seconds(forming, window_ms),
                      variant=variant, moves=move_figures(coordinator_moves(states, final)), broker=broker,
                      steady_by_broker={b: _seconds(mask, window_ms) for b, mask in steady_of.items()})
    counted = load[load["measure"].isin(MEASURES)]
    counted = pd.concat([counted, counted.assign(name=ALL)])
    matrix = (counted.assign(broker=counted["broker_id"].astype("float64").fillna(-1), at=lambda f: (
        (f["window_start_ts"] - first) // window_ms))
              .pivot_table(index=["broker", "measure", "name"], columns="at", values="value", aggfunc="sum",
                           fill_value=0)
              .reindex(columns=range(len(starts)), fill_value=0))
    # A broker of the cluster that took nothing still has its line of requests: zeros.
    idle = [(float(b), "requests", ALL) for b in named if (float(b), "requests", ALL) not in matrix.index]
    if idle:
        matrix = pd.concat([matrix, pd.DataFrame(0, index=pd.MultiIndex.from_tuples(idle, names=matrix.index.names),
                                                 columns=matrix.columns)])
    per_second = matrix.to_numpy(dtype="float64") / (window_ms / 1000)
    requests = {}
    for (b, measure, name), rates in zip(matrix.index, per_second):
        broker_id = None if b == -1 else int(b)
        if measure == "requests" and name == ALL:
            requests[broker_id] = rates.mean() if len(rates) else 0.0
        if broker is not None and broker_id != broker:
            continue
        for phase, mask in (("steady", steady_of.get(broker_id, steady)), ("actions", during)):
            if mask.any():
                chosen = rates[mask]
                result.figures.append(Figure(broker_id, phase, measure, name, float(chosen.mean()),
                                             float(nearest_rank(Counter(chosen.tolist()), 99)), float(chosen.max())))
    result.figures.sort(key=lambda f: (f.broker_id is not None, f.broker_id or 0, PHASES.index(f.phase),
                                       MEASURES.index(f.measure), f.name == ALL, f.name))
    # Every broker of the cluster counts in the skew, those that took no request too.
    rates = {b: requests.get(b, 0.0) for b in named} or requests
    if rates:
        result.hottest = max(rates, key=lambda b: (rates[b], -(b or 0)))
        result.hottest_rate = float(rates[result.hottest])
        mean = sum(rates.values()) / len(rates)
        result.skew = float(result.hottest_rate / mean) if mean else None
    return result


def _seconds(windows: np.ndarray, window_ms: int) -> float:
    return int(windows.sum()) * window_ms / 1000


def during_actions(starts: np.ndarray, window_ms: int, actions: list[dict]) -> np.ndarray:
    """Which windows (their starts) are during actions: those overlapping an action's [start_ts, end_ts]."""
    during = np.zeros(len(starts), dtype=bool)
    for action in actions:
        during |= (starts < action["end_ts"] + 1) & (starts + window_ms > action["start_ts"])
    return during


def _load(run_dir: str, window_ms: int | None, variant: str | None
          ) -> tuple[pd.DataFrame, pd.DataFrame, int, int | None]:
    """The run's coordinator_load rows at `window_ms` (computed again from its tables when the table has
    another window or the run predates it), its group_states rows, its final time, and when its groups had
    formed (the last group's first Stable; None when none became Stable)."""
    wanted = {table: list(names) + ([COUNT, INTERVAL] if table in ("responses", "offsets") else [])
              for table, names in TIME_COLUMNS.items()}
    wanted["group_states"] = STATE_COLUMNS
    run = load_run(run_dir, {**wanted, TABLE: columns(TABLE)}, variant)
    final = run.end_ts
    if final is None:
        raise CapacityError(f"{run_dir}: the run has no events")
    load = run[TABLE]
    windows = set(load["window_ms"].dropna().astype(int))
    if window_ms is None:
        window_ms = (next(iter(windows)) if len(windows) == 1
                     else run_window_ms(first_time(Path(run_dir), variant), final))
    if windows != {window_ms} or not (Path(run_dir) / TABLE).is_dir():
        try:
            load = coordinator_load(read_inputs(Path(run_dir), variant), first_time(Path(run_dir), variant), final,
                                    window_ms).to_pandas()
        except LoadError as error:
            raise CapacityError(f"--window: {error}") from None
    states = run["group_states"]
    stable = states[states["to_state"] == "Stable"].groupby("group_id")["ts"].min()
    return load, states, final, None if stable.empty else int(stable.max())


def read_actions(root: Path, variant: str | None) -> tuple[list[dict], bool]:
    """The actions `coordsim run` recorded (a sweep's: per variant), and whether it recorded them."""
    recorded = _recorded(root, ACTIONS_FILE, variant)
    return ([], False) if recorded is None else (recorded, True)


def recorded_brokers(root: Path, variant: str | None) -> list[int] | None:
    """The ids of the brokers of the run's cluster, as `coordsim run` recorded them; None for a run without a
    cluster or without the record (a replay)."""
    return _recorded(root, BROKERS_FILE, variant)


def _recorded(root: Path, name: str, variant: str | None):
    try:
        recorded = json.loads((root / "scenario" / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return recorded if variant is None else recorded.get(variant)


# -- output ----------------------------------------------------------------------------------------------

def _rate(value: float) -> str:
    if value >= 10_000_000:
        return f"{value / 1e6:.0f}M"
    if value >= 10_000:
        return f"{value / 1e3:.0f}k"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _iso(ts_ms: int) -> str:
    return _dt.datetime.fromtimestamp(ts_ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _broker(result: Capacity, broker_id: int | None) -> str:
    """A null broker is the one coordinator of a run without brokers, or, beside real ones, the broker of a
    FindCoordinator the input did not say (no `live_brokers` fault: docs/events.md)."""
    if broker_id is None:
        return "(one coordinator)" if result.brokers == [None] else "(any broker: FindCoordinator)"
    return str(broker_id)


def render_text(result: Capacity) -> list[str]:
    """Lines of at most 80 columns."""
    lines = [f"variant {result.variant}"] if result.variant is not None else []
    lines += [f"group coordinator load per second, over {result.window_ms / 1000:g} s windows",
             f"steady {result.seconds['steady']:,.0f} s, during actions {result.seconds['actions']:,.0f} s"
             + ("" if result.actions_recorded else " (no action times recorded: all steady)")]
    if result.forming_s:
        lines.append(f"  groups forming (not shown): {result.forming_s:,.0f} s, until every group's first Stable "
                     f"at {_iso(result.formed_ts)}")
    lines += [f"  {a['action']}: {_iso(a['start_ts'])} to {_iso(a['end_ts'])}" for a in result.actions]
    rows: dict[tuple, dict[str, Figure]] = {}
    for f in result.figures:
        rows.setdefault((f.broker_id, f.measure, f.name), {})[f.phase] = f
    current = object()
    for (broker_id, measure, name), by_phase in rows.items():
        if broker_id != current:
            current = broker_id
            lines += ["", f"{'broker ' + _broker(result, broker_id):<24}{'steady':^24}  {'during actions':^24}",
                      f"{'':<24}{'mean':>8}{'p99':>8}{'max':>8}  {'mean':>8}{'p99':>8}{'max':>8}"]
            led = result.steady_by_broker.get(broker_id, result.seconds["steady"])
            if led < result.seconds["steady"]:
                lines.append(f"  steady: the {led:,.0f} s it coordinates groups (not the "
                             f"{result.seconds['steady'] - led:,.0f} s it coordinates none)")
        cells = []
        for phase in PHASES:
            f = by_phase.get(phase)
            cells.append("".join(f"{_rate(v):>8}" for v in (f.mean, f.p99, f.max)) if f else f"{'-':>8}" * 3)
        lines.append(f"  {measure + ' ' + name:<22}{cells[0]}  {cells[1]}")
    shown = {f.broker_id for f in result.figures}
    unshown = [str(b) for b in result.brokers if b is not None and b not in shown and result.broker in (None, b)]
    if unshown:
        lines += ["", f"broker{'s' * (len(unshown) > 1)} {', '.join(unshown)}: no steady state (coordinating no "
                      f"group) and no action: no figures"]
    if result.figures:
        counted = len([b for b in result.brokers if b is not None]) or len(result.brokers)
        skew = "" if result.skew is None else f", skew {result.skew:.2f} (max / mean of {counted})"
        hottest = _broker(result, result.hottest)
        lines += ["", f"hottest broker {hottest}: {_rate(result.hottest_rate)} requests/s{skew}"]
    lines += _moves_lines(result.moves)
    return [line.rstrip() for line in lines]


def _moves_lines(moves: dict) -> list[str]:
    if not moves["coordinator_moves"]:
        return ["coordinator moves: none"]
    return [f"coordinator moves: {moves['coordinator_moves']:,}, of {moves['groups_without_coordinator']:,} groups",
            f"  without a coordinator: up to {moves['without_coordinator_ms_max'] / 1000:,.2f} s, "
            f"{moves['without_coordinator_ms'] / 1000:,.1f} group-s in all"]


def render_csv(results: list[Capacity]) -> str:
    """One row per (variant,) broker, phase, measure and name; a sweep's rows start with their variant."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    sweep = results[0].variant is not None
    writer.writerow(["variant"] * sweep + ["broker_id", "phase", "measure", "name", "mean_per_s", "p99_per_s",
                                           "max_per_s"])
    for result in results:
        for f in result.figures:
            writer.writerow([result.variant] * sweep + ["" if f.broker_id is None else f.broker_id, f.phase,
                                                        f.measure, f.name, f"{f.mean:.3f}", f"{f.p99:.3f}",
                                                        f"{f.max:.3f}"])
    return out.getvalue()


def render_json(results: list[Capacity]) -> str:
    """A run's figures as one object; a sweep's as a list of them, each naming its variant."""
    objects = [{
        **({"variant": result.variant} if result.variant is not None else {}),
        "run": result.run_dir, "window_ms": result.window_ms, "seconds": result.seconds,
        "actions": result.actions, "actions_recorded": result.actions_recorded,
        "forming": {"seconds": result.forming_s, "until_ts": result.formed_ts},
        "hottest": {"broker_id": result.hottest, "requests_per_s": result.hottest_rate, "skew": result.skew},
        "steady_by_broker": {str(b): seconds for b, seconds in result.steady_by_broker.items()},
        "coordinator_moves": result.moves,
        "figures": [asdict(f) for f in result.figures],
    } for result in results]
    return json.dumps(objects if results[0].variant is not None else objects[0], indent=1)
