"""10,000 completions waiting at once, spread over two replicas on one PostgreSQL database.

Like :mod:`bench.concurrent_waits`, but with two ``ticketproxy serve`` replicas (no Redis,
:mod:`bench.replicas`): N clients send N new completions at once, even ones through A, odd
ones through B. By default every ticket is new, the hard case: each request takes its key's
lock in the database, opens its ticket in the shared store and its issue in the sandbox
GitHub (through its replica's one GitHub worker), and announces it. ``--prefilled`` measures
the easy case instead: the N tickets are left pending from an earlier run (their issues
written into the sandbox), and the clients re-attach to them.

A client told 429 retries after its ``retry-after``, as the openai client does; the 429s are
counted by the ``code`` of their error (``store_unavailable``, ``github_unavailable``, ...).
While the burst is taken, the database connections held by the two replicas together are
sampled from ``pg_stat_activity`` (the most is reported, and the count once all wait). Once
every client has its 200 and has waited ``--steady`` seconds, it reports each replica's RSS
(with all waiting, after the steady wait, and the peak). A replica's connections are
bounded by its pools (store up to 10, coordination up to 4, write budget up to 2, one
listening), whatever N is.

As in ``bench.concurrent_waits``'s fresh case, the sandbox's rate limits and the replicas'
write throttle are raised to a billion: opening 10,000 issues is far beyond GitHub's budget.

Target: each replica's peak RSS within 300 MB (300 × 10^6 bytes), and at most 17
connections per replica at any sample. Exits 1 otherwise, or if a client got no 200.
Run: ``python -m bench.replica_waits`` (``--count`` to change N, ``--prefilled``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import psycopg

from bench.concurrent_waits import (
    MB,
    MIB,
    SPARE_FILES,
    UNLIMITED,
    Progress,
    completion_body,
    pending_tickets,
    prefill,
)
from bench.processes import Usage, raise_open_file_limit
from bench.replicas import Replicas, two_replicas
from bench.sandboxes import BenchGitHub, requests_by_route
from ticketing.store.postgres import PostgresTicketStore

COUNT = 10_000
STEADY_SECONDS = 10.0
MAX_CONNECTIONS = 17
TARGET_RSS_BYTES = 300 * 10**6
# A 429 is retried after its retry-after, this many times at most.
RETRIES = 20


@dataclass
class Burst:
    """How the burst went: each client's 200, the 429s by reason, the connections seen."""

    progress: Progress = field(default_factory=Progress)
    refusals: Counter[str] = field(default_factory=Counter)
    refused_clients: set[int] = field(default_factory=set)
    connections: list[int] = field(default_factory=list)


async def refusal_code(resp: aiohttp.ClientResponse) -> str:
    """Return the ``code`` of an error response, or its status if it has none."""
    with contextlib.suppress(aiohttp.ContentTypeError, ValueError, AttributeError):
        body = await resp.json()
        return str(body["error"]["code"])
    return f"HTTP {resp.status}"


async def hold_with_retries(
    http: aiohttp.ClientSession, url: str, index: int, *, fresh: bool, burst: Burst
) -> None:
    """Hold completion ``index`` as an openai client does: a 429 is retried after its wait."""
    progress = burst.progress
    try:
        for attempt in range(RETRIES):
            async with http.post(url, json=completion_body(index)) as resp:
                if resp.status == 200:
                    took = time.monotonic() - progress.started
                    (progress.fresh if fresh else progress.reattached).append(took)
                    await resp.read()  # heartbeats until cancelled
                    return
                code = await refusal_code(resp)
                wait = float(resp.headers.get("retry-after", "1"))
            if resp.status != 429 or attempt + 1 == RETRIES:
                progress.failures[f"{resp.status} {code}"] += 1
                return
            burst.refusals[code] += 1
            burst.refused_clients.add(index)
            await asyncio.sleep(wait)
    except aiohttp.ClientError as exc:
        progress.failures[type(exc).__name__] += 1


def connections(url: str) -> int:
    """Return how many connections other backends hold to the database (not this one)."""
    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT COUNT(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def take_burst(
    replicas: Replicas, http: aiohttp.ClientSession, count: int, *, fresh: bool, limit: float
) -> tuple[list[asyncio.Task[None]], Burst]:
    """Send ``count`` completions, alternating replicas; return once all have their 200."""
    urls = [proxy.url + "/v1/chat/completions" for proxy in (replicas.a, replicas.b)]
    burst = Burst()
    tasks = [
        asyncio.create_task(hold_with_retries(http, urls[i % 2], i, fresh=fresh, burst=burst))
        for i in range(count)
    ]
    progress, shown = burst.progress, burst.progress.started
    while progress.waiting < count and not progress.failures:
        if time.monotonic() - progress.started > limit:
            break
        burst.connections.append(await asyncio.to_thread(connections, replicas.database_url))
        await asyncio.sleep(1.0)
        if time.monotonic() - shown >= 15:
            shown = time.monotonic()
            rss = ", ".join(f"{p.usage().rss_mb:.0f}" for p in (replicas.a, replicas.b))
            print(
                f"  {shown - progress.started:5.0f} s: {progress.waiting:,} waiting, "
                f"{sum(burst.refusals.values()):,} 429s so far, "
                f"{burst.connections[-1]} connections, RSS A, B {rss} MiB",
                flush=True,
            )
    return tasks, burst


@dataclass(frozen=True)
class Figures:
    """What holding N completions over two replicas cost."""

    count: int
    fresh: bool
    burst: Burst
    idle: list[Usage]
    loaded: list[Usage]
    steady: list[Usage]
    steady_seconds: float
    held_after: int
    pending: list[float]
    github_requests: Counter[str]


def report(f: Figures) -> list[str]:
    """Return the printed figures."""
    p, b = f.burst.progress, f.burst
    times = p.fresh + p.reattached
    kind = "new tickets" if f.fresh else "tickets pending from before (re-attaching)"
    lines = [
        f"{f.count:,} waiting completions over two replicas on one PostgreSQL (no Redis), {kind}",
        f"(the sandbox's rate limits and TICKETPROXY_WRITES_PER_MINUTE/_HOUR raised to "
        f"{UNLIMITED:.0e}, as in bench.concurrent_waits)",
        f"completions with their 200:          {p.waiting:,}",
        f"first 200 after sending the burst:   {min(times, default=0):.1f} s",
        f"last 200 after sending the burst:    {max(times, default=0):.1f} s",
        f"failures:                            {dict(p.failures) or 'none'}",
        f"429s retried after retry-after:      {sum(b.refusals.values()):,} "
        f"(by {len(b.refused_clients):,} clients) {dict(b.refusals) or ''}",
    ]
    for name, idle, loaded, steady, seen in zip(
        "AB", f.idle, f.loaded, f.steady, f.pending, strict=True
    ):
        lines.append(
            f"replica {name}: RSS idle {idle.rss_mb:.1f} MiB, all waiting {loaded.rss_mb:.1f} "
            f"MiB, after {f.steady_seconds:.0f} s {steady.rss_mb:.1f} MiB, "
            f"peak {steady.peak_rss / MIB:.1f} MiB ({steady.peak_rss / MB:.1f} MB); "
            f"/metrics pending {seen:,.0f}"
        )
    lines.append(
        f"database connections of both:        at most {max(b.connections, default=0)} "
        f"during the burst, {f.held_after} once all wait (pools: at most "
        f"{MAX_CONNECTIONS} each)"
    )
    if f.fresh and p.fresh:
        lines += [
            f"GitHub {route} per new ticket: {n / len(p.fresh):.2f}"
            for route, n in sorted(f.github_requests.items())
        ]
    return lines


def problems_of(f: Figures) -> list[str]:
    """Return the targets missed."""
    problems = []
    if f.burst.progress.waiting < f.count:
        problems.append(f"only {f.burst.progress.waiting:,} of {f.count:,} got their 200")
    for name, usage in zip("AB", f.steady, strict=True):
        if usage.peak_rss > TARGET_RSS_BYTES:
            over = (usage.peak_rss - TARGET_RSS_BYTES) / MB
            problems.append(
                f"replica {name} peaked {over:.1f} MB above {TARGET_RSS_BYTES / MB:.0f} MB"
            )
    most = max([f.held_after, *f.burst.connections])
    if most > 2 * MAX_CONNECTIONS:
        problems.append(f"{most} connections for two replicas (at most {2 * MAX_CONNECTIONS})")
    return problems


async def run(count: int, *, fresh: bool, steady: float, ramp_limit: float) -> int:
    """Hold ``count`` completions over two replicas, print the figures, return the status."""
    limits = raise_open_file_limit()
    if limits[0] < count + SPARE_FILES:
        print(f"FAIL: at most {limits[0]} open files; {count:,} need more", file=sys.stderr)
        return 1

    def fill(github: BenchGitHub, url: str) -> None:
        if not fresh:
            print(f"Leaving {count:,} tickets pending from an earlier run...", flush=True)
            prefill(github, PostgresTicketStore(url), count)

    no_timeout = aiohttp.ClientTimeout(total=None, sock_connect=60)
    settings = {"writes_per_minute": str(UNLIMITED), "writes_per_hour": str(UNLIMITED)}
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        async with (
            two_replicas(
                Path(tmp),
                rate_limit=UNLIMITED,
                creations_per_minute=UNLIMITED,
                creations_per_hour=UNLIMITED,
                before_start=fill,
                **settings,
            ) as replicas,
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0), timeout=no_timeout
            ) as http,
        ):
            proxies = (replicas.a, replicas.b)
            idle = [proxy.usage() for proxy in proxies]
            seen = len(replicas.github.sandbox.requests)
            new = "new" if fresh else "re-attaching"
            print(f"Sending {count:,} completions at once ({new}), half to each replica...")
            tasks, burst = await take_burst(replicas, http, count, fresh=fresh, limit=ramp_limit)
            loaded = [proxy.usage() for proxy in proxies]
            await asyncio.sleep(steady)
            figures = Figures(
                count=count,
                fresh=fresh,
                burst=burst,
                idle=idle,
                loaded=loaded,
                steady=[proxy.usage() for proxy in proxies],
                steady_seconds=steady,
                held_after=connections(replicas.database_url),
                pending=[await pending_tickets(proxy.url) for proxy in proxies],
                github_requests=requests_by_route(replicas.github.sandbox.requests[seen:]),
            )
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    print("\n".join(report(figures)))
    problems = problems_of(figures)
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print("OK: each replica's peak RSS within 300 MB; database connections bounded")
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=COUNT)
    parser.add_argument(
        "--prefilled",
        action="store_true",
        help="re-attach to tickets left pending by an earlier run, not new ones",
    )
    parser.add_argument("--steady", type=float, default=STEADY_SECONDS)
    parser.add_argument("--ramp-limit", type=float, default=600.0)
    args = parser.parse_args(argv)
    return asyncio.run(
        run(args.count, fresh=not args.prefilled, steady=args.steady, ramp_limit=args.ramp_limit)
    )


if __name__ == "__main__":
    sys.exit(main())
