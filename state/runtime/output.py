"""Rows a group produces, table by table, shaped as `state.tables` declares them.

Every row gets the group's next `out_seq`, so the order in which the coordinator produced rows survives any
engine, partitioning or sink. Rows of a periodic request are first held back (`deferred`): they become part of
a quiet run, written when the run closes, or are written at once (state/clients/elision.py). Rejects of late events
are collected here too (the runtime is the last place such an event is seen).
"""

from __future__ import annotations

import base64
import dataclasses
import json

from state.events import API_NAMES, Event
from state.metrics import GroupMetrics, failed_commit
from state.tables import GROUP_TABLES, columns


def _request_json():
    """What json.dumps(raw, sort_keys=True) writes. JSONEncoder.encode builds its C encoder anew on every call,
    about a third of the cost of a request's row: this one is built once. Rows are trees (no cycles to look
    for)."""
    encoder = json.JSONEncoder(sort_keys=True, check_circular=False)
    if json.encoder.c_make_encoder is None:  # an interpreter without json's C accelerator
        return encoder.encode
    encode = json.encoder.c_make_encoder(None, encoder.default, json.encoder.encode_basestring_ascii, None,
                                         encoder.key_separator, encoder.item_separator, True, False, True)
    return lambda raw: "".join(encode(raw, 0))


request_json = _request_json()


# A `responses` row before its request's and answer's values are filled in (Output.response_row).
_RESPONSE_ROW = {
    "group_id": None, "request_ts": None, "response_ts": None, "api": None, "api_version": None, "request_id": None,
    "request_seq": None, "client_id": None, "member_id": None, "group_instance_id": None, "generation_id": None,
    "error": None, "protocol_type": None, "protocol_name": None, "leader_id": None, "skip_assignment": None,
    "members": None, "assignment": None, "results": None, "coordinator_partition": None, "coordinator_id": None,
    "node_id": None, "repeat_count": 1, "repeat_interval_ms": None, "heartbeat_interval_ms": None,
}


class Output:
    """A group's rows since the last `take_output`. Rows that name the coordinator get the group's
    `__consumer_offsets` partition and the broker leading it (`coordinator_id`, None without a cluster or
    while the partition has no leader), as the runtime keeps them current here. Each `responses` row written
    is counted into `figures` (the group's `metrics` row) as `failed_commit` says, and each `generations` row
    as a generation: the figures are the rows'."""

    def __init__(self, group_id: str, next_seq: int = 0, coordinator_partition: int | None = None,
                 coordinator_id: int | None = None, figures: GroupMetrics | None = None) -> None:
        self.group_id = group_id
        self.next_seq = next_seq
        self.coordinator_partition = coordinator_partition
        self.coordinator_id = coordinator_id
        self.figures = figures
        self.tables: dict[str, list[dict]] = {name: [] for name in GROUP_TABLES}
        self.rejects: list[dict] = []
        self._deferred: list[tuple[str, dict]] | None = None

    def __len__(self) -> int:
        return sum(len(rows) for rows in self.tables.values()) + len(self.rejects)

    def deferred(self) -> "_Deferred":
        """Collect the rows produced inside the `with` block as (table, row) pairs instead of writing them."""
        return _Deferred(self)

    def _add(self, table: str, row: dict) -> None:
        if self._deferred is not None:
            self._deferred.append((table, row))
            return
        self.emit(table, row)

    def emit(self, table: str, row: dict) -> None:
        row["out_seq"] = self.next_seq
        self.next_seq += 1
        self.tables[table].append(row)
        if table == "responses" and self.figures is not None and failed_commit(row["api"], row["error"],
                                                                                row["results"]):
            self.figures.failed_commits += row["repeat_count"]

    def log_end(self, row: dict) -> None:
        self._add("log_end_offsets", dict(row, group_id=self.group_id))

    def response(self, request: Event, now: int, error: str, **fields) -> dict:
        row = self.response_row(request, now, error, **fields)
        self._add("responses", row)
        return row

    def response_row(self, request: Event, now: int, error: str, **fields) -> dict:
        """The `responses` row of an answer, not written (`response` writes it)."""
        row = _RESPONSE_ROW.copy()  # cheaper than a literal of 24 keys; the same keys in the same order
        row["group_id"] = self.group_id
        row["request_ts"] = request.ts
        row["response_ts"] = now
        row["api"] = API_NAMES[request.type]
        row["api_version"] = request.api_version
        row["request_id"] = request.request_id
        row["request_seq"] = request.seq
        row["client_id"] = request.client_id
        row["member_id"] = getattr(request, "member_id", None)
        row["group_instance_id"] = getattr(request, "group_instance_id", None)
        row["generation_id"] = getattr(request, "generation_id", None)
        row["error"] = error
        row["coordinator_partition"] = self.coordinator_partition
        row["coordinator_id"] = self.coordinator_id
        width = len(row)
        row.update(fields)
        if len(row) != width:  # a field that is no column added one: cheaper to notice than to look for
            raise KeyError(f"responses has no column {sorted(set(fields) - set(columns('responses')))}")
        if "node_id" not in fields:  # the request went to the coordinator it names (any API but FindCoordinator)
            row["node_id"] = row["coordinator_id"]
        return row

    def metrics(self, row: dict) -> None:
        self._add("metrics", dict(row, group_id=self.group_id))

    def request(self, raw: dict, repeat_count: int = 1, repeat_interval_ms: int | None = None) -> None:
        """A synthetic client's request, or a quiet run of them, as an input-contract row (replayable as a
        captured request)."""
        self.emit("requests", {"group_id": self.group_id, "ts": raw["ts"], "seq": raw["seq"], "type": raw["type"],
                               "client_id": raw["client_id"], "request_id": raw["request_id"],
                               "raw": request_json(raw), "repeat_count": repeat_count,
                               "repeat_interval_ms": repeat_interval_ms})

    def group_state(self, now: int, group_type: str, from_state: str | None, to_state: str, generation_id: int,
                    leader_id: str | None, member_count: int, cause: str) -> None:
        """A `group_states` row, for a group of either protocol (`group_type` and states by Kafka's names)."""
        self._add("group_states", {
            "group_id": self.group_id,
            "ts": now,
            "group_type": group_type,
            "from_state": from_state,
            "to_state": to_state,
            "generation_id": generation_id,
            "leader_id": leader_id,
            "member_count": member_count,
            "cause": cause,
            "coordinator_partition": self.coordinator_partition,
            "coordinator_id": self.coordinator_id,
        })

    def member(self, now: int, change: str, member_id: str, group_instance_id: str | None, client_id: str,
               client_host: str, cause: str, generation_id: int, member_count: int) -> None:
        """A `members` row, for a member of either protocol."""
        self._add("members", {
            "group_id": self.group_id,
            "ts": now,
            "member_id": member_id,
            "group_instance_id": group_instance_id,
            "client_id": client_id,
            "client_host": client_host,
            "change": change,
            "cause": cause,
            "generation_id": generation_id,
            "member_count": member_count,
            "coordinator_partition": self.coordinator_partition,
            "coordinator_id": self.coordinator_id,
        })

    def generation(self, row: dict) -> None:
        if self.figures is not None:
            self.figures.generations += 1
        self._add("generations", dict(row, group_id=self.group_id, coordinator_partition=self.coordinator_partition,
                                      coordinator_id=self.coordinator_id))

    def assignment(self, row: dict) -> None:
        self._add("assignments", dict(row, group_id=self.group_id))

    def offset(self, row: dict) -> None:
        self._add("offsets", dict(row, group_id=self.group_id, coordinator_partition=self.coordinator_partition,
                                  coordinator_id=self.coordinator_id, repeat_count=1, repeat_interval_ms=None,
                                  records_per_second=None, rate_origin_ts=None,
                                  log_end_origin_ts=None))

    def group_metadata(self, now: int, record: dict | None) -> None:
        row = {"group_id": self.group_id, "write_ts": now, "tombstone": record is None,
               "protocol_type": None, "generation_id": None, "protocol_name": None, "leader_id": None,
               "current_state_ts": None, "members": None, "coordinator_partition": self.coordinator_partition,
               "coordinator_id": self.coordinator_id}
        if record is not None:
            row.update(record)
            row["members"] = [dict(m) for m in record["members"]]
        self._add("group_metadata", row)

    def consumer_group_record(self, row: dict) -> None:
        self._add("consumer_group_records", dict(row, group_id=self.group_id,
                                                 coordinator_partition=self.coordinator_partition,
                                                 coordinator_id=self.coordinator_id))

    def reject(self, event: Event, reason: str) -> None:
        self.rejects.append({"raw": event_json(event), "reason": reason, "source": event.source, "line": event.line})


class _Deferred:
    """Output.deferred's block: a plain context manager, as every periodic request opens one."""

    __slots__ = ("out",)

    def __init__(self, out: Output) -> None:
        self.out = out

    def __enter__(self) -> list[tuple[str, dict]]:
        rows: list[tuple[str, dict]] = []
        self.out._deferred = rows
        return rows

    def __exit__(self, *exc) -> None:
        self.out._deferred = None


def event_json(event: Event) -> str:
    """The event as JSON text (bytes in base64), for a reject row's `raw` column."""
    def encode(value):
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        raise TypeError(type(value).__name__)

    fields = dataclasses.asdict(event)
    del fields["captured"]  # attached by the engine from the captured responses, not part of the input row
    if fields["variant"] is None:  # outside a sweep, rows name no variant
        del fields["variant"]
    return json.dumps(fields, default=encode, sort_keys=True)
