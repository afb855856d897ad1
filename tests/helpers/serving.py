"""A real ``ticketproxy serve`` in a child process, with its data in a temporary directory."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TICKETPROXY = Path(sys.executable).with_name("ticketproxy")


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Return a clean environment for ``serve`` on free ports, its data under ``tmp_path``."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TICKETPROXY_DATA_DIR": str(tmp_path / "data"),
        "TICKETPROXY_SANDBOX_PORT": "0",
        **extra,
    }


@contextmanager
def serving(env: dict[str, str], log: Path) -> Iterator[str]:
    """Start ``ticketproxy serve``, wait for its banner, yield its output, then stop it."""
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(
            [str(TICKETPROXY), "serve", "--port", "0"],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while "ticketproxy answer" not in log.read_text(encoding="utf-8"):
                assert process.poll() is None, log.read_text(encoding="utf-8")
                assert time.monotonic() < deadline, log.read_text(encoding="utf-8")
                time.sleep(0.05)
            yield log.read_text(encoding="utf-8")
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
