"""A token bucket that paces content-creating GitHub calls.

GitHub's secondary limits allow about 80 content-creating requests a minute and 500 an
hour per token (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
Two buckets, one per window, keep ticketproxy below both; when the wait for a token would
exceed ``max_wait`` the caller is told to back off instead of queueing without bound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from .errors import GitHubUnavailable


@dataclass
class TokenBucket:
    """Hold up to ``capacity`` tokens, refilled at ``rate`` tokens per second."""

    rate: float
    capacity: float
    clock: Callable[[], float] = time.monotonic
    tokens: float = field(init=False)
    updated: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = self.capacity
        self.updated = self.clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    def reserve(self) -> float:
        """Take one token, possibly on credit, and return how long to wait before using it."""
        self._refill()
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def refund(self) -> None:
        """Give back a token reserved by a call that was not made."""
        self.tokens = min(self.capacity, self.tokens + 1)


@dataclass
class WriteThrottle:
    """Pace content creation below GitHub's per-minute and per-hour secondary limits."""

    per_minute: float = 80
    per_hour: float = 500
    max_wait: float = 30.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    _buckets: tuple[TokenBucket, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._buckets = (
            TokenBucket(rate=self.per_minute / 60, capacity=self.per_minute, clock=self.clock),
            TokenBucket(rate=self.per_hour / 3600, capacity=self.per_hour, clock=self.clock),
        )

    async def acquire(self) -> None:
        """Wait until content may be created; raise GitHubUnavailable if that is too far off."""
        waits = [bucket.reserve() for bucket in self._buckets]
        wait = max(waits)
        if wait > self.max_wait:
            for bucket in self._buckets:
                bucket.refund()
            raise GitHubUnavailable(
                "ticketproxy's GitHub write budget is spent for now "
                f"({self.per_minute:g}/min, {self.per_hour:g}/h)",
                retry_after=wait,
            )
        if wait > 0:
            await self.sleep(wait)
