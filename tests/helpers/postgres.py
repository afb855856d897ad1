"""A real PostgreSQL for the tests: one server per session, one database per test.

Registered as a pytest plugin in ``tests/conftest.py``. The server is Debian's (``initdb``
and ``pg_ctl`` from ``/usr/lib/postgresql/*/bin``), started in a temporary directory on a
free loopback port without durability (the tests need none), as ``tests/test_replicas.py``
starts ``redis-server``. Run as root (CI), it runs as the ``postgres`` user, since
PostgreSQL refuses root. Each test gets a fresh database copied from a migrated template,
which is much faster than migrating again.

Where PostgreSQL is not installed the tests that need it are skipped with the command that
installs it, except under ``CI=true``, where that is a failure (``.ci/run`` installs it).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import psycopg
import pytest

from ticketing.store.postgres import PostgresTicketStore

INSTALL = "apt-get install postgresql"
TEMPLATE = "ticketproxy_template"
_databases = count(1)


def find_postgres_bin(pattern: str = "/usr/lib/postgresql/*/bin/initdb") -> Path | None:
    """Return the directory of Debian's ``initdb`` and ``pg_ctl`` (the newest), if any."""
    found = sorted(glob.glob(pattern))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return None if initdb is None else Path(initdb).parent


def require_postgres_bin(found: Path | None, *, environ: Mapping[str, str] = os.environ) -> Path:
    """Return where PostgreSQL's programs are, or skip (fail under ``CI=true``) without them."""
    if found is not None:
        return found
    if environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL (initdb) not found in CI: .ci/run must install it ({INSTALL})")
    pytest.skip(f"PostgreSQL (initdb) not found: {INSTALL}")


@dataclass
class PostgresServer:
    """A running PostgreSQL on 127.0.0.1, which tests may stop and start again."""

    bin: Path
    data: Path
    port: int
    as_user: tuple[str, ...]

    def url(self, database: str = "postgres") -> str:
        """Return the URL of one of the server's databases."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *arguments: str) -> None:
        """Run ``pg_ctl`` on the server's data directory."""
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), "-s", *arguments],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def start(self) -> None:
        """Start the server and wait until it takes connections."""
        # fsync off (the OS keeps what was written; no test crashes the OS), but commits
        # stay synchronous: a test that kills the server must find every commit after it.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} -c fsync=off"
            " -c full_page_writes=off"
        )
        self.pg_ctl("start", "-w", "-t", "20", "-l", str(self.data / "log"), "-o", options)

    def stop(self) -> None:
        """Stop the server at once, cutting every connection (as an outage does)."""
        self.pg_ctl("stop", "-m", "immediate", "-w")

    def new_database(self) -> str:
        """Create a database from the migrated template and return its URL."""
        name = f"test_{os.getpid()}_{next(_databases)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
        return self.url(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_postgres(bin_dir: Path, root: Path) -> PostgresServer:
    """Create a cluster in ``root`` and start it on a free port (benchmarks use it too)."""
    as_user: tuple[str, ...] = ()
    if os.geteuid() == 0:
        # initdb refuses to run as root: run the server as Debian's postgres user.
        shutil.chown(root, "postgres")
        as_user = ("runuser", "-u", "postgres", "--")
    data = root / "data"
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
    subprocess.run(
        [*as_user, *initdb, "--no-sync", "-E", "UTF8"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    server = PostgresServer(bin=bin_dir, data=data, port=_free_port(), as_user=as_user)
    server.start()
    return server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """Yield a PostgreSQL server for the session, with a migrated template database."""
    bin_dir = require_postgres_bin(find_postgres_bin())
    root = Path(tempfile.mkdtemp(prefix="ticketproxy-pg-"))
    server = start_postgres(bin_dir, root)
    try:
        with psycopg.connect(server.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
        PostgresTicketStore(server.url(TEMPLATE)).close()
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):  # a test left it stopped
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """Return the URL of a fresh, migrated database of the session's server."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return postgres_server.new_database()
        except psycopg.OperationalError:
            # A test that stopped the server restarts it; wait until it is back.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture
def restarts_server(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """Yield the session's server, started again after the test if the test stopped it."""
    yield postgres_server
    try:
        with psycopg.connect(postgres_server.url(), connect_timeout=1):
            pass
    except psycopg.OperationalError:
        postgres_server.start()
