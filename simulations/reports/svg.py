"""Hand-written SVG charts: a state band, stacked bars over time, bars by category and a heatmap. A chart
of zeros only is the word "none" instead (NOTHING), in the report as in the dashboard.

Inline SVG keeps a report one small file that opens without a network (a plotting library would inline
hundreds of kilobytes of JavaScript per file). Every chart is `WIDTH` wide with labels in a left margin;
hover titles (`<title>`) carry the exact figures. Times are epoch ms on the simulated clock, labelled in UTC.
"""

from __future__ import annotations

import datetime as _dt
import math
from html import escape
from typing import Sequence

from simulations.reports.panel import note
from simulations.views.history import UNAVAILABLE

WIDTH = 960
LEFT = 170  # room for group, partition and axis labels
RIGHT = 16
PLOT = WIDTH - LEFT - RIGHT
AXIS = 22  # height of a time axis under a chart
MAX_BAR = 36
LABEL_CHAR = 6.5  # the width of a tick label's character, at most (11 px sans-serif)

STATE_COLORS = {
    "Stable": "#43a047",
    "PreparingRebalance": "#fb8c00",
    "CompletingRebalance": "#fdd835",
    "Assigning": "#8e24aa",  # a consumer group's (KIP-848) rebalancing states
    "Reconciling": "#ce93d8",
    "Empty": "#cfd8dc",
    "Dead": "#37474f",
}
# A coordinator outage is no state of the group's: hatched, in the legend (CSS) as in the bands (SVG pattern).
UNAVAILABLE_CSS = "repeating-linear-gradient(45deg,#37474f 0 2px,#eceff1 2px 5px)"
_HATCH_ID = "coordinator-unavailable"
_HATCH = (f'<defs><pattern id="{_HATCH_ID}" width="5" height="5" patternUnits="userSpaceOnUse" '
          'patternTransform="rotate(45)"><rect width="5" height="5" fill="#eceff1"/>'
          '<rect width="2" height="5" fill="#37474f"/></pattern></defs>')
# Tableau 10: distinguishable categories (causes, groups, members).
PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac"]
UNOWNED = "#eceff1"
# A chart with nothing but zeros says so in a word: empty axes under overlapping labels tell nothing.
NOTHING = note("none")


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def iso(ts: int, spec: str = "milliseconds") -> str:
    return _dt.datetime.fromtimestamp(ts / 1000, _dt.timezone.utc).isoformat(timespec=spec).replace("+00:00", "Z")


def _clock(ts: int, span_ms: int) -> str:
    moment = _dt.datetime.fromtimestamp(ts / 1000, _dt.timezone.utc)
    return moment.strftime("%H:%M:%S.%f")[:-3] if span_ms < 10_000 else moment.strftime("%H:%M:%S")


def _svg(height: int, body: list[str], label: str) -> str:
    return (f'<svg viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
            f'height="{height}" role="img" aria-label="{escape(label)}">' + "".join(body) + "</svg>")


class TimeScale:
    def __init__(self, start: int, end: int) -> None:
        self.start = start
        self.end = max(end, start + 1)

    def x(self, ts: float) -> float:
        return LEFT + (min(max(ts, self.start), self.end) - self.start) / (self.end - self.start) * PLOT

    def axis(self, y: float) -> list[str]:
        parts = [f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + PLOT}" y2="{y}" class="axis"/>']
        for i in range(6):
            ts = self.start + (self.end - self.start) * i / 5
            x = self.x(ts)
            anchor = "start" if i == 0 else "end" if i == 5 else "middle"
            parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" class="axis"/>'
                         f'<text x="{x:.1f}" y="{y + 16}" text-anchor="{anchor}" class="tick">'
                         f'{_clock(int(ts), self.end - self.start)}</text>')
        return parts


def legend(items: Sequence[tuple[str, str]]) -> str:
    """An HTML legend (wraps better than SVG text): (label, colour) pairs."""
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{c}"></i>{escape(label)}</span>' for label, c in items) + "</div>"


def state_legend() -> str:
    """The legend of `state_bands`: every state's colour, a coordinator outage's hatch, the generation tick."""
    return legend([*STATE_COLORS.items(), (UNAVAILABLE, UNAVAILABLE_CSS), ("generation created", "#263238")])


def state_bands(rows: Sequence[dict], start: int, end: int) -> str:
    """One band per row: {"label", "segments": [(t0, t1, state)], "ticks": [(ts, generation)]}; a state is
    one of STATE_COLORS or UNAVAILABLE. Segments shorter than a pixel are drawn as one pixel, so a brief
    rebalance stays visible."""
    scale, band, gap = TimeScale(start, end), 18, 8
    outage = any(state == UNAVAILABLE for row in rows for _, _, state in row["segments"])
    body = [_HATCH] if outage else []
    for i, row in enumerate(rows):
        y = i * (band + gap) + 4
        body.append(f'<text x="{LEFT - 6}" y="{y + band - 5}" text-anchor="end" class="label">'
                    f'{escape(_short(row["label"]))}<title>{escape(row["label"])}</title></text>')
        for t0, t1, state in row["segments"]:
            x0, x1 = scale.x(t0), scale.x(t1)
            body.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{band}" '
                        f'fill="{_state_fill(state)}"><title>{escape(state)} {iso(t0)} → {iso(t1)}'
                        f'</title></rect>')
        for ts, generation in row["ticks"]:
            x = scale.x(ts)
            body.append(f'<line x1="{x:.1f}" y1="{y - 3}" x2="{x:.1f}" y2="{y + band + 3}" class="tick-mark">'
                        f'<title>generation {generation} at {iso(ts)}</title></line>')
    height = len(rows) * (band + gap) + 4
    body += scale.axis(height)
    return _svg(height + AXIS, body, "group state timeline")


def _state_fill(state: str) -> str:
    return f"url(#{_HATCH_ID})" if state == UNAVAILABLE else STATE_COLORS[state]


def stacked_bars(start: int, bin_ms: int, series: Sequence[tuple[str, str, Sequence[float]]], unit: str,
                 height: int = 180) -> str:
    """Bars over time bins of `bin_ms` from `start`, one stacked segment per (name, colour, values); "none"
    when every value is 0."""
    if not any(value for _, _, values in series for value in values):
        return NOTHING
    bins = len(series[0][2])
    scale = TimeScale(start, start + bins * bin_ms)
    totals = [sum(values[i] for _, _, values in series) for i in range(bins)]
    top = max(totals, default=0) or 1
    body = _y_axis(top, height, unit)
    for i in range(bins):
        x0, x1 = scale.x(start + i * bin_ms), scale.x(start + (i + 1) * bin_ms)
        base = height
        for name, fill, values in series:
            if not values[i]:
                continue
            h = values[i] / top * (height - 10)
            base -= h
            body.append(f'<rect x="{x0 + 0.5:.1f}" y="{base:.1f}" width="{max(x1 - x0 - 1, 1):.1f}" height="{h:.1f}" '
                        f'fill="{fill}"><title>{escape(name)}: {_num(values[i])} {escape(unit)} '
                        f'({iso(start + i * bin_ms)})</title></rect>')
    body += scale.axis(height)
    return _svg(height + AXIS, body, unit)


def bars(labels: Sequence[str], values: Sequence[float], fill: str, unit: str, height: int = 140,
         titles: Sequence[str] | None = None) -> str:
    """One bar per category, labelled under the axis when there is room; "none" when every value is 0."""
    if not any(values):
        return NOTHING
    top = max(values, default=0) or 1
    step = PLOT / max(len(values), 1)
    every = math.ceil((max(map(len, labels), default=0) * LABEL_CHAR + 4) / step)  # labels that do not overlap
    body = _y_axis(top, height, unit)
    for i, (label, value) in enumerate(zip(labels, values)):
        h = value / top * (height - 10)
        x = LEFT + i * step
        width = min(max(step * 0.8, 1), MAX_BAR)  # a handful of bars should not turn into slabs
        title = titles[i] if titles else f"{label}: {_num(value)} {unit}"
        body.append(f'<rect x="{x + (step - width) / 2:.1f}" y="{height - h:.1f}" width="{width:.1f}" '
                    f'height="{h:.1f}" fill="{fill}"><title>{escape(title)}</title></rect>')
        if i % every == 0:
            body.append(f'<text x="{x + step / 2:.1f}" y="{height + 14}" text-anchor="middle" class="tick">'
                        f'{escape(label)}</text>')
    body.append(f'<line x1="{LEFT}" y1="{height}" x2="{LEFT + PLOT}" y2="{height}" class="axis"/>')
    return _svg(height + AXIS, body, unit)


def heatmap(row_labels: Sequence[str], cells: Sequence[Sequence[int]], fills: Sequence[str],
            names: Sequence[str], start: int, bin_ms: int) -> str:
    """Rows × time bins; each cell an index into `fills`/`names`, or -1 for no owner."""
    bins = len(cells[0]) if cells else 0
    scale = TimeScale(start, start + bins * bin_ms)
    cell_h = 12 if len(row_labels) <= 40 else 7
    body = []
    for r, (label, row) in enumerate(zip(row_labels, cells)):
        y = r * cell_h
        if cell_h >= 10 or r % 4 == 0:
            body.append(f'<text x="{LEFT - 6}" y="{y + cell_h - 2}" text-anchor="end" class="label">'
                        f'{escape(label)}</text>')
        i = 0
        while i < bins:  # one rect per run of equal cells keeps big heatmaps small
            j = i
            while j + 1 < bins and row[j + 1] == row[i]:
                j += 1
            x0, x1 = scale.x(start + i * bin_ms), scale.x(start + (j + 1) * bin_ms)
            owner = row[i]
            fill, name = (fills[owner], names[owner]) if owner >= 0 else (UNOWNED, "no owner")
            body.append(f'<rect x="{x0:.1f}" y="{y}" width="{x1 - x0:.1f}" height="{cell_h - 1}" fill="{fill}">'
                        f'<title>{escape(label)}: {escape(name)} {iso(start + i * bin_ms)} → '
                        f'{iso(start + (j + 1) * bin_ms)}</title></rect>')
            i = j + 1
    height = len(row_labels) * cell_h
    body += scale.axis(height + 2)
    return _svg(height + AXIS + 2, body, "ownership heatmap")


def _y_axis(top: float, height: int, unit: str) -> list[str]:
    return [f'<line x1="{LEFT}" y1="10" x2="{LEFT}" y2="{height}" class="axis"/>',
            f'<text x="{LEFT - 6}" y="14" text-anchor="end" class="tick">{_num(top)}</text>',
            f'<text x="{LEFT - 6}" y="{height}" text-anchor="end" class="tick">0</text>',
            f'<text x="{LEFT - 6}" y="{height / 2:.0f}" text-anchor="end" class="unit">{escape(unit)}</text>']


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or float(value).is_integer() else f"{value:,.2f}"


def _short(label: str, limit: int = 26) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"
