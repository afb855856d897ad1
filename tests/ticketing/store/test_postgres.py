"""What only the PostgreSQL store does: migrate under a lock, survive outages, hide its URL.

The contract every store keeps is tested on both in ``test_sqlite.py`` and
``test_store_races.py``; these tests run against the session's real PostgreSQL server.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.helpers.postgres import PostgresServer
from ticketing.errors import StoreError, StoreUnavailable
from ticketing.store.postgres import PostgresTicketStore
from ticketing.store.postgres_database import describe_database
from ticketing.store.postgres_schema import SCHEMA_VERSION

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REPLICAS = 4


@pytest.fixture
def empty_url(postgres_server: PostgresServer) -> str:
    """Return the URL of a new database without any table."""
    name = f"empty_{time.monotonic_ns()}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return postgres_server.url(name)


def applied_migrations(url: str) -> list[int]:
    """Return the versions recorded in schema_migrations, one row per migration run."""
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT version FROM schema_migrations ORDER BY version")
        return [int(row[0]) for row in rows]


def test_replicas_starting_at_once_migrate_the_database_once(empty_url: str) -> None:
    """Four replicas opening an empty database at the same moment apply each migration once."""
    barrier = threading.Barrier(REPLICAS)

    def start_replica(_: int) -> PostgresTicketStore:
        barrier.wait()
        return PostgresTicketStore(empty_url)

    with ThreadPoolExecutor(REPLICAS) as pool:
        stores = list(pool.map(start_replica, range(REPLICAS)))
    try:
        assert applied_migrations(empty_url) == list(range(1, SCHEMA_VERSION + 1))
        assert all(store.count_pending() == 0 for store in stores)
    finally:
        for store in stores:
            store.close()


def test_database_from_a_newer_ticketproxy_is_refused_naming_it(postgres_url: str) -> None:
    """A schema newer than this ticketproxy knows is refused at start-up, not half-used."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (999,))
    with pytest.raises(StoreError, match=r"schema version 999.*upgrade ticketproxy"):
        PostgresTicketStore(postgres_url)


def test_wrong_database_is_a_start_up_error_that_never_shows_the_password(
    postgres_server: PostgresServer,
) -> None:
    """A URL naming a missing database fails at start-up; the error omits its password."""
    url = f"postgresql://postgres:hunter2-secret@127.0.0.1:{postgres_server.port}/missing"
    with pytest.raises(StoreError) as caught:
        PostgresTicketStore(url)
    assert not isinstance(caught.value, StoreUnavailable)
    assert "missing" in str(caught.value)
    assert "hunter2-secret" not in str(caught.value)


def test_database_named_in_messages_without_its_password() -> None:
    """describe_database keeps host, port, name and user, and drops the password."""
    named = describe_database("postgresql://tp:s3cret@db.internal:6543/tickets?sslmode=require")
    assert named == "postgresql://tp@db.internal:6543/tickets"


def test_database_down_raises_store_unavailable_and_loses_nothing_committed(
    postgres_url: str, restarts_server: PostgresServer
) -> None:
    """With the server down every call raises StoreUnavailable; once back, all is there."""
    store = PostgresTicketStore(postgres_url, wait_for_connection=0.5)
    try:
        kept = store.open_ticket("ab" * 32, request_id="req_1", created=NOW, deadline=NOW)
        restarts_server.stop()
        with pytest.raises(StoreUnavailable) as caught:
            store.count_pending()
        assert caught.value.retry_after > 0
        with pytest.raises(StoreUnavailable):
            store.open_ticket("cd" * 32, request_id="req_2", created=NOW, deadline=NOW)
        restarts_server.start()
        deadline = time.monotonic() + 20
        while True:
            try:
                pending = store.pending_tickets()
                break
            except StoreUnavailable:
                # The pool reconnects in the background, with a backoff.
                assert time.monotonic() < deadline, "the store never reconnected"
                time.sleep(0.2)
        assert [ticket.id for ticket in pending] == [kept.id]
    finally:
        store.close()


def test_statement_over_its_timeout_is_back_pressure_not_a_crash(postgres_url: str) -> None:
    """A write stuck behind a lock past the statement timeout raises StoreUnavailable."""
    store = PostgresTicketStore(postgres_url, statement_timeout=0.3)
    try:
        with psycopg.connect(postgres_url) as blocker, blocker.transaction():
            # Another session holds every write transaction's lock, as a hung replica would.
            blocker.execute("SELECT pg_advisory_xact_lock(%s)", (0x7470_0000_0000_0001,))
            with pytest.raises(StoreUnavailable):
                store.record_delivery("delivery-1", now=NOW + timedelta(seconds=1))
        assert store.record_delivery("delivery-1", now=NOW) is True
    finally:
        store.close()


def test_a_read_only_standby_after_failover_is_back_pressure_not_a_crash(postgres_url: str) -> None:
    """Writes refused as read-only (a standby reached after a failover) raise StoreUnavailable."""
    store = PostgresTicketStore(postgres_url)
    dbname = postgres_url.rsplit("/", 1)[1]
    try:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
            # The pool's connections are replaced by new ones, which are read-only.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
        with pytest.raises(StoreUnavailable) as caught:
            store.record_delivery("delivery-1", now=NOW)
        assert caught.value.retry_after > 0
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SET default_transaction_read_only = off")  # read-only by default now
            admin.execute(f'ALTER DATABASE "{dbname}" RESET default_transaction_read_only')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
        assert store.record_delivery("delivery-1", now=NOW) is True
    finally:
        store.close()
