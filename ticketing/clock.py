"""The one clock of the ticketing layer: aware UTC time, injected wherever time is read.

Every collaborator that reads the time takes a ``clock`` argument defaulting to
:func:`utc_now`, so tests move time by passing their own, and nothing else is patched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

__all__ = ["Clock", "Sleep", "utc_now"]

Clock = Callable[[], datetime]
Sleep = Callable[[float], Awaitable[None]]


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)
