"""GitHub's write budget as one budget for every replica, kept in PostgreSQL.

GitHub's secondary limits (about 80 content-creating requests a minute, 500 an hour) are
per token, and every replica writes with the same token: a budget per replica would let two
replicas send twice the limit. :class:`PostgresSendLedger` keeps the send times of the last
hour in ``write_budget``; a replica reserves its slot in a transaction under one advisory
lock, so two replicas never take the same room, and the times are the database's clock, so
replicas whose clocks differ still share one window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from ticketing.postgres_coordination import connection_options, unavailable

# pg_advisory_xact_lock key: "tp" + what the lock guards (the store's are 1 and 2).
BUDGET_LOCK = 0x7470_0000_0000_0003
WINDOW = 3600.0


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

    async def reserve(
        self, decide: Callable[[float, list[float]], float | None], *, recent: int
    ) -> tuple[float, float | None]:
        """Record the moment ``decide`` picks from the shared times; return (now, moment).

        ``decide`` gets the database's clock and the ``recent`` latest send times of the last
        hour, oldest first, and returns when to send (None: not at all). No other replica
        reserves in between.
        """
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
                    (recent,),
                )
                moment = decide(now, [float(row[0]) for row in await cursor.fetchall()])
                if moment is not None:
                    await connection.execute(
                        "INSERT INTO write_budget (sent_at) VALUES (%s)", (moment,)
                    )
                return now, moment
        except (psycopg.OperationalError, TimeoutError) as exc:
            raise unavailable("the shared GitHub write budget cannot be read", exc) from exc

    @staticmethod
    async def _now(connection: psycopg.AsyncConnection[Any]) -> float:
        cursor = await connection.execute("SELECT extract(epoch FROM clock_timestamp())")
        row = await cursor.fetchone()
        assert row is not None
        return float(row[0])

    async def close(self) -> None:
        """Close the connection pool."""
        if self._opened:
            await self._pool.close()
