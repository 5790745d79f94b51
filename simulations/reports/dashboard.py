"""`coordsim dashboard`: the report's panels, live, from a run folder that a run may still be writing.

A small standard-library HTTP server (no framework: the panels are the report's own HTML and SVG, so a
page that polls them needs nothing else). It serves
    GET /                      the page: the report's layout, a group picker for the heatmap, a refresh script
    GET /panels?group=G        {"summary", "panels", "groups", "chosen"}: fresh HTML for the page to swap in
    GET /metrics               the run as a Prometheus target, under Kafka's metric names (reports.prometheus)
Tables are re-read only when a file of the run changes (`run_tables.signature`), and panels are rendered
once per change and group however many browsers poll. It binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import os
import threading
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from simulations.reports import figures
from simulations.reports.page import render_page, render_panels, summary
from simulations.reports.panels import COLUMNS, build_panels
from simulations.reports.prometheus import RunMetrics
from simulations.views.describe import require_group
from simulations.views.run_tables import RunError, RunTables, load_run, signature, sweep_variants

WAITING = '<section><h2>Waiting for the run</h2><p class="note">No tables in {dir} yet; this page fills in ' \
          'as soon as the run commits its first micro-batch.</p></section>'


class LiveRun:
    """The run folder's latest tables and rendered panels, reloaded when its files change."""

    def __init__(self, run_dir: str | os.PathLike, group: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.default_group = group
        self._lock = threading.Lock()
        self._signature: tuple | None = None
        self._run: RunTables | None = None
        self._rendered: dict[str | None, dict] = {}

    def current(self) -> RunTables | None:
        with self._lock:
            stamp = signature(self.run_dir)
            if stamp != self._signature:
                try:
                    self._run = load_run(self.run_dir, COLUMNS)
                except RunError:
                    self._run = None  # nothing committed yet
                self._signature, self._rendered = stamp, {}
            return self._run

    def panels(self, group: str | None) -> dict:
        run = self.current()
        if run is None:
            return {"summary": "", "panels": WAITING.format(dir=escape(str(self.run_dir))), "groups": [], "chosen": None}
        with self._lock:
            if group not in self._rendered:
                ranked = figures.rank_groups(run)
                chosen = next((g for g in (group, self.default_group) if g in ranked), ranked[0] if ranked else None)
                self._rendered[group] = {"summary": summary(run), "panels": render_panels(build_panels(run, chosen)),
                                         "groups": ranked, "chosen": chosen}
            return self._rendered[group]

    def page(self, refresh_ms: int) -> str:
        content = self.panels(self.default_group)
        return render_page(self.run_dir, content["summary"], content["panels"], groups=content["groups"],
                           chosen=content["chosen"], refresh_ms=refresh_ms)


def make_server(run_dir: str | os.PathLike, host: str, port: int, refresh_s: float = 2.0,
                group: str | None = None) -> ThreadingHTTPServer:
    """A server for the dashboard of `run_dir` (port 0: any free port; see `server_address`). UnknownGroup
    when the run has finished without `group`; a run still writing may yet produce it."""
    if sweep_variants(run_dir) is not None:
        raise RunError(f"{run_dir} is a sweep: the dashboard follows one run; `coordsim report {run_dir}` shows "
                       f"its variants side by side, `--variant V` one of them")
    live = LiveRun(run_dir, group)
    run = live.current()
    if group is not None and run is not None and not run.live:
        require_group(run, group)
    refresh_ms = max(200, int(refresh_s * 1000))
    metrics = RunMetrics(run_dir)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            url = urlsplit(self.path)
            if url.path == "/":
                self._send(live.page(refresh_ms), "text/html; charset=utf-8")
            elif url.path == "/panels":
                group_arg = parse_qs(url.query).get("group", [None])[0] or None
                self._send(json.dumps(live.panels(group_arg)), "application/json")
            elif url.path == "/metrics":
                self._send_bytes(*metrics.exposition(self.headers.get("Accept")))
            else:
                self.send_error(HTTPStatus.NOT_FOUND)

        def _send(self, body: str, kind: str) -> None:
            self._send_bytes(body.encode("utf-8"), kind)

        def _send_bytes(self, data: bytes, kind: str) -> None:
            try:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the browser went away (a tab closed mid-refresh): nothing to answer, nothing to report

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            pass  # one line per poll would drown the terminal

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
