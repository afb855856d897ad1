"""A real ``ticketproxy serve`` process for the benchmarks, and what it costs the machine.

The proxy runs as its own process, configured only through ``TICKETPROXY_*`` variables as
in production, so that its memory and CPU can be read from ``/proc`` apart from the
benchmark's clients and its in-process GitHub sandbox.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

# The checkout, so that `python -m bench.…` finds this package from any directory.
_REPOSITORY = Path(__file__).resolve().parent.parent
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
# Runs the real command-line entry point, exactly as the `ticketproxy` script does.
_SERVE = "import sys; from proxy.cli import main; sys.exit(main())"


@dataclass(frozen=True)
class Usage:
    """A process's memory and CPU time at one moment."""

    rss: int  # bytes resident now
    peak_rss: int  # bytes, the most ever resident (VmHWM)
    cpu_seconds: float  # user + system

    @property
    def rss_mb(self) -> float:
        """Return the resident set in MiB."""
        return self.rss / 2**20

    @property
    def peak_rss_mb(self) -> float:
        """Return the peak resident set in MiB."""
        return self.peak_rss / 2**20


def process_usage(pid: int) -> Usage:
    """Read a Linux process's resident memory, peak and CPU seconds from ``/proc``."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    peak = int(fields["VmHWM"].split()[0]) * 1024
    # /proc/PID/stat: the command may hold spaces, so split after its closing parenthesis.
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, rss_pages = int(stat[11]), int(stat[12]), int(stat[21])
    return Usage(
        rss=rss_pages * _PAGE_SIZE, peak_rss=peak, cpu_seconds=(utime + stime) / _CLOCK_TICKS
    )


def raise_open_file_limit() -> tuple[int, int]:
    """Raise this process's soft limit on open files to the hard limit; return (soft, hard).

    Children (the proxy) inherit it. Each waiting completion holds one socket in the proxy
    and one in the benchmark's client.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """A server in a child process on 127.0.0.1 (``--port`` is added), its output in a file."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        environ: Mapping[str, str] | None = None,
        workdir: Path,
        name: str,
    ) -> None:
        """Remember how to start it; ``environ`` adds to the inherited environment."""
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"{name}-{self.port}.log"
        self._argv = [*argv, "--port", str(self.port)]
        # The benchmark's own settings only: nothing from the caller's TICKETPROXY_* leaks in.
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TICKETPROXY_") and k != "GITHUB_TOKEN"
        }
        self._environ = {**inherited, **(environ or {})}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """Return the child's process id."""
        assert self._process is not None
        return self._process.pid

    async def start(self, *, within: float = 30.0) -> None:
        """Start the server and wait until its ``/readyz`` answers 200."""
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(  # noqa: ASYNC220 - returns at once
                self._argv,
                env=self._environ,
                cwd=_REPOSITORY,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as http:
            while True:
                if self._process.poll() is not None:
                    raise RuntimeError(
                        f"the {self.name} server exited at start; see {self.log_path}"
                    )
                try:
                    async with http.get(self.url + "/readyz") as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the {self.name} server never became ready; see {self.log_path}"
                    )
                await asyncio.sleep(0.1)

    def usage(self) -> Usage:
        """Return the process's memory and CPU now."""
        return process_usage(self.pid)

    async def stop(self, *, within: float = 15.0) -> int:
        """Stop the server with SIGTERM (SIGKILL if it lingers) and return its exit status."""
        process = self._process
        if process is None or process.poll() is not None:
            return 0 if process is None else int(process.returncode)
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(process.wait, within)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)
        return int(process.returncode)


def proxy_process(environ: Mapping[str, str], *, workdir: Path) -> ServerProcess:
    """Return ``ticketproxy serve`` configured by ``environ`` (its ``TICKETPROXY_*``)."""
    return ServerProcess(
        [sys.executable, "-c", _SERVE, "serve"], environ=environ, workdir=workdir, name="proxy"
    )


def bare_process(body: Path, *, workdir: Path) -> ServerProcess:
    """Return the bare aiohttp server of :mod:`bench.bare_server`, answering ``body``."""
    return ServerProcess(
        [sys.executable, "-m", "bench.bare_server", "--body", str(body)],
        workdir=workdir,
        name="bare",
    )
