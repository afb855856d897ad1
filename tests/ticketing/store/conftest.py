"""The store every contract test runs against: SQLite, and PostgreSQL on a real server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ticketing.store.interface import TicketStore
from ticketing.store.sqlite import SQLiteTicketStore

OpenStore = Callable[[], TicketStore]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenStore]:
    """Yield what opens another store on the test's one database (as another replica would).

    SQLite's is a file in the test's directory; PostgreSQL's a fresh database of the
    session's server (skipped, or failed under CI=true, where PostgreSQL is missing).
    """
    opened: list[TicketStore] = []
    if request.param == "postgres":
        from ticketing.store.postgres import PostgresTicketStore

        url: str = request.getfixturevalue("postgres_url")

        def open_postgres() -> TicketStore:
            opened.append(PostgresTicketStore(url))
            return opened[-1]

        yield open_postgres
    else:

        def open_sqlite() -> TicketStore:
            opened.append(SQLiteTicketStore(tmp_path / "tickets.sqlite3"))
            return opened[-1]

        yield open_sqlite
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> TicketStore:
    """Return a store of the test's database, closed after the test."""
    return open_store()
