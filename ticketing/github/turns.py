"""Whose turn it is on the GitHub worker thread: a short hand-over, and openings last.

PyGithub runs on one thread (see :mod:`ticketing.github.worker`), so a burst of new
tickets queues thousands of calls for it. Handed to the thread's executor at once, each
queued call would hold a thread-pool work item, a ``concurrent.futures`` future with its
condition, and the asyncio future wrapping it; waiting here instead, it holds one
asyncio future. And the executor's queue is first-in first-out: the second call of the
first ticket (locking its issue, posting the rest of a long prompt) would wait behind
every issue the burst asked for, and no client would get its 200 until all were open.

So at most :data:`HANDED_OVER` calls are handed to the thread at once (one running, the
rest ready, so that the thread does not wait while a busy event loop takes new requests),
and the others take their turns in order of their :class:`Turn` and then of arrival: new
issues after everything else. A ticket
being opened finishes before the next one starts, polls keep finding answers, and queued
follow-up writes are not held up behind a burst.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from enum import IntEnum

__all__ = ["HANDED_OVER", "Turn", "Turns"]

# Calls on the worker thread or queued for it; a call of any turn waits behind at most these.
HANDED_OVER = 8


class Turn(IntEnum):
    """How soon a call runs among those waiting: lower first."""

    # Everything that finishes or serves work already under way: locks, continuation
    # comments, polls, follow-up writes, reactions, lookups.
    SOON = 0
    # Opening a new issue: new work, which waits until the work under way is done.
    OPENING = 1


class Turns:
    """At most ``depth`` calls at once on the worker; the rest wait by turn, then arrival."""

    def __init__(self, *, depth: int = HANDED_OVER) -> None:
        self._depth = depth
        self._running = 0
        self._waiting: list[tuple[Turn, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    @property
    def waiting(self) -> int:
        """Return how many calls wait for their turn (cancelled ones until they are passed)."""
        return len(self._waiting)

    async def take(self, turn: Turn = Turn.SOON) -> None:
        """Wait for a turn; :meth:`give_back` it when the call is done."""
        if self._running < self._depth and not self._waiting:
            self._running += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (turn, next(self._arrivals), future))
        try:
            await future
        except asyncio.CancelledError:
            # Handed the turn just as the caller was cancelled: pass it on, or it is lost.
            # (A future still waiting is cancelled with its caller, and skipped when met.)
            if future.done() and not future.cancelled():
                self.give_back()
            raise

    def give_back(self) -> None:
        """End a call's turn: hand it to the next caller waiting, if any."""
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)  # the turn passes on; as many run as before
                return
        self._running -= 1
