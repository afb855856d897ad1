"""Stored responses, per client, deleted for good: on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ticketing.store.interface import ResponseStore, TicketStore
from ticketing.store.model import StoredResponse

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(autouse=True)
def one_ticket(store: TicketStore) -> None:
    """Open ticket 1, which the responses below belong to."""
    store.open_ticket("ab" * 32, request_id="req_1", created=NOW, deadline=NOW + timedelta(1))


def response(*, stored: bool = True, items: str = '[{"id": "msg_1"}]') -> StoredResponse:
    """Return a response of ticket 1 for client ``c1``."""
    return StoredResponse(
        response_id="resp_1",
        ticket_id=1,
        client="c1",
        stored=stored,
        previous_id=None,
        echo='{"model": "gpt-4o"}',
        items=items,
        created_at=NOW,
    )


def test_sqlite_store_keeps_responses_behind_the_protocol(store: TicketStore) -> None:
    """The SQLite store is a ResponseStore, and gives back what it kept."""
    assert isinstance(store, ResponseStore)
    store.keep_response(response())
    assert store.response_for("resp_1") == response()
    assert store.response_for("resp_2") is None


def test_a_retry_keeps_the_first_record_of_a_response(store: TicketStore) -> None:
    """Keeping the same id again (a retry re-attached) changes nothing."""
    store.keep_response(response())
    store.keep_response(response(items="[]"))
    kept = store.response_for("resp_1")
    assert kept is not None
    assert kept.items == '[{"id": "msg_1"}]'


def test_store_false_keeps_the_id_but_not_the_content(store: TicketStore) -> None:
    """A store: false response keeps whose it is, and neither its echo nor its items."""
    store.keep_response(response(stored=False))
    kept = store.response_for("resp_1")
    assert kept is not None
    assert (kept.stored, kept.client, kept.echo, kept.items) == (False, "c1", "", "")


def test_deleted_response_stays_deleted_when_its_request_is_retried(store: TicketStore) -> None:
    """After delete the id is unknown, a second delete is False, and a retry cannot revive it."""
    store.keep_response(response())
    assert store.delete_response("resp_1", now=NOW) is True
    assert store.response_for("resp_1") is None
    assert store.delete_response("resp_1", now=NOW) is False
    store.keep_response(response())
    assert store.response_for("resp_1") is None
    assert store.get_ticket(1) is not None
