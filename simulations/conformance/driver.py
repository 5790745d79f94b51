"""The Java side of the suite: `conformance/src/ConformanceDriver.java`, compiled with javac against the
resolved classpath, runs one real KafkaConsumer per process (scripted line by line on its stdin) or a one-shot
admin or reader task (docstring of the Java file). A consumer's crash is its process killed with SIGKILL, a
zombie's pause its process stopped (SIGSTOP)."""

from __future__ import annotations

import hashlib
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from simulations.conformance import ConformanceError
from simulations.conformance.maven import PROJECT
from simulations.conformance.processes import Processes, stop

SOURCE = PROJECT / "src" / "ConformanceDriver.java"
MAIN = "ConformanceDriver"
CLIENT_JVM = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
WAIT_S = 120


def compile_driver(classpath: list[str], work: Path, source: Path = SOURCE) -> Path:
    """The driver's classes for this classpath, compiled once per work folder (i.e. per Kafka version) and
    source: a changed source is compiled again, its digest kept beside the classes."""
    classes = work / "driver-classes"
    stamp, digest = classes / "source.sha256", hashlib.sha256(source.read_bytes()).hexdigest()
    if (classes / f"{MAIN}.class").is_file() and stamp.is_file() and stamp.read_text() == digest:
        return classes
    if shutil.which("javac") is None:
        raise ConformanceError("javac is not installed: the suite compiles its Java driver (a JDK 17 or newer)")
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    done = subprocess.run(["javac", "-d", str(classes), "-cp", ":".join(classpath), str(source)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(classes, ignore_errors=True)
        raise ConformanceError(f"compiling the driver failed: {done.stderr.strip().splitlines()[0]}")
    stamp.write_text(digest)
    return classes


class Java:
    """How the suite runs the driver: the classpath and the processes it belongs to."""

    def __init__(self, classpath: list[str], classes: Path, processes: Processes, logs: Path) -> None:
        self.classpath = ":".join([str(classes), *classpath])
        self.processes, self.logs = processes, logs

    def command(self, *args: str) -> list[str]:
        return ["java", *CLIENT_JVM, "-cp", self.classpath, MAIN, *args]

    def task(self, *args: str, timeout: float = WAIT_S) -> list[str]:
        """A one-shot task's output lines (topics, coordinator, dump)."""
        log = self.logs / f"task-{args[0]}.log"
        with open(log, "ab") as err:
            process = self.processes.start(self.command(*args), stdout=subprocess.PIPE, stderr=err,
                                           stdin=subprocess.DEVNULL, text=True)
            try:
                out, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop(process, kill=True)
                process.wait()
                raise ConformanceError(f"the driver's {args[0]} task did not finish in {timeout:.0f} s ({log})")
        if process.returncode != 0:
            raise ConformanceError(f"the driver's {args[0]} task failed: {_tail(log)}")
        return out.splitlines()

    def consumer(self, name: str, bootstrap: str, config: dict[str, object]) -> "Consumer":
        args = [f"{k}={v}" for k, v in config.items()]
        return Consumer(name, self, self.command("consumer", bootstrap, *args))


class Consumer:
    """One real KafkaConsumer process: commands to its stdin, its events ("assigned t-0,t-1", ...) read back."""

    def __init__(self, name: str, java: Java, command: list[str]) -> None:
        self.name, self.events = name, []
        # The partitions it holds, from its rebalance callbacks: "assigned" names the whole assignment,
        # "revoked" and "lost" what went.
        self.holds: set[str] = set()
        self._lock = threading.Lock()
        self.log = java.logs / f"consumer-{name}.log"
        with open(self.log, "ab") as err:
            self.process = java.processes.start(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                                text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            line = line.rstrip("\n")
            word, _, rest = line.partition(" ")
            named = {p for p in rest.split(",") if p}
            with self._lock:
                if word == "assigned":
                    self.holds = named
                elif word in ("revoked", "lost"):
                    self.holds = self.holds - named
            self._lines.put(line)
        self._lines.put(None)

    def holding(self) -> set[str]:
        with self._lock:
            return set(self.holds)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def expect(self, prefix: str, timeout: float = WAIT_S, where=None) -> str:
        """The next event starting with `prefix` (and satisfying `where`), skipping others."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise ConformanceError(f"consumer {self.name} did not report {prefix!r} in {timeout:.0f} s "
                                       f"({self.log})") from None
            if line is None:
                raise ConformanceError(f"consumer {self.name} ended before reporting {prefix!r}: {_tail(self.log)}")
            self.events.append(line)
            if line.startswith(prefix) and (where is None or where(line)):
                return line

    def commit(self, offset: int) -> str:
        self.send(f"commit {offset}")
        return self.expect("commit")

    def close(self) -> None:
        self.send("close")
        self.expect("closed")
        self.process.wait(WAIT_S)

    def crash(self) -> None:
        stop(self.process, kill=True)
        self.process.wait()

    def freeze(self) -> None:
        """SIGSTOP: every thread of the JVM stops (its heartbeat thread too), as a long GC pause or a stopped
        VM would; `thaw` (SIGCONT) resumes it where it was."""
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self.process.send_signal(signal.SIGCONT)


def settle(consumers: list[Consumer], partitions: set[str], timeout: float = WAIT_S) -> None:
    """Waits until the consumers hold `partitions` between them, each partition once, every consumer some
    (so fewer consumers than partitions): a rebalance has completed on the clients' side."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = [c.holding() for c in consumers]
        if all(held) and sum(map(len, held)) == len(partitions) and set().union(*held) == partitions:
            return
        time.sleep(0.05)
    raise ConformanceError(f"the consumers did not settle in {timeout:.0f} s: "
                           + "; ".join(f"{c.name} holds {sorted(c.holding())}" for c in consumers))


def _tail(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return " | ".join(lines[-3:])[:500] if lines else "no output"
