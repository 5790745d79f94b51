"""Parity of state/runtime/quiet_runs.py's QuietRuns and the native engine's (native/src/runtime/quiet_runs.rs):
the same Hypothesis-generated periodic requests (synthetic clients' heartbeats and commits, an input row's
repeats with their own offsets rule) with the rows their answers made, mostly quiet (error NONE, offsets on
the production model, the same member and generation, a steady interval) and sometimes not (an error, a
failed partition, another generation, an offset off the model, a late commit_ts, a stray row, a changed
interval), interleaved with clients closing their runs and the end of the run, give the same open runs
(`run_state`, in order), the same `open_run` and the same rows written, in order, field for field."""

from __future__ import annotations

import contextlib
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.events import CommitPartition, Heartbeat, OffsetCommit
from state.offsets.production import rule_offset
from state.request_rows import request_row
from state.runtime.quiet_runs import QuietRuns, run_state
from tests.native import cores

PRODUCTION = {"t0": (1000, 50.0, 7), "t1": (0, 0.0, 3)}
ORIGINS = ["c1#0", "c2#1"]
PARTITIONS = [("t0", 0), ("t1", 0), ("t0", 1)]


class Out:
    """The runtime's output as the runs use it: what they write, and the rows a handler makes."""

    def __init__(self) -> None:
        self.writes: list[tuple] = []
        self._rows: list | None = None

    @contextlib.contextmanager
    def deferred(self):
        self._rows = []
        try:
            yield self._rows
        finally:
            self._rows = None

    def request(self, raw: dict, repeat_count: int = 1, repeat_interval_ms: int | None = None) -> None:
        self.writes.append(("request", raw, repeat_count, repeat_interval_ms))

    def emit(self, table: str, row: dict) -> None:
        self.writes.append(("emit", table, row))


@st.composite
def request(draw, ts: int, seq: int, origin: str | None, commit: bool, committed: list):
    """A periodic request at `ts` of a chain (committing `committed` partitions) and the rows its answer made."""
    chain = "commit" if commit else "heartbeat"
    run = f"{origin}/{chain}" if origin else f"input.csv:{chain}"
    lag = draw(st.sampled_from([5, 5, 5, 9]))
    request_id = f"{origin or 'input'}/{chain}@{ts - lag}"
    generation = draw(st.sampled_from([1, 1, 1, 2]))
    error = draw(st.sampled_from(["NONE"] * 6 + ["REBALANCE_IN_PROGRESS"]))
    header = dict(ts=ts, group_id="g", seq=seq, request_id=request_id, client_id=(origin or "c9").split("#")[0],
                  origin=origin, run=run, member_id="m", generation_id=generation)
    offsets_rows, partitions, results = [], [], []
    if commit:
        for topic, partition in draw(st.sampled_from([committed] * 9 + [committed[:1]])):
            own = origin is None and draw(st.booleans())
            since, rate, base = PRODUCTION[topic]
            if own:
                offset = 11 + rule_offset((20.0, 0, 0), ts)
            elif origin is not None and rate:
                offset = rule_offset((rate, since + lag, base), ts)
            else:
                offset = 42
            offset = draw(st.sampled_from([offset] * 5 + [offset + 1]))
            modelled = origin is not None and draw(st.booleans())
            partitions.append(CommitPartition(topic, partition, offset, -1, None, -1,
                                              20.0 if own else None, 0 if own else None))
            offsets_rows.append(("offsets", {
                "group_id": "g", "topic": topic, "partition": partition, "offset": offset,
                "commit_ts": draw(st.sampled_from([ts] * 5 + [ts - 1])), "write_ts": draw(st.sampled_from([ts] * 5 + [ts + 1])),
                "log_end_offset": rule_offset((rate, since, base), ts) if modelled else None, "member_id": "m",
                "out_seq": None}))
            results.append({"topic": topic, "partition": partition,
                            "error": draw(st.sampled_from(["NONE"] * 6 + ["UNKNOWN_MEMBER_ID"]))})
        event = OffsetCommit(type="OFFSET_COMMIT", offsets=tuple(partitions), **header)
    else:
        event = Heartbeat(type="HEARTBEAT", **header)
    response = ("responses", {"group_id": "g", "api": event.type, "request_ts": ts, "response_ts": ts,
                              "request_id": request_id, "request_seq": seq, "error": error, "member_id": "m",
                              "generation_id": generation, "results": results if commit else None, "out_seq": None})
    stray = [("members", {"group_id": "g", "member_id": "m", "ts": ts})] if draw(st.integers(0, 9)) == 0 else []
    return event, [*offsets_rows, *stray, response]


@st.composite
def scenarios(draw):
    """Rounds of the chains' requests (most chains send in most rounds, mostly 100 ms apart), between them
    clients closing their runs, the end of the run and an `open_run` tried aside."""
    chains = [(origin, commit, draw(st.lists(st.sampled_from(PARTITIONS), min_size=1, max_size=2, unique=True)))
              for origin in [*ORIGINS, None] for commit in (False, True)]
    ops, ts, seq = [], 0, 0
    for _ in range(draw(st.integers(1, 12))):
        ts += draw(st.sampled_from([100, 100, 100, 100, 200, 0]))
        for chain in chains:
            if draw(st.integers(0, 4)):
                seq += 1
                ops.append(("request", *draw(request(ts + draw(st.sampled_from([0] * 9 + [7])), seq, *chain))))
        kind = draw(st.sampled_from([None] * 6 + ["peek", "close_client", "has_open", "close_all"]))
        if kind == "peek":
            ops.append((kind, *draw(request(ts + 100, seq + 1, *draw(st.sampled_from(chains))))))
        elif kind in ("close_client", "has_open"):
            ops.append((kind, draw(st.sampled_from(ORIGINS))))
        elif kind is not None:
            ops.append((kind,))
    return ops


def raw(event) -> dict | None:
    return None if event.origin is None else request_row(event)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(ops=scenarios())
def test_quiet_runs_parity(ops) -> None:
    native = cores.native_module("quiet_runs").QuietRuns()
    python, out = QuietRuns(), Out()
    for op in [*ops, ("close_all",)]:
        out.writes = []
        if op[0] == "request":
            _, event, rows = op
            python.handle(out, PRODUCTION, event, lambda _, rows=rows: out._rows.extend(copy.deepcopy(rows)))
            assert native.handle(PRODUCTION, event, raw(event), rows) == out.writes
        elif op[0] == "peek":
            _, event, rows = op
            opened = python.open_run(PRODUCTION, event, rows)
            assert native.open_run(PRODUCTION, event, raw(event), rows) == (opened and run_state(opened))
        elif op[0] == "has_open":
            assert native.has_open(op[1]) == python.has_open(op[1])
        else:
            getattr(python, op[0])(out, *op[1:])
            assert getattr(native, op[0])(*op[1:]) == out.writes
        assert native.runs() == [(name, run_state(run)) for name, run in python.runs.items()]
