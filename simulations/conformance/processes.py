"""The processes the conformance suite starts (brokers, consumers, dumpcap), each stopped by its own process
id when the suite ends, however it ends: `Processes` is a context manager, and SIGTERM to the suite raises
SystemExit inside it so that its exit still runs."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from typing import Iterator

STOP_GRACE_S = 10


class Processes:
    def __init__(self) -> None:
        self._started: list[subprocess.Popen] = []

    def start(self, command: list[str], **popen) -> subprocess.Popen:
        process = subprocess.Popen(command, **popen)
        self._started.append(process)
        return process

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()

    def stop_all(self) -> None:
        """SIGTERM to each process still running, newest first (consumers before brokers), then SIGKILL to those
        that did not end within the grace period."""
        running = [p for p in reversed(self._started) if p.poll() is None]
        for process in running:
            stop(process, kill=False)
        for process in running:
            try:
                process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                stop(process, kill=True)
                process.wait()
        self._started.clear()


def stop(process: subprocess.Popen, kill: bool) -> None:
    """Signal one process by its id (SIGKILL when `kill`, else SIGTERM), if it is still running."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)


@contextlib.contextmanager
def sigterm_ends_the_suite() -> Iterator[None]:
    """Within it, SIGTERM raises SystemExit (143) so that the `finally` blocks stopping processes run."""
    def _exit(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = signal.signal(signal.SIGTERM, _exit)
    except ValueError:  # not the main thread: the caller's own handling stands
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
