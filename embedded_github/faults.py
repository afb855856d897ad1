"""Faults a test asks the sandbox to answer instead of (or after) the real handler."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FaultPlan:
    """One planned fault: which requests it hits and what they get instead."""

    method: str
    path: re.Pattern[str]
    # None: no fault answer, the request is handled as usual (after ``delay``).
    status: int | None
    after_handling: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | None = None
    drop_connection: bool = False
    # Seconds to hold the request first: a slow GitHub.
    delay: float = 0.0
    # Held until the test releases it: before the handler (a GitHub that hangs), or with
    # ``after_handling`` after it, its changes made and its answer not yet sent.
    hold: bool = False

    def matches(self, method: str, path: str) -> bool:
        """Return whether a request (path after ``/api/v3``) is hit by this fault."""
        return (self.method in ("*", method.upper())) and self.path.fullmatch(path) is not None


class FaultQueue:
    """Planned faults, each used a given number of times, first planned first used."""

    def __init__(self) -> None:
        """Start with no faults."""
        self._entries: list[list[Any]] = []
        self._released = asyncio.Event()
        self.held = 0

    def add(self, plan: FaultPlan, *, times: int) -> None:
        """Plan a fault for the next ``times`` matching requests."""
        if times < 1:
            raise ValueError("times must be at least 1")
        self._entries.append([plan, times])

    def take(self, method: str, path: str) -> FaultPlan | None:
        """Return the fault this request hits, using it up, or None."""
        for entry in self._entries:
            plan: FaultPlan = entry[0]
            if plan.matches(method, path):
                entry[1] -= 1
                if entry[1] == 0:
                    self._entries.remove(entry)
                return plan
        return None

    async def hold(self) -> None:
        """Wait until ``release`` (or ``clear``) is called, counted in ``held`` meanwhile."""
        released = self._released
        self.held += 1
        try:
            await released.wait()
        finally:
            self.held -= 1

    def release(self) -> None:
        """Let every held request go on; a request held later waits for the next release."""
        self._released.set()
        self._released = asyncio.Event()

    def clear(self) -> None:
        """Forget every planned fault, and release the held requests."""
        self._entries.clear()
        self.release()
