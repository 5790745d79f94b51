"""A real Kafka cluster in KRaft mode on 127.0.0.1, for one scenario: one combined broker/controller node, or
three (so that a broker leading the group's `__consumer_offsets` partition can be killed and another take
over). Its storage is formatted with the same release's StorageTool, its data lives under the scenario's work
folder, and its processes are the suite's (`Processes`), stopped by id at the end."""

from __future__ import annotations

import base64
import socket
import subprocess
import time
import uuid
from pathlib import Path

from simulations.conformance import ConformanceError
from simulations.conformance.processes import Processes, stop

HOST = "127.0.0.1"
START_TIMEOUT_S = 120
STARTED = "Kafka Server started"
LOG_LINES_SHOWN = 3
# A small heap per JVM: the machine is shared, and a test cluster holds a few groups.
BROKER_JVM = ["-Xmx384m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]


def free_ports(count: int) -> list[int]:
    """Ports the kernel picks as free on 127.0.0.1 (held together, so they differ)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((HOST, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def check_free(port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            raise ConformanceError(f"port {HOST}:{port} is in use: choose other ports or stop what holds it") from None


def new_cluster_id() -> str:
    """A random cluster id as Kafka's Uuid.randomUuid makes one: printed in URL-safe base64, and never one that
    starts with '-', which StorageTool's `-t` would take for an option (1 in 64 ids)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class Cluster:
    def __init__(self, classpath: list[str], work: Path, processes: Processes, nodes: int = 1,
                 settings: dict[str, object] | None = None, ports: list[int] | None = None) -> None:
        self.classpath, self.work, self.processes, self.nodes = classpath, work, processes, nodes
        self.settings = dict(settings or {})
        # A client port and a controller port per node; with several nodes a replication port too, so that
        # the captured client ports carry no broker-to-broker traffic.
        wanted = (3 if nodes > 1 else 2) * nodes
        self.ports = ports or free_ports(wanted)
        if len(self.ports) != wanted:
            raise ConformanceError(f"{nodes} node(s) need {wanted} ports, got {len(self.ports)}")
        self.brokers: dict[int, subprocess.Popen] = {}

    @property
    def client_ports(self) -> list[int]:
        return self.ports[:self.nodes]

    def port(self, node: int) -> int:
        return self.ports[node - 1]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{p}" for p in self.client_ports)

    def _properties(self, node: int) -> str:
        voters = ",".join(f"{n}@{HOST}:{self.ports[self.nodes + n - 1]}" for n in range(1, self.nodes + 1))
        replication = min(3, self.nodes)
        listeners = {"PLAINTEXT": self.port(node), "CONTROLLER": self.ports[self.nodes + node - 1]}
        if self.nodes > 1:
            listeners["REPLICATION"] = self.ports[2 * self.nodes + node - 1]
        advertised = {name: port for name, port in listeners.items() if name != "CONTROLLER"}
        settings = {
            "process.roles": "broker,controller", "node.id": node, "controller.quorum.voters": voters,
            "listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in listeners.items()),
            "advertised.listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in advertised.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "REPLICATION" if self.nodes > 1 else "PLAINTEXT",
            "listener.security.protocol.map": ",".join(f"{name}:PLAINTEXT" for name in listeners),
            "log.dirs": str(self.work / f"node-{node}" / "data"),
            "offsets.topic.replication.factor": replication, "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": 1, "auto.create.topics.enable": "false",
            "num.network.threads": 2, "num.io.threads": 2, "log.flush.interval.messages": 1,
        } | self.settings
        return "".join(f"{k}={v}\n" for k, v in settings.items())

    def log(self, node: int) -> Path:
        return self.work / f"node-{node}" / "broker.log"

    def start(self) -> None:
        for port in self.ports:
            check_free(port)
        cluster_id = new_cluster_id()
        for node in range(1, self.nodes + 1):
            folder = self.work / f"node-{node}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "server.properties").write_text(self._properties(node))
            formatted = subprocess.run(
                ["java", *BROKER_JVM, "-cp", ":".join(self.classpath), "kafka.tools.StorageTool", "format",
                 "-t", cluster_id, "-c", str(folder / "server.properties")],
                capture_output=True, text=True, timeout=120)
            if formatted.returncode != 0:
                raise ConformanceError(f"formatting node {node}'s storage failed: "
                                       f"{_last_lines(_errors(formatted.stdout + formatted.stderr))}")
        for node in range(1, self.nodes + 1):
            self.start_node(node)
        for node in range(1, self.nodes + 1):
            self.wait_started(node)

    def start_node(self, node: int) -> None:
        folder = self.work / f"node-{node}"
        with open(self.log(node), "ab") as log:
            self.brokers[node] = self.processes.start(
                ["java", *BROKER_JVM, "-cp", ":".join(self.classpath), "kafka.Kafka", str(folder / "server.properties")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder)

    def wait_started(self, node: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        process = self.brokers[node]
        while time.monotonic() < deadline:
            text = self.log(node).read_text(errors="replace")
            if STARTED in text:
                return
            if process.poll() is not None:
                raise ConformanceError(f"broker {node} did not start (exit {process.returncode}): "
                                       f"{_last_lines(_errors(text))}")
            time.sleep(0.2)
        raise ConformanceError(f"broker {node} did not start in {START_TIMEOUT_S} s: "
                               f"{_last_lines(_errors(self.log(node).read_text(errors='replace')))}")

    def kill(self, node: int) -> None:
        """A broker's crash: SIGKILL, no controlled shutdown."""
        stop(self.brokers[node], kill=True)
        self.brokers[node].wait()


def _errors(text: str) -> str:
    """The log's ERROR lines and exception messages (not their stack frames), or the whole log when it has
    none."""
    lines = [line for line in text.splitlines() if (" ERROR " in line or "Exception" in line)
             and not line.lstrip().startswith("at ")]
    return "\n".join(lines[:LOG_LINES_SHOWN]) if lines else text


def _last_lines(text: str) -> str:
    """At most LOG_LINES_SHOWN lines of `text`, the last ones, on one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-LOG_LINES_SHOWN:])[:600] if lines else "no output"
