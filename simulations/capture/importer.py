"""`coordsim capture import`: a capture in, three files out: the group requests as events of the input
contract (JSONL), what the captured broker answered (captured.py), and the rejects.

Requests and responses are paired by (TCP connection, correlation id), as a Kafka client pairs them. Every
group request becomes an event whether or not its response was captured: the broker did receive it, and
leaving it out would change what the coordinator sees (a killed consumer's last JoinGroup still counts);
only the comparison has nothing to go on, which the rejects table records. Anything else that cannot be
used (damaged or non-Kafka bytes, versions we do not decode, responses to requests the capture missed) is a
reject row with its reason; the import itself only fails when the file cannot be read at all.

A reject's `line` is the capture's frame (packet) number, so `tshark -r FILE -Y frame.number==N` shows it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tableio.captured import CAPTURED_SUFFIX, REJECTS_SUFFIX, empty_row, sidecar, write_json_lines
from simulations.capture.contract import (Part, Request, captured_request_fields, captured_response_fields,
                                          event_row, parts)
from simulations.capture.messages import (GROUP_APIS, METADATA, decode_request, decode_response,
                                          read_request_header, response_correlation_id)
from simulations.capture.pipelined import HELD, hold_pipelined
from simulations.capture.segments import CaptureError, SegmentSource, json_segments, tshark_segments
from simulations.capture.streams import Broken, Frame, Reassembler
from simulations.capture.topics import TopicCatalog, resolve_topics
from simulations.capture.wire import WireError
from tableio.inputs import read_events, reject_row
from tableio.parquet import path_problem
from state.events import API_NAMES

DEFAULT_PORTS = (9092,)
_CAPTURE_MAGIC = (b"\xa1\xb2\xc3\xd4", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1",
                  b"\x0a\x0d\x0d\x0a")
_GZIP_MAGIC = b"\x1f\x8b"  # tshark reads gzipped captures itself
_RAW_EXCERPT = 512  # bytes of a rejected frame kept (hex) in the rejects table


@dataclass
class ImportResult:
    source: str
    kind: str  # "pcap", "tshark-json" or "events-jsonl"
    events: list[dict] = field(default_factory=list)
    captured: list[dict] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)
    requests: Counter = field(default_factory=Counter)  # group requests kept, by API name
    other_requests: int = 0  # Kafka requests of other APIs (Fetch, Metadata, ...), framed and skipped
    unanswered: int = 0

    def reject_reasons(self) -> Counter:
        """Rejects counted by kind: the part of the reason before its first colon."""
        return Counter(r["reason"].split(":", 1)[0] for r in self.rejects)


def import_capture(path: str | os.PathLike, ports=DEFAULT_PORTS, pipelined: str = HELD) -> ImportResult:
    """Read a pcap/pcapng (through tshark), a tshark JSON export or a JSONL events file. Raises
    CaptureError only when the file cannot be read at all. `pipelined`: when a request sent behind another still
    unanswered on its connection is replayed (simulations/capture/pipelined.py): HELD, when the broker answered
    that one, as a Kafka broker reads it; AS_CAPTURED, when the capture saw it."""
    path = Path(path)
    if not path.is_file():
        raise CaptureError(f"{path}: no such file" if not path.exists() else f"{path}: not a regular file")
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError as error:
        raise CaptureError(f"{path}: cannot read ({error.strerror or error})") from None
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if head[:4] in _CAPTURE_MAGIC or head[:2] == _GZIP_MAGIC:
        return _import_segments(path, "pcap", tshark_segments(path, tuple(ports)), ports, pipelined)
    if text.startswith(b"["):
        return _import_segments(path, "tshark-json", json_segments(path), ports, pipelined)
    if text.startswith(b"{") or not text:
        return _import_events(path)
    raise CaptureError(f"{path}: not a pcap/pcapng capture, a tshark JSON export or a JSONL events file")


def write_import(result: ImportResult, events_path: str | os.PathLike) -> tuple[Path, Path, Path]:
    """Write the events, the captured responses and the rejects; returns their paths."""
    events_path = Path(events_path)
    paths = (events_path, sidecar(events_path, CAPTURED_SUFFIX), sidecar(events_path, REJECTS_SUFFIX))
    try:
        events_path.parent.mkdir(parents=True, exist_ok=True)
        for target, rows in zip(paths, (result.events, result.captured, result.rejects)):
            write_json_lines(target, rows)
    except OSError as error:
        raise CaptureError(f"cannot write {events_path}: {path_problem(error, events_path)}") from None
    return paths


# ---------------------------------------------------------------------------------------------- captures

def _import_segments(path: Path, kind: str, source: SegmentSource, ports, pipelined: str) -> ImportResult:
    result = ImportResult(str(path), kind)
    pairing = _Pairing(result, Reassembler(ports))
    for item in pairing.reassembler.feed(source.segments):
        if isinstance(item, Broken):
            pairing.broken(item)
        elif item.to_broker:
            pairing.request(item)
        else:
            pairing.response(item)
    for item in pairing.reassembler.leftovers():
        pairing.broken(item)
    pairing.finish()
    resolve_topics(result, pairing.topics)
    if pipelined == HELD:
        hold_pipelined(result.events, result.captured)
    for warning in source.warnings:
        result.rejects.append(reject_row("", f"capture damaged: tshark: {warning}", result.source, 0))
    return result


@dataclass
class _Pending:
    """A request waiting for its response; `request` is None for requests we do not decode (other APIs,
    or group requests already rejected), whose responses are consumed silently. `metadata_version`: a
    Metadata request's, whose response is read for its topics only."""

    frame: Frame
    correlation_id: int
    request: Request | None = None
    rows: list[tuple[Part, dict]] = field(default_factory=list)
    metadata_version: int | None = None


class _Pairing:
    def __init__(self, result: ImportResult, reassembler: Reassembler) -> None:
        self.result = result
        self.reassembler = reassembler
        self.pending: dict[tuple[int, int], _Pending] = {}
        self.topics = TopicCatalog()

    def _reject(self, reason: str, frame: Frame, raw: bytes | str) -> None:
        if isinstance(raw, bytes):
            raw = raw[:_RAW_EXCERPT].hex() + ("…" if len(raw) > _RAW_EXCERPT else "")
        self.result.rejects.append(reject_row(raw, reason, self.result.source, frame.first_frame))

    def broken(self, item: Broken) -> None:
        side = "client → broker" if item.to_broker else "broker → client"
        self.result.rejects.append(reject_row(item.raw, f"{item.reason} ({item.connection.name}, {side})",
                                              self.result.source, item.frame))

    def request(self, frame: Frame) -> None:
        conn = frame.connection
        try:
            header = read_request_header(frame.data)
        except WireError as error:
            self._reject(f"not Kafka traffic: {error} ({conn.name}, client → broker); the rest of this "
                         "direction is skipped", frame, frame.data)
            self.reassembler.stop(conn, to_broker=True)
            return
        key = (conn.stream, header.correlation_id)
        if key in self.pending:
            self._unanswered(self.pending.pop(key), "its correlation id was reused before a response")
        pending = self.pending[key] = _Pending(frame, header.correlation_id)
        api = GROUP_APIS.get(header.api_key)
        if api is None:
            self.result.other_requests += 1
            if header.api_key == METADATA.key and header.api_version <= METADATA.max_version:
                pending.metadata_version = header.api_version
            return
        where = f"{api.name} v{header.api_version} (correlation id {header.correlation_id} on {conn.name})"
        if header.api_version > api.max_version:
            self._reject(f"unsupported API version: {where}; this importer decodes {api.name} "
                         f"v0-v{api.max_version}", frame, frame.data)
            return
        try:
            body = decode_request(api, header.api_version, frame.data, header.body_offset)
        except WireError as error:
            self._reject(f"undecodable request: {where}: {error}", frame, frame.data)
            return
        pending.request = Request(api, header.api_version, header.client_id or "", "/" + conn.client_host, body)
        self.result.requests[api.name] += 1
        ts = frame.ts_us // 1000
        for part in parts(pending.request):
            seq = len(self.result.captured) + 1
            request_id = f"{conn.name}/{header.correlation_id}"
            if part.count > 1:
                request_id += f"/{part.group_id}"
            event = event_row(pending.request, part)
            if event is not None:
                self.result.events.append({"ts": ts, "seq": seq, "request_id": request_id, **event})
            row = empty_row()
            row.update(request_id=request_id, seq=seq, connection=conn.name, request_frame=frame.first_frame,
                       request_ts=ts, **captured_request_fields(pending.request, part))
            self.result.captured.append(row)
            pending.rows.append((part, row))

    def response(self, frame: Frame) -> None:
        conn = frame.connection
        correlation_id = response_correlation_id(frame.data)
        pending = self.pending.pop((conn.stream, correlation_id), None)
        if pending is None:
            self._reject(f"response without request: correlation id {correlation_id} on {conn.name} matches no "
                         "captured request (sent before the capture began, or its packets were lost)",
                         frame, frame.data)
            return
        if pending.metadata_version is not None:
            self._metadata(frame, pending.metadata_version)
            return
        request = pending.request
        if request is None:
            return
        for _, row in pending.rows:
            row.update(response_ts=frame.ts_us // 1000, response_frame=frame.last_frame)
        try:
            body = decode_response(request.api, request.version, frame.data)
        except WireError as error:
            self._reject(f"undecodable response: {request.api.name} v{request.version} (correlation id "
                         f"{correlation_id} on {conn.name}): {error}; the request is kept, nothing to compare",
                         frame, frame.data)
            return
        for part, row in pending.rows:
            row.update(captured_response_fields(request, part, body))

    def _metadata(self, frame: Frame, version: int) -> None:
        try:
            body = decode_response(METADATA, version, frame.data)
        except WireError as error:
            self._reject(f"undecodable response: Metadata v{version} (on {frame.connection.name}): {error}; its "
                         "topics are not known", frame, frame.data)
            return
        self.topics.note(frame.ts_us // 1000, body)

    def _unanswered(self, pending: _Pending, why: str) -> None:
        request = pending.request
        if request is None:
            return
        self.result.unanswered += 1
        conn = pending.frame.connection
        self._reject(f"no response captured: {request.api.name} v{request.version} (correlation id "
                     f"{pending.correlation_id} on {conn.name}): {why}; the request is kept, nothing to compare",
                     pending.frame, pending.frame.data)

    def finish(self) -> None:
        for pending in self.pending.values():
            self._unanswered(pending, "the connection or the capture ended first")
        self.pending.clear()


# ---------------------------------------------------------------------------------------------- our JSONL

def _import_events(path: Path) -> ImportResult:
    """Our own input contract: rows are validated as a replay would, and the accepted ones written back as
    they were, with `seq` and `request_id` filled in where missing so a replay can refer to every row."""
    result = ImportResult(str(path), "events-jsonl")
    rows = read_events([path])
    result.rejects.extend(rows.rejects)
    lines = path.read_bytes().removeprefix(b"\xef\xbb\xbf").split(b"\n")
    for event in rows.events:
        raw = json.loads(lines[event.line - 1])
        raw.setdefault("seq", event.seq)
        raw.setdefault("request_id", event.request_id or f"{path.name}:{event.line}")
        result.events.append(raw)
        result.requests[API_NAMES.get(event.type, event.type)] += 1
    return result
