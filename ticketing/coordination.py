"""What replicas of ticketproxy must agree on, behind one small interface.

The :class:`~ticketing.desk.Desk` runs one code path whether it is alone or one of several
replicas; only the parts that cross process boundaries go through a :class:`Coordinator`:

- **request keys**: :meth:`Coordinator.hold_key` serialises "find or open the ticket for
  this key, and create its issue" across replicas, so a request sent to two replicas at
  once opens one issue and the other re-attaches;
- **jtis**: :meth:`Coordinator.claim_jti` marks a signature as used by one comment, in
  addition to the store's own ``used_jtis`` record;
- **polling**: :meth:`Coordinator.hold_poll_lease` elects the one replica that polls
  GitHub; the others rely on what it publishes;
- **wake-ups**: :meth:`Coordinator.publish` and :meth:`Coordinator.subscribe` tell every
  replica that a ticket changed, so a client waiting on one replica is released by an
  answer found (or a webhook received) on another. A subscription whose connection dropped
  cannot hear what was announced meanwhile: once it listens again it yields
  :class:`RecheckAll`, and the replica re-reads every ticket it waits on.

:class:`LocalCoordinator`, the default, is today's single process: an in-process lock per
key, no lease to compete for, nobody else to tell. The Redis implementation lives in
:mod:`ticketing.redis_coordination`, the PostgreSQL one (no Redis needed) in
:mod:`ticketing.postgres_coordination`. GitHub's write budget is shared apart from these,
through :class:`~ticketing.github.throttle.SendLedger`.

Ticket state itself is not here: replicas read it from the ticket store, which they share
(see :mod:`ticketing.redis_coordination` for what lives where).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from ticketing.errors import GitHubUnavailable


class CoordinationUnavailable(GitHubUnavailable):
    """The shared coordination store (Redis or PostgreSQL) cannot be reached; try again later.

    It derives from GitHubUnavailable because that is the family the proxy answers with a
    429 and ``retry-after``: clients retry a 429, whereas AutoGPT stops the agent on a 500.
    """


@dataclass(frozen=True, slots=True)
class RecheckAll:
    """Announcements may have been missed: re-read every ticket waited on here.

    Yielded by a subscription once it listens again after its connection dropped (and only
    then, so whatever is announced from now on is heard): what was announced during the gap
    is in the store, not in the subscription.
    """

    reason: str


Announcement = int | RecheckAll


class Subscription(Protocol):
    """Ticket ids that changed, as announced by any replica, until closed."""

    def __aiter__(self) -> AsyncIterator[Announcement]:
        """Iterate over the ids of tickets whose state changed, and gaps (RecheckAll)."""
        ...

    async def close(self) -> None:
        """Stop listening and release the connection."""
        ...


class Coordinator(Protocol):
    """The cross-process parts of the desk: key locks, jtis, the poll lease, wake-ups."""

    def hold_key(self, request_key: str) -> AbstractAsyncContextManager[None]:
        """Hold the request key exclusively, across replicas, for the ``with`` block."""
        ...

    async def claim_jti(self, jti: str, *, holder: str, ttl: timedelta) -> bool:
        """Claim ``jti`` for ``holder`` (a comment); False if another holder has it."""
        ...

    async def hold_poll_lease(self, owner: str, ttl: timedelta) -> bool:
        """Take or renew the poll lease for ``ttl``; False while another replica holds it."""
        ...

    async def release_poll_lease(self, owner: str) -> None:
        """Give up the poll lease if ``owner`` holds it, so another replica takes over."""
        ...

    async def publish(self, ticket_id: int) -> None:
        """Tell every replica that ticket ``ticket_id`` changed."""
        ...

    async def subscribe(self) -> Subscription:
        """Start listening for changed tickets; announcements from now on are received."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class _NoAnnouncements:
    """A subscription in a single process: everything is announced in-process already."""

    def __init__(self) -> None:
        self._closed = asyncio.Event()

    def __aiter__(self) -> _NoAnnouncements:
        return self

    async def __anext__(self) -> Announcement:
        await self._closed.wait()
        raise StopAsyncIteration

    async def close(self) -> None:
        self._closed.set()


class KeyLocks:
    """One asyncio lock per key, kept only while someone holds or waits for it.

    Every request has its own key, so a lock kept for good per key would grow for as long
    as the process runs.
    """

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key`` exclusively within this process for the ``with`` block."""
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class LocalCoordinator:
    """One process: per-key asyncio locks, no lease to share, nobody else to wake."""

    def __init__(self) -> None:
        self._locks = KeyLocks()

    @contextlib.asynccontextmanager
    async def hold_key(self, request_key: str) -> AsyncIterator[None]:
        """Hold the request key exclusively within this process."""
        async with self._locks.hold(request_key):
            yield

    async def claim_jti(self, jti: str, *, holder: str, ttl: timedelta) -> bool:
        """Say yes: in one process the store's ``used_jtis`` is the whole record."""
        return True

    async def hold_poll_lease(self, owner: str, ttl: timedelta) -> bool:
        """Say yes: a lone process always polls."""
        return True

    async def release_poll_lease(self, owner: str) -> None:
        """Do nothing: there is no lease to give up."""

    async def publish(self, ticket_id: int) -> None:
        """Do nothing: the desk has already woken its own waiters."""

    async def subscribe(self) -> Subscription:
        """Return a subscription that yields nothing until closed."""
        return _NoAnnouncements()

    async def close(self) -> None:
        """Do nothing: there are no connections."""
