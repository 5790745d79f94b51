"""Damaged and foreign captures: every problem becomes a counted reject with its reason, never a traceback;
only a file that cannot be read at all stops the import, with one line."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from simulations.capture import segments
from simulations.capture.commands import capture
from simulations.capture.importer import import_capture
from simulations.capture.messages import HEARTBEAT, JOIN_GROUP
from simulations.capture.segments import CaptureError

from .conftest import CAPTURES, MANIFEST, needs_tshark
from .kafka_bytes import W, request_frame, response_frame
from .pcap import Conversation, write_pcap

pytestmark = needs_tshark


def heartbeat(correlation_id: int, version: int = 3) -> bytes:
    body = W().string("g").i32(1).string("m-1").string(None).done()
    return request_frame(HEARTBEAT.key, version, correlation_id, "app-1", body, flexible=False)


def heartbeat_answer(correlation_id: int) -> bytes:
    return response_frame(correlation_id, W().i32(0).i16(0).done(), flexible=False)


def reasons(result) -> list[str]:
    return sorted(r["reason"].split(":")[0] for r in result.rejects)


def test_a_clean_synthetic_exchange_imports(tmp_path):
    talk = Conversation()
    talk.send(heartbeat(1))
    talk.send(heartbeat_answer(1), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "ok.pcap", talk.packets))
    assert result.rejects == [] and len(result.events) == 1
    assert result.events[0]["request_id"] == "127.0.0.1:51000>127.0.0.1:9092/1"
    assert result.captured[0]["error"] == "NONE"


def test_a_request_split_over_segments_and_two_in_one_segment(tmp_path):
    talk = Conversation()
    frame = heartbeat(1)
    talk.send(frame[:7])
    talk.send(frame[7:] + heartbeat(2))
    talk.send(heartbeat_answer(1) + heartbeat_answer(2)[:5], to_broker=False)
    talk.send(heartbeat_answer(2)[5:], to_broker=False)
    result = import_capture(write_pcap(tmp_path / "split.pcap", talk.packets))
    assert result.rejects == [] and [c["error"] for c in result.captured] == ["NONE", "NONE"]


def test_a_missing_response_keeps_the_request_and_says_so(tmp_path):
    talk = Conversation()
    talk.send(heartbeat(1))
    talk.send(heartbeat(2))
    talk.send(heartbeat_answer(1), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "missing.pcap", talk.packets))
    assert len(result.events) == 2 and result.unanswered == 1
    assert reasons(result) == ["no response captured"]
    assert result.rejects[0]["line"] == 5  # the packet that carried the request
    assert [c["response_ts"] is None for c in result.captured] == [False, True]


def test_garbage_on_the_port_is_not_kafka(tmp_path):
    talk = Conversation()
    talk.send(b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n")
    talk.send(b"HTTP/1.1 400 Bad Request\r\n\r\n", to_broker=False)
    result = import_capture(write_pcap(tmp_path / "http.pcap", talk.packets))
    assert result.events == []
    assert reasons(result) == ["not Kafka traffic", "not Kafka traffic"]  # both directions


def test_a_plausible_size_with_a_nonsense_header_is_not_kafka(tmp_path):
    talk = Conversation()
    talk.send(b"\x00\x00\x00\x0c" + b"\xff" * 12)  # api key -1
    talk.send(heartbeat(2))
    result = import_capture(write_pcap(tmp_path / "noise.pcap", talk.packets))
    assert reasons(result) == ["not Kafka traffic"] and result.events == []


def test_an_unknown_api_version_is_rejected_and_its_response_skipped(tmp_path):
    talk = Conversation()
    join = request_frame(JOIN_GROUP.key, 10, 1, "app-1", b"\x00" * 30, flexible=True)
    talk.send(join)
    talk.send(response_frame(1, b"\x00" * 20, flexible=True), to_broker=False)
    talk.send(heartbeat(2))
    talk.send(heartbeat_answer(2), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "v10.pcap", talk.packets))
    assert reasons(result) == ["unsupported API version"]
    assert "JoinGroup v10" in result.rejects[0]["reason"]
    assert [e["type"] for e in result.events] == ["HEARTBEAT"]


def test_a_truncated_packet_stops_its_direction(tmp_path):
    talk = Conversation()
    talk.send(heartbeat(1), cut=10)  # a snap length shorter than the packet
    talk.send(heartbeat(2))
    talk.send(heartbeat_answer(1) + heartbeat_answer(2), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "snap.pcap", talk.packets))
    assert result.events == []
    assert reasons(result) == ["response without request", "response without request", "truncated packet"]


def test_a_lost_segment_is_a_capture_gap(tmp_path):
    talk = Conversation()
    talk.send(heartbeat(1))
    talk.send(heartbeat(2))
    talk.send(heartbeat(3))
    lost = 4  # the second request's packet (after the three handshake packets)
    result = import_capture(write_pcap(tmp_path / "gap.pcap", talk.packets, drop={lost}))
    assert [e["request_id"][-2:] for e in result.events] == ["/1"]
    assert reasons(result) == ["capture gap", "no response captured"]


def test_a_capture_that_starts_mid_connection_rejects_orphan_responses(tmp_path):
    talk = Conversation()
    talk.send(heartbeat(1))
    talk.send(heartbeat_answer(1), to_broker=False)
    talk.send(heartbeat(2))
    talk.send(heartbeat_answer(2), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "late.pcap", talk.packets, drop={0, 1, 2, 3}))
    assert reasons(result) == ["response without request"]
    assert [e["request_id"][-2:] for e in result.events] == ["/2"]


def test_traffic_on_other_ports_is_ignored(tmp_path):
    talk = Conversation(broker=("127.0.0.1", 9999))
    talk.send(b"anything at all")
    result = import_capture(write_pcap(tmp_path / "elsewhere.pcap", talk.packets))
    assert result.events == [] and result.rejects == []
    assert import_capture(tmp_path / "elsewhere.pcap", ports=[9999]).rejects  # decoded when asked


def test_a_pcap_cut_short_keeps_what_was_read(tmp_path):
    manifest = MANIFEST["range-close"]
    data = (CAPTURES / manifest["file"]).read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[: len(data) // 2 + 3])  # ends inside a packet record
    result = import_capture(cut, manifest["ports"])
    assert result.events
    found = set(reasons(result))
    assert "capture damaged" in found  # tshark's "cut short in the middle of a packet"
    assert found <= {"capture damaged", "capture ends mid-frame", "no response captured"}


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    (b"\x00\x01garbage", "not a pcap/pcapng capture, a tshark JSON export or a JSONL events file"),
    (b"\xd4\xc3\xb2\xa1" + b"\x00" * 5, "tshark cannot read the capture"),
    (b"[1, 2", "not a tshark JSON export"),
])
def test_unreadable_files_fail_with_one_line(tmp_path, content, message):
    path = tmp_path / "input.pcap"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CaptureError, match=message):
        import_capture(path)
    outcome = CliRunner().invoke(capture, ["import", str(path), "--out", str(tmp_path / "events.jsonl")])
    assert outcome.exit_code == 2 and message in outcome.output
    assert "Traceback" not in outcome.output


def test_missing_tshark_is_one_clear_message(tmp_path, monkeypatch):
    monkeypatch.setattr(segments.shutil, "which", lambda name: None)
    talk = Conversation()
    path = write_pcap(tmp_path / "any.pcap", talk.packets)
    outcome = CliRunner().invoke(capture, ["import", str(path), "--out", str(tmp_path / "events.jsonl")])
    assert outcome.exit_code == 2
    assert "tshark is not installed (Debian/Ubuntu: apt-get install tshark)" in outcome.output


def test_out_of_order_retransmitted_and_overlapping_segments_are_put_back_in_order(tmp_path):
    talk = Conversation()
    frames = heartbeat(1) + heartbeat(2)
    first = talk.send(frames[:20])
    second = talk.send(frames[20:])
    # the capture saw the second segment first, then the first twice, then a retransmission that overlaps
    again = dataclasses.replace(first, ts_us=second.ts_us + 10)
    overlap = dataclasses.replace(second, seq=second.seq - 5, payload=frames[15:], ts_us=second.ts_us + 20)
    first.ts_us, second.ts_us = second.ts_us, first.ts_us
    talk.packets += [again, overlap]
    talk.send(heartbeat_answer(1) + heartbeat_answer(2), to_broker=False)
    result = import_capture(write_pcap(tmp_path / "reordered.pcap", talk.packets))
    assert result.rejects == []
    assert [e["request_id"][-2:] for e in result.events] == ["/1", "/2"]
