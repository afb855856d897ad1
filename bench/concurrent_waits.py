"""Hold 10,000 completions waiting at once and measure what the proxy process costs.

DESIGN.md: people take minutes or hours, so many agents wait at the same time. This runs a
real ``ticketproxy serve`` process against an in-process sandbox GitHub, opens N concurrent
``POST /v1/chat/completions`` with distinct prompts (raw aiohttp, one connection each), and
waits until every one has its 200 (its ticket exists, heartbeats run). Then it reads the
proxy's resident memory (RSS and its peak) and CPU time from ``/proc`` and its ``/metrics``
(N pending tickets), and watches everything wait for a while (the default heartbeat every
2 s and poll every 5 s).

By default all N tickets are new (``--fresh`` N): every request takes the whole path at the
same time (marker lookup, create, lock, through PyGithub on the one worker thread), which is
the hard case. The GitHub requests they cost are counted by route from the sandbox's log,
and the time from sending the burst to the first and to the last 200 is reported. The
first 200 needs its issue opened and locked while the rest of the burst is still being
taken; the proxy takes the lock before further issues (see ``ticketing/github/turns.py``),
so it comes once the proxy's event loop has taken most of the burst, not after every issue.

With ``--fresh`` below N, N - ``--fresh`` of them are pending from an earlier run, as after a
restart: their issues are written straight into the sandbox and their tickets into the
proxy's store before it starts, and the clients' requests re-attach to them. That measures
re-attachment, the easy case; it was the default once, for a reason that no longer holds
(an all-fresh run of 10,000 completes).

Only for this benchmark, the sandbox's rate limits and the proxy's write throttle
(``TICKETPROXY_WRITES_PER_MINUTE`` / ``_PER_HOUR``) are raised to a billion, as opening
10,000 issues is far beyond GitHub's budget (80 a minute, 500 an hour).

Target: the proxy's peak RSS stays at or below 300 MB with N = 10,000 waiting, read
strictly: 300 × 10^6 bytes, which is 286.1 MiB (it was once checked as 300 MiB, 314.6 MB,
which let a run of 308.7 MB pass). The peak is printed in both MiB and MB. Exits 1
otherwise, saying by how much it was missed.

What a waiting completion costs (a tracemalloc profile of the serve process, 2026-11-26):
about 21 KiB of RSS each, most of it aiohttp's per-connection and per-request state (the
parsed request with its headers, the protocol, the transport, the handler task, the
response); what is ticketproxy's own is one middleware frame (:mod:`proxy.front_door`),
one flow frame (:func:`proxy.completion_flow.answer_with`) and the heartbeat loop's
(:func:`proxy.keepalive.send_after_wait`), holding only what the answer is rendered from.
Run: ``python -m bench.concurrent_waits`` (``--count`` to change N).
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bench.processes import ServerProcess, Usage, proxy_process, raise_open_file_limit
from bench.sandboxes import BenchGitHub, requests_by_route, start_bench_github
from proxy.middleware import ANONYMOUS
from proxy.wire.requests import parse_chat_request
from ticketing.desk import LABEL, LABEL_AWAITING, DeskSettings
from ticketing.github.times import format_github_time
from ticketing.store.interface import TicketStore
from ticketing.store.model import PollCursor
from ticketing.store.sqlite import SQLiteTicketStore

COUNT = 10_000
MODEL = "gpt-4o"
# 300 MB, decimal: the target as written, not 300 MiB.
TARGET_RSS_BYTES = 300 * 10**6
MIB, MB = 2**20, 10**6
UNLIMITED = 10**9
# How long to watch the proxy with every completion waiting (heartbeats and polls run).
STEADY_SECONDS = 20.0
# Headroom for the sandbox's, the proxy's and the runtime's own descriptors.
SPARE_FILES = 512


def completion_body(index: int) -> dict[str, Any]:
    """Return the request body of completion ``index`` (a distinct prompt each)."""
    return {"model": MODEL, "messages": [{"role": "user", "content": f"Task {index}: wait."}]}


def prefill(github: BenchGitHub, store: TicketStore, count: int) -> None:
    """Leave ``count`` tickets pending in ``store``, as an earlier run would have; close it."""
    now = datetime.now(UTC).replace(microsecond=0)
    try:
        for index in range(count):
            chat = parse_chat_request(
                completion_body(index), client=ANONYMOUS, models=frozenset({MODEL})
            )
            ticket = store.open_ticket(
                chat.key,
                request_id=f"req_prefilled_{index}",
                created=now,
                deadline=now + timedelta(hours=1),
                request=chat.to_json(),
            )
            number, url = github.add_ticket_issue(
                title=f"[{MODEL}] user: Task {index}: wait.",
                marker_key=f"{chat.key}{ticket.id:08x}",
                labels=(LABEL, LABEL_AWAITING),
            )
            store.set_issue(ticket.id, number=number, url=url, now=now)
        overlap = DeskSettings(repo="-").poll_overlap
        store.set_cursor(PollCursor(since=format_github_time(now - overlap), etag=None))
    finally:
        store.close()


@dataclass
class Progress:
    """Seconds each completion took to get its 200, by kind, and the failures."""

    started: float = field(default_factory=time.monotonic)
    reattached: list[float] = field(default_factory=list)
    fresh: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)

    @property
    def waiting(self) -> int:
        """Return how many completions have their 200."""
        return len(self.reattached) + len(self.fresh)


async def hold_completion(
    http: aiohttp.ClientSession, url: str, index: int, *, fresh: bool, progress: Progress
) -> None:
    """Ask one completion and keep its response open until cancelled."""
    try:
        async with http.post(url, json=completion_body(index)) as resp:
            if resp.status != 200:
                progress.failures[f"HTTP {resp.status}"] += 1
                return
            took = time.monotonic() - progress.started
            (progress.fresh if fresh else progress.reattached).append(took)
            await resp.read()  # heartbeats until the proxy answers or we are cancelled
    except aiohttp.ClientError as exc:
        progress.failures[type(exc).__name__] += 1


async def pending_tickets(proxy_url: str) -> float:
    """Return ``ticketproxy_pending_tickets`` from the proxy's ``/metrics``."""
    async with aiohttp.ClientSession() as http, http.get(proxy_url + "/metrics") as resp:
        text = await resp.text()
    for family in text_string_to_metric_families(text):
        if family.name == "ticketproxy_pending_tickets":
            return float(family.samples[0].value)
    raise RuntimeError("/metrics has no ticketproxy_pending_tickets")


@dataclass(frozen=True)
class Result:
    """What holding N completions cost the proxy."""

    count: int
    progress: Progress
    idle: Usage
    loaded: Usage
    after_steady: Usage
    steady_seconds: float
    pending_reported: float
    github_requests: Counter[str]

    @property
    def first_seconds(self) -> float:
        """Return when the first completion got its 200, after the burst was sent."""
        return min(self.progress.reattached + self.progress.fresh)

    @property
    def ramp_seconds(self) -> float:
        """Return when the last completion got its 200, after the burst was sent."""
        return max(self.progress.reattached + self.progress.fresh)

    @property
    def ramp_cpu(self) -> float:
        """Return the proxy's CPU seconds spent taking the N requests."""
        return self.loaded.cpu_seconds - self.idle.cpu_seconds

    @property
    def steady_cpu_percent(self) -> float:
        """Return the proxy's CPU use while everything waits, in percent of one core."""
        used = self.after_steady.cpu_seconds - self.loaded.cpu_seconds
        return 100 * used / self.steady_seconds

    @property
    def kib_per_waiting(self) -> float:
        """Return the resident memory each waiting completion adds, in KiB."""
        return (self.after_steady.rss - self.idle.rss) / 1024 / self.count


def report(result: Result, limits: tuple[int, int]) -> list[str]:
    """Return the printed table."""
    r = result
    fresh, reattached = r.progress.fresh, r.progress.reattached
    rows = [
        ("completions waiting at once", f"{r.count:,}"),
        ("  re-attached to tickets pending from before", f"{len(reattached):,}"),
        ("  new tickets opened through GitHub meanwhile", f"{len(fresh):,}"),
        ("first 200 after sending the burst (s)", f"{r.first_seconds:.1f}"),
        ("last 200 after sending the burst (s)", f"{r.ramp_seconds:.1f}"),
        ("last re-attached completion's 200 after (s)", f"{max(reattached, default=0):.1f}"),
        ("first new ticket's 200 after (s)", f"{min(fresh, default=0):.1f}"),
        ("last new ticket's 200 after (s)", f"{max(fresh, default=0):.1f}"),
        ("pending tickets reported by /metrics", f"{r.pending_reported:,.0f}"),
        ("proxy RSS at start, tickets pending, idle (MiB)", f"{r.idle.rss_mb:.1f}"),
        ("proxy RSS with all waiting (MiB)", f"{r.loaded.rss_mb:.1f}"),
        (
            f"proxy RSS after {r.steady_seconds:.0f} s of waiting (MiB)",
            f"{r.after_steady.rss_mb:.1f}",
        ),
        ("proxy peak RSS, VmHWM (MiB)", f"{r.after_steady.peak_rss / MIB:.1f}"),
        ("proxy peak RSS, VmHWM (MB, 10^6 bytes)", f"{r.after_steady.peak_rss / MB:.1f}"),
        ("RSS per waiting completion (KiB)", f"{r.kib_per_waiting:.1f}"),
        ("proxy CPU to take all the requests (s)", f"{r.ramp_cpu:.1f}"),
        ("proxy CPU while all wait (% of one core)", f"{r.steady_cpu_percent:.1f}"),
    ]
    if fresh:
        rows += [
            (f"GitHub {route} per new ticket", f"{n / len(fresh):.2f}")
            for route, n in sorted(r.github_requests.items())
        ]
    width = max(len(name) for name, _ in rows)
    return [
        f"{r.count:,} concurrent waiting completions against one ticketproxy process",
        f"(RLIMIT_NOFILE soft/hard: {limits[0]}/{limits[1]}; the sandbox's rate limits and "
        f"TICKETPROXY_WRITES_PER_MINUTE/_HOUR raised to {UNLIMITED:.0e} for this benchmark)",
        "",
        f"{'measure':<{width}}  {'value':>10}",
        "-" * (width + 12),
        *(f"{name:<{width}}  {value:>10}" for name, value in rows),
    ]


async def take_requests(
    proxy: ServerProcess,
    http: aiohttp.ClientSession,
    *,
    count: int,
    fresh: int,
    ramp_limit: float,
) -> tuple[list[asyncio.Task[None]], Progress]:
    """Start ``count`` completions, the last ``fresh`` of them new; wait for every 200."""
    url = proxy.url + "/v1/chat/completions"
    progress = Progress()
    tasks = [
        asyncio.create_task(
            hold_completion(http, url, i, fresh=i >= count - fresh, progress=progress)
        )
        for i in range(count)
    ]
    shown = progress.started
    while progress.waiting < count and not progress.failures:
        if time.monotonic() - progress.started > ramp_limit:
            break
        await asyncio.sleep(0.2)
        if time.monotonic() - shown >= 15:
            shown = time.monotonic()
            print(
                f"  {shown - progress.started:5.0f} s: {len(progress.reattached):,} re-attached "
                f"and {len(progress.fresh):,} new completions waiting, "
                f"proxy RSS {proxy.usage().rss_mb:.0f} MiB",
                flush=True,
            )
    return tasks, progress


async def run(
    count: int, fresh: int, steady: float, ramp_limit: float, heartbeat: float | None = None
) -> int:
    """Hold ``count`` completions, print the figures and return the exit status."""
    limits = raise_open_file_limit()
    if limits[0] < count + SPARE_FILES:
        print(
            f"FAIL: at most {limits[0]} open files (hard limit {limits[1]}); "
            f"{count:,} waiting completions need {count + SPARE_FILES:,}",
            file=sys.stderr,
        )
        return 1
    fresh = min(fresh, count)
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        workdir = Path(tmp)
        github = await start_bench_github(
            workdir,
            rate_limit=UNLIMITED,
            creations_per_minute=UNLIMITED,
            creations_per_hour=UNLIMITED,
        )
        print(f"Leaving {count - fresh:,} tickets pending from an earlier run...", flush=True)
        (workdir / "data").mkdir()
        prefill(github, SQLiteTicketStore(workdir / "data" / "tickets.sqlite3"), count - fresh)
        environ = github.proxy_environ(
            workdir / "data", writes_per_minute=str(UNLIMITED), writes_per_hour=str(UNLIMITED)
        )
        if heartbeat is not None:
            environ["TICKETPROXY_HEARTBEAT_INTERVAL"] = str(heartbeat)
        proxy = proxy_process(environ, workdir=workdir)
        tasks: list[asyncio.Task[None]] = []
        connector = aiohttp.TCPConnector(limit=0)
        no_timeout = aiohttp.ClientTimeout(total=None, sock_connect=60)
        try:
            await proxy.start()
            idle = proxy.usage()
            seen = len(github.sandbox.requests)
            print(f"Sending {count:,} completions at once ({fresh:,} new)...", flush=True)
            async with aiohttp.ClientSession(connector=connector, timeout=no_timeout) as http:
                tasks, progress = await take_requests(
                    proxy, http, count=count, fresh=fresh, ramp_limit=ramp_limit
                )
                if progress.waiting < count:
                    failures = ", ".join(f"{n} {why}" for why, n in progress.failures.items())
                    print(
                        f"FAIL: only {progress.waiting:,} of {count:,} completions got their 200 "
                        f"(failures: {failures or 'none'}); see {proxy.log_path}",
                        file=sys.stderr,
                    )
                    return 1
                loaded = proxy.usage()
                await asyncio.sleep(steady)
                after = proxy.usage()
                result = Result(
                    count=count,
                    progress=progress,
                    idle=idle,
                    loaded=loaded,
                    after_steady=after,
                    steady_seconds=steady,
                    pending_reported=await pending_tickets(proxy.url),
                    github_requests=requests_by_route(github.sandbox.requests[seen:]),
                )
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                await proxy.stop()
            await github.stop()
    print("\n".join(report(result, limits)), flush=True)
    problems: list[str] = []
    if result.pending_reported != count:
        problems.append(f"/metrics reports {result.pending_reported:.0f} pending, not {count}")
    peak = result.after_steady.peak_rss
    both = f"{peak / MB:.1f} MB ({peak / MIB:.1f} MiB)"
    target = f"{TARGET_RSS_BYTES / MB:.0f} MB ({TARGET_RSS_BYTES / MIB:.1f} MiB)"
    if peak > TARGET_RSS_BYTES:
        problems.append(
            f"peak RSS {both} is above the {target} target by "
            f"{(peak - TARGET_RSS_BYTES) / MB:.1f} MB ({100 * (peak / TARGET_RSS_BYTES - 1):.0f}%)"
        )
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(
            f"OK: peak RSS {both} <= {target} with {count:,} waiting "
            f"({(TARGET_RSS_BYTES - peak) / MB:.1f} MB to spare)"
        )
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.concurrent_waits", description=__doc__)
    parser.add_argument("--count", type=int, default=COUNT, help="waiting completions (10000)")
    parser.add_argument(
        "--fresh",
        type=int,
        default=None,
        help="of which new tickets opened via GitHub (default: all); the rest pre-filled",
    )
    parser.add_argument(
        "--steady", type=float, default=STEADY_SECONDS, help="seconds to watch them wait (20)"
    )
    parser.add_argument(
        "--ramp-limit", type=float, default=900.0, help="most seconds until every 200 (900)"
    )
    parser.add_argument(
        "--heartbeat", type=float, default=None, help="seconds between heartbeats (default 2)"
    )
    args = parser.parse_args(argv)
    fresh = args.count if args.fresh is None else args.fresh
    return asyncio.run(run(args.count, fresh, args.steady, args.ramp_limit, args.heartbeat))


if __name__ == "__main__":
    sys.exit(main())
