"""``ticketproxy`` as a child process that a test can kill -9, and waiting on it.

Used by the kill -9 and failover tests (through ``tests/helpers/deployment.py``) and
``tests/test_tree_crash.py``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

TICKETPROXY = Path(sys.executable).with_name("ticketproxy")


def wait_until(
    check: Callable[[], Any],
    *,
    within: float,
    what: str,
    context: Callable[[], str] = lambda: "",
) -> Any:
    """Call ``check`` until it returns something truthy, and return that."""
    deadline = time.monotonic() + within
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{context()}"
        time.sleep(0.05)


class Child:
    """One child process (``ticketproxy`` unless told otherwise), its output in a file."""

    def __init__(
        self, argv: list[str], env: dict[str, str], log: Path, *, program: Path = TICKETPROXY
    ) -> None:
        """Start ``PROGRAM ARGV`` (``ticketproxy ARGV`` by default)."""
        self.log = log
        self._output = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(program), *argv], env=env, stdout=self._output, stderr=subprocess.STDOUT
        )

    def output(self) -> str:
        """Return everything the process printed so far."""
        return self.log.read_text(encoding="utf-8")

    def alive(self) -> bool:
        """Say whether the process still runs."""
        return self.process.poll() is None

    def kill_9(self) -> None:
        """Kill the process with SIGKILL: no handler, no clean-up, no flushing."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=5)
        self._output.close()

    def close(self) -> None:
        """Kill the process if it still runs, and close its log."""
        if self.alive():
            self.process.kill()
            self.process.wait()
        self._output.close()


def alive_or_fail(child: Child) -> bool:
    """Return True while ``child`` runs; fail the test with its output once it has exited."""
    assert child.alive(), f"a child exited early:\n{child.output()}"
    return True


def healthy(port: int) -> bool:
    """Say whether a proxy on ``port`` answers ``GET /healthz`` with 200."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False
