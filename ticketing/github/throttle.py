"""Pace content-creating GitHub calls below GitHub's secondary limits, exactly.

GitHub allows about 80 content-creating requests a minute and 500 an hour per token
(https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
A token bucket refilled at 80/min would still let through 160 in the first minute (the
full bucket plus the refill), so this keeps a log of send times and only lets a write go
when every sliding window (the last minute, the last hour) has room. When the wait for a
slot would exceed ``max_wait`` the caller is told to back off instead of queueing without
bound.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ticketing.clock import Sleep
from ticketing.errors import GitHubUnavailable

# Keep a little clear of the window edge: GitHub's own clock and ours differ slightly.
_EDGE = 0.05


@dataclass
class SlidingWindow:
    """At most ``limit`` events in any ``seconds``-long window."""

    limit: int
    seconds: float
    sent: deque[float] = field(default_factory=deque)

    def earliest(self, now: float) -> float:
        """Return the earliest time, not before ``now``, that one more event fits."""
        while self.sent and self.sent[0] <= now - self.seconds:
            self.sent.popleft()
        if len(self.sent) < self.limit:
            return now
        # Times are kept in order, so the event that must leave the window first is the
        # limit-th from the end.
        return max(now, self.sent[-self.limit] + self.seconds + _EDGE)

    def record(self, moment: float) -> None:
        """Record an event (possibly reserved for a moment in the future)."""
        self.sent.append(moment)


@dataclass
class WriteThrottle:
    """Pace content creation below GitHub's per-minute and per-hour secondary limits."""

    per_minute: float = 72
    per_hour: float = 450
    # Inside the 600 s read timeout of openai clients and AutoGPT, which wait for the 200.
    max_wait: float = 90.0
    clock: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep
    _windows: tuple[SlidingWindow, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._windows = (
            SlidingWindow(limit=max(1, int(self.per_minute)), seconds=60.0),
            SlidingWindow(limit=max(1, int(self.per_hour)), seconds=3600.0),
        )

    def try_acquire(self, *, share: float) -> bool:
        """Take a slot now only if every window stays within ``share`` of its limit.

        For writes that are nice to have (reactions): they use the spare part of the
        budget and never make an issue or a reply wait. Return whether a slot was taken.
        """
        now = self.clock()
        if any(window.earliest(now) > now for window in self._windows):
            return False
        if any(len(window.sent) + 1 > window.limit * share for window in self._windows):
            return False
        for window in self._windows:
            window.record(now)
        return True

    async def acquire(self) -> None:
        """Wait until content may be created; raise GitHubUnavailable if that is too far off."""
        now = self.clock()
        start = max(window.earliest(now) for window in self._windows)
        wait = start - now
        if wait > self.max_wait:
            raise GitHubUnavailable(
                "ticketproxy's GitHub write budget is spent for now "
                f"({self.per_minute:g}/min, {self.per_hour:g}/h)",
                retry_after=wait,
            )
        # Reserve the slot before sleeping, so concurrent writers never share one.
        for window in self._windows:
            window.record(start)
        if wait > 0:
            await self.sleep(wait)
