"""The applyInPandasWithState function: one call drives the groups of one Spark key.

A key is a group key (the group id; in a sweep the variant and the group id, state/variants.py), or (with
`streaming.state.buckets`) a hash bucket of group keys; the null key carries the input's rejects. The key's
state maps each of its groups to a slot: the group's `GroupRuntime` (encoded) and the events that arrived but
cannot be applied yet (still pickled, with their times). Per call: add the new events to their slots, then
for every group with something due at or before the horizon offer those events, advance the runtime to the
horizon and emit the rows it produced; finally set the key's event-time timeout to the earliest thing due in
any of its slots.

The horizon is `watermark - 1` (capped at `until`). Spark drops, in every later batch, rows at or before
the watermark this call sees, so nothing at or before the horizon can still arrive; and a timeout T fires in
the first batch whose watermark is > T, i.e. exactly when T <= horizon. The horizon is a function of the
watermark alone, so a micro-batch re-executed after a crash, in whichever phase of the run, redoes exactly
what it did the first time. A group's runtime is only decoded when something is due: events waiting for
the watermark cost no unpickling and no re-encoding.

Output: envelope rows `(table, group_id, rows, payload)`, in one DataFrame per call, or several when the
call produced more than ROWS_PER_FRAME rows. Each output table a DataFrame has rows for gets an envelope
row per ROWS_PER_ENVELOPE of them whose payload is those rows as Arrow record batches
(`streaming.sink.encode_table`), built here, in the executors: the driver's compaction then only
concatenates, sorts and writes. `engine_meta` rows are one per group touched (`rows` 1), whose payload is a
`GroupFacts` tuple in `marshal` format for the driver; `live_snapshots` rows one per group advanced (outside
sweeps), whose payload is its live snapshot (state/runtime/snapshot.py) for the readers of the run in progress.
"""

from __future__ import annotations

import marshal
import pickle
import zlib
from typing import Iterator, Mapping, NamedTuple

import pandas as pd

from state.config import CoordinatorConfig
from state.runtime.group_runtime import GroupRuntime
from state.tables import TABLES
from state.variants import split_key, tag_output
from streaming import sink
from streaming.source import end_of_run_final, wake_at

OUTPUT_SCHEMA = "table string, group_id string, rows long, payload binary"
STATE_SCHEMA = "slots binary"
META_TABLE = "engine_meta"  # not an output table: GroupFacts for the driver
# Not an output table either: each visited group's live snapshot (state/runtime/snapshot.py) for the readers of a run
# in progress; an empty payload once the group's run has ended (its rows are all in the tables).
LIVE_TABLE = "live_snapshots"

# Rows of output tables per yielded DataFrame, and per envelope row. PySpark's worker does not send each
# DataFrame on its own: it gathers them, over all the keys of its task, until they hold more than
# `spark.sql.execution.arrow.maxRecordsPerBatch` envelope rows, then sends them as one Arrow record batch,
# whose `payload` (binary) column holds at most 2 GiB. The engine sets that setting to
# ARROW_BATCH_ENVELOPES for its query (Spark's default, 10,000, let a storm hour's worker hold about 14
# million rows before its first send: gigabytes, and a failed run). So a worker holds at most about
# ARROW_BATCH_ENVELOPES x ROWS_PER_ENVELOPE rows (rows are a few hundred bytes), and a call's own
# buffer at most ROWS_PER_FRAME rows.
ROWS_PER_FRAME = 20_000
ROWS_PER_ENVELOPE = 2_000
ARROW_BATCH_ENVELOPES = 1_000

STATE_FORMAT = b"coordsim-slots"
# v1: marshal; v2: the same, zlib-compressed. Spark hands a key's state to the Python worker through a
# pickler that copies it byte by byte, the largest part of the JVM's work in a bucketed run; compressed, a
# key's slots shrink about elevenfold for far less CPU than that copy costs.
STATE_FORMAT_VERSION = 2
READABLE_STATE_VERSIONS = (1, 2)


class Slot(NamedTuple):
    """One group inside a key's state."""

    runtime: bytes | None                   # GroupRuntime.encode(); None until the group's first event is due,
                                            # ENDED once its run has ended
    runtime_wakeup: int | None              # the runtime's next_wakeup() when it was encoded
    max_pending_deadline: int | None        # its max_pending_deadline() then
    pending: tuple[tuple[int, bytes], ...]  # (ts, payload) not offered yet: events and end-of-run markers

    @property
    def wakeup(self) -> int | None:
        times = [ts for ts, _ in self.pending]
        if self.runtime_wakeup is not None:
            times.append(self.runtime_wakeup)
        return min(times, default=None)


EMPTY_SLOT = Slot(None, None, None, ())
ENDED = b""  # a slot's runtime once the group's run has ended


class GroupFacts(NamedTuple):
    """What the driver needs of a group after a call, to plan the end of a finite run."""

    known: bool                       # the group has events to apply (before or at `until`)
    max_pending_deadline: int | None  # GroupRuntime.max_pending_deadline() after the call
    max_event_ts: int | None          # latest event time this call received (events after `until` too)
    events: int                       # events this call received and kept
    after_until: int                  # events of this call after `until`, left out as the local engine does


def encode_facts(facts: GroupFacts) -> bytes:
    return marshal.dumps(tuple(facts))


def decode_facts(payload: bytes) -> GroupFacts:
    return GroupFacts(*marshal.loads(payload))


def warm_worker(frame: pd.DataFrame) -> pd.DataFrame:
    """Run once per Python worker before the query (streaming.engine): unpickling it imported this module, and
    with it everything a step call needs."""
    return frame


def make_step(config: CoordinatorConfig, until: int | None, bucketed: bool,
              variants: Mapping[str, CoordinatorConfig] | None = None):
    """The function for `applyInPandasWithState(..., OUTPUT_SCHEMA, STATE_SCHEMA, "Append",
    EventTimeTimeout)` over columns `key`, `group_id`, `event_time`, `payload`; `key` is the group key
    (`state.variants.group_key`: the group id outside a sweep) unless `bucketed`, and `group_id` the group
    key too. `variants`: a sweep's variants and their settings (`config` is then unused)."""
    settings = _Settings(config, variants)

    def step(key: tuple, chunks: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        out = _Envelopes(variants is not None)
        if key[0] is None:
            for chunk in chunks:
                for payload in chunk["payload"].tolist():
                    out.reject(pickle.loads(payload))
                    if out.rows >= ROWS_PER_FRAME:
                        yield out.take_frame()
            yield out.take_frame()
            return
        horizon = horizon_of(state.getCurrentWatermarkMs(), until)
        arrivals: dict[str, list[tuple[int, bytes]]] = {}
        for chunk in chunks:
            times = (chunk["event_time"].to_numpy(dtype="datetime64[ms]").astype("int64").tolist())
            groups = chunk["group_id"].tolist() if bucketed else [key[0]] * len(times)
            for group_id, ts, payload in zip(groups, times, chunk["payload"].tolist()):
                arrivals.setdefault(group_id, []).append((ts, payload))
        slots = _decode(state.get[0]) if state.exists else {}
        due = {g for g, slot in slots.items() if (w := slot.wakeup) is not None and w <= horizon}
        for group_id in sorted(due | arrivals.keys()):
            slot = _visit(group_id, slots.get(group_id, EMPTY_SLOT), arrivals.get(group_id, ()), horizon,
                          settings, until, out)
            if slot is not None:
                slots[group_id] = slot
            if out.rows >= ROWS_PER_FRAME:
                yield out.take_frame()
        if slots:
            state.update((_encode(slots),))
        wakeup = min((w for w in (slot.wakeup for slot in slots.values()) if w is not None), default=None)
        # Past `until` nothing is ever applied (the horizon stops there): no timeout for it.
        if wakeup is not None and (until is None or wakeup <= until):
            state.setTimeoutTimestamp(wakeup)
        yield out.take_frame()

    return step


def horizon_of(watermark_ms: int, until: int | None) -> int:
    """How far a micro-batch whose watermark is `watermark_ms` runs the groups: the watermark - 1, capped at
    `until` (-1 for a batch without a watermark yet: it runs none)."""
    horizon = watermark_ms - 1
    return horizon if until is None else min(horizon, until)


class _Settings:
    """Each group's coordinator settings and how its rows are told apart: outside a sweep one configuration
    for every group; in a sweep its variant's (the key names the variant), and its rows carry the variant."""

    def __init__(self, config: CoordinatorConfig, variants: Mapping[str, CoordinatorConfig] | None) -> None:
        self.config = config
        self.variants = variants

    def of(self, key: str) -> tuple[str | None, str, CoordinatorConfig]:
        """(variant, group id, settings) of a group key."""
        if self.variants is None:
            return None, key, self.config
        variant, group_id = split_key(key)
        return variant, group_id, self.variants[variant]


def _visit(key: str, slot: Slot, arrivals, horizon: int, settings: _Settings, until: int | None,
           out: "_Envelopes") -> Slot | None:
    """Add `arrivals` to the group's slot and apply what is due; None if the group has nothing to keep."""
    events, markers, after_until, max_ts = [], [], 0, None
    for item in arrivals:
        final = end_of_run_final(item[1])
        if final is not None:
            markers.append((final, item[1]))  # due at the final time, not when its row arrived
            continue
        at = wake_at(item[1])
        if at is not None:
            if slot.runtime != ENDED:
                markers.append((at, item[1]))  # due at its time: the group's runtime is advanced to it
            continue
        max_ts = item[0] if max_ts is None else max(max_ts, item[0])
        if until is not None and item[0] > until:
            after_until += 1
        else:
            events.append(item)
    runtime_blob, runtime_wakeup, deadline = slot.runtime, slot.runtime_wakeup, slot.max_pending_deadline
    pending = slot.pending + tuple(events) + tuple(markers)
    due = [item for item in pending if item[0] <= horizon]
    if due or (runtime_wakeup is not None and runtime_wakeup <= horizon):
        variant, group_id, config = settings.of(key)
        runtime = None if runtime_blob is None else GroupRuntime.decode(runtime_blob, config)
        finals = [final for _, payload in due if (final := end_of_run_final(payload)) is not None]
        offered = [pickle.loads(payload) for _, payload in due
                   if end_of_run_final(payload) is None and wake_at(payload) is None]
        if runtime is None and offered:
            runtime = GroupRuntime(group_id, config)
        if runtime is not None:
            runtime.offer(offered)
            for final in finals:
                runtime.end_run_at(final)
            runtime.advance_to(horizon)
            out.group_output(runtime.take_output(), variant)
            deadline = runtime.max_pending_deadline()
            if finals:
                # The run ended (its marker was due, so it was applied) and nothing reaches the group after
                # that: its runtime is not encoded again, and the state stays small.
                runtime_blob, runtime_wakeup = ENDED, None
            else:
                runtime_blob, runtime_wakeup = runtime.encode(), runtime.next_wakeup()
            if variant is None:  # a sweep has no live reader (simulations.views.run_tables)
                out.live(key, ENDED if finals else runtime.live_snapshot())
        pending = tuple(item for item in pending if item[0] > horizon)
    known = runtime_blob is not None or bool(pending)
    out.meta(key, GroupFacts(known, deadline, max_ts, len(events), after_until))
    return Slot(runtime_blob, runtime_wakeup, deadline, pending) if known else None


def _encode(slots: dict[str, Slot]) -> bytes:
    # Plain tuples, not Slot: the encoding must not depend on this module's class names.
    body = marshal.dumps({g: tuple(s) for g, s in slots.items()})
    return STATE_FORMAT + bytes([STATE_FORMAT_VERSION]) + zlib.compress(body, 1)


def _decode(blob: bytes) -> dict[str, Slot]:
    if not blob.startswith(STATE_FORMAT):
        raise ValueError("not a coordsim key state")
    version = blob[len(STATE_FORMAT)]
    if version not in READABLE_STATE_VERSIONS:
        readable = ", ".join(f"v{v}" for v in READABLE_STATE_VERSIONS)
        raise ValueError(f"key state format v{version} is not readable by this release (reads {readable})")
    body = blob[len(STATE_FORMAT) + 1:]
    return {g: Slot(*t) for g, t in marshal.loads(zlib.decompress(body) if version >= 2 else body).items()}


class _Envelopes:
    """A call's output not yielded yet: every table's rows, gathered over the call's groups, and its groups'
    facts. `sweep`: the rows are a sweep's, with a variant column."""

    def __init__(self, sweep: bool) -> None:
        self.sweep = sweep
        self._clear()

    def _clear(self) -> None:
        self.tables: dict[str, list[dict]] = {name: [] for name in TABLES}
        self.facts: list[tuple[str, GroupFacts]] = []
        self.snapshots: list[tuple[str, bytes]] = []
        self.rows = 0  # output table rows gathered

    def group_output(self, output, variant: str | None) -> None:
        if variant is not None:
            tag_output(output, variant)
        for table, rows in output.tables.items():
            self.tables[table].extend(rows)
            self.rows += len(rows)
        self.tables["rejects"].extend(output.rejects)
        self.rows += len(output.rejects)

    def reject(self, row: dict) -> None:
        self.tables["rejects"].append(row)
        self.rows += 1

    def meta(self, group_id: str, facts: GroupFacts) -> None:
        self.facts.append((group_id, facts))

    def live(self, group_id: str, snapshot: bytes) -> None:
        self.snapshots.append((group_id, snapshot))

    def take_frame(self) -> pd.DataFrame:
        """The envelope rows of everything gathered so far, which is then forgotten."""
        filled = [(name, rows[start:start + ROWS_PER_ENVELOPE]) for name, rows in self.tables.items()
                  for start in range(0, len(rows), ROWS_PER_ENVELOPE)]
        facts, snapshots = self.facts, self.snapshots
        self._clear()
        return pd.DataFrame({
            "table": [name for name, _ in filled] + [META_TABLE] * len(facts) + [LIVE_TABLE] * len(snapshots),
            "group_id": [None] * len(filled) + [group_id for group_id, _ in facts + snapshots],
            "rows": pd.array([len(rows) for _, rows in filled] + [1] * (len(facts) + len(snapshots)), dtype="int64"),
            "payload": [sink.encode_table(name, rows, self.sweep) for name, rows in filled]
                       + [encode_facts(group) for _, group in facts] + [snapshot for _, snapshot in snapshots],
        })
