"""Tests for ticketing.store.interface and the row mapping of ticketing.store.model."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from ticketing.store.interface import (
    AnswerStore,
    DraftStore,
    PollCursorStore,
    TicketStore,
    TicketThreadStore,
    WebhookDeliveryStore,
    WriteQueueStore,
)
from ticketing.store.model import Ticket, TicketState, record_from_row
from ticketing.store.postgres import PostgresTicketStore
from ticketing.store.sqlite import SQLiteTicketStore
from ticketing.store.sqlite_database import from_timestamp

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def sqlite_store() -> Iterator[SQLiteTicketStore]:
    """Yield an in-memory SQLite store, closed after the test."""
    opened = SQLiteTicketStore(":memory:")
    yield opened
    opened.close()


def test_sqlite_store_is_a_ticket_store_to_the_type_checker(
    sqlite_store: SQLiteTicketStore,
) -> None:
    """Assigning the SQLite store to the combined protocol type-checks (mypy sees this)."""
    store: TicketStore = sqlite_store
    assert store.count_pending() == 0


def test_postgres_store_is_a_ticket_store_to_the_type_checker(postgres_url: str) -> None:
    """Assigning the PostgreSQL store to the combined protocol type-checks (mypy sees this)."""
    store: TicketStore = PostgresTicketStore(postgres_url)
    try:
        assert store.count_pending() == 0
    finally:
        store.close()


@pytest.mark.parametrize(
    "protocol",
    [
        TicketThreadStore,
        AnswerStore,
        WriteQueueStore,
        DraftStore,
        WebhookDeliveryStore,
        PollCursorStore,
        TicketStore,
    ],
)
def test_each_store_has_every_method_of_each_protocol(store: TicketStore, protocol: type) -> None:
    """SQLite and PostgreSQL stores satisfy every per-aggregate protocol and the combined one."""
    assert isinstance(store, protocol)


def test_record_from_row_matches_columns_by_name_and_converts_the_named_fields() -> None:
    """A tickets row becomes a Ticket: extra columns ignored, state and times converted."""
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    row = db.execute(
        "SELECT 'ignored' AS request, 7 AS parent_id, 9 AS thread_id, 2 AS step,"
        " ? AS deadline, ? AS created_at, NULL AS issue_url, NULL AS issue_number,"
        " 'open' AS state, 'req_1' AS request_id, 'k' AS request_key, 3 AS id, 0 AS own_issue",
        (NOW.timestamp() + 60, NOW.timestamp()),
    ).fetchone()
    db.close()
    ticket = record_from_row(
        Ticket, row, state=TicketState, created_at=from_timestamp, deadline=from_timestamp
    )
    assert ticket == Ticket(
        id=3,
        request_key="k",
        request_id="req_1",
        state=TicketState.OPEN,
        issue_number=None,
        issue_url=None,
        created_at=NOW,
        deadline=datetime(2026, 1, 2, 3, 5, 5, tzinfo=UTC),
        step=2,
        thread_id=9,
        parent_id=7,
    )
    assert ticket.state is TicketState.OPEN


def test_record_from_row_names_the_missing_column() -> None:
    """A row without a column the record needs raises KeyError naming the first one missing."""
    with pytest.raises(KeyError, match="issue_number"):
        record_from_row(Ticket, {"id": 1, "request_key": "k", "request_id": "r", "state": "open"})
