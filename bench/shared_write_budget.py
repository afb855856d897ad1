"""Write-queue throughput with two replicas draining one GitHub write budget.

GitHub's secondary limits are per token, and replicas write with one token: two replicas
must not each spend the whole budget. Two ``ticketproxy serve`` replicas share one
PostgreSQL database (no Redis, :mod:`bench.replicas`), or with ``--redis`` one SQLite file
and one ``redis-server`` (replicas on one host), each with the budget set to
``--per-minute`` writes a minute (``TICKETPROXY_WRITES_PER_MINUTE``). Clients send
``2 x per-minute`` new questions at once, half to each replica, so demand is twice what one
minute allows; each opens one issue (the only budgeted write a waiting ticket makes).

The benchmark reads each issue's creation time from the sandbox and reports the most created
in any 60 s (target: at most ``per-minute``, as one budget; a budget per replica would let
twice that through), how long the queue took to drain, and the throughput. It takes a little
over a minute: the second half must wait for the window. Exits 1 when the budget is exceeded
or the issues are not all created within 90 s.
Run: ``python -m bench.shared_write_budget [--redis]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import aiohttp

from bench.creation_budget import most_in_window
from bench.replicas import two_replicas, two_replicas_on_redis
from bench.sandboxes import BOT, REPO, BenchGitHub

PER_MINUTE = 10
WITHIN = 90.0


async def run(per_minute: int, *, redis: bool = False) -> int:
    """Open ``2 x per_minute`` tickets over both replicas; print and check the pacing."""
    tickets = 2 * per_minute
    pair, shared = (
        (two_replicas_on_redis, "one SQLite file and one Redis")
        if redis
        else (two_replicas, "one PostgreSQL")
    )
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        settings = {"writes_per_minute": str(per_minute), "poll_interval": "5"}
        timeout = aiohttp.ClientTimeout(total=WITHIN + 30)
        async with (
            pair(Path(tmp), **settings) as replicas,
            aiohttp.ClientSession(timeout=timeout) as http,
        ):

            async def ask(index: int) -> None:
                proxy = replicas.a if index % 2 else replicas.b
                body = {
                    "model": "gpt-4o",
                    "messages": [{"role": "user", "content": f"Question {index}"}],
                }
                async with http.post(proxy.url + "/v1/chat/completions", json=body) as resp:
                    resp.close()

            started = time.monotonic()
            asks = [asyncio.create_task(ask(index)) for index in range(tickets)]
            while len(created := await issue_times(http, replicas.github)) < tickets:
                if time.monotonic() - started > WITHIN:
                    break
                await asyncio.sleep(0.2)
            drained = time.monotonic() - started
            for task in asks:
                task.cancel()
            for task in asks:
                with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                    await task
    peak = most_in_window(created, 60.0)
    print(
        f"Two replicas on {shared}, each set to {per_minute} writes/min, "
        f"{tickets} tickets asked at once (half through each)"
    )
    print(f"issues created:                    {len(created)} of {tickets}")
    print(f"most created in any 60 s:          {peak} (one budget: <= {per_minute})")
    first = sum(1 for moment in created if moment < created[0] + 60) if created else 0
    print(f"created in the first 60 s:         {first}")
    print(f"queue drained in:                  {drained:.1f} s")
    print(f"throughput:                        {60 * len(created) / max(drained, 1e-9):.1f}/min")
    problems = []
    if peak > per_minute:
        problems.append(f"{peak} issues in one minute: the budget is not shared")
    if len(created) < tickets:
        problems.append(f"only {len(created)} of {tickets} issues within {WITHIN:.0f} s")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print("OK: two replicas drained the queue within one budget")
    return 1 if problems else 0


async def issue_times(http: aiohttp.ClientSession, github: BenchGitHub) -> list[float]:
    """Return the creation times of the sandbox's issues, in seconds, oldest first."""
    async with http.get(
        f"{github.running.api_url}/repos/{REPO}/issues",
        params={"state": "all", "per_page": "100"},
        headers={"Authorization": f"token {github.token(BOT)}"},
    ) as resp:
        issues = await resp.json()
    return sorted(
        datetime.fromisoformat(issue["created_at"].replace("Z", "+00:00")).timestamp()
        for issue in issues
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-minute", type=int, default=PER_MINUTE)
    parser.add_argument(
        "--redis", action="store_true", help="SQLite replicas on one host, coordinated by Redis"
    )
    args = parser.parse_args(argv)
    return asyncio.run(run(args.per_minute, redis=args.redis))


if __name__ == "__main__":
    sys.exit(main())
