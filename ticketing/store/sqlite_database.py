"""The SQLite ticket store's connection: opening, migrating, transactions.

:class:`SQLiteDatabase` is the :class:`~ticketing.store.sql_database.SQLDatabase` the parts
of the store (tickets, answers, the write queue, drafts, GitHub events) run on in SQLite:
they share its one connection, so :class:`~ticketing.store.sqlite.SQLiteTicketStore`
composes them over a single database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ticketing.errors import StoreError, StoreUnavailable
from ticketing.store.sql_database import (
    SQLDatabase,
    from_optional_timestamp,
    from_timestamp,
    to_timestamp,
)
from ticketing.store.sqlite_schema import SCHEMA_VERSION, migration_statements

# Seconds a client told "the store is busy" waits before retrying.
BUSY_RETRY_AFTER = 1.0
# Where they were defined before PostgreSQL shared them.
__all__ = ["SQLiteDatabase", "from_optional_timestamp", "from_timestamp", "to_timestamp"]


class SQLiteDatabase(SQLDatabase):
    """One SQLite connection (WAL, synchronous writes), migrated to the current schema."""

    _db: sqlite3.Connection

    def __init__(self, path: Path | str, *, busy_timeout: float = 5.0) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
            )
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
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            # Another process held the write lock for the whole busy timeout: back-pressure
            # (a 429 with retry-after), as PostgreSQL's outage is; nothing was written.
            raise StoreUnavailable(
                f"the ticket store at {self.path} is busy: {exc}", retry_after=BUSY_RETRY_AFTER
            ) from exc
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

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
