"""The wire traffic of one scenario: dumpcap on the loopback interface, whole packets, only the brokers' client
ports, into a pcapng that `coordsim capture import` reads (docs/captures.md). dumpcap, not a proxy of ours:
the clients talk to the brokers' own advertised listeners, so what is captured is what Kafka answered."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

from simulations.conformance import ConformanceError
from simulations.conformance.processes import Processes

START_TIMEOUT_S = 20


class Capture:
    def __init__(self, processes: Processes, ports: list[int], out: Path) -> None:
        tool = shutil.which("dumpcap")
        if tool is None:
            raise ConformanceError("dumpcap is not installed: Debian's tshark package brings it (scripts/setup --test)")
        self.out, self.log = out, out.with_suffix(".dumpcap.log")
        port_filter = " or ".join(f"tcp port {p}" for p in ports)
        with open(self.log, "wb") as log:
            self.process = processes.start([tool, "-i", "lo", "-s", "0", "-f", port_filter, "-w", str(out)],
                                           stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while "Capturing on" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise ConformanceError(f"dumpcap did not start capturing on lo: "
                                       f"{self.log.read_text(errors='replace').strip()[-300:]} (needs root or CAP_NET_RAW)")
            time.sleep(0.1)

    def stop(self) -> Path:
        """Stops the capture (SIGINT: dumpcap writes what it has and ends) and returns the file."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(30)
        return self.out
