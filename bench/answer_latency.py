"""Time from a signed answer being posted to the waiting client receiving its completion.

A real ``ticketproxy serve`` process waits on an in-process sandbox GitHub. For each sample
a raw aiohttp client asks a completion with a new prompt; once its 200 and the ticket's
issue URL arrive, the benchmark waits a random fraction of the poll interval (people answer
at random moments, not just after a poll), then starts the clock and posts alice's signed
answer over the sandbox's REST API, and stops it when the completion's body is complete. The
clock therefore includes the POST of the answer itself.

Two ways the answer can reach the proxy, each with its own proxy process:

- polling: no webhook; the desk polls every ``--poll-interval`` seconds (default 0.5 s,
  shorter than the proxy's 5 s default so that 200 samples take about three minutes; each
  sample waits up to one interval before its answer and up to one more for the poll).
  Target: p99 <= poll interval + 100 ms.
- webhooks: ``TICKETPROXY_WEBHOOK_SECRET`` is set and the sandbox delivers signed
  ``issue_comment`` events to ``POST /github/webhook``; the poll interval is set to 60 s so
  only the webhook can answer quickly. No poll falls between an answer and its delivery, so
  the wait before each answer is only up to ``WEBHOOK_ANSWER_WITHIN``. Target: p99 <= 50 ms.

``--samples`` (default 200 per path, so that the p99 is the second-slowest sample, not
the slowest) are taken one after another. Exits 1 when either target is missed.

The sandbox's secondary limits and the proxy's write budget are raised so that the
benchmark's own issues, answers, notices and reactions never meet GitHub's 80-a-minute
budget (that is ``bench.creation_budget``'s subject).
Run: ``python -m bench.answer_latency``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from bench.processes import ServerProcess, proxy_process
from bench.sandboxes import BenchGitHub, start_bench_github
from bench.stats import percentile

SAMPLES = 200
POLL_INTERVAL = 0.5
WEBHOOK_POLL_INTERVAL = 60.0
# A webhook's answer does not wait for a poll, so its moment within the interval is moot.
WEBHOOK_ANSWER_WITHIN = 0.1
SLACK_SECONDS = 0.100
WEBHOOK_TARGET_SECONDS = 0.050
TICKET_HEADER = "x-ticketproxy-ticket"


@dataclass(frozen=True)
class Mode:
    """One way for answers to reach the proxy, and the settings that select it."""

    name: str
    poll_interval: float
    webhooks: bool
    answer_within: float

    @property
    def target(self) -> float:
        """Return the p99 this mode must meet, in seconds."""
        if self.webhooks:
            return WEBHOOK_TARGET_SECONDS
        return self.poll_interval + SLACK_SECONDS

    @property
    def target_text(self) -> str:
        """Return the target as the table shows it."""
        if self.webhooks:
            return f"p99 <= {1000 * self.target:.0f} ms"
        return f"p99 <= interval + 100 ms = {1000 * self.target:.0f} ms"


@dataclass(frozen=True)
class Latencies:
    """The answer-to-delivery times measured for one mode, in seconds."""

    mode: Mode
    seconds: tuple[float, ...]

    def at(self, q: float) -> float:
        """Return the ``q``-th percentile in seconds."""
        return percentile(self.seconds, q)


async def one_sample(
    http: aiohttp.ClientSession,
    github: BenchGitHub,
    proxy: ServerProcess,
    *,
    label: str,
    delay: float,
) -> float:
    """Ask one completion, answer it after ``delay`` s, and return answer-to-delivery time."""
    text = f"Answer to {label}: {secrets.token_hex(4)}"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"Question {label}"}]}
    async with http.post(proxy.url + "/v1/chat/completions", json=body) as resp:
        if resp.status != 200:
            raise RuntimeError(f"{label}: the proxy answered {resp.status}: {await resp.text()}")
        number = int(resp.headers[TICKET_HEADER].rsplit("/", 1)[1])
        await asyncio.sleep(delay)
        started = time.perf_counter()
        await github.answer(http, number, text)
        completion = json.loads(await resp.read())
        elapsed = time.perf_counter() - started
    content = completion["choices"][0]["message"]["content"]
    if content != text:
        raise RuntimeError(f"{label}: the completion says {content!r}, not the answer")
    return elapsed


async def measure(
    mode: Mode,
    github: BenchGitHub,
    workdir: Path,
    *,
    samples: int,
    rng: random.Random,
) -> Latencies:
    """Run one proxy in ``mode`` and time ``samples`` answers, one after another.

    Each answer is posted a random 0 to ``mode.answer_within`` seconds after its ticket
    opened.
    """
    secret = secrets.token_hex(32)
    # The proxy's own write budget (72/min by default) is raised too: each sample costs an
    # issue, a delivery notice and reactions, and a sample that queued for the budget would
    # measure pacing, not answer latency.
    settings = {
        "poll_interval": str(mode.poll_interval),
        "writes_per_minute": "100000",
        "writes_per_hour": "1000000",
    }
    if mode.webhooks:
        settings["webhook_secret"] = secret
    proxy = proxy_process(
        github.proxy_environ(workdir / f"data-{mode.name}", **settings), workdir=workdir
    )
    target = None
    if mode.webhooks:
        target = github.sandbox.add_webhook(proxy.url + "/github/webhook", secret=secret)
    try:
        await proxy.start()
        timeout = aiohttp.ClientTimeout(total=mode.poll_interval + 30)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            # One unmeasured round first: connections and caches warm up on both sides.
            await one_sample(http, github, proxy, label=f"{mode.name} warm-up", delay=0)
            times = [
                await one_sample(
                    http,
                    github,
                    proxy,
                    label=f"{mode.name} {index}",
                    delay=rng.uniform(0, mode.answer_within),
                )
                for index in range(samples)
            ]
    finally:
        if target is not None:
            github.sandbox.remove_webhook(target)
        await proxy.stop()
    return Latencies(mode=mode, seconds=tuple(times))


def report(results: Sequence[Latencies]) -> list[str]:
    """Return the printed table."""
    header = (
        f"{'path':<9} | {'poll interval s':>15} | {'samples':>7} | {'p50 ms':>8} | "
        f"{'p99 ms':>8} | {'max ms':>8} | {'min ms':>8} | target"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r.mode.name:<9} | {r.mode.poll_interval:>15g} | {len(r.seconds):>7} | "
            f"{1000 * r.at(50):>8.1f} | {1000 * r.at(99):>8.1f} | "
            f"{1000 * max(r.seconds):>8.1f} | {1000 * min(r.seconds):>8.1f} | "
            f"{r.mode.target_text}: {'met' if r.at(99) <= r.mode.target else 'MISSED'}"
        )
    return lines


def problems_in(results: Sequence[Latencies]) -> list[str]:
    """Return each missed target (empty when all are met)."""
    problems: list[str] = []
    for r in results:
        p99 = r.at(99)
        if p99 > r.mode.target:
            problems.append(
                f"{r.mode.name} p99 {1000 * p99:.1f} ms misses its target "
                f"({r.mode.target_text}) by {1000 * (p99 - r.mode.target):.1f} ms"
            )
    return problems


async def run(samples: int, poll_interval: float, seed: int) -> int:
    """Measure both modes, print the table and return the exit status."""
    rng = random.Random(seed)
    modes = (
        Mode("polling", poll_interval, webhooks=False, answer_within=poll_interval),
        Mode(
            "webhooks",
            WEBHOOK_POLL_INTERVAL,
            webhooks=True,
            answer_within=WEBHOOK_ANSWER_WITHIN,
        ),
    )
    results: list[Latencies] = []
    with tempfile.TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        workdir = Path(tmp)
        github = await start_bench_github(
            workdir, creations_per_minute=10_000, creations_per_hour=100_000
        )
        try:
            for mode in modes:
                results.append(
                    await measure(
                        mode,
                        github,
                        workdir,
                        samples=samples,
                        rng=rng,
                    )
                )
        finally:
            await github.stop()
    print(
        "Answer posted -> completion delivered (one ticketproxy process, in-process sandbox; "
        f"each answer posted after a random wait of up to one poll interval when polling, "
        f"up to {1000 * WEBHOOK_ANSWER_WITHIN:.0f} ms with webhooks)"
    )
    print("\n".join(report(results)))
    problems = problems_in(results)
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(
            f"OK: polling p99 <= poll interval + 100 ms ({1000 * (poll_interval + 0.1):.0f} ms); "
            f"webhook p99 <= {1000 * WEBHOOK_TARGET_SECONDS:.0f} ms"
        )
    return 1 if problems else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.answer_latency", description=__doc__)
    parser.add_argument("--samples", type=int, default=SAMPLES, help="answers per path (200)")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=POLL_INTERVAL,
        help="seconds between polls on the polling path (0.5)",
    )
    parser.add_argument("--seed", type=int, default=2026, help="seed for the answer delays")
    args = parser.parse_args(argv)
    return asyncio.run(run(args.samples, args.poll_interval, args.seed))


if __name__ == "__main__":
    sys.exit(main())
