"""`coordsim validate`: data-quality checks of a run's tables, with one pass/fail summary.

- `suites`: great-expectations suites (schema from the contract, value checks from `conf/expectations/`);
- `invariants`: protocol invariants in pandas;
- `accounting`: with the run's events, every input row answered, applied or rejected;
- `comparison_rows`: of a sweep, each variant's row of the `comparison` table.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Sequence

from simulations.validation.accounting import InputAccounting
from simulations.validation.invariants import Invariants
from simulations.group_ranges import group_ranges
from simulations.validation.raw_tables import read_range
from simulations.validation.result import Check, ValidationResult
from tableio.parquet import PART_FILE
from simulations.views.run_tables import RunError
from tableio.run_record import read_run_record
from state.tables import TABLES

# Where `validate_variant` writes a sweep variant's tables as a run of its own while it checks them.
VARIANT_CHECK_DIR = "_variant"


def validate(run_dir: str | os.PathLike, data_docs_dir: str | os.PathLike | None = None,
             events: Sequence[str | os.PathLike] = (), until: int | None = None) -> ValidationResult:
    """Check every table of the run in `run_dir`, one range of groups at a time (`simulations.group_ranges`:
    memory stays bounded whatever the run's size). `events`: the run's input files, to account for every
    row; `until`: the run's --until (read from the run record when there is one)."""
    from simulations.validation.suites import Suites  # imports great-expectations: seconds

    root = Path(run_dir)
    if not root.is_dir():
        raise RunError(f"{run_dir}: no such run folder")
    if not any((root / name / PART_FILE).is_file() for name in TABLES):
        raise RunError(f"{run_dir}: not a run folder (no output tables)")
    suites = Suites(None if data_docs_dir is None else Path(data_docs_dir))
    invariants = Invariants()
    accounting = InputAccounting(events, until if until is not None else _recorded_until(root)) if events else None
    for groups in group_ranges(root):
        tables, problems = read_range(root, groups)
        suites.add(tables)
        invariants.add(tables)
        if accounting is not None:
            accounting.add(tables, groups)
    result = ValidationResult(root)
    result.checks += [Check("suite", f"{table}: table", False, problem) for table, problem in problems.items()]
    result.checks += suites.checks()
    result.data_docs = suites.data_docs
    result.checks += invariants.checks()
    if accounting is not None:
        result.checks.append(accounting.check())
    return result


def validate_variant(run_dir: str | os.PathLike, variant: str, until: int | None = None,
                     data_docs_dir: str | os.PathLike | None = None) -> ValidationResult:
    """`validate` of one variant of the sweep in `run_dir`, with its own events: its tables are written as a
    run of their own (`simulations.views.variants`) in a folder of `run_dir` removed once they are checked;
    then the variant's row of the sweep's `comparison` table (`comparison_rows`)."""
    from simulations.validation.comparison_rows import comparison_checks
    from simulations.views.variants import EVENTS_FILE, SCENARIO_DIR, write_variant_run

    folder = Path(run_dir) / VARIANT_CHECK_DIR
    try:
        write_variant_run(run_dir, variant, folder)
        events = folder / SCENARIO_DIR / EVENTS_FILE
        result = validate(folder, data_docs_dir, [events] if events.is_file() else [], until)
        result.checks += comparison_checks(run_dir, variant, folder)
        result.run_dir = Path(run_dir) / f"(variant {variant})"  # what the summary names: not the folder it removes
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _recorded_until(root: Path) -> int | None:
    return (read_run_record(root) or {}).get("until")


__all__ = ["Check", "ValidationResult", "validate", "validate_variant"]
