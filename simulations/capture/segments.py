"""TCP segments out of a capture: a pcap/pcapng read by `tshark`, or a JSON export tshark already made.

tshark only dissects IP and TCP here and hands over each segment's payload bytes; the Kafka framing and
decoding are ours (streams.py, messages.py). Wireshark's own Kafka dissector is deliberately not used: the
versions it knows lag behind the clients (Wireshark 4.0 marks librdkafka 2.x's OffsetCommit v9 and Metadata
v13 "Unsupported"), it leaves the consumer-protocol bytes raw, and its field names change between releases,
whereas TCP payload bytes mean the same in every tshark since 1.x.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

TSHARK_FIELDS = (
    "frame.number", "frame.time_epoch", "ip.src", "ipv6.src", "ip.dst", "ipv6.dst", "tcp.srcport",
    "tcp.dstport", "tcp.stream", "tcp.seq_raw", "tcp.len", "tcp.flags.syn", "tcp.flags.ack", "tcp.payload",
)
# tcp.seq (relative) stands in for tcp.seq_raw in JSON exports made by tshark releases before 3.4.
SEQUENCE_FIELDS = ("tcp.seq_raw", "tcp.seq")


class CaptureError(Exception):
    """The capture cannot be read at all (no tshark, tshark refuses the file, JSON that is not an export)."""


@dataclass(frozen=True, slots=True)
class Segment:
    frame: int  # frame number in the capture, 1-based
    ts_us: int  # capture time, epoch microseconds
    src: tuple[str, int]
    dst: tuple[str, int]
    stream: int  # tshark's TCP conversation index: tells apart reuses of one address/port 4-tuple
    seq: int
    length: int  # TCP payload length on the wire; more than len(payload) when the packet was cut short
    payload: bytes
    syn: bool  # the SYN flag: the stream's first sequence number is seq + 1
    ack: bool  # the ACK flag: a SYN without it comes from the client


@dataclass
class SegmentSource:
    """Segments in capture order, plus tshark's complaint when it stopped early (a file cut short)."""

    segments: Iterator[Segment]
    warnings: list[str]


def tshark_segments(path: Path, ports: tuple[int, ...]) -> SegmentSource:
    tshark = shutil.which("tshark")
    if tshark is None:
        raise CaptureError("tshark is not installed (Debian/Ubuntu: apt-get install tshark); it reads the "
                           "pcap. Alternatively export the capture to JSON with tshark elsewhere and import that "
                           "(docs/captures.md)")
    # "a or b" rather than a set ("in {a b}"), whose separator changed between tshark releases
    port_filter = " or ".join(f"tcp.port == {p}" for p in ports)
    command = [tshark, "-r", str(path), "-n", "-Y", port_filter, "-T", "fields",
               "-E", "header=n", "-E", "separator=/t", "-E", "occurrence=f"]
    for name in TSHARK_FIELDS:
        command += ["-e", name]
    warnings: list[str] = []
    return SegmentSource(_run_tshark(command, warnings), warnings)


def _run_tshark(command: list[str], warnings: list[str]) -> Iterator[Segment]:
    # stderr goes to a file: a pipe nobody reads while stdout streams could fill up and stall tshark
    with tempfile.TemporaryFile("w+") as errors, \
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True) as process:
        rows = 0
        for line in process.stdout:
            values = dict(zip(TSHARK_FIELDS, line.rstrip("\n").split("\t")))
            segment = _segment(values)
            rows += 1
            if segment is not None:
                yield segment
        process.wait()
        errors.seek(0)
        stderr = errors.read()
    complaints = [line.removeprefix("tshark: ").strip() for line in stderr.splitlines()
                  if line.strip() and not line.startswith("Running as user")]
    if process.returncode != 0 and rows == 0:
        raise CaptureError(f"tshark cannot read the capture: {'; '.join(complaints) or f'exit code {process.returncode}'}")
    # tshark exits non-zero but keeps what it read when a file ends in the middle of a packet.
    warnings.extend(complaints if process.returncode != 0 else [])


def json_segments(path: Path) -> SegmentSource:
    """A `tshark -T json` export: either the full dissection or one made with `-e` for the fields above."""
    try:
        packets = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise CaptureError(f"{path}: not a tshark JSON export ({error})") from None
    if not isinstance(packets, list):
        raise CaptureError(f"{path}: not a tshark JSON export (expected a list of packets)")
    return SegmentSource(_json_packets(packets), [])


def _json_packets(packets: list) -> Iterator[Segment]:
    for packet in packets:
        layers = packet.get("_source", {}).get("layers") if isinstance(packet, dict) else None
        if not isinstance(layers, dict):
            continue
        values: dict[str, str] = {}
        _collect(layers, values)
        for name in SEQUENCE_FIELDS:
            if name in values:
                values["tcp.seq_raw"] = values[name]
                break
        segment = _segment(values)
        if segment is not None:
            yield segment


def _collect(node: Any, values: dict[str, str]) -> None:
    """Field values by name from a JSON export's nested layers; the first occurrence wins, as with
    `-E occurrence=f` (an ICMP error quoting a TCP header must not override the packet's own)."""
    for key, value in node.items():
        if isinstance(value, dict):
            _collect(value, values)
            continue
        if isinstance(value, list):
            if not value or isinstance(value[0], dict):
                continue
            value = value[0]
        values.setdefault(key, str(value))


def _segment(values: dict[str, str]) -> Segment | None:
    """None for a frame that is not a TCP segment over IP (tshark prints empty fields for those)."""
    try:
        seconds, _, fraction = values["frame.time_epoch"].partition(".")
        ts_us = int(seconds) * 1_000_000 + int((fraction + "000000")[:6])
        src_ip = values.get("ip.src") or values.get("ipv6.src")
        dst_ip = values.get("ip.dst") or values.get("ipv6.dst")
        payload = bytes.fromhex(values.get("tcp.payload", "").replace(":", ""))
        return Segment(
            frame=int(values["frame.number"]), ts_us=ts_us,
            src=(src_ip, int(values["tcp.srcport"])), dst=(dst_ip, int(values["tcp.dstport"])),
            stream=int(values["tcp.stream"]), seq=int(values["tcp.seq_raw"]),
            length=int(values.get("tcp.len") or len(payload)), payload=payload,
            syn=_flag(values.get("tcp.flags.syn")), ack=_flag(values.get("tcp.flags.ack")),
        ) if src_ip and dst_ip else None
    except (KeyError, ValueError):
        return None


def _flag(value: str | None) -> bool:
    # tshark prints flags as 1/0, True/False or "1"/"0" depending on release and output format
    return value is not None and value.strip().lower() in ("1", "true")
