"""10,000 completions waiting at once, spread over two replicas on one PostgreSQL database.

Like :mod:`bench.concurrent_waits`, but with two ``ticketproxy serve`` replicas (no Redis,
:mod:`bench.replicas`): N tickets are left pending in the database from an earlier run (their
issues written into the sandbox), and N clients re-attach to them, even ones through A, odd
ones through B, retrying a 429 after its ``retry-after`` as the openai client does (the
burst is more than the replicas' database pools take at once, and a 429 is how they say
so). Once every client has its 200 and has waited ``--steady`` seconds, it reports
each replica's RSS (and peak) and how many database connections the two replicas hold
together (``pg_stat_activity``). A replica's connections are bounded by its pools (store up to 10,
coordination up to 4, write budget up to 2, one listening), whatever N is.

Target: each replica's peak RSS within ``bench.concurrent_waits``'s 300 MB (10^6 bytes), and
at most 17 connections per replica. Exits 1 otherwise.
Run: ``python -m bench.replica_waits`` (``--count`` to change N).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import aiohttp
import psycopg

from bench.concurrent_waits import (
    MB,
    MIB,
    SPARE_FILES,
    Progress,
    completion_body,
    pending_tickets,
    prefill,
)
from bench.processes import raise_open_file_limit
from bench.replicas import two_replicas
from bench.sandboxes import BenchGitHub
from ticketing.store.postgres import PostgresTicketStore

COUNT = 10_000
STEADY_SECONDS = 10.0
MAX_CONNECTIONS = 17
TARGET_RSS_BYTES = 300 * 10**6
# A burst past what the pools take is told 429 with retry-after; clients retry it.
RETRIES = 20


async def hold_with_retries(
    http: aiohttp.ClientSession, url: str, index: int, progress: Progress, backed_off: Counter[int]
) -> None:
    """Hold completion ``index`` as an openai client does: a 429 is retried after its wait."""
    for attempt in range(RETRIES):
        async with http.post(url, json=completion_body(index)) as resp:
            if resp.status == 429 and attempt + 1 < RETRIES:
                backed_off[index] += 1
                await asyncio.sleep(float(resp.headers.get("retry-after", "1")))
                continue
            if resp.status != 200:
                progress.failures[f"HTTP {resp.status}"] += 1
                return
            progress.reattached.append(time.monotonic() - progress.started)
            await resp.read()  # heartbeats until cancelled
            return


def connections(url: str) -> int:
    """Return how many connections other backends hold to the database (not this one)."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT COUNT(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def run(count: int, steady: float, ramp_limit: float) -> int:
    """Hold ``count`` completions over two replicas, print the figures, return the status."""
    limits = raise_open_file_limit()
    if limits[0] < count + SPARE_FILES:
        print(f"FAIL: at most {limits[0]} open files; {count:,} need more", file=sys.stderr)
        return 1

    def fill(github: BenchGitHub, url: str) -> None:
        print(f"Leaving {count:,} tickets pending from an earlier run...", flush=True)
        prefill(github, PostgresTicketStore(url), count)

    no_timeout = aiohttp.ClientTimeout(total=None, sock_connect=60)
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        settings = {"writes_per_minute": "1000000", "writes_per_hour": "1000000"}
        async with (
            two_replicas(Path(tmp), before_start=fill, **settings) as replicas,
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), timeout=no_timeout
            ) as http,
        ):
            proxies = (replicas.a, replicas.b)
            idle = [proxy.usage() for proxy in proxies]
            progress = Progress()
            print(f"Sending {count:,} completions at once, half to each replica...", flush=True)
            backed_off: Counter[int] = Counter()
            tasks = [
                asyncio.create_task(
                    hold_with_retries(
                        http,
                        proxies[index % 2].url + "/v1/chat/completions",
                        index,
                        progress,
                        backed_off,
                    )
                )
                for index in range(count)
            ]
            while progress.waiting < count and not progress.failures:
                if time.monotonic() - progress.started > ramp_limit:
                    break
                await asyncio.sleep(0.2)
            ramp = time.monotonic() - progress.started
            await asyncio.sleep(steady)
            after = [proxy.usage() for proxy in proxies]
            held = connections(replicas.database_url)
            pending = [await pending_tickets(proxy.url) for proxy in proxies]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    print(f"{count:,} waiting completions over two replicas on one PostgreSQL (no Redis)")
    print(f"completions with their 200:              {progress.waiting:,} in {ramp:.1f} s")
    print(f"failures:                                {dict(progress.failures) or 'none'}")
    print(
        f"429s retried after retry-after:          {sum(backed_off.values()):,} "
        f"(by {len(backed_off):,} clients)"
    )
    for name, before, usage, seen in zip("AB", idle, after, pending, strict=True):
        print(
            f"replica {name}: RSS idle {before.rss_mb:.1f} MiB, with {count // 2:,} waiting "
            f"{usage.rss_mb:.1f} MiB, peak {usage.peak_rss / MIB:.1f} MiB "
            f"({usage.peak_rss / MB:.1f} MB); /metrics pending {seen:,.0f}"
        )
    print(f"database connections held by both:       {held} (pools: at most 17 each)")
    problems = []
    if progress.waiting < count:
        problems.append(f"only {progress.waiting:,} of {count:,} got their 200")
    for name, usage in zip("AB", after, strict=True):
        if usage.peak_rss > TARGET_RSS_BYTES:
            problems.append(f"replica {name} peaked above {TARGET_RSS_BYTES / MB:.0f} MB")
    if held > 2 * MAX_CONNECTIONS:
        problems.append(f"{held} connections for two replicas")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print("OK: each replica's peak RSS within 300 MB; database connections bounded")
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument("--steady", type=float, default=STEADY_SECONDS)
    parser.add_argument("--ramp-limit", type=float, default=300.0)
    args = parser.parse_args(argv)
    return asyncio.run(run(args.count, args.steady, args.ramp_limit))


if __name__ == "__main__":
    sys.exit(main())
