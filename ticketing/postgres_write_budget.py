"""GitHub's write budget as one budget for every replica, kept in PostgreSQL.

GitHub's secondary limits (about 80 content-creating requests a minute, 500 an hour) are
per token, and every replica writes with the same token: a budget per replica would let two
replicas send twice the limit. :class:`PostgresSendLedger` keeps the send times of the last
hour in ``write_budget``; a replica reserves its slot in a transaction under one advisory
lock, so two replicas never take the same room, and the times are the database's clock, so
replicas whose clocks differ still share one window.

The reservations asked meanwhile in one process share one transaction, decided in the order
asked (each sees the moments reserved before it), so a burst of new tickets costs a few
transactions, not one each that queue for the pool's two connections until its timeout
tells them the database is unreachable.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ticketing.errors import StoreUnavailable
from ticketing.postgres_coordination import connection_options, unavailable

# pg_advisory_xact_lock key: "tp" + what the lock guards (the store's are 1 and 2).
BUDGET_LOCK = 0x7470_0000_0000_0003
WINDOW = 3600.0
# At most this many reservations a transaction.
BATCH = 500

Decide = Callable[[float, list[float]], float | None]


class PostgresSendLedger:
    """The send times of every replica's writes in the last hour, in one database."""

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        self._pool = AsyncConnectionPool(
            url,
            kwargs=connection_options(timeout),
            min_size=1,
            max_size=2,
            timeout=timeout,
            check=AsyncConnectionPool.check_connection,
            open=False,
            name="ticketproxy-write-budget",
        )
        self._opened = False
        self._asked: list[tuple[Decide, int, asyncio.Future[tuple[float, float | None]]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def reserve(
        self, decide: Callable[[float, list[float]], float | None], *, recent: int
    ) -> tuple[float, float | None]:
        """Record the moment ``decide`` picks from the shared times; return (now, moment).

        ``decide`` gets the database's clock and the ``recent`` latest send times of the last
        hour, oldest first, and returns when to send (None: not at all). No other replica
        reserves in between.
        """
        answer: asyncio.Future[tuple[float, float | None]]
        answer = asyncio.get_running_loop().create_future()
        self._asked.append((decide, recent, answer))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name="ticketproxy-write-budget")
        return await answer

    async def _send(self) -> None:
        await asyncio.sleep(0)  # the reservations of this turn of the loop join the batch
        while self._asked:
            batch, self._asked = self._asked[:BATCH], self._asked[BATCH:]
            try:
                answers = await self._reserve_all([(d, r) for d, r, _ in batch])
            except Exception as exc:  # noqa: BLE001 (each caller hears it, or waits for good)
                for _, _, answer in batch:
                    if not answer.done():
                        answer.set_exception(_copy(exc))
                continue
            for (_, _, answer), result in zip(batch, answers, strict=True):
                if not answer.done():
                    answer.set_result(result)

    async def _reserve_all(
        self, asked: list[tuple[Decide, int]]
    ) -> list[tuple[float, float | None]]:
        if not self._opened:
            self._opened = True
            await self._pool.open()
        try:
            async with self._pool.connection() as connection, connection.transaction():
                await connection.execute("SELECT pg_advisory_xact_lock(%s)", (BUDGET_LOCK,))
                now = await self._now(connection)
                await connection.execute(
                    "DELETE FROM write_budget WHERE sent_at <= %s", (now - WINDOW,)
                )
                cursor = await connection.execute(
                    "SELECT sent_at FROM (SELECT sent_at FROM write_budget"
                    " ORDER BY sent_at DESC LIMIT %s) AS latest ORDER BY sent_at",
                    (max(recent for _, recent in asked),),
                )
                sent = [float(row[0]) for row in await cursor.fetchall()]
                answers: list[tuple[float, float | None]] = []
                for decide, recent in asked:
                    moment = decide(now, sent[-recent:] if recent else [])
                    if moment is not None:
                        bisect.insort(sent, moment)
                    answers.append((now, moment))
                moments = [moment for _, moment in answers if moment is not None]
                if moments:
                    await connection.execute(
                        "INSERT INTO write_budget (sent_at) SELECT unnest(%s::float8[])",
                        (moments,),
                    )
                return answers
        except (psycopg.OperationalError, TimeoutError) as exc:
            raise unavailable("the shared GitHub write budget cannot be read", exc) from exc

    @staticmethod
    async def _now(connection: psycopg.AsyncConnection[Any]) -> float:
        cursor = await connection.execute("SELECT extract(epoch FROM clock_timestamp())")
        row = await cursor.fetchone()
        assert row is not None
        return float(row[0])

    async def close(self) -> None:
        """Close the connection pool once the reservations asked are answered."""
        if self._sender is not None:
            await asyncio.wait({self._sender})
        if self._opened:
            await self._pool.close()


def _copy(exc: Exception) -> Exception:
    """Return an error of its own for each caller, so their tracebacks do not pile up."""
    if isinstance(exc, StoreUnavailable):
        return StoreUnavailable(str(exc), retry_after=exc.retry_after)
    return exc
