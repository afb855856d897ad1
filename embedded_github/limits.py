"""GitHub's rate limits: the primary hourly budget and the secondary limit on creating content.

Both are plain state machines over epoch seconds; the dispatcher passes the time in, so tests
move time through the sandbox's injected clock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

WINDOW_SECONDS = 3600
# GitHub gives requests without a token 60 per hour, per address.
UNAUTHENTICATED_LIMIT = 60


@dataclass(frozen=True)
class RateStatus:
    """What the ``x-ratelimit-*`` headers say about one caller's budget."""

    limit: int
    remaining: int
    reset: int
    used: int
    resource: str = "core"

    def headers(self) -> dict[str, str]:
        """Return the ``x-ratelimit-*`` headers."""
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.remaining),
            "x-ratelimit-reset": str(self.reset),
            "x-ratelimit-used": str(self.used),
            "x-ratelimit-resource": self.resource,
        }


@dataclass
class _Window:
    start: int
    used: int


class PrimaryRateLimiter:
    """Count requests per caller in fixed hourly windows that start at the first request."""

    def __init__(self) -> None:
        """Start with every caller's budget full."""
        self._windows: dict[str, _Window] = {}

    def _window(self, key: str, now: int) -> _Window:
        window = self._windows.get(key)
        if window is None or now >= window.start + WINDOW_SECONDS:
            window = _Window(start=now, used=0)
            self._windows[key] = window
        return window

    def status(self, key: str, *, limit: int, now: int) -> RateStatus:
        """Return a caller's budget without spending any of it."""
        window = self._windows.get(key)
        if window is None or now >= window.start + WINDOW_SECONDS:
            return RateStatus(limit=limit, remaining=limit, reset=now + WINDOW_SECONDS, used=0)
        used = min(window.used, limit)
        return RateStatus(
            limit=limit, remaining=limit - used, reset=window.start + WINDOW_SECONDS, used=used
        )

    def consume(self, key: str, *, limit: int, now: int) -> RateStatus:
        """Spend one request of a caller's budget and return what is left."""
        window = self._window(key, now)
        window.used = min(window.used + 1, limit)
        return self.status(key, limit=limit, now=now)


class CreationRateLimiter:
    """GitHub's secondary limit on content creation: so many per minute and per hour."""

    def __init__(self, *, per_minute: int, per_hour: int) -> None:
        """Set both ceilings."""
        self.per_minute = per_minute
        self.per_hour = per_hour
        self._events: dict[str, deque[int]] = {}

    def allows(self, key: str, *, now: int) -> bool:
        """Return whether a caller may create one more thing now."""
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - WINDOW_SECONDS:
            events.popleft()
        last_minute = sum(1 for moment in events if moment > now - 60)
        return last_minute < self.per_minute and len(events) < self.per_hour

    def record(self, key: str, *, now: int) -> None:
        """Count one creation by a caller."""
        self._events.setdefault(key, deque()).append(now)
