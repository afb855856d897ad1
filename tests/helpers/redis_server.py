"""A real ``redis-server`` for the tests: one per test, which a test may stop and start again.

Registered as a pytest plugin in ``tests/conftest.py``. The server listens on a free loopback
port without persistence, in a directory of its own. Where it is not installed the tests that
need it are skipped with the command that installs it, except in CI (``CI=true``), where a
skip would hide that the replicas were never tested.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.helpers.stack import free_port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class RedisServer:
    """A ``redis-server`` on 127.0.0.1 that keeps nothing on disk."""

    program: str
    workdir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """Return the URL of the server's database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> bool:
        """Start on ``port`` (a free one if unset); return whether it answers PING."""
        self.port = self.port or free_port()
        # No persistence: --save '' and --appendonly no, in a directory of its own.
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            [self.program, "--port", str(self.port), *options, "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5.0
        while self.process.poll() is None and time.monotonic() < deadline:
            if _ping(self.port):
                return True
            time.sleep(0.01)
        self.stop()
        return False

    def stop(self) -> None:
        """Kill the server at once (as a crash does), cutting every connection."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=5)
            self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """Yield a fresh, running redis-server; stopped after the test."""
    program = shutil.which("redis-server")
    if program is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server not found in CI: .ci/run must install it (redis-server)")
        pytest.skip("redis-server not found: apt-get install redis-server")
    workdir = tmp_path / "redis"
    workdir.mkdir()
    for _ in range(3):
        # redis-server cannot take port 0, so pick a free port; retry if it was taken since.
        server = RedisServer(program, workdir)
        if server.start():
            break
    else:
        pytest.fail("redis-server did not start on a free port")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """Return the URL of a fresh redis-server on 127.0.0.1 that keeps nothing on disk."""
    return redis_server.url
