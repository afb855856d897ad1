"""Two ``ticketproxy serve`` replicas, for the replica benchmarks: on PostgreSQL or on Redis.

:func:`two_replicas` puts them on one PostgreSQL database, Debian's (``initdb``/``pg_ctl``),
started in a temporary directory on a free port, as the tests start it
(``tests/helpers/postgres.py``). The replicas have data directories of their own, as on two
hosts, and no Redis: they coordinate through the database.

:func:`two_replicas_on_redis` puts them on one host instead: one shared data directory (one
SQLite file) and a ``redis-server`` of their own (``tests/helpers/redis_server.py``) that
coordinates them. GitHub is the in-process sandbox of :mod:`bench.sandboxes` in both.
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
from tests.helpers.redis_server import RedisServer


@dataclass
class Replicas:
    """The sandbox GitHub, the URL of what the replicas share, and the two replicas A and B."""

    github: BenchGitHub
    database_url: str  # the PostgreSQL database; the Redis, for two_replicas_on_redis
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
    try:
        github = await start_bench_github(
            workdir,
            rate_limit=rate_limit,
            creations_per_minute=creations_per_minute,
            creations_per_hour=creations_per_hour,
        )
        if before_start is not None:
            before_start(github, url)
        hosts = (workdir / "host-a", workdir / "host-b")
        async with _pair(github, workdir, hosts, database_url=url, **settings) as (a, b):
            yield Replicas(github=github, database_url=url, a=a, b=b)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.asynccontextmanager
async def two_replicas_on_redis(
    workdir: Path, *, creations_per_minute: int = 10_000, **settings: str
) -> AsyncIterator[Replicas]:
    """Start Redis, the sandbox, and two SQLite replicas on one host; stop them after."""
    program = shutil.which("redis-server")
    if program is None:
        raise SystemExit("redis-server not found: apt-get install redis-server")
    (workdir / "redis").mkdir()
    server = RedisServer(program, workdir / "redis")
    if not server.start():
        raise SystemExit("redis-server did not start")
    try:
        github = await start_bench_github(
            workdir, creations_per_minute=creations_per_minute, creations_per_hour=100_000
        )
        hosts = (workdir / "host", workdir / "host")  # one volume, one SQLite file
        async with _pair(github, workdir, hosts, redis_url=server.url, **settings) as (a, b):
            yield Replicas(github=github, database_url=server.url, a=a, b=b)
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def _pair(
    github: BenchGitHub, workdir: Path, hosts: tuple[Path, Path], **settings: str
) -> AsyncIterator[tuple[ServerProcess, ServerProcess]]:
    """Run replica A then B (A migrates the store first), each on its host's directory."""
    a = proxy_process(github.proxy_environ(hosts[0], **settings), workdir=workdir)
    b = proxy_process(github.proxy_environ(hosts[1], **settings), workdir=workdir)
    try:
        await a.start()
        await b.start()
        yield a, b
    finally:
        await b.stop()
        await a.stop()
        await github.stop()
