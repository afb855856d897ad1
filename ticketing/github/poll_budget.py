"""The polling budget: how long to wait between polls as GitHub's primary rate limit runs low."""

from __future__ import annotations

# Shares of the primary rate limit below which polling slows down, and by how much.
_RATE_LOW = 0.20
_RATE_CRITICAL = 0.05
_LOW_RATE_STRETCH = 4.0


def poll_delay(
    base: float, remaining: int | None, limit: int | None, reset_in: float | None
) -> float:
    """Return how long to wait before the next poll, stretched as the rate budget runs out.

    Below 20 % of the primary limit poll at most every 4x ``base``; below 5 % wait until
    the budget resets (``reset_in`` seconds from now), so that the requests left go to
    opening tickets and posting replies rather than to polling.
    """
    if remaining is None or not limit:
        return base
    share = remaining / limit
    if share < _RATE_CRITICAL and reset_in is not None:
        return max(base * _LOW_RATE_STRETCH, reset_in)
    if share < _RATE_LOW:
        return base * _LOW_RATE_STRETCH
    return base
