"""Record the group-protocol captures in this folder: real librdkafka consumers (confluent-kafka) against
librdkafka's built-in mock cluster, captured on the loopback interface with dumpcap.

    .venv/bin/pip install confluent-kafka          # recording only; the tests read the committed pcaps
    apt-get install tshark                          # dumpcap (and tshark, which the importer needs)
    .venv/bin/python tests/data/captures/record.py  # all scenarios, or name some: ... record.py range-close

Capturing on `lo` needs root or CAP_NET_RAW. Each scenario writes `<name>.pcapng` here and its entry in
`manifest.json` (the mock brokers' ports, which the importer needs as --port, the group, the topic and what
happened when). The consumers that form a group's first generation start within 0.6 s of each other: the
mock answers the first rebalance a fixed 3 s after the first JoinGroup, and Kafka's initial rebalance delay
(restarted while new members keep arriving) can only finish before that when the joins are close together
(the tests replay with group.initial.rebalance.delay.ms=1000). Rerunning produces different captures (new
ports, member ids, timings); the tests assert invariants, not exact values, so any faithful recording passes.

How a scenario runs: this process creates the mock cluster (a Producer with `test.mock.num.brokers`, which
lives as long as that producer), creates the topic by producing to it (auto-created topics get 4 partitions),
starts dumpcap on the brokers' ports, then starts each consumer as a child process (this script with
`consumer ...`), so one can be killed with SIGKILL like a crashed host. A consumer polls, commits its
positions synchronously about once a second, and on SIGTERM closes gracefully (LeaveGroup; with
group.protocol=consumer, a heartbeat at epoch -1, or -2 for a static member). The producer keeps writing a few
records a second so that commits keep moving. A scenario's prelude consumers join and close before dumpcap
starts, so that the group is captured in mid-life.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
TOPIC = "orders"
SESSION_TIMEOUT_MS = 6000  # Kafka's group.min.session.timeout.ms, so the simulator accepts it unchanged


@dataclass(frozen=True)
class Step:
    at: float  # seconds after the capture started
    action: str  # "start", "close" (SIGTERM: graceful LeaveGroup) or "kill" (SIGKILL)
    consumer: str


@dataclass(frozen=True)
class Scenario:
    description: str
    assignor: str
    brokers: int
    duration: float
    steps: tuple[Step, ...]
    # client.id per consumer; None = librdkafka's default "rdkafka" for all, as in many real fleets
    client_ids: dict[str, str] | None = None
    instance_ids: dict[str, str] = field(default_factory=dict)
    # group.protocol: "consumer" (KIP-848) sends ConsumerGroupHeartbeat with `assignor` as the broker-side
    # group.remote.assignor; the session and heartbeat interval are then the mock broker's.
    protocol: str = "classic"
    # Consumers that join and close (committing nothing) before the capture starts: the group is then not new
    # when it is captured, as in a capture of a long-lived group (its epochs do not start where a replay's do).
    prelude: tuple[str, ...] = ()


SCENARIOS = {
    "range-close": Scenario(
        description="range: c1, c2, c3 join one after another; c2 closes gracefully (LeaveGroup); c4 joins late",
        assignor="range", brokers=1, duration=24.0,
        client_ids={"c1": "billing-1", "c2": "billing-2", "c3": "billing-3", "c4": "billing-4"},
        steps=(Step(0.5, "start", "c1"), Step(0.8, "start", "c2"), Step(5.0, "start", "c3"),
               Step(11.0, "close", "c2"), Step(16.0, "start", "c4"), Step(22.0, "close", "c1")),
    ),
    "cooperative-kill": Scenario(
        description="cooperative-sticky on 3 brokers, one client.id for all: a, b, c join; d joins, which "
                    "makes the others give up a partition (two rebalance rounds); b is killed (SIGKILL, no "
                    "LeaveGroup) and expires after the session timeout",
        assignor="cooperative-sticky", brokers=3, duration=32.0,
        steps=(Step(0.5, "start", "a"), Step(0.8, "start", "b"), Step(1.1, "start", "c"),
               Step(8.0, "start", "d"), Step(17.0, "kill", "b")),
    ),
    "static-restart": Scenario(
        description="range with static members (group.instance.id): s1, s2 join; s2 is killed and restarted "
                    "with the same instance id before its session times out",
        assignor="range", brokers=1, duration=20.0,
        client_ids={"s1": "static-1", "s2": "static-2"},
        instance_ids={"s1": "instance-1", "s2": "instance-2"},
        steps=(Step(0.5, "start", "s1"), Step(0.8, "start", "s2"), Step(9.0, "kill", "s2"),
               Step(11.0, "start", "s2")),
    ),
    "consumer-protocol": Scenario(
        description="KIP-848 consumers (group.protocol=consumer, the broker's uniform assignor), in a group two "
                    "consumers joined and left before the capture: k1, k2, k3 join; "
                    "k4 joins, which takes partitions from the others; k2 closes (leave at epoch -1); the static "
                    "member k3 closes (leave at epoch -2) and restarts with a new member id",
        assignor="uniform", brokers=1, duration=26.0, protocol="consumer",
        client_ids={"k1": "orders-1", "k2": "orders-2", "k3": "orders-3", "k4": "orders-4", "p1": "earlier-1",
                    "p2": "earlier-2"},
        instance_ids={"k3": "instance-3"}, prelude=("p1", "p2"),
        steps=(Step(0.5, "start", "k1"), Step(0.8, "start", "k2"), Step(1.1, "start", "k3"),
               Step(8.0, "start", "k4"), Step(13.0, "close", "k2"), Step(17.0, "close", "k3"),
               Step(19.0, "start", "k3")),
    ),
}


def main() -> None:
    if sys.argv[1:2] == ["consumer"]:
        run_consumer(consumer_arguments().parse_args(sys.argv[2:]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help=f"scenarios to record (default: all of {', '.join(SCENARIOS)})")
    args = parser.parse_args()
    names = args.scenarios or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    if shutil.which("dumpcap") is None:
        sys.exit("dumpcap not found: install Debian's tshark package (apt-get install tshark)")
    manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
    for name in names:
        manifest[name] = record(name, SCENARIOS[name])
        MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def record(name: str, scenario: Scenario) -> dict:
    import confluent_kafka

    producer = confluent_kafka.Producer({"test.mock.num.brokers": scenario.brokers, "client.id": "recorder"})
    brokers = [str(b).split("/")[0] for b in producer.list_topics(timeout=10).brokers.values()]
    ports = sorted(int(b.rsplit(":", 1)[1]) for b in brokers)
    for i in range(8):  # creates the topic (4 partitions) before anyone subscribes
        producer.produce(TOPIC, key=str(i), value=f"seed-{i}")
    producer.flush(10)

    out = HERE / f"{name}.pcapng"
    run_prelude(scenario, brokers, name)
    with tempfile.TemporaryDirectory() as tmp:
        # dumpcap drops root privileges to write; a world-writable scratch file avoids permission surprises.
        os.chmod(tmp, 0o777)
        scratch = Path(tmp) / "capture.pcapng"
        capture = start_capture(ports, scratch)
        children: dict[str, subprocess.Popen] = {}
        timeline = []
        started = time.monotonic()
        try:
            for step in scenario.steps:
                produce_until(producer, started + step.at)
                timeline.append({"at": step.at, "action": step.action, "consumer": step.consumer})
                if step.action == "start":
                    children[step.consumer] = start_consumer(scenario, step.consumer, brokers, name)
                elif step.action == "close":
                    children[step.consumer].send_signal(signal.SIGTERM)
                    children[step.consumer].wait(30)
                else:
                    children[step.consumer].kill()
                    children[step.consumer].wait(30)
            produce_until(producer, started + scenario.duration)
        finally:
            for child in children.values():
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children.values():
                try:
                    child.wait(30)
                except subprocess.TimeoutExpired:
                    child.kill()
            time.sleep(0.5)  # the last LeaveGroups reach the capture
            capture.send_signal(signal.SIGINT)
            capture.wait(30)
        shutil.copyfile(scratch, out)
    print(f"{out.name}: {out.stat().st_size} bytes, ports {ports}", file=sys.stderr)
    return {
        "file": out.name,
        "description": scenario.description,
        "ports": ports,
        "group_id": name,
        "topic": TOPIC,
        "assignor": scenario.assignor,
        "client_ids": scenario.client_ids or {},
        "instance_ids": scenario.instance_ids,
        "session_timeout_ms": SESSION_TIMEOUT_MS if scenario.protocol == "classic" else None,
        "protocol": scenario.protocol,
        "prelude": list(scenario.prelude),
        "timeline": timeline,
        "librdkafka": confluent_kafka.libversion()[0],
        "confluent_kafka": confluent_kafka.__version__,
    }


def run_prelude(scenario: Scenario, brokers: list[str], group: str) -> None:
    """The prelude's consumers, before the capture: all join, then all close."""
    children = [start_consumer(scenario, consumer, brokers, group, commit=False) for consumer in scenario.prelude]
    if children:
        time.sleep(6.0)
    for child in children:
        child.send_signal(signal.SIGTERM)
    for child in children:
        child.wait(30)


def consumer_arguments() -> argparse.ArgumentParser:
    """The internal `consumer` mode: one consumer that runs until SIGTERM (or SIGKILL)."""
    parser = argparse.ArgumentParser(prog="record.py consumer")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor", required=True)
    parser.add_argument("--client-id")
    parser.add_argument("--instance-id")
    parser.add_argument("--protocol", default="classic")
    parser.add_argument("--no-commit", action="store_true")
    return parser


def start_capture(ports: list[int], path: Path) -> subprocess.Popen:
    capture_filter = " or ".join(f"tcp port {p}" for p in ports)
    capture = subprocess.Popen(["dumpcap", "-q", "-i", "lo", "-f", capture_filter, "-w", str(path)],
                               stderr=subprocess.PIPE, text=True)
    # dumpcap says "File: ..." once it is writing; consumers started earlier would be missed.
    for line in capture.stderr:
        if line.startswith("File:"):
            return capture
    capture.wait()
    sys.exit(f"dumpcap failed (exit {capture.returncode}); capturing on lo needs root or CAP_NET_RAW")


def start_consumer(scenario: Scenario, consumer: str, brokers: list[str], group: str,
                   commit: bool = True) -> subprocess.Popen:
    command = [sys.executable, __file__, "consumer", "--bootstrap", ",".join(brokers), "--group", group,
               "--assignor", scenario.assignor, "--protocol", scenario.protocol]
    if not commit:
        command.append("--no-commit")
    if scenario.client_ids:
        command += ["--client-id", scenario.client_ids[consumer]]
    if consumer in scenario.instance_ids:
        command += ["--instance-id", scenario.instance_ids[consumer]]
    return subprocess.Popen(command)


def produce_until(producer, deadline: float) -> None:
    n = 0
    while time.monotonic() < deadline:
        producer.produce(TOPIC, key=str(n), value=f"record-{n}")
        producer.poll(0)
        n += 1
        time.sleep(0.25)
    producer.flush(10)


def run_consumer(args) -> None:
    import confluent_kafka

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    if args.protocol == "consumer":  # the broker owns the session, the heartbeat interval and the assignor
        config.update({"group.protocol": "consumer", "group.remote.assignor": args.assignor})
    else:
        config.update({"partition.assignment.strategy": args.assignor, "session.timeout.ms": SESSION_TIMEOUT_MS,
                       "heartbeat.interval.ms": 1000})
    if args.client_id:
        config["client.id"] = args.client_id
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = confluent_kafka.Consumer(config)
    consumer.subscribe([TOPIC])
    last_commit = time.monotonic()
    pending = False
    while not stop:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            pending = True
        if pending and not args.no_commit and time.monotonic() - last_commit >= 1.0:
            try:
                consumer.commit(asynchronous=False)
            except confluent_kafka.KafkaException as error:
                # _NO_OFFSET: nothing new since a rebalance took the partitions; anything else (a commit
                # fenced by a rebalance) is worth seeing while recording.
                if error.args[0].code() != confluent_kafka.KafkaError._NO_OFFSET:
                    print(f"{args.client_id or 'consumer'}: commit failed: {error}", file=sys.stderr)
            last_commit, pending = time.monotonic(), False
    consumer.close()


if __name__ == "__main__":
    main()
