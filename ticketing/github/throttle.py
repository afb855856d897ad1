"""Pace content-creating GitHub calls below GitHub's secondary limits, exactly.

GitHub allows about 80 content-creating requests a minute and 500 an hour per token
(https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
A token bucket refilled at 80/min would still let through 160 in the first minute (the
full bucket plus the refill), so this keeps a log of send times and only lets a write go
when every sliding window (the last minute, the last hour) has room. When the wait for a
slot would exceed ``max_wait`` the caller is told to back off instead of queueing without
bound.

Replicas write with one token, so they must share one budget: with a :class:`SendLedger`
(PostgreSQL's, :mod:`ticketing.postgres_write_budget`, or Redis's,
:mod:`ticketing.redis_write_budget`) the send times are every replica's, read and reserved
in one step no other replica interleaves with, on the ledger's clock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

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


class SendLedger(Protocol):
    """Send times shared by every replica, reserved one replica at a time."""

    async def reserve(
        self, decide: Callable[[float, list[float]], float | None], *, recent: int
    ) -> tuple[float, float | None]:
        """Record the moment ``decide(now, sent)`` picks (None: none); return (now, it).

        ``sent`` is the ``recent`` latest send times of the last hour, oldest first.
        """
        ...

    async def close(self) -> None:
        """Release the ledger's connections."""
        ...


@dataclass
class WriteThrottle:
    """Pace content creation below GitHub's per-minute and per-hour secondary limits."""

    per_minute: float = 72
    per_hour: float = 450
    # Inside the 600 s read timeout of openai clients and AutoGPT, which wait for the 200.
    max_wait: float = 90.0
    clock: Callable[[], float] = time.monotonic
    sleep: Sleep = asyncio.sleep
    # Every replica's send times (None: this process's, kept in _windows).
    ledger: SendLedger | None = None
    _windows: tuple[SlidingWindow, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._windows = self._fresh_windows([])

    def _fresh_windows(self, sent: list[float]) -> tuple[SlidingWindow, ...]:
        windows = (
            SlidingWindow(limit=max(1, int(self.per_minute)), seconds=60.0),
            SlidingWindow(limit=max(1, int(self.per_hour)), seconds=3600.0),
        )
        for window in windows:
            window.sent.extend(sent)
        return windows

    async def _reserve(
        self, decide: Callable[[float, tuple[SlidingWindow, ...]], float | None]
    ) -> tuple[float, float | None]:
        if self.ledger is None:
            now = self.clock()
            moment = decide(now, self._windows)
            if moment is not None:
                for window in self._windows:
                    window.record(moment)
            return now, moment
        # The windows look back at most their limit's number of sends.
        recent = max(window.limit for window in self._windows)
        return await self.ledger.reserve(
            lambda now, sent: decide(now, self._fresh_windows(sent)), recent=recent
        )

    async def try_acquire(self, *, share: float) -> bool:
        """Take a slot now only if every window stays within ``share`` of its limit.

        For writes that are nice to have (reactions): they use the spare part of the
        budget and never make an issue or a reply wait. Return whether a slot was taken.
        """

        def spare(now: float, windows: tuple[SlidingWindow, ...]) -> float | None:
            if any(window.earliest(now) > now for window in windows):
                return None
            if any(len(window.sent) + 1 > window.limit * share for window in windows):
                return None
            return now

        return (await self._reserve(spare))[1] is not None

    async def acquire(self) -> None:
        """Wait until content may be created; raise GitHubUnavailable if that is too far off."""
        earliest = 0.0

        def first_room(now: float, windows: tuple[SlidingWindow, ...]) -> float | None:
            nonlocal earliest
            earliest = max(window.earliest(now) for window in windows)
            # Reserved before sleeping, so concurrent writers never share a slot.
            return earliest if earliest - now <= self.max_wait else None

        now, start = await self._reserve(first_room)
        if start is None:
            raise GitHubUnavailable(
                "ticketproxy's GitHub write budget is spent for now "
                f"({self.per_minute:g}/min, {self.per_hour:g}/h)",
                retry_after=earliest - now,
            )
        if start > now:
            await self.sleep(start - now)

    async def close(self) -> None:
        """Release the shared ledger's connections, if any."""
        if self.ledger is not None:
            await self.ledger.close()
