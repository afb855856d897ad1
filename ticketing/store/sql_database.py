"""What the ticket store's parts run their SQL on, whichever database it is.

The parts of the store (tickets, answers, the write queue, drafts, GitHub events, responses,
tasks) are written once, in SQL that SQLite and PostgreSQL both run: ``?`` placeholders,
``INSERT … ON CONFLICT``, ``RETURNING``. They inherit :class:`SQLDatabase`, and a store is
those parts composed over one concrete database:
:class:`~ticketing.store.sqlite_database.SQLiteDatabase` or
:class:`~ticketing.store.postgres_database.PostgresDatabase`. Each database keeps the one
promise the parts rely on: a check and the write it guards, inside :meth:`_transaction`,
cannot interleave with another writer's, in this process or another replica.

Times are stored as POSIX timestamps (``REAL`` / ``DOUBLE PRECISION``) and read back as
UTC datetimes, the same in both databases.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol


def to_timestamp(value: datetime) -> float:
    """Return how a time is stored: seconds since the epoch."""
    return value.timestamp()


def from_timestamp(value: float) -> datetime:
    """Return the UTC time a stored timestamp stands for."""
    return datetime.fromtimestamp(value, UTC)


def from_optional_timestamp(value: float | None) -> datetime | None:
    """Return the UTC time a stored timestamp stands for, or None for a NULL one."""
    return None if value is None else from_timestamp(value)


class Result(Protocol):
    """The rows a statement returned (read by index or by column name), and its row count."""

    def fetchone(self) -> Any:
        """Return the next row, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """Return the remaining rows."""
        ...

    @property
    def rowcount(self) -> int:
        """Return how many rows the statement changed."""
        ...


class Executor(Protocol):
    """Runs one SQL statement with ``?`` placeholders, as ``sqlite3.Connection`` does."""

    def execute(self, sql: str, parameters: Any = (), /) -> Result:
        """Run ``sql`` with ``parameters`` and return its result."""
        ...


class SQLDatabase:
    """The base of the store's parts: statements, transactions, and closing."""

    # Statements outside a transaction (reads, each seeing what was committed before it).
    _db: Executor

    def _transaction(self) -> AbstractContextManager[Executor]:
        """Return a transaction that no other writer interleaves with; commit on leaving."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the database's resources."""
        raise NotImplementedError

    def _scalar(self, query: str, parameters: tuple[object, ...] = ()) -> Any:
        """Return the first column of the query's first row, or None without a row."""
        row = self._db.execute(query, parameters).fetchone()
        return None if row is None else row[0]
