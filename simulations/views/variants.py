"""One variant of a sweep as a run folder of its own, for the validation, which reads runs its own way (the
other views read a variant in place: `simulations.views.run_tables.load_run`).

A sweep's variants are independent: a variant's rows of every table, without the `variant` column, are the
tables of that variant run alone (tested). So a variant's folder holds just those, the variant's events
(`scenario/events.jsonl`, the sweep's rows of the variant without their `variant` field) and a run record
whose coordinator settings are the variant's; every tool then reads it as it reads any run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from simulations.views.capacity import ACTIONS_FILE, BROKERS_FILE
from state.tables import TABLES
from state.variants import VARIANT
from tableio.parquet import PART_FILE, PartFileWriter, output_errors, variant_rows
from tableio.run_record import RUN_FILE, read_run_record

# Where a run keeps the scenario it ran and its events, inside its folder (`coordsim run` and `sweep` write them).
SCENARIO_DIR = "scenario"
EVENTS_FILE = "events.jsonl"
BATCH_ROWS = 65_536


def write_variant_run(sweep_dir: str | Path, variant: str, into: str | Path) -> Path:
    """The folder `into` made the run of `variant` alone, from the sweep in `sweep_dir`; returns it."""
    source, out = Path(sweep_dir), Path(into)
    rows = {}
    with output_errors(out):
        out.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            with PartFileWriter(out, table) as writer:
                path = source / table / PART_FILE
                if path.is_file():
                    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
                        writer.write(pa.Table.from_batches([variant_rows(batch, variant)]))
            rows[table] = writer.rows
        _write_inputs(source / SCENARIO_DIR, out / SCENARIO_DIR, variant)
        record = read_run_record(source) or {}
        settings = record.pop("variants", {})
        record.update(rows=rows, coordinator=settings.get(variant, record.get("coordinator")), variant=variant)
        (out / RUN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return out


def _write_inputs(source: Path, into: Path, variant: str) -> None:
    """The variant's events, action times and brokers, when the sweep's folder has them."""
    events = source / EVENTS_FILE
    if not events.is_file():
        return
    into.mkdir(parents=True, exist_ok=True)
    with events.open(encoding="utf-8") as lines, (into / EVENTS_FILE).open("w", encoding="utf-8") as out:
        for line in lines:
            row = json.loads(line)
            if row.pop(VARIANT, None) == variant:
                out.write(json.dumps(row, separators=(",", ":")) + "\n")
    for name, none in ((ACTIONS_FILE, []), (BROKERS_FILE, None)):
        if (source / name).is_file():
            by_variant = json.loads((source / name).read_text(encoding="utf-8"))
            (into / name).write_text(json.dumps(by_variant.get(variant, none), indent=1) + "\n", encoding="utf-8")


__all__ = ["write_variant_run"]
