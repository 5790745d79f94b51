"""Shared fixtures: the committed captures (tests/data/captures, made by record.py there), imported once per
session through tshark and replayed once each on the local engine (tests/streaming/test_captures.py replays
them on Spark): the classic groups' captures for the tests of every capture (`run`), the KIP-848 one on its own
(`consumer_capture`).

Reading a pcap needs the `tshark` binary (Debian package `tshark`); tests that need it are skipped with that
reason when it is missing.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from simulations.capture.compare import compare_captured, final_offsets
from simulations.capture.importer import ImportResult, import_capture, write_import
from simulations.capture.pipelined import AS_CAPTURED
from tableio.captured_answers import attach_captured, captured_answers
from simulations.engines.local import run_local
from tableio.inputs import read_events
from state.config import CoordinatorConfig
from tableio.run_result import RunResult

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "captures"
# The shipped captures were answered by librdkafka's mock cluster, which reads a connection's requests as they
# come (it answered commits sent behind a pending JoinGroup): they are imported as captured, not held as a
# Kafka broker would have read them (simulations/capture/pipelined.py).
MOCK_PIPELINED = AS_CAPTURED
MANIFEST = json.loads((CAPTURES / "manifest.json").read_text())
SCENARIOS = sorted(MANIFEST)
CLASSIC = [name for name in SCENARIOS if MANIFEST[name].get("protocol", "classic") == "classic"]
CONSUMER_CAPTURE = "consumer-protocol"

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark is not installed (apt-get install tshark)")

# librdkafka's mock answers a group's first rebalance a fixed 3 s after the first JoinGroup; Kafka's initial
# delay restarts while members keep arriving, so it must be short enough to finish before the captured
# clients' SyncGroups arrive (record.py starts a first generation's consumers within 0.6 s).
MOCK_CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=1000)
# The mock's consumer groups: heartbeats every 3 s (the captured answers' heartbeat_interval_ms).
CONSUMER_MOCK_CONFIG = CoordinatorConfig.from_kafka({"group.consumer.heartbeat.interval.ms": 3000,
                                                     "group.consumer.min.heartbeat.interval.ms": 3000})


@dataclass
class Replayed:
    name: str
    manifest: dict
    imported: ImportResult
    events_path: Path
    captured_path: Path
    events: list
    result: RunResult
    divergences: object  # pandas DataFrame
    offsets: object


def replay_capture(name: str, out: Path, config: CoordinatorConfig) -> Replayed:
    manifest = MANIFEST[name]
    imported = import_capture(CAPTURES / manifest["file"], manifest["ports"], MOCK_PIPELINED)
    events_path, captured_path, _ = write_import(imported, out / f"{name}.jsonl")
    events = read_events([events_path]).events
    result = run_local(attach_captured(events, captured_answers(captured_path)), config)
    return Replayed(name, manifest, imported, events_path, captured_path, events, result,
                    compare_captured(result.tables, captured_path), final_offsets(result.tables, captured_path))


@pytest.fixture(scope="session")
def replayed(tmp_path_factory) -> dict[str, Replayed]:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    out = tmp_path_factory.mktemp("captures")
    return {name: replay_capture(name, out, MOCK_CONFIG) for name in CLASSIC}


@pytest.fixture(params=CLASSIC)
def run(request, replayed) -> Replayed:
    return replayed[request.param]


@pytest.fixture(scope="session")
def consumer_capture(tmp_path_factory) -> Replayed:
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    return replay_capture(CONSUMER_CAPTURE, tmp_path_factory.mktemp("consumer-capture"), CONSUMER_MOCK_CONFIG)
