"""`coordsim capacity`: what each broker's group coordinator takes per second, from the run's
`coordinator_load` table (docs/capacity.md): per broker, for each API's requests and for the
`__consumer_offsets` records and bytes, the mean, the 99th-percentile window and the busiest window, in
steady state and during the run's actions separately; then the hottest broker and the skew.

Rates are per second of a window (value / window seconds); a window with nothing is a zero. A window is
"during actions" when it overlaps one of the actions `coordsim run` recorded in `scenario/actions.json`
(from the action's first group's start to its last directive); a run without that file (a replay) is all
steady state. The 99th percentile is the nearest rank: the smallest window rate at or above 99 % of them.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from simulations.views.run_tables import TIME_COLUMNS, load_run
from state.tables import columns
from tableio.coordinator_load import (TABLE, WINDOW_MS, LoadError, coordinator_load, first_time, read_inputs,
                                     run_window_ms)
from tableio.quiet_run import COUNT, INTERVAL

# Beside the run's scenario and events in RUN_DIR/scenario/ (written by `coordsim run`).
ACTIONS_FILE = "actions.json"
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
    load, final, formed = _load(run_dir, window_ms, variant)
    window_ms = int(load["window_ms"].iloc[0]) if len(load) else (window_ms or WINDOW_MS)
    brokers = sorted(load["broker_id"].dropna().astype(int).unique().tolist())
    if load["broker_id"].isna().any() or not brokers:
        brokers = [None, *brokers]
    if broker is not None and broker not in brokers:
        known = ", ".join(str(b) for b in brokers if b is not None)
        raise CapacityError(f"--broker {broker}: not in this run " +
                            (f"(brokers: {known})" if known else "(it has no cluster: one coordinator, no broker ids)"))
    actions, recorded = _actions(Path(run_dir), variant)
    first = int(load["window_start_ts"].min()) if len(load) else (final // window_ms) * window_ms
    starts = np.arange(first, (final // window_ms) * window_ms + 1, window_ms, dtype="int64")
    during = np.zeros(len(starts), dtype=bool)
    for action in actions:
        during |= (starts < action["end_ts"] + 1) & (starts + window_ms > action["start_ts"])
    # The groups' formation (every group's first JoinGroups) is neither steady state nor an action.
    forming = ~during & (starts < formed) if formed is not None else np.zeros(len(starts), dtype=bool)
    phases = {"steady": ~during & ~forming, "actions": during}
    result = Capacity(run_dir, window_ms, {p: int(mask.sum()) * window_ms / 1000 for p, mask in phases.items()},
                      actions, recorded, brokers, formed_ts=formed,
                      forming_s=int(forming.sum()) * window_ms / 1000, variant=variant)
    counted = load[load["measure"].isin(MEASURES)]
    counted = pd.concat([counted, counted.assign(name=ALL)])
    matrix = (counted.assign(broker=counted["broker_id"].astype("float64").fillna(-1), at=lambda f: (
        (f["window_start_ts"] - first) // window_ms))
              .pivot_table(index=["broker", "measure", "name"], columns="at", values="value", aggfunc="sum",
                           fill_value=0)
              .reindex(columns=range(len(starts)), fill_value=0))
    per_second = matrix.to_numpy(dtype="float64") / (window_ms / 1000)
    requests = {}
    for (b, measure, name), rates in zip(matrix.index, per_second):
        broker_id = None if b == -1 else int(b)
        if measure == "requests" and name == ALL:
            requests[broker_id] = rates.mean() if len(rates) else 0.0
        if broker is not None and broker_id != broker:
            continue
        for phase, mask in phases.items():
            if mask.any():
                chosen = np.sort(rates[mask])
                p99 = chosen[max(0, math.ceil(0.99 * len(chosen)) - 1)]
                result.figures.append(Figure(broker_id, phase, measure, name, float(chosen.mean()), float(p99),
                                             float(chosen[-1])))
    result.figures.sort(key=lambda f: (f.broker_id is not None, f.broker_id or 0, PHASES.index(f.phase),
                                       MEASURES.index(f.measure), f.name == ALL, f.name))
    named = {b: rate for b, rate in requests.items() if b is not None} or requests
    if named:
        result.hottest = max(named, key=lambda b: (named[b], -(b or 0)))
        result.hottest_rate = float(named[result.hottest])
        mean = sum(named.values()) / len(named)
        result.skew = float(result.hottest_rate / mean) if mean else None
    return result


def _load(run_dir: str, window_ms: int | None, variant: str | None) -> tuple[pd.DataFrame, int, int | None]:
    """The run's coordinator_load rows at `window_ms` (computed again from its tables when the table has
    another window or the run predates it), its final time, and when its groups had formed (the last
    group's first Stable; None when none became Stable)."""
    wanted = {table: list(names) + ([COUNT, INTERVAL] if table in ("responses", "offsets") else [])
              for table, names in TIME_COLUMNS.items()}
    wanted["group_states"] += ["group_id", "to_state"]
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
    return load, final, None if stable.empty else int(stable.max())


def _actions(root: Path, variant: str | None) -> tuple[list[dict], bool]:
    """The actions `coordsim run` recorded (a sweep's: per variant)."""
    path = root / "scenario" / ACTIONS_FILE
    try:
        actions = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], False
    return (actions, True) if variant is None else (actions.get(variant, []), variant in actions)


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
    """A null broker is the one coordinator of a run without brokers, or, beside real ones, the brokers at
    large: FindCoordinator goes to any broker."""
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
        cells = []
        for phase in PHASES:
            f = by_phase.get(phase)
            cells.append("".join(f"{_rate(v):>8}" for v in (f.mean, f.p99, f.max)) if f else f"{'-':>8}" * 3)
        lines.append(f"  {measure + ' ' + name:<22}{cells[0]}  {cells[1]}")
    if result.figures:
        counted = len([b for b in result.brokers if b is not None]) or len(result.brokers)
        skew = "" if result.skew is None else f", skew {result.skew:.2f} (max / mean of {counted})"
        hottest = _broker(result, result.hottest)
        lines += ["", f"hottest broker {hottest}: {_rate(result.hottest_rate)} requests/s{skew}"]
    return [line.rstrip() for line in lines]


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
        "figures": [asdict(f) for f in result.figures],
    } for result in results]
    return json.dumps(objects if results[0].variant is not None else objects[0], indent=1)
