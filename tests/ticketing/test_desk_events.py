"""The desk's in-process event seam: one event per state a ticket reaches, to every listener."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ticketing.desk.events import DeskEvent, DeskEvents, EventKind, event_kind
from ticketing.store.model import TicketState
from ticketing.store.sqlite import SQLiteTicketStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_every_state_but_creating_has_an_event() -> None:
    """A ticket being created is not shown yet; every other state is told by its own name."""
    assert event_kind(TicketState.CREATING) is None
    kinds = {event_kind(state) for state in TicketState if state is not TicketState.CREATING}
    assert kinds == set(EventKind)


def test_a_state_is_told_once_to_every_listener_until_it_changes(tmp_path: Path) -> None:
    """Repeated wake-ups for the same state tell nothing new; an expiry is told once more."""
    store = SQLiteTicketStore(tmp_path / "t.sqlite3")
    ticket = store.open_ticket("k", request_id="r", created=NOW, deadline=NOW + timedelta(1))
    store.set_issue(ticket.id, number=7, url="https://example/7", now=NOW)
    events = DeskEvents(store)
    first: list[DeskEvent] = []
    second: list[DeskEvent] = []
    events.listen(first.append)
    remove = events.listen(second.append)
    events.changed(ticket.id)
    events.changed(ticket.id)
    remove()
    assert store.expire(ticket.id, now=NOW)
    events.changed(ticket.id)
    assert [(e.kind, e.ticket.issue_number) for e in first] == [
        (EventKind.OPENED, 7),
        (EventKind.EXPIRED, 7),
    ]
    assert [e.kind for e in second] == [EventKind.OPENED]
    store.close()


def test_a_failing_listener_does_not_stop_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A listener that raises is logged; the life cycle and the other listeners go on."""
    store = SQLiteTicketStore(tmp_path / "t.sqlite3")
    ticket = store.open_ticket("k", request_id="r", created=NOW, deadline=NOW + timedelta(1))
    store.set_issue(ticket.id, number=1, url="https://example/1", now=NOW)
    events = DeskEvents(store)
    told: list[DeskEvent] = []

    def broken(event: DeskEvent) -> None:
        raise RuntimeError("view went away")

    events.listen(broken)
    events.listen(told.append)
    events.changed(ticket.id)
    assert [e.kind for e in told] == [EventKind.OPENED]
    assert "listener of the desk's events failed" in caplog.text
    store.close()
