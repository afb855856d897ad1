"""Several replicas coordinated through PostgreSQL alone (``TICKETPROXY_DATABASE_URL``).

With the ticket store in PostgreSQL, replicas on any number of hosts need nothing else:

- **leases**: the poll lease and the per-request-key locks are rows of
  ``coordination_leases`` (name, holder, expiry). One ``INSERT … ON CONFLICT DO UPDATE …
  WHERE`` takes a lease that is free, expired or already the caller's, atomically; the
  holder renews it and deletes it on release. Expiries are read on the database's clock, so
  replicas whose clocks differ still agree on when a dead replica's lease lapses. Key locks
  are taken, renewed and released in batches per process (:mod:`ticketing.postgres_batches`),
  so a burst of requests does not queue for the pool's few connections;
- **jtis**: the store's ``used_jtis`` is in the same database, written in a transaction
  every replica serialises on, so it is the whole record (as in one process);
- **wake-ups**: ``NOTIFY`` on a channel, heard by every replica's ``LISTEN`` on a
  connection of its own (psycopg's asyncio connection), reconnected when it drops; what was
  announced while it was down is caught up by re-reading the store (a
  :class:`~ticketing.coordination.RecheckAll` once it listens again);
- **the write budget**: :class:`~ticketing.postgres_write_budget.PostgresSendLedger`.

A database that cannot be reached raises :class:`~ticketing.errors.StoreUnavailable`, as
the store on it does: a 429 ``store_unavailable`` with ``retry-after``, which names what is
down (the database, not GitHub).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, ClassVar

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from ticketing.coordination import Announcement, RecheckAll, Subscription
from ticketing.errors import StoreUnavailable
from ticketing.postgres_batches import BatchedAnnouncements, BatchedKeyLocks

log = logging.getLogger(__name__)

CHANNEL = "ticketproxy_changed"
POLL_LEASE = "poll"
# Take a lease that is free, lapsed or the caller's already; a row comes back if taken.
_TAKE = """
INSERT INTO coordination_leases (name, holder, expires_at)
VALUES (%s, %s, extract(epoch FROM clock_timestamp()) + %s)
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE coordination_leases.holder = EXCLUDED.holder
   OR coordination_leases.expires_at <= extract(epoch FROM clock_timestamp())
RETURNING holder
"""
_RELEASE = "DELETE FROM coordination_leases WHERE name = %s AND holder = %s"
# Locks of request keys whose holder died are taken over by the next request with that
# key; those of keys never seen again are swept by the poll lease's holder.
_SWEEP = (
    "DELETE FROM coordination_leases WHERE expires_at < extract(epoch FROM clock_timestamp()) - 60"
)


def connection_options(timeout: float) -> dict[str, Any]:
    """Return the options of a coordination connection: autocommit, bounded waits."""
    return {
        "autocommit": True,
        "connect_timeout": max(1, round(timeout)),
        "options": f"-c statement_timeout={round(timeout * 1000)}",
    }


def unavailable(what: str, exc: Exception) -> StoreUnavailable:
    """Return the back-pressure error for a database that did not answer ``what``."""
    return StoreUnavailable(f"PostgreSQL is unreachable, so {what}: {exc}", retry_after=2.0)


class _Notifications:
    """``LISTEN`` on the channel over a connection of its own, reconnected when it drops.

    Announcements made while the connection is down are not heard, so once it listens again
    it yields :class:`~ticketing.coordination.RecheckAll`: the replica re-reads every ticket
    it waits on, and what changed during the gap releases its waiters then, not at their
    deadlines. (Listening again first, re-reading second: nothing falls in between.)
    """

    # It only reads: TCP keepalives notice a peer that vanished without closing it (a host
    # or a network gone) within about half a minute, so it reconnects.
    KEEPALIVES: ClassVar[dict[str, Any]] = {
        "keepalives": 1,
        "keepalives_idle": 10,
        "keepalives_interval": 5,
        "keepalives_count": 3,
    }

    def __init__(self, url: str, channel: str, *, timeout: float, reconnect: float) -> None:
        self._url, self._channel = url, channel
        self._timeout, self._reconnect = timeout, reconnect
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._closed = False

    async def connect(self) -> None:
        """Open the connection and listen; raise psycopg.Error if the database is down."""
        connection = await psycopg.AsyncConnection.connect(
            self._url, **connection_options(self._timeout), **self.KEEPALIVES
        )
        await connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        self._connection = connection

    def __aiter__(self) -> AsyncIterator[Announcement]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Announcement]:
        while not self._closed:
            connection = self._connection
            try:
                assert connection is not None
                async for notify in connection.notifies():
                    try:
                        yield int(notify.payload)
                    except ValueError:
                        log.warning("ignored a malformed announcement: %r", notify.payload)
            except psycopg.Error as exc:
                log.warning("lost the connection that hears other replicas: %s", exc)
            if await self._reopen():
                yield RecheckAll("the LISTEN connection to PostgreSQL was reconnected")

    async def _reopen(self) -> bool:
        """Listen again, retrying with back-off; False if closed meanwhile."""
        delay = self._reconnect
        while not self._closed:
            await asyncio.sleep(delay)
            with contextlib.suppress(psycopg.Error):
                if self._connection is not None:
                    await self._connection.close()
            try:
                await self.connect()
            except psycopg.Error as exc:
                log.warning("cannot listen to other replicas yet: %s", exc)
                delay = min(delay * 2, 5.0)
            else:
                log.info("listening to other replicas again")
                return True
        return False

    async def close(self) -> None:
        """Stop listening and close the connection."""
        self._closed = True
        if self._connection is not None:
            with contextlib.suppress(psycopg.Error):
                await self._connection.close()


class PostgresCoordinator:
    """Coordinate replicas through the PostgreSQL database that holds their ticket store."""

    def __init__(
        self,
        url: str,
        *,
        key_lock_ttl: timedelta = timedelta(seconds=30),
        key_lock_retry: float = 0.05,
        timeout: float = 5.0,
        reconnect: float = 0.5,
        channel: str = CHANNEL,
        max_connections: int = 4,
    ) -> None:
        self._url = url
        self._timeout, self._reconnect = timeout, reconnect
        self._channel = channel
        self._pool = AsyncConnectionPool(
            url,
            kwargs=connection_options(timeout),
            # All opened with the pool (at start-up, by the poll lease): a pool that grew
            # during a burst connected on a busy event loop, and timed out doing so.
            min_size=max_connections,
            max_size=max_connections,
            timeout=timeout,
            check=AsyncConnectionPool.check_connection,
            open=False,
            name="ticketproxy-coordination",
        )
        self._opened = False
        # What every request asks of the database goes in batches (see postgres_batches).
        self._key_locks = BatchedKeyLocks(
            self._run, ttl=key_lock_ttl.total_seconds(), retry=key_lock_retry
        )
        self._announcements = BatchedAnnouncements(self._run, channel)

    async def _run(self, what: str, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
        if not self._opened:
            self._opened = True
            await self._pool.open()
        try:
            async with self._pool.connection() as connection:
                cursor = await connection.execute(query, parameters)
                return await cursor.fetchall() if cursor.description is not None else []
        except (
            psycopg.OperationalError,
            psycopg.errors.ReadOnlySqlTransaction,
            TimeoutError,
        ) as exc:
            # Down, unreachable, or a standby reached after a failover: back-pressure.
            raise unavailable(what, exc) from exc
        except psycopg.errors.UndefinedTable as exc:
            missing = f"{what} (its tables are missing: open the store first)"
            raise unavailable(missing, exc) from exc

    async def _take(self, name: str, holder: str, seconds: float, what: str) -> bool:
        return bool(await self._run(what, _TAKE, name, holder, seconds))

    def hold_key(self, request_key: str) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the request key across replicas, renewing the lock while the block runs."""
        return self._key_locks.hold(request_key)

    async def claim_jti(self, jti: str, *, holder: str, ttl: timedelta) -> bool:
        """Say yes: the store's ``used_jtis``, in this same database, is the whole record."""
        return True

    async def hold_poll_lease(self, owner: str, ttl: timedelta) -> bool:
        """Take or renew the poll lease; False while another replica holds it."""
        what = "no replica can take the poll lease"
        taken = await self._take(POLL_LEASE, owner, ttl.total_seconds(), what)
        if taken:
            await self._run("lapsed locks cannot be swept", _SWEEP)
        return taken

    async def release_poll_lease(self, owner: str) -> None:
        """Give up the poll lease if ``owner`` holds it."""
        with contextlib.suppress(StoreUnavailable):
            await self._run("the poll lease cannot be released", _RELEASE, POLL_LEASE, owner)

    async def publish(self, ticket_id: int) -> None:
        """``NOTIFY`` every replica that ticket ``ticket_id`` changed."""
        await self._announcements.publish(ticket_id)

    async def subscribe(self) -> Subscription:
        """``LISTEN`` on the channel; return once the database has confirmed it."""
        notifications = _Notifications(
            self._url, self._channel, timeout=self._timeout, reconnect=self._reconnect
        )
        try:
            await notifications.connect()
        except psycopg.Error as exc:
            raise unavailable("replicas cannot wake each other", exc) from exc
        return notifications

    async def close(self) -> None:
        """Send what is still queued, and close the connection pool."""
        await self._key_locks.close()
        await self._announcements.close()
        if self._opened:
            await self._pool.close()
