"""The local engine: every group's coordinator in this Python process, one after the other.

Groups are independent (one `GroupRuntime` each, in sorted group-key order: group id, or in a sweep variant
then group id, state/variants.py); a group's events are offered at
once and applied in (ts, seq, source, line) order by the runtime itself. The run ends at a final time, the
same for every group:
- with `until`: that time (inclusive); later events are left out, not rejected;
- otherwise: the last event's time, or later if a group still has a protocol deadline pending then (the
  latest such deadline), so every session, join and sync timeout pending when the input ends fires.
  Deadlines armed on the way (a rebalance timeout started by a session expiry) fire only if they fall
  before that time: the run is not extended again, so it always ends.
The periodic offsets sweep does not extend the run: on its own it would only ever wait for retention.
At the final time the `lag_status` table is derived from the offsets (`tableio.lag_status`), and once the
tables are written the `coordinator_load` table from them (`tableio.coordinator_load`).

`run_local` returns every row in memory; `run_local_to` writes the tables as the groups finish
(`StreamedTables`), so a run holds one group's rows at a time instead of all of them, then the run record
`_run.json` (what ran: engine, inputs, `until` and final time, counts, coordinator settings).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from tableio.heap import long_lived_heap
from tableio.parquet import PartFileWriter, WrittenTables, output_errors, to_arrow
from state.config import CoordinatorConfig
from state.events import Event
from state.runtime.output import Output
from state.runtime.group_runtime import GroupRuntime
from state.tables import GROUP_TABLES
from state.variants import VARIANT, group_key, tag, tag_output
from tableio.run_record import final_time, variant_settings, write_run_record
from tableio.coordinator_load import TABLE as LOAD_TABLE
from tableio.coordinator_load import write_coordinator_load
from tableio.lag_status import lag_status_rows
from tableio.run_result import RunResult

# Rows of a table turned into Arrow at once while a run writes its tables: many groups per conversion.
STREAM_ROWS = 50_000


def events_by_group(events: Iterable[Event], until: int | None, result: RunResult) -> dict[str, list[Event]]:
    """The events each group applies, by group key (`state.variants.group_key`: the group id outside a sweep)
    in sorted order; those after `until` are only counted."""
    by_group: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if until is not None and event.ts > until:
            result.events_after_until += 1
            continue
        by_group[group_key(event.variant, event.group_id)].append(event)
        result.events_applied += 1
    return {key: by_group[key] for key in sorted(by_group)}


@long_lived_heap()
def run_local(events: Iterable[Event], config: CoordinatorConfig, until: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              on_group: Callable[[Output, int | None, str | None], None] | None = None,
              variants: Mapping[str, CoordinatorConfig] | None = None) -> RunResult:
    """`progress(done, total)` is called as each group finishes its run (the bulk of the work). With
    `on_group`, each group's rows go to `on_group(output, final time, variant)` as it finishes, in group-key
    order, instead of to the result's tables. `variants`: a sweep's variants and their settings (`config` is
    then unused); each variant's groups run with its settings and their rows get its `variant` column."""
    result = RunResult(variants=None if variants is None else sorted(variants))
    by_group = events_by_group(events, until, result)
    runtimes = {}
    for key, group_events in by_group.items():
        variant = group_events[0].variant
        runtimes[key] = (variant, GroupRuntime(group_events[0].group_id,
                                               config if variant is None else variants[variant]))
        runtimes[key][1].offer(group_events)
    result.groups = len(runtimes)

    last = max((e.ts for group in by_group.values() for e in group), default=None)
    if until is None and last is not None:
        for _, runtime in runtimes.values():
            runtime.advance_to(last)
    final = final_time(until, last, (r.max_pending_deadline() for _, r in runtimes.values()))
    for done, (variant, runtime) in enumerate(runtimes.values(), start=1):
        runtime.advance_to(final)
        runtime.finish()
        output = runtime.take_output()
        if variant is not None:
            tag_output(output, variant)
        if on_group is not None:
            on_group(output, final, variant)
        else:
            for name, rows in output.tables.items():
                result.tables[name].extend(rows)
            result.tables["rejects"].extend(output.rejects)
        if progress is not None:
            progress(done, len(runtimes))
    result.end_at(final)
    return result


def run_local_to(out_dir: str | os.PathLike, events: Iterable[Event], config: CoordinatorConfig,
                 until: int | None = None, rejects: Iterable[Mapping] = (),
                 progress: Callable[[int, int], None] | None = None,
                 variants: Mapping[str, CoordinatorConfig] | None = None, inputs: Sequence[str] = (),
                 captured: str | None = None) -> RunResult:
    """`run_local`, its tables written under `out_dir` as the groups finish (`rejects`: the input's, added to
    the engine's own); the result's tables read them back on access. The same files as `write_tables` of
    run_local's tables. `inputs` and `captured` name, for the run record, the event files the events came
    from (as given) and the captured-responses file attached to them (its absolute path), as the Spark
    engine records them."""
    out = Path(out_dir)
    with output_errors(out):
        out.mkdir(parents=True, exist_ok=True)
        stream = StreamedTables(out, rejects, None if variants is None else sorted(variants))
        result = run_local(events, config, until, progress, on_group=stream, variants=variants)
        result.tables = stream.close()
        write_run_record(out, "local", result, config.to_kafka(), inputs, captured, until,
                         **variant_settings(variants))
    return result


class StreamedTables:
    """A run's tables, written as its groups finish. run_local runs groups in sorted group-key order and a
    group's rows are in out_seq order, so each table's rows arrive in table order and go straight to their
    part file, STREAM_ROWS at a time. Rejects and lag_status rows (per group: each is judged on its own
    rows) are kept until the end: they are few. `variants`: a sweep's, whose tables have a variant column
    (null for the input's rejects, which belong to no group)."""

    def __init__(self, out: Path, rejects: Iterable[Mapping], variants: list[str] | None = None) -> None:
        self.out = out
        self.variants = variants
        self.sweep = variants is not None
        self.writers = {name: PartFileWriter(out, name, self.sweep) for name in GROUP_TABLES}
        self.pending: dict[str, list[dict]] = {name: [] for name in GROUP_TABLES}
        input_rejects = [dict(row, **({VARIANT: None} if self.sweep else {})) for row in rejects]
        self.kept: dict[str, list[dict]] = {"rejects": input_rejects, "lag_status": []}
        self.final: int | None = None

    def __call__(self, output: Output, final: int | None, variant: str | None) -> None:
        for name, rows in output.tables.items():
            self.pending[name] += rows
            if len(self.pending[name]) >= STREAM_ROWS:
                self._flush(name)
        self.kept["rejects"] += output.rejects
        lag = lag_status_rows(output.tables, final)
        if variant is not None:
            tag({"lag_status": lag}, variant)
        self.kept["lag_status"] += lag
        self.final = final

    def _flush(self, name: str) -> None:
        self.writers[name].write(to_arrow(name, self.pending[name], self.sweep))
        self.pending[name] = []

    def close(self) -> WrittenTables:
        for name, writer in self.writers.items():
            self._flush(name)
            writer.close()
        for name, rows in self.kept.items():
            with PartFileWriter(self.out, name, self.sweep) as writer:
                writer.write(to_arrow(name, rows, self.sweep))
            self.writers[name] = writer
        rows = {name: writer.rows for name, writer in self.writers.items()}
        rows[LOAD_TABLE] = write_coordinator_load(self.out, self.final, variants=self.variants)
        return WrittenTables(self.out, rows)
