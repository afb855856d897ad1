"""The PostgreSQL ticket store's connections: a pool, migrations, transactions, outages.

The driver is psycopg 3 with ``psycopg_pool``: it is maintained by PostgreSQL's own Python
driver project, and it speaks both synchronously and with asyncio. The store's protocols
are synchronous (as SQLite's calls are), so the store uses its thread-safe synchronous pool
today; its asyncio side is what ``LISTEN``/``NOTIFY`` wake-ups need later, with the same
driver, types and errors. asyncpg is asyncio only, so it could not serve the store as it is.

- **Atomic as SQLite.** Every write transaction first takes one transaction-level advisory
  lock, as SQLite's ``BEGIN IMMEDIATE`` takes its write lock: a check and the write it
  guards (the first answer wins, a jti is spent once, a reply is queued with its claim)
  never interleave with another replica's. Reads take no lock. Write transactions are a
  few short statements, so one writer at a time is far more than humans answering need.
- **The write queue.** A replica's worker claims a due write with a conditional update of
  its attempt count (``defer_write``): the first claim changes the row, the other replica's
  no longer matches it, so a write is sent once. ``SELECT … FOR UPDATE SKIP LOCKED`` would
  need the read and the claim in one call, which the ``WriteQueueStore`` protocol splits.
- **Migrations** run in one transaction under another advisory lock: replicas starting at
  once wait for the first, then find the schema current.
- **Outages.** Connections come from a pool that checks each one before handing it out (a
  dropped connection is replaced) and set a statement timeout. A database that is down,
  unreachable or over the timeout raises :class:`~ticketing.errors.StoreUnavailable`, which
  the proxy answers with a 429 and ``retry-after``; nothing committed is lost, and a
  transaction cut short commits nothing.
- **Secrets.** The URL may hold a password: errors and logs name the database by host,
  port, name and user only (:func:`describe_database`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ticketing.errors import StoreError, StoreUnavailable
from ticketing.store.postgres_outage import Outage
from ticketing.store.postgres_schema import SCHEMA_VERSION, migration_statements
from ticketing.store.sql_database import SQLDatabase

# pg_advisory_xact_lock keys: "tp" + what the lock guards, as 64-bit integers.
WRITE_LOCK = 0x7470_0000_0000_0001
MIGRATION_LOCK = 0x7470_0000_0000_0002
# Seconds a client told "the store is down" waits before retrying.
RETRY_AFTER = 2.0


def describe_database(url: str) -> str:
    """Name the database a URL points at, without its password."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "a PostgreSQL database (TICKETPROXY_DATABASE_URL cannot be parsed)"
    host, port = parts.get("host") or "localhost", parts.get("port") or "5432"
    user = f"{parts['user']}@" if parts.get("user") else ""
    return f"postgresql://{user}{host}:{port}/{parts.get('dbname') or ''}"


@functools.lru_cache(maxsize=512)
def to_psycopg(sql: str) -> str:
    """Rewrite the shared SQL's ``?`` placeholders as psycopg's ``%s`` (escaping ``%``)."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresRow:
    """A row read by position or by column name, as ``sqlite3.Row`` is."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: Sequence[str], values: Sequence[Any]) -> None:
        self._names, self._values = names, values

    def keys(self) -> list[str]:
        """Return the row's column names."""
        return list(self._names)

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, int):
            return self._values[key]
        return self._values[self._names.index(key)]


class PostgresResult:
    """The rows a statement returned, read already (its connection went back to the pool)."""

    def __init__(self, rows: list[PostgresRow], rowcount: int) -> None:
        self._rows, self._rowcount = iter(rows), rowcount

    def fetchone(self) -> PostgresRow | None:
        """Return the next row, or None."""
        return next(self._rows, None)

    def fetchall(self) -> list[PostgresRow]:
        """Return the remaining rows."""
        return list(self._rows)

    @property
    def rowcount(self) -> int:
        """Return how many rows the statement changed."""
        return self._rowcount


def run(connection: psycopg.Connection[Any], sql: str, parameters: Any = ()) -> PostgresResult:
    """Run one shared-SQL statement on ``connection`` and read its rows."""
    # The store's enums are StrEnums: psycopg sends their values, as sqlite3 does.
    cursor = connection.execute(to_psycopg(sql), list(parameters))
    if cursor.description is None:
        return PostgresResult([], cursor.rowcount)
    names = [column.name for column in cursor.description]
    return PostgresResult([PostgresRow(names, row) for row in cursor.fetchall()], cursor.rowcount)


class _InTransaction:
    """Statements on the one connection of a transaction."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Any = (), /) -> PostgresResult:
        """Run ``sql`` inside the transaction."""
        return run(self._connection, sql, parameters)


class _Pooled:
    """Statements outside a transaction, each on a connection borrowed from the pool."""

    def __init__(self, database: PostgresDatabase) -> None:
        self._database = database

    def execute(self, sql: str, parameters: Any = (), /) -> PostgresResult:
        """Run ``sql`` on its own (autocommit)."""
        with self._database.connection() as connection:
            return run(connection, sql, parameters)


class PostgresDatabase(SQLDatabase):
    """A pool of connections to one PostgreSQL database, migrated to the current schema."""

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 10,
        wait_for_connection: float = 2.0,
        statement_timeout: float = 5.0,
    ) -> None:
        self.name = describe_database(url)
        self._wait = wait_for_connection
        self._outage = Outage(wait=wait_for_connection)
        options: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(wait_for_connection)),
            "options": f"-c statement_timeout={round(statement_timeout * 1000)}",
        }
        try:
            # Connect once first: a wrong URL, password or database name is the operator's
            # to fix, and is told at start-up rather than retried as an outage.
            with psycopg.connect(url, **options) as connection:
                self._migrate(connection)
        except psycopg.Error as exc:
            raise StoreError(f"cannot use the ticket store at {self.name}: {exc}") from exc
        self._pool = ConnectionPool(
            url,
            kwargs=options,
            min_size=1,
            max_size=max_connections,
            timeout=wait_for_connection,
            # A connection attempt backs off 1, 2, 4, ... s: giving it up after 30 s lets the
            # next call start afresh, so a database back after a long outage is found soon.
            reconnect_timeout=30.0,
            check=ConnectionPool.check_connection,
            open=False,
            name="ticketproxy-store",
        )
        self._pool.open()
        self._db = _Pooled(self)

    def close(self) -> None:
        """Close every connection of the pool."""
        self._pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """Lend a pooled connection; an outage raises StoreUnavailable."""
        wait = self._outage.wait(idle=self._idle_connections)
        if wait is None:
            raise StoreUnavailable(
                f"the ticket store at {self.name} has not answered for "
                f"{self._outage.lasted():.0f} s; the pool keeps reconnecting",
                retry_after=RETRY_AFTER,
            )
        try:
            with self._pool.connection(timeout=wait) as connection:
                self._outage.over()
                yield connection
        except PoolTimeout as exc:
            # No connection within the wait: the database is down or unreachable. The pool
            # keeps reconnecting meanwhile; until it has a connection, calls fail at once.
            self._outage.began()
            raise self._unavailable(exc) from exc
        except (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction) as exc:
            # Restarting, a connection dropped, over the statement timeout, or a standby
            # reached after a failover (read-only until promoted): back-pressure.
            raise self._unavailable(exc) from exc

    def _idle_connections(self) -> int:
        return int(self._pool.get_stats().get("pool_available", 0))

    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        return StoreUnavailable(
            f"the ticket store at {self.name} does not answer: {exc}", retry_after=RETRY_AFTER
        )

    @contextmanager
    def _transaction(self) -> Iterator[_InTransaction]:
        with self.connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield _InTransaction(connection)

    def _migrate(self, connection: psycopg.Connection[Any]) -> None:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            )
            row = connection.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            version = int(row[0] or 0) if row is not None else 0
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the ticket store at {self.name} has schema version {version}, newer than "
                    f"this ticketproxy understands ({SCHEMA_VERSION}); upgrade ticketproxy"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in migration_statements(target):
                    connection.execute(statement)
                connection.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (target,))
