"""The SQLite ticket store's connection: opening, migrating, transactions, timestamps.

:class:`SQLiteDatabase` is the base every part of the SQLite store builds on (tickets,
answers, the write queue, drafts, GitHub events): they share its one connection, so
:class:`~ticketing.store.sqlite.SQLiteTicketStore` composes them over a single database.
Times are stored as POSIX timestamps (``REAL``) and read back as UTC datetimes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ticketing.errors import StoreError
from ticketing.store.sqlite_schema import SCHEMA_VERSION, migration_statements


def to_timestamp(value: datetime) -> float:
    """Return how a time is stored: seconds since the epoch."""
    return value.timestamp()


def from_timestamp(value: float) -> datetime:
    """Return the UTC time a stored timestamp stands for."""
    return datetime.fromtimestamp(value, UTC)


def from_optional_timestamp(value: float | None) -> datetime | None:
    """Return the UTC time a stored timestamp stands for, or None for a NULL one."""
    return None if value is None else from_timestamp(value)


class SQLiteDatabase:
    """One SQLite connection (WAL, synchronous writes), migrated to the current schema."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the ticket store at {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            # sqlite3 only notices a file that is not a database (or is locked, or
            # read-only) at the first statement, so name the file here too.
            self._db.close()
            raise StoreError(f"cannot use the ticket store at {self.path}: {exc}") from exc
        except StoreError:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front, so a check-then-write such as
        # "accept only if still open" cannot interleave with another process's write.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _scalar(self, query: str, parameters: tuple[object, ...] = ()) -> Any:
        """Return the first column of the query's first row, or None without a row."""
        row = self._db.execute(query, parameters).fetchone()
        return None if row is None else row[0]

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the ticket store at {self.path} has schema version {version}, newer than this "
                f"ticketproxy understands ({SCHEMA_VERSION}); upgrade ticketproxy"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._transaction() as db:
                for statement in migration_statements(target):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")
