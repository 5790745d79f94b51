"""`coordsim validate`: data-quality checks of a run's tables, with one pass/fail summary.

- `suites`: great-expectations suites (schema from the contract, value checks from `conf/expectations/`);
- `invariants`: protocol invariants in pandas;
- `accounting`: with the run's events, every input row answered, applied or rejected.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

from simulations.validation.accounting import account_for_input
from simulations.validation.invariants import check_invariants
from simulations.validation.raw_tables import read_raw
from simulations.validation.result import Check, ValidationResult
from simulations.views.run_tables import RUN_FILE, RunError


def validate(run_dir: str | os.PathLike, data_docs_dir: str | os.PathLike | None = None,
             events: Sequence[str | os.PathLike] = (), until: int | None = None) -> ValidationResult:
    """Check every table of the run in `run_dir`. `events`: the run's input files, to account for every
    row; `until`: the run's --until (read from the run record when there is one)."""
    from simulations.validation.suites import run_suites  # imports great-expectations: seconds

    root = Path(run_dir)
    if not root.is_dir():
        raise RunError(f"{run_dir}: no such run folder")
    tables, problems = read_raw(root)
    if not tables:
        raise RunError(f"{run_dir}: not a run folder (no output tables)")
    result = ValidationResult(root)
    result.checks += [Check("suite", f"{table}: table", False, problem) for table, problem in problems.items()]
    checks, result.data_docs = run_suites(tables, None if data_docs_dir is None else Path(data_docs_dir))
    result.checks += checks
    result.checks += check_invariants(tables)
    if events:
        result.checks.append(account_for_input(tables, events, until if until is not None else _recorded_until(root)))
    return result


def _recorded_until(root: Path) -> int | None:
    try:
        return json.loads((root / RUN_FILE).read_text(encoding="utf-8")).get("until")
    except (OSError, ValueError):
        return None


__all__ = ["Check", "ValidationResult", "validate"]
