"""The HTML page around the panels: one self-contained document (inline CSS, inline SVG, no external URL),
used as the static report and, with a group picker and a refresh script, as the live dashboard."""

from __future__ import annotations

from collections import Counter
from html import escape
from pathlib import Path

from simulations.reports.figures import rebalances
from simulations.reports.panel import Panel
from simulations.reports.svg import iso
from simulations.views.quiet_runs import count_requests
from simulations.views.run_clock import run_clock
from simulations.views.run_tables import RunTables

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#212121;background:#fafafa}
header{background:#263238;color:#eceff1;padding:14px 24px}
header h1{font-size:20px;margin:0 0 6px}
header dl{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0}
header dt{opacity:.7}header dd{margin:0 0 0 4px;font-weight:600}
header div{display:flex}
main{padding:8px 24px 40px;max-width:1010px}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:12px 16px;margin:14px 0}
section h2{font-size:16px;margin:0 0 2px}
section h3{font-size:13px;margin:8px 0 0;color:#455a64}
section h3 small{font-weight:400;color:#78909c}
p.guide{margin:0 0 6px;color:#607d8b;font-size:13px}
p.note{color:#78909c;font-style:italic}
.legend{display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px;margin:4px 0}
.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
svg{display:block;max-width:100%;height:auto}
svg text{font-size:11px;fill:#455a64}
svg .label{font-size:11px;fill:#37474f}
svg .unit{font-size:10px;fill:#90a4ae}
svg .axis{stroke:#b0bec5}
svg .tick-mark{stroke:#263238;stroke-width:1.5}
label.picker{margin-left:auto;align-self:center}
select{font:inherit}
table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #eceff1;text-align:right}
th{color:#455a64}
"""

# Polls the dashboard for fresh panels; keeps the page (and the picked group) without a reload.
SCRIPT = """
const picker = document.getElementById('group');
let shown = {};
function swap(id, html) {  // only what changed: hover titles and the scroll position survive a refresh
  if (shown[id] !== html) { document.getElementById(id).innerHTML = html; shown[id] = html; }
}
async function refresh() {
  try {
    const reply = await fetch('panels?group=' + encodeURIComponent(picker.value), {cache: 'no-store'});
    if (!reply.ok) return;
    const data = await reply.json();
    swap('summary', data.summary);
    swap('panels', data.panels);
    const current = picker.value;
    const options = data.groups.map(g => `<option>${g.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</option>`).join('');
    if (shown.options !== options) { picker.innerHTML = options; shown.options = options; }
    picker.value = data.groups.includes(current) ? current : data.chosen;
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
  } catch (e) { /* the dashboard is restarting or gone: try again on the next tick */ }
}
async function poll() {  // one request at a time: a slow answer delays the next instead of piling them up
  await refresh();
  setTimeout(poll, REFRESH_MS);
}
picker.addEventListener('change', refresh);
setTimeout(poll, REFRESH_MS);
"""


def summary(run: RunTables) -> str:
    """The header's figures for the run."""
    responses = run["responses"]
    errors = Counter(count_requests(responses, by="error").to_dict())
    top_errors = ", ".join(f"{name} {count}" for name, count in errors.most_common(4)) or "none"
    start, end = run.start_ts, run.end_ts
    facts = [
        ("run", str(run.run_dir) + (" (in progress)" if run.live else "")),
        ("simulated time", "-" if start is None else f"{iso(start)} → {iso(end)}"),
        ("groups", str(len(run.groups))),
        ("generations", str(len(run["generations"]))),
        ("rebalances", str(len(rebalances(run)))),
        ("responses", f"{sum(errors.values())} ({top_errors})"),
        ("rejected rows", str(len(run["rejects"]))),
    ]
    clock = run_clock(run.run_dir) if run.live else None
    if clock is not None:
        slices = "" if clock.slices is None else f" (slice {clock.slices_done} of {clock.slices})"
        pace = "-" if clock.pace is None else f"{clock.pace:,.1f}x real time over the last batches"
        facts[2:2] = [("reached", iso(clock.reached) + slices), ("pace", pace)]
    return "<dl>" + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts) + "</dl>"


def render_panels(panels: list[Panel]) -> str:
    return "".join(f'<section id="{p.id}"><h2>{escape(p.title)}</h2><p class="guide">{escape(p.guide)}</p>'
                   f"{p.body}</section>" for p in panels)


def render_page(run_dir: Path, summary_html: str, panels_html: str, *, groups: list[str] | None = None,
                chosen: str | None = None, refresh_ms: int | None = None) -> str:
    """The whole document. With `refresh_ms` (the dashboard) it has a group picker over `groups` and polls
    `panels?group=G` for fresh content."""
    live = refresh_ms is not None
    picker = script = ""
    if live:
        options = "".join(f"<option{' selected' if g == chosen else ''}>{escape(g)}</option>" for g in groups or [])
        picker = f'<label class="picker">heatmap group <select id="group">{options}</select></label>'
        script = f"<script>{SCRIPT.replace('REFRESH_MS', str(refresh_ms))}</script>"
    title = "coordsim dashboard" if live else "coordsim report"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}: {escape(run_dir.name)}'
            f'</title><meta name="viewport" content="width=device-width"><style>{CSS}</style></head><body>'
            f'<header><div><h1>{title}</h1>{picker}</div><div id="summary">{summary_html}</div></header>'
            f'<main id="panels">{panels_html}</main>{script}</body></html>')
