"""Open issues as fast as the write budget allows, against GitHub's secondary limit.

GitHub allows about 80 content-creating requests a minute and 500 an hour per token, and
answers more with a 403 "secondary rate limit" (docs: rate limits for the REST API). The
proxy's :class:`ticketing.github.throttle.WriteThrottle` exists to stay below that. This benchmark
drives the real :class:`ticketing.github.client.GitHubClient` (PyGithub on its worker
thread, with the throttle at the configured budget: ``TICKETPROXY_WRITES_PER_MINUTE`` and
``TICKETPROXY_WRITES_PER_HOUR``, default 80 and 500) against the sandbox with its secondary
limit set to GitHub's: 80 a minute and 500 an hour, counted over sliding windows. Several
creators open issues (and lock them, as the desk does) without pause, so demand always
exceeds the budget; when the throttle says the budget is spent they wait as told.

Time is compressed so that a run takes about 30 s: the throttle's clock and sleeps and the
sandbox's clock all run ``--speed`` times faster than real time (default 20: 30 s of real
time are 10 simulated minutes). Rates and windows are unchanged in simulated time, so the
budget is exercised exactly as over 10 real minutes, including the move from the per-minute
to the per-hour bucket. Each real request still takes its real time, so the machine must
sustain speed x 80 / 60 creations per real second (about 27 at speed 20); the output shows
whether it did.

Target: 0 secondary-limit errors (403 from the sandbox). Exits 1 otherwise.
Run: ``python -m bench.creation_budget``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from tempfile import TemporaryDirectory

from bench.sandboxes import BOT, REPO, route_of, start_bench_github
from proxy.settings import Settings
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.client import GitHubClient
from ticketing.github.throttle import WriteThrottle

SPEED = 20.0
SIMULATED_MINUTES = 10.0
CREATORS = 4
GITHUB_PER_MINUTE = 80
GITHUB_PER_HOUR = 500
CREATE_ISSUE = f"POST /repos/{REPO}/issues"


class CompressedTime:
    """A clock running ``speed`` times faster than real time, with sleeps to match."""

    def __init__(self, speed: float) -> None:
        """Start simulated time now."""
        self.speed = speed
        self._real_start = time.monotonic()
        self._sim_start = datetime.now(UTC).replace(microsecond=0)

    def seconds(self) -> float:
        """Return simulated seconds since the start."""
        return (time.monotonic() - self._real_start) * self.speed

    def now(self) -> datetime:
        """Return the simulated wall-clock time (for the sandbox)."""
        return self._sim_start + timedelta(seconds=self.seconds())

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of simulated time."""
        await asyncio.sleep(max(0.0, seconds) / self.speed)


@dataclass
class Tally:
    """What the creators saw."""

    created: list[float] = field(default_factory=list)  # simulated second of each creation
    refused: list[float] = field(default_factory=list)  # ... and of each secondary-limit 403
    budget_waits: int = 0  # the throttle said "spent": the proxy would answer 429
    other_errors: Counter[str] = field(default_factory=Counter)


async def creator(
    github: GitHubClient, clock: CompressedTime, tally: Tally, *, until: float, index: int
) -> None:
    """Open issues back to back until simulated second ``until``."""
    serial = 0
    while clock.seconds() < until:
        serial += 1
        marker = f"<!-- ticketproxy:request bench{index}x{serial} -->"
        try:
            await github.create_issue(
                title=f"Budget run {index}.{serial}",
                body=f"Opened by bench.creation_budget.\n\n{marker}",
                labels=["ticketproxy"],
                marker=marker,
                lock=True,
            )
            tally.created.append(clock.seconds())
        except GitHubUnavailable as exc:
            if exc.status is None:
                tally.budget_waits += 1
            else:
                tally.refused.append(clock.seconds())
            await clock.sleep(exc.retry_after)
        except GitHubError as exc:
            tally.other_errors[str(exc)] += 1
            await clock.sleep(1.0)


def most_in_window(moments: Sequence[float], window: float) -> int:
    """Return the most events inside any ``window`` seconds."""
    best, start = 0, 0
    for end, moment in enumerate(moments):
        while moments[start] <= moment - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def per_minute_rows(tally: Tally, minutes: float) -> list[str]:
    """Return the table of creations and refusals in each simulated minute."""
    created = Counter(int(moment // 60) for moment in tally.created)
    refused = Counter(int(moment // 60) for moment in tally.refused)
    return [
        f"{minute + 1:>6} | {created.get(minute, 0):>8} | {refused.get(minute, 0):>12}"
        for minute in range(math.ceil(minutes))
    ]


async def run(speed: float, minutes: float, creators: int) -> int:
    """Open issues for ``minutes`` simulated minutes, print the figures, return the status."""
    budget = Settings.from_env(
        {k: v for k, v in os.environ.items() if k.startswith("TICKETPROXY_WRITES_PER_")}
    )
    clock = CompressedTime(speed)
    until = minutes * 60
    tally = Tally()
    with TemporaryDirectory(prefix="ticketproxy-bench-") as tmp:
        github = await start_bench_github(
            Path(tmp),
            creations_per_minute=GITHUB_PER_MINUTE,
            creations_per_hour=GITHUB_PER_HOUR,
            clock=clock.now,
        )
        throttle = WriteThrottle(
            per_minute=budget.writes_per_minute,
            per_hour=budget.writes_per_hour,
            clock=clock.seconds,
            sleep=clock.sleep,
        )
        client = GitHubClient(
            api_url=github.running.api_url,
            token=github.token(BOT),
            repo=REPO,
            throttle=throttle,
            sleep=clock.sleep,
        )
        started = time.monotonic()
        try:
            await asyncio.gather(
                *(
                    creator(client, clock, tally, until=until, index=index)
                    for index in range(creators)
                )
            )
        finally:
            real = time.monotonic() - started
            await client.close()
            refused = sum(
                1
                for r in github.sandbox.requests
                if route_of(r) == CREATE_ISSUE and r.status in {403, 429}
            )
            await github.stop()
    moments = sorted(tally.created)
    minute_peak = most_in_window(moments, 60)
    hour_peak = most_in_window(moments, 3600)
    needed = speed * budget.writes_per_minute / 60
    print(
        f"Issue creation at the configured budget ({budget.writes_per_minute:g}/min, "
        f"{budget.writes_per_hour:g}/h) against GitHub's secondary limit "
        f"({GITHUB_PER_MINUTE}/min, {GITHUB_PER_HOUR}/h, sliding windows), {creators} creators"
    )
    print(
        f"Clock compressed {speed:g}x: {real:.1f} s of real time = {minutes:g} simulated "
        f"minutes; throttle and sandbox both run on the simulated clock (the machine had to "
        f"sustain {needed:.0f} creations per real second to follow the per-minute budget)"
    )
    print(f"{'minute':>6} | {'created':>8} | {'refused: 403':>12}")
    print("-" * 32)
    print("\n".join(per_minute_rows(tally, minutes)))
    print(f"issues created:                          {len(moments)}")
    print(f"most created in any 60 s (limit {GITHUB_PER_MINUTE}):       {minute_peak}")
    print(f"most created in any hour (limit {GITHUB_PER_HOUR}):     {hour_peak}")
    print(f"secondary-limit errors seen by the client: {len(tally.refused)}")
    print(f"creations refused by the sandbox (403):    {refused}")
    print(f"budget spent, caller told to wait (429):   {tally.budget_waits}")
    for message, count in tally.other_errors.items():
        print(f"other error x{count}: {message}")
    if refused or tally.refused or tally.other_errors:
        print(
            f"FAIL: {refused} creations hit GitHub's secondary limit at the configured budget",
            file=sys.stderr,
        )
        return 1
    print("OK: 0 secondary-limit errors")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.creation_budget", description=__doc__)
    parser.add_argument("--speed", type=float, default=SPEED, help="time compression (20)")
    parser.add_argument(
        "--minutes", type=float, default=SIMULATED_MINUTES, help="simulated minutes (10)"
    )
    parser.add_argument("--creators", type=int, default=CREATORS, help="concurrent creators (4)")
    args = parser.parse_args(argv)
    # Each refusal is counted in the table; the client's own warning per refusal is noise here.
    logging.basicConfig(level=logging.ERROR)
    return asyncio.run(run(args.speed, args.minutes, args.creators))


if __name__ == "__main__":
    sys.exit(main())
