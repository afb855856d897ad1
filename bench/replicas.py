"""Two ``ticketproxy serve`` replicas on one PostgreSQL database, for the replica benchmarks.

PostgreSQL is Debian's (``initdb``/``pg_ctl``), started in a temporary directory on a free
port, as the tests start it (``tests/helpers/postgres.py``). The replicas have data
directories of their own, as on two hosts, and no Redis: they coordinate through the
database. GitHub is the in-process sandbox of :mod:`bench.sandboxes`.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.processes import ServerProcess, proxy_process
from bench.sandboxes import BenchGitHub, start_bench_github
from tests.helpers.postgres import find_postgres_bin, start_postgres


@dataclass
class Replicas:
    """The sandbox GitHub, the database's URL, and the two replicas A and B."""

    github: BenchGitHub
    database_url: str
    a: ServerProcess
    b: ServerProcess


@contextlib.asynccontextmanager
async def two_replicas(
    workdir: Path,
    *,
    creations_per_minute: int = 10_000,
    creations_per_hour: int = 100_000,
    rate_limit: int = 5000,
    before_start: Callable[[BenchGitHub, str], None] | None = None,
    **settings: str,
) -> AsyncIterator[Replicas]:
    """Start PostgreSQL, the sandbox, and two replicas with ``settings``; stop them after.

    ``before_start(github, database_url)`` runs before the replicas start (to fill the store).
    """
    bin_dir = find_postgres_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL (initdb) not found: apt-get install postgresql")
    # Not under workdir: the server may run as another user (postgres, under root).
    root = Path(tempfile.mkdtemp(prefix="ticketproxy-bench-pg-"))
    server = start_postgres(bin_dir, root)
    url = server.url()
    github = await start_bench_github(
        workdir,
        rate_limit=rate_limit,
        creations_per_minute=creations_per_minute,
        creations_per_hour=creations_per_hour,
    )
    if before_start is not None:
        before_start(github, url)
    settings = {"database_url": url, **settings}
    a = proxy_process(github.proxy_environ(workdir / "host-a", **settings), workdir=workdir)
    b = proxy_process(github.proxy_environ(workdir / "host-b", **settings), workdir=workdir)
    try:
        await a.start()  # migrates the database first
        await b.start()
        yield Replicas(github=github, database_url=url, a=a, b=b)
    finally:
        await b.stop()
        await a.stop()
        await github.stop()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
