"""What a run returns, whichever engine ran it: every table's rows and the counts the run summaries and the
run record (`tableio.run_record`) report. The Spark engine's `SparkRunResult` adds what only a Spark run has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from state.tables import GROUP_TABLES
from state.variants import by_variant, tag
from tableio.coordinator_load import TABLE as LOAD_TABLE
from tableio.coordinator_load import coordinator_load_rows
from tableio.lag_status import lag_status_rows


@dataclass
class RunResult:
    """Every table's rows (rejects: only the engine's own) and the counts the run summary reports."""

    tables: dict[str, list[dict]] = field(
        default_factory=lambda: {name: [] for name in GROUP_TABLES + ("rejects", "lag_status", LOAD_TABLE)})
    groups: int = 0
    events_applied: int = 0
    events_after_until: int = 0
    final_ts: int | None = None
    # A sweep's variants, sorted (their rows carry a `variant` column); None for a run that is not a sweep.
    variants: list[str] | None = None

    def end_at(self, final: int | None) -> None:
        """The run ended at `final`: the tables derived from the others once it has are added, in a sweep
        variant by variant (each is derived from its own rows alone)."""
        self.final_ts = final
        if self.variants is None:
            self.tables["lag_status"] = lag_status_rows(self.tables, final)
            self.tables[LOAD_TABLE] = coordinator_load_rows(self.tables, final)
            return
        split = {name: by_variant(rows) for name, rows in self.tables.items()}
        derived: dict[str, list[dict]] = {"lag_status": [], LOAD_TABLE: []}
        for variant in self.variants:
            tables = {name: parts.get(variant, []) for name, parts in split.items()}
            rows = {"lag_status": lag_status_rows(tables, final),
                    LOAD_TABLE: coordinator_load_rows(tables, final, sweep=True)}
            tag(rows, variant)
            for name, part in rows.items():
                derived[name] += part
        self.tables.update(derived)
