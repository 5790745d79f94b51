"""Quiet runs: a chain of one client's periodic requests (heartbeats, or its poll loop's commits) that all
succeed the same way at a fixed interval, written as one row per table.

A run's requests all get error NONE for the same member and generation, and for commits every partition
accepted with offsets that follow the consumption model. The run is written once, when it closes, as one
`requests` row, one `responses` row and (commits) one `offsets` row per partition, each carrying
`repeat_count` and `repeat_interval_ms`; commit runs carry the offsets rule (`records_per_second`,
`rate_origin_ts`). A run closes when the next request of its chain does not fit, when the client sends
anything else (JoinGroup, SyncGroup, LeaveGroup, a commit before a rejoin or a close), when the client stops,
and at the end of the run. An input row with `repeat_count` replays as the run it describes. How a run's rows
read back (its requests' times, offsets and ids) is `state.quiet_run`'s; when a steady client's requests are
not simulated at all, the runs they make are `state.clients.elision`'s.

`QuietRuns` holds a group's open runs, by chain (`origin/heartbeat`, `origin/commit`); the runtime hands it
each periodic request with the rows its answer made, the output they go to and the production model.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.offsets.production import rule_offset
from state.request_rows import request_row

HEARTBEAT_CHAIN = "heartbeat"
COMMIT_CHAIN = "commit"
HEARTBEATS = ("HEARTBEAT", "CONSUMER_GROUP_HEARTBEAT")
# Response fields that differ from one request of a run to the next; everything else must be equal.
VARYING_RESPONSE = ("request_ts", "response_ts", "request_id", "request_seq", "out_seq")
VARYING_OFFSET = ("offset", "log_end_offset", "commit_ts", "write_ts", "out_seq")


@dataclass
class QuietRun:
    raw: dict | None               # the first request as an input row (synthetic clients' chains)
    response: dict                 # the first response row
    offsets: list[dict]            # the first commit's `offsets` rows
    rules: list[tuple]             # per offsets row: (records/s, rate origin ts, base) of offset = rule(ts)
    log_end_rules: list[tuple | None]  # per offsets row: the same for its log_end_offset (None: not modelled)
    last_ts: int
    count: int = 1
    interval: int | None = None



class QuietRuns:
    """A group's open quiet runs, by chain."""

    def __init__(self) -> None:
        self.runs: dict[str, QuietRun] = {}

    def handle(self, out, production: dict, event, handler) -> None:
        """Handle a request of a periodic chain: fold it into its open run, or close that run and start a
        new one, or write it as an ordinary request when it is not quiet."""
        with out.deferred() as rows:
            handler(event)
        run = self.runs.get(event.run)
        if run is not None and self._fits(run, event, rows):
            run.count += 1
            run.interval = event.ts - run.last_ts
            run.last_ts = event.ts
            return
        if run is not None:
            self.close(out, event.run)
        opened = self.open_run(production, event, rows)
        if opened is None:
            if event.origin is not None:
                out.request(request_row(event))
            for table, row in rows:
                out.emit(table, row)
            return
        self.runs[event.run] = opened

    def open_run(self, production: dict, event, rows) -> QuietRun | None:
        """The run a request answered with `rows` opens, or None if it is not quiet."""
        rules = self._quiet_rules(production, event, rows)
        if rules is None:
            return None
        offsets = [row for _, row in rows[:-1]]
        raw = None if event.origin is None else request_row(event)
        return QuietRun(raw=raw, response=rows[-1][1], offsets=offsets, rules=rules,
                        log_end_rules=[_log_end_rule(production, row) for row in offsets], last_ts=event.ts)

    def _quiet_rules(self, production: dict, event, rows) -> list[tuple] | None:
        """None if the request is not quiet; else the offsets rule of each of its `offsets` rows."""
        table, response = rows[-1] if rows else (None, None)
        if table != "responses" or response["error"] != "NONE":
            return None
        if event.type in HEARTBEATS:
            return [] if len(rows) == 1 else None
        offsets = [row for t, row in rows[:-1] if t == "offsets"]
        if (len(offsets) != len(rows) - 1 or len(offsets) != len(event.offsets)
                or any(r["error"] != "NONE" for r in response["results"])
                or any(row["commit_ts"] != event.ts for row in offsets)):
            return None
        rules = [_commit_rule(production, event, p, row) for p, row in zip(event.offsets, offsets)]
        # A run's log-end offsets grow at its offsets' rate (`records_per_second`): a commit whose offset does
        # not follow production (a client that stopped consuming) is written on its own.
        if any((log_end := _log_end_rule(production, row)) is not None and log_end[0] != rule[0]
               for row, rule in zip(offsets, rules)):
            return None
        return rules

    @staticmethod
    def _fits(run: QuietRun, event, rows) -> bool:
        if event.ts <= run.last_ts or (run.interval is not None and event.ts - run.last_ts != run.interval):
            return False
        if len(rows) != len(run.offsets) + 1 or rows[-1][0] != "responses":
            return False
        if not _equal_except(rows[-1][1], run.response, VARYING_RESPONSE):
            return False
        for (table, row), first, rule, log_end in zip(rows, run.offsets, run.rules, run.log_end_rules):
            if (table != "offsets" or not _equal_except(row, first, VARYING_OFFSET)
                    or row["offset"] != rule_offset(rule, event.ts) or row["commit_ts"] != event.ts
                    or row["write_ts"] != event.ts
                    or row["log_end_offset"] != (None if log_end is None else rule_offset(log_end, event.ts))):
                return False
        return True

    def close(self, out, key: str) -> None:
        write_run(out, self.runs.pop(key))

    def has_open(self, origin: str) -> bool:
        return any(f"{origin}/{chain}" in self.runs for chain in (HEARTBEAT_CHAIN, COMMIT_CHAIN))

    def close_client(self, out, origin: str) -> None:
        """The client sent something else or stopped: its runs end here."""
        for chain in (HEARTBEAT_CHAIN, COMMIT_CHAIN):
            if f"{origin}/{chain}" in self.runs:
                self.close(out, f"{origin}/{chain}")

    def close_all(self, out) -> None:
        for key in list(self.runs):
            self.close(out, key)


def _commit_rule(production: dict, event, partition, row) -> tuple:
    offset, ts = row["offset"], event.ts
    if partition.records_per_second:  # an input row's own rule
        rate, origin = partition.records_per_second, partition.rate_origin_ts
        return (rate, origin, offset - rule_offset((rate, origin, 0), ts))
    if event.origin is not None:
        since, rate, base = production.get(row["topic"], (0, 0.0, 0))
        sent = int(event.request_id.rpartition("@")[2])
        rule = (rate, since + ts - sent, base)
        if rate and rule_offset(rule, ts) == offset:
            return rule
    return (0.0, 0, offset)


def _log_end_rule(production: dict, row: dict) -> tuple | None:
    """The production model behind a commit's `log_end_offset` (state/cluster_image.py's log_end_offset)."""
    if row["log_end_offset"] is None:
        return None
    since, rate, base = production[row["topic"]]
    return (rate, since, base)


def run_state(run: QuietRun) -> tuple:
    """A run as plain data (QuietRun's fields, in order)."""
    return (run.raw, run.response, run.offsets, run.rules, run.log_end_rules, run.last_ts, run.count, run.interval)


def write_run(out, run: QuietRun) -> None:
    """A run's rows, written as it closes: its request (a synthetic client's), responses and offsets."""
    if run.raw is not None:
        out.request(*_run_request(run))
    for table, row in _run_rows(run):
        out.emit(table, row)


def _run_request(run: QuietRun) -> tuple[dict, int, int | None]:
    """The run's `requests` row as (raw, repeat count, interval): one row standing for the run."""
    return _run_raw(run), run.count, run.interval


def _run_raw(run: QuietRun) -> dict:
    """The run's `requests` row: the first request, with the repeat and each partition's offsets rule."""
    raw = dict(run.raw)
    if run.count > 1:
        raw.update(repeat_count=run.count, repeat_interval_ms=run.interval)
        if "offsets" in raw:
            raw["offsets"] = [dict(p, records_per_second=rule[0], rate_origin_ts=rule[1]) if rule[0] else p
                              for p, rule in zip(raw["offsets"], run.rules)]
    return raw


def _run_rows(run: QuietRun) -> list[tuple[str, dict]]:
    repeat = {"repeat_count": run.count, "repeat_interval_ms": run.interval}
    rows = []
    for row, rule, log_end in zip(run.offsets, run.rules, run.log_end_rules):
        rated = run.count > 1 and rule[0]
        log_end_rated = run.count > 1 and log_end is not None and log_end[0]
        rows.append(("offsets", dict(row, **repeat, records_per_second=rule[0] if rated else None,
                                     rate_origin_ts=rule[1] if rated else None,
                                     log_end_origin_ts=log_end[1] if log_end_rated else None)))
    rows.append(("responses", dict(run.response, **repeat)))
    return rows


def _equal_except(row: dict, first: dict, keys: tuple) -> bool:
    """Whether two rows are equal but for the columns `keys`."""
    row, first = dict(row), dict(first)  # copied whole and trimmed: cheaper than filtering every column
    for key in keys:
        row.pop(key, None)
        first.pop(key, None)
    return row == first
