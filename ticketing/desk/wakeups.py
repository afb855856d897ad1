"""Wake-ups between replicas: announce that a ticket changed, and listen for the others'.

A client waiting on one replica is released by an answer that another replica found (or a
webhook it received): the finder's replica announces the ticket through the
:class:`~ticketing.coordination.Coordinator`, and every replica's listener settles its own
waiters for it. Alone, the coordinator announces to nobody and the listener hears nothing.

An announcement made while a replica's subscription was reconnecting is not heard by it;
the subscription says so once it listens again (:class:`~ticketing.coordination.RecheckAll`),
and the listener has the replica re-read every ticket it waits on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ticketing.coordination import Coordinator, RecheckAll, Subscription
from ticketing.errors import StoreUnavailable, TicketingError

__all__ = ["Announcer", "Listener", "cancel_task"]

log = logging.getLogger(__name__)


async def cancel_task(task: asyncio.Task[None]) -> None:
    """Cancel a background task and wait until it has ended."""
    # Python 3.11's wait_for can lose a cancellation that lands as its timeout fires (the
    # TimeoutError wins, and the loop suppresses it): so cancel again until the task ends.
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=1.0)
    with contextlib.suppress(asyncio.CancelledError):
        task.result()


class Announcer:
    """Tell the other replicas, in the background, that a ticket changed; and this one's views.

    ``told`` (the desk's :class:`~ticketing.desk.events.DeskEvents`) hears every change
    announced here, at once; the other replicas' listeners hand theirs to it too.
    """

    def __init__(
        self, coordinator: Coordinator, *, told: Callable[[int], None] | None = None
    ) -> None:
        self._coordinator = coordinator
        self._told = told
        self._announcing: set[asyncio.Task[None]] = set()

    def announce(self, ticket_id: int) -> None:
        """Publish a change without holding up the caller."""
        if self._told is not None:
            self._told(ticket_id)
        task = asyncio.create_task(self._publish(ticket_id))
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def drain(self) -> None:
        """Wait for the announcements still on their way."""
        if self._announcing:
            await asyncio.gather(*self._announcing, return_exceptions=True)

    async def _publish(self, ticket_id: int) -> None:
        try:
            await self._coordinator.publish(ticket_id)
        except TicketingError as exc:
            # The others still find the change at their next read of the store: a recheck if
            # the server was down for them too (their subscriptions reconnect), else a
            # deadline or a retry. A lost wake-up delays a client, it loses nothing.
            log.warning("could not announce ticket %d to other replicas: %s", ticket_id, exc)


class Listener:
    """Hand the ids of tickets other replicas changed to ``on_change``, until stopped.

    After a gap in the subscription (announcements may have been missed) it awaits
    ``on_gap``, which re-reads every ticket waited on here.
    """

    def __init__(
        self,
        coordinator: Coordinator,
        *,
        on_change: Callable[[int], None],
        on_gap: Callable[[], Awaitable[None]],
    ) -> None:
        self._coordinator = coordinator
        self._on_change = on_change
        self._on_gap = on_gap
        self._subscription: Subscription | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Subscribe, then listen in the background."""
        # Subscribed before anything is served, so no announcement from another replica is
        # missed between start-up and the first wait.
        self._subscription = await self._coordinator.subscribe()
        self._task = asyncio.create_task(self._listen(), name="ticketproxy-wakeups")

    async def stop(self) -> None:
        """Stop listening and close the subscription."""
        # The listener first: closing a subscription that a task still reads can hang.
        if self._task is not None:
            await cancel_task(self._task)
            self._task = None
        if self._subscription is not None:
            await self._subscription.close()
            self._subscription = None

    async def _listen(self) -> None:
        subscription = self._subscription
        assert subscription is not None
        try:
            async for announced in subscription:
                if isinstance(announced, RecheckAll):
                    log.info("re-reading the tickets waited on here: %s", announced.reason)
                    await self._recheck()
                else:
                    self._on_change(announced)
        except TicketingError as exc:
            # Without wake-ups, waiters here are released by their deadlines only: say so.
            log.error("stopped listening to other replicas: %s", exc)

    async def _recheck(self) -> None:
        """Await ``on_gap`` until the store could be read (it may come back after Redis)."""
        while True:
            try:
                await self._on_gap()
            except StoreUnavailable as exc:
                log.warning("cannot re-read the tickets waited on here yet: %s", exc)
                await asyncio.sleep(exc.retry_after)
            else:
                return
