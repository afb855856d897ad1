"""Runs as trees in the desk, over a real SQLite store: the parent each child is linked under."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from ticketing.desk.settings import DeskSettings
from ticketing.desk.tree_links import parent_issue
from ticketing.store.model import ThreadStart, Ticket
from ticketing.store.sqlite import SQLiteTicketStore

NOW = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
SETTINGS = DeskSettings(repo="acme/agents", tree_after_steps=0)


@pytest.fixture
def store() -> Iterator[SQLiteTicketStore]:
    """Return an empty store in memory."""
    opened = SQLiteTicketStore(":memory:")
    yield opened
    opened.close()


def run_of(store: SQLiteTicketStore, steps: int) -> list[Ticket]:
    """Open a run of ``steps`` steps, each delivered, every step on an issue of its own."""
    tickets: list[Ticket] = []
    for step in range(1, steps + 1):
        thread = None
        if tickets:
            thread = ThreadStart(thread_id=tickets[0].id, parent_id=tickets[-1].id)
        ticket = store.open_ticket(
            f"{step:064x}",
            request_id=f"req_{step}",
            created=NOW,
            deadline=NOW + timedelta(hours=1),
            thread=thread,
            children_after=SETTINGS.tree_after_steps,
        )
        assert ticket.step == step
        # Issue numbers are the steps (step 1 is the root, issue 1).
        ticket = store.set_issue(ticket.id, number=step, url=f"u/{step}", now=NOW)
        assert store.expire(ticket.id, now=NOW)
        tickets.append(ticket)
    return tickets


def test_first_hundred_children_are_linked_under_the_root(store: SQLiteTicketStore) -> None:
    """Children 1 to 100 (steps 2 to 101) hang under the root's issue."""
    tickets = run_of(store, 101)
    assert not tickets[0].own_issue
    assert all(ticket.own_issue for ticket in tickets[1:])
    assert {parent_issue(store, SETTINGS, ticket) for ticket in tickets[1:]} == {1}


def test_hundred_and_first_child_is_linked_under_the_last_child_of_the_first_block(
    store: SQLiteTicketStore,
) -> None:
    """The root holds 100 children; the next ones chain under step 101's issue, none unlinked."""
    tickets = run_of(store, 203)
    parents = [parent_issue(store, SETTINGS, ticket) for ticket in tickets[101:]]
    assert parents[:100] == [101] * 100
    assert parents[100:] == [201, 201]
