"""Throughput of retries of an already-answered request, against a bare aiohttp handler.

Clients retry: the openai client and AutoGPT re-send the same bytes after a timeout or a
429, and a request answered within the redeliver window (1 h) is answered again from the
store, without GitHub. This measures how many such retries one ``ticketproxy serve``
process answers per second, and compares it in the same run with a bare aiohttp server
(:mod:`bench.bare_server`, its own process too) that returns the same completion bytes with
no work at all.

Both servers are driven by the same client: ``--concurrency`` connections (default 16)
sending the identical ``POST /v1/chat/completions`` back to back for ``--seconds`` (default
5) after a one-second warm-up; every answer is checked to be the 200 completion. The two
are measured alternately, ``--rounds`` times each (default 3), and the median is compared,
so that other load on the machine hits both alike. The servers' CPU use is shown too: a
server below ~90% of a core was waiting on the client, not the other way round.

Target: the proxy answers retries at >= 50% of the bare handler's rate. Exits 1 otherwise.
Run: ``python -m bench.retry_throughput``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.processes import ServerProcess, bare_process, proxy_process
from bench.sandboxes import start_bench_github

CONCURRENCY = 16
SECONDS = 5.0
WARM_UP = 1.0
ROUNDS = 3
TARGET_SHARE = 0.5
TICKET_HEADER = "x-ticketproxy-ticket"
ANSWER = "The build is green: 212 tests passed."
REQUEST: dict[str, Any] = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are BuildBot, an agent that watches CI."},
        {"role": "user", "content": "Is the build green? Answer in one sentence."},
    ],
}


@dataclass(frozen=True)
class Run:
    """One timed run against one server."""

    server: str
    requests: int
    seconds: float
    cpu_seconds: float

    @property
    def per_second(self) -> float:
        """Return completed requests per second."""
        return self.requests / self.seconds

    @property
    def cpu_percent(self) -> float:
        """Return the server's CPU use in percent of one core."""
        return 100 * self.cpu_seconds / self.seconds


async def first_answer(server: ServerProcess, answer: Any) -> bytes:
    """Ask the request once, let ``answer(number)`` post the signed answer, return the body."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(server.url + "/v1/chat/completions", json=REQUEST) as resp,
    ):
        if resp.status != 200:
            raise RuntimeError(f"the proxy answered {resp.status}: {await resp.text()}")
        await answer(http, int(resp.headers[TICKET_HEADER].rsplit("/", 1)[1]))
        return await resp.read()


async def hammer(server: ServerProcess, *, concurrency: int, seconds: float, expect: bytes) -> Run:
    """Send the request back to back on ``concurrency`` connections; count good answers.

    An answer is good when it is a 200 whose body is ``expect`` (leading heartbeat spaces
    aside): comparing bytes keeps the client's own cost per request small.
    """
    payload = json.dumps(REQUEST).encode()
    headers = {"Content-Type": "application/json"}
    url = server.url + "/v1/chat/completions"
    done = 0
    counting = False
    stop = False

    async def worker(http: aiohttp.ClientSession) -> None:
        nonlocal done
        while not stop:
            async with http.post(url, data=payload, headers=headers) as resp:
                body = await resp.read()
            if resp.status != 200 or body.lstrip() != expect:
                raise RuntimeError(f"{server.name}: a retry got {resp.status}: {body[:200]!r}")
            if counting:
                done += 1

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:
        workers = [asyncio.create_task(worker(http)) for _ in range(concurrency)]
        await asyncio.sleep(WARM_UP)
        counting = True
        cpu_before = server.usage().cpu_seconds
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        counting = False
        elapsed = time.perf_counter() - started
        cpu = server.usage().cpu_seconds - cpu_before
        stop = True
        await asyncio.gather(*workers)
    return Run(server=server.name, requests=done, seconds=elapsed, cpu_seconds=cpu)


def report(runs: Sequence[Run], concurrency: int) -> list[str]:
    """Return the printed table."""
    header = f"{'round':>5} | {'server':<6} | {'requests':>8} | {'req/s':>8} | {'server CPU %':>12}"
    lines = [
        f"Retries of one answered request, {concurrency} connections, "
        f"{runs[0].seconds:.0f} s per run",
        header,
        "-" * len(header),
    ]
    for index, run in enumerate(runs):
        lines.append(
            f"{index // 2 + 1:>5} | {run.server:<6} | {run.requests:>8,} | "
            f"{run.per_second:>8.0f} | {run.cpu_percent:>12.0f}"
        )
    return lines


def median_rate(runs: Sequence[Run], server: str) -> float:
    """Return the median requests per second of ``server``'s runs."""
    return statistics.median(run.per_second for run in runs if run.server == server)


async def run(concurrency: int, seconds: float, rounds: int) -> int:
    """Measure both servers, print the table and return the exit status."""
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        workdir = Path(tmp)
        github = await start_bench_github(workdir)
        proxy = proxy_process(github.proxy_environ(workdir / "data"), workdir=workdir)
        bare: ServerProcess | None = None
        runs: list[Run] = []
        try:
            await proxy.start()

            async def answer(http: aiohttp.ClientSession, number: int) -> None:
                await github.answer(http, number, ANSWER)

            completion = (await first_answer(proxy, answer)).lstrip()
            if json.loads(completion)["choices"][0]["message"]["content"] != ANSWER:
                raise RuntimeError(f"the first answer is not the signed one: {completion!r}")
            completion_file = workdir / "completion.json"
            completion_file.write_bytes(completion)
            bare = bare_process(completion_file, workdir=workdir)
            await bare.start()
            # Let the first answer's follow-ups (labels, closing) reach GitHub first.
            await asyncio.sleep(1.0)
            seen = len(github.sandbox.requests)
            for _ in range(rounds):
                for server in (bare, proxy):
                    runs.append(
                        await hammer(
                            server, concurrency=concurrency, seconds=seconds, expect=completion
                        )
                    )
            during = len(github.sandbox.requests) - seen
        finally:
            if bare is not None:
                await bare.stop()
            await proxy.stop()
            await github.stop()
    print("\n".join(report(runs, concurrency)))
    bare_rate, proxy_rate = median_rate(runs, "bare"), median_rate(runs, "proxy")
    share = proxy_rate / bare_rate
    print(
        f"median: bare {bare_rate:.0f} req/s, proxy {proxy_rate:.0f} req/s: "
        f"the proxy answers retries at {100 * share:.0f}% of the bare handler's rate "
        f"(GitHub requests made during the retry runs: {during})"
    )
    if share < TARGET_SHARE:
        print(
            f"FAIL: {100 * share:.0f}% < {100 * TARGET_SHARE:.0f}% of the bare handler",
            file=sys.stderr,
        )
        return 1
    print(f"OK: >= {100 * TARGET_SHARE:.0f}% of the bare handler")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.retry_throughput", description=__doc__)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="connections (16)")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds per run (5)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="runs per server (3)")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.concurrency, args.seconds, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
