"""What every request asks of the coordination database, sent in batches per process.

A burst of new completions makes each request take its key's lock, later release it, renew
it every ``ttl / 3`` while GitHub opens its issue, and announce its ticket. One statement
each, on a pool of a few connections, is a queue the burst outgrows: a pool hands out one
statement per connection per turn of the event loop, and a busy loop turns slowly, so
requests waited past the pool's timeout and were told 429 ``store_unavailable`` ("the
database is unreachable") by a database that was answering fine.

So the requests of one turn share a statement: the keys wanted are taken by one
``INSERT … SELECT FROM unnest(…) ON CONFLICT DO UPDATE … WHERE … RETURNING name``, the keys
done with are deleted by one statement (sent before the next takes, so a key released here
is free for the next request with it), every lock this process holds is renewed by one
``UPDATE`` every ``ttl / 3``, and the announcements by one ``SELECT pg_notify`` over them.
The coordination pool then serves a few statements at a time whatever the burst, and a 429
means what it says: the database did not answer.

Rows are locked in the order of their names, so two replicas taking or releasing the same
keys at once (one request sent to both) wait for each other rather than deadlock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, Protocol

from ticketing.coordination import KeyLocks
from ticketing.errors import StoreUnavailable

log = logging.getLogger(__name__)

# At most this many rows a statement: a burst of 10,000 goes in a few short statements.
BATCH = 1000
# Take every lease named that is free, lapsed or the caller's already; a row for each taken.
TAKE_MANY = """
INSERT INTO coordination_leases (name, holder, expires_at)
SELECT wanted.name, wanted.holder, extract(epoch FROM clock_timestamp()) + %s
FROM unnest(%s::text[], %s::text[]) AS wanted(name, holder)
ORDER BY wanted.name
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE coordination_leases.holder = EXCLUDED.holder
   OR coordination_leases.expires_at <= extract(epoch FROM clock_timestamp())
RETURNING name
"""
# The caller's own leases among those named, locked in name order, renewed or deleted.
RENEW_MANY = """
WITH mine AS (
    SELECT lease.name FROM coordination_leases AS lease
    JOIN unnest(%s::text[], %s::text[]) AS held(name, holder)
      ON lease.name = held.name AND lease.holder = held.holder
    ORDER BY lease.name FOR UPDATE OF lease
)
UPDATE coordination_leases SET expires_at = extract(epoch FROM clock_timestamp()) + %s
FROM mine WHERE coordination_leases.name = mine.name
"""
RELEASE_MANY = """
WITH mine AS (
    SELECT lease.name FROM coordination_leases AS lease
    JOIN unnest(%s::text[], %s::text[]) AS held(name, holder)
      ON lease.name = held.name AND lease.holder = held.holder
    ORDER BY lease.name FOR UPDATE OF lease
)
DELETE FROM coordination_leases USING mine WHERE coordination_leases.name = mine.name
"""
NOTIFY_MANY = "SELECT pg_notify(%s, payload) FROM unnest(%s::text[]) AS payload"


class Run(Protocol):
    """Run one statement on a pooled connection; an outage raises StoreUnavailable."""

    def __call__(
        self, what: str, query: str, *parameters: Any
    ) -> Awaitable[list[tuple[Any, ...]]]: ...


def _columns(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    return [name for name, _ in pairs], [holder for _, holder in pairs]


class BatchedKeyLocks:
    """Request-key locks as lease rows, taken, renewed and released together per process."""

    def __init__(self, run: Run, *, ttl: float, retry: float) -> None:
        self._run, self._ttl, self._retry = run, ttl, retry
        # Contenders in this process queue here rather than poll the database.
        self._local = KeyLocks()
        self._held: dict[str, str] = {}
        self._takes: dict[str, tuple[str, asyncio.Future[bool]]] = {}
        self._releases: list[tuple[str, str]] = []
        self._sender: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def hold(self, request_key: str) -> AsyncIterator[None]:
        """Hold the request key across replicas, renewed while the block runs."""
        async with self._local.hold(request_key):
            name, token = f"key:{request_key}", secrets.token_hex(16)
            # Another replica holds the key (it is opening the ticket): wait for it.
            # (ASYNC110: the holder is another process, so no asyncio.Event can say when.)
            while not await self._take(name, token):  # noqa: ASYNC110
                await asyncio.sleep(self._retry)
            self._held[name] = token
            if self._renewer is None:
                self._renewer = asyncio.create_task(self._renew(), name="ticketproxy-key-renewal")
            try:
                yield
            finally:
                del self._held[name]
                # Queued before this key's next take here, so sent before it: the request
                # answered now waits for no database round trip.
                self._releases.append((name, token))
                self._send_soon()

    async def _take(self, name: str, token: str) -> bool:
        taken: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._takes[name] = (token, taken)
        self._send_soon()
        try:
            return await taken
        except asyncio.CancelledError:
            # Cancelled in the turn its lock was granted (the client went): nobody will
            # release it, so free the key now rather than leave it to lapse.
            granted = taken.done() and not taken.cancelled() and taken.exception() is None
            if granted and taken.result():
                self._releases.append((name, token))
                self._send_soon()
            raise

    def _send_soon(self) -> None:
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name="ticketproxy-key-locks")

    async def _send(self) -> None:
        await asyncio.sleep(0)  # the requests of this turn of the loop join the batch
        while self._takes or self._releases:
            await self._send_releases()
            await self._send_takes()

    async def _send_releases(self) -> None:
        releases, self._releases = self._releases[:BATCH], self._releases[BATCH:]
        if not releases:
            return
        try:
            await self._run("key locks cannot be released", RELEASE_MANY, *_columns(releases))
        except StoreUnavailable as exc:
            log.warning("could not release %d request-key locks: %s", len(releases), exc)
        except Exception:
            # Refused otherwise (a read-only standby, say): the locks lapse at their TTL, and
            # the takes queued behind them must still be sent, so this task goes on.
            log.exception("could not release %d request-key locks", len(releases))

    async def _send_takes(self) -> None:
        names = list(self._takes)[:BATCH]
        batch = {name: self._takes.pop(name) for name in names}
        wanted = sorted((name, token) for name, (token, taken) in batch.items() if not taken.done())
        if not wanted:
            return
        try:
            rows = await self._run(
                "the request cannot be matched to its ticket",
                TAKE_MANY,
                self._ttl,
                *_columns(wanted),
            )
        except Exception as exc:  # noqa: BLE001 (each waiter hears it, or it waits for good)
            for _, taken in batch.values():
                if not taken.done():
                    taken.set_exception(_copy(exc))
            return
        got = {row[0] for row in rows}
        for name, (token, taken) in batch.items():
            if not taken.done():
                taken.set_result(name in got)
            elif name in got:  # its request went away meanwhile: free the key at once
                self._releases.append((name, token))

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)
            held = sorted(self._held.items())
            for start in range(0, len(held), BATCH):
                try:
                    await self._run(
                        "key locks cannot be renewed",
                        RENEW_MANY,
                        *_columns(held[start : start + BATCH]),
                        self._ttl,
                    )
                except StoreUnavailable as exc:
                    log.warning("could not renew the locks on request keys: %s", exc)
                except Exception:
                    # Refused otherwise (a read-only standby after a failover, say): the
                    # next round tries again, as no other task renews the locks held here.
                    log.exception("could not renew the locks on request keys")

    async def close(self) -> None:
        """Stop renewing, and send the releases still queued."""
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await self._sender


def _copy(exc: Exception) -> Exception:
    """Return an error of its own for each waiter, so their tracebacks do not pile up."""
    if isinstance(exc, StoreUnavailable):
        return StoreUnavailable(str(exc), retry_after=exc.retry_after)
    return exc


class BatchedAnnouncements:
    """``NOTIFY`` the ticket ids announced meanwhile in one statement, one at a time."""

    def __init__(self, run: Run, channel: str) -> None:
        self._run, self._channel = run, channel
        self._ids: set[int] = set()
        # Set once the pending ids are sent: to None, or to the error that stopped them.
        self._next: asyncio.Future[Exception | None] | None = None
        self._sender: asyncio.Task[None] | None = None

    async def publish(self, ticket_id: int) -> None:
        """Announce ``ticket_id`` with the others pending; return once it was sent."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        sent = self._next
        self._ids.add(ticket_id)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name="ticketproxy-announcements")
        error = await asyncio.shield(sent)
        if error is not None:
            raise _copy(error)

    async def _send(self) -> None:
        await asyncio.sleep(0)  # the announcements of this turn of the loop join the batch
        while self._next is not None:
            ids, sent = sorted(self._ids), self._next
            self._ids, self._next = set(), None
            try:
                for start in range(0, len(ids), BATCH):
                    payloads = [str(ticket_id) for ticket_id in ids[start : start + BATCH]]
                    await self._run(
                        "other replicas cannot be woken", NOTIFY_MANY, self._channel, payloads
                    )
            except Exception as exc:  # noqa: BLE001 (each announcer hears it, or waits for good)
                sent.set_result(exc)
            else:
                sent.set_result(None)

    async def close(self) -> None:
        """Send the announcements still pending."""
        if self._sender is not None:
            with contextlib.suppress(Exception):
                await self._sender
