"""One conformance scenario end to end: a fresh cluster of the Kafka version, the scenario's topics, dumpcap on
the brokers' ports, the script's real consumers, `__consumer_offsets` read back, every process stopped; then
the capture imported (`coordsim capture import`), replayed with the brokers' settings (`coordsim replay
--compare-captured`) and compared: the answers (simulations/capture/compare.py) and the records
(offsets_topic.py). Everything a scenario leaves is kept under its work folder."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from simulations.capture import compare_captured, final_offsets, import_capture, write_import
from simulations.conformance import ConformanceError
from simulations.conformance.cluster import Cluster
from simulations.conformance.driver import Java, compile_driver
from simulations.conformance.failover import fault_rows, write_faults
from simulations.conformance.maven import classpath
from simulations.conformance.offsets_topic import compare_records, group_deletions
from simulations.conformance.processes import Processes, sigterm_ends_the_suite
from simulations.conformance.scenarios import GROUP, SCENARIOS, Context, Scenario
from simulations.conformance.sniffer import Capture
from simulations.engines import run_local
from tableio.captured_answers import attach_captured, captured_answers
from tableio.coordinator_settings import load_config
from tableio.inputs import read_events


@dataclass
class Outcome:
    """What one scenario gave: the divergences (one row per captured request), the final offsets, the records
    comparison, and where its files are."""
    scenario: Scenario
    version: str
    divergences: pd.DataFrame
    offsets: pd.DataFrame
    records: pd.DataFrame
    rejects: list[dict]
    work: Path
    group_deleted_at: list[int] = field(default_factory=list)  # the broker's GroupMetadata tombstones' times


def replay_settings(scenario: Scenario, version: str) -> list[str]:
    """The broker's settings as coordsim's: the scenario's, and the Kafka release's record formats."""
    settings = {f"{k}": v for k, v in scenario.broker.items() if k in _COORDINATOR_SETTINGS}
    settings["coordsim.kafka.version"] = "4.0" if version.startswith("4.0.") else "trunk"
    return [f"{k}={v}" for k, v in settings.items()]


def run_scenario(scenario: Scenario, version: str, classpath: list[str], classes: Path, work: Path) -> Outcome:
    work.mkdir(parents=True, exist_ok=True)
    pcap = work / "capture.pcapng"
    with Processes() as processes:
        cluster = Cluster(classpath, work / "cluster", processes, nodes=scenario.nodes, settings=scenario.broker)
        cluster.start()
        java = Java(classpath, classes, processes, work)
        java.task("topics", cluster.bootstrap, *scenario.topics)
        # The first FindCoordinator creates __consumer_offsets, and the group's first requests would meet
        # NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS while it is created and loaded: a cluster's first
        # minute, not a group's behaviour. An admin OffsetFetch first (uncaptured) has it ready; the task then
        # names the broker leading the group's partition.
        coordinator = int(java.task("coordinator", cluster.bootstrap, GROUP)[-1].split()[1])
        started_at = int(time.time() * 1000)  # the capture's clock (dumpcap on this host)
        capture = Capture(processes, cluster.client_ports, pcap)
        ctx = Context(java, cluster, scenario.consumer, coordinator)
        try:
            scenario.script(ctx)
        finally:
            capture.stop()
        dumped_at = int(time.time() * 1000)  # records coordsim writes later are after the capture
        dump = java.task("dump", cluster.bootstrap)
    (work / "consumer_offsets.ndjson").write_text("".join(line + "\n" for line in dump))
    return compare(scenario, version, pcap, cluster.client_ports, [json.loads(line) for line in dump], work,
                   dumped_at, (started_at, coordinator, ctx.kills))


def compare(scenario: Scenario, version: str, pcap: Path, ports: list[int], dump: list[dict], work: Path,
            dumped_at: int | None = None, failover: tuple[int, int, list] | None = None) -> Outcome:
    """The capture imported, replayed and compared; `failover` (the capture's start, the coordinator then, the
    brokers killed) gives the replay the coordinator's moves when the script killed a broker."""
    imported = import_capture(pcap, tuple(ports))  # pipelined requests held, as the broker read them
    events_file, captured_file, rejects_file = write_import(imported, work / "events" / "capture.jsonl")
    config = load_config(overrides=replay_settings(scenario, version))
    files = [events_file]
    if failover is not None and failover[2]:
        captured = [json.loads(line) for line in captured_file.read_text().splitlines()]
        files.append(write_faults(fault_rows(GROUP, *failover, captured), work / "events" / "faults.jsonl"))
    events = attach_captured(read_events(files).events, captured_answers(captured_file))
    result = run_local(events, config)
    divergences = compare_captured(result.tables, captured_file)
    divergences.to_json(work / "divergences.ndjson", orient="records", lines=True)
    offsets = final_offsets(result.tables, captured_file)
    records = compare_records(dump, result.tables, kafka_4_0=config.kafka_4_0, until=dumped_at)
    records.to_json(work / "records.ndjson", orient="records", lines=True)
    return Outcome(scenario, version, divergences, offsets, records, list(imported.rejects), work,
                   group_deletions(dump))


_COORDINATOR_SETTINGS = set(load_config().to_kafka())


def kafka_cache(version: str) -> Path:
    """Where a Kafka version's classpath listing and compiled driver are kept (the jars stay in Maven's
    repository)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "coordsim-conformance" / version


def run_suite(version: str, names: list[str], work: Path, repo_local: str | None = None,
              maven_args: tuple[str, ...] = (), progress=print) -> list[Outcome]:
    """The named scenarios against Kafka `version`, one fresh cluster each, under `work`; ConformanceError for
    a bad state of the surroundings, with every process the suite started already stopped. The classpath and
    the compiled driver are kept in kafka_cache(version) for the next run."""
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise ConformanceError(f"--scenario {unknown[0]}: not a conformance scenario; one of {', '.join(SCENARIOS)}")
    with sigterm_ends_the_suite():
        started = time.monotonic()
        jars = classpath(version, kafka_cache(version), repo_local, maven_args)
        classes = compile_driver(jars, kafka_cache(version))
        progress(f"Kafka {version}: {len(jars)} jars resolved, driver compiled ({time.monotonic() - started:.0f} s)")
        outcomes = []
        for name in names:
            started = time.monotonic()
            folder = work / name
            shutil.rmtree(folder, ignore_errors=True)
            outcomes.append(run_scenario(SCENARIOS[name], version, jars, classes, folder))
            progress(f"{name}: {time.monotonic() - started:.0f} s ({folder})")
        return outcomes
