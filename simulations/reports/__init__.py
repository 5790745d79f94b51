"""`coordsim report`: one self-contained HTML file of a run's panels (`panels`, drawn by `svg` from the
`figures`), and the live `dashboard` that serves the same panels while a run writes its tables."""

from __future__ import annotations

import os
from pathlib import Path

REPORT_FILE = "report.html"


def build_report(run_dir: str | os.PathLike, out_html: str | os.PathLike | None = None,
                 group: str | None = None, variant: str | None = None) -> Path:
    """Write the report of the run in `run_dir` to `out_html` (default RUN_DIR/report.html); returns it.
    `group`: the group of the ownership heatmap (default: the busiest). Of a sweep: its variants side by
    side, or with `variant`, the report of that variant."""
    # Imported here so that `simulations.reports.commands` (and the CLI) load no pandas until a command runs.
    from tableio.parquet import output_errors
    from simulations.reports.comparison import comparison_panels
    from simulations.reports.page import render_page, render_panels, summary
    from simulations.reports.panels import COLUMNS, build_panels
    from simulations.views import load_run, require_group
    from simulations.views.run_tables import sweep_variants

    target = Path(out_html) if out_html is not None else Path(run_dir) / REPORT_FILE
    if variant is None and sweep_variants(run_dir) is not None and group is None:
        header, panels = comparison_panels(run_dir)
        page = render_page(Path(run_dir), header, render_panels(panels))
    else:
        run = load_run(run_dir, COLUMNS, variant)
        if group is not None:
            require_group(run, group)
        page = render_page(run.run_dir, summary(run), render_panels(build_panels(run, group)))
    with output_errors(target, "the report"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    return target


__all__ = ["REPORT_FILE", "build_report"]
