"""The store's delegations, on SQLite and PostgreSQL: children by parent, spent jtis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ticketing.store.interface import TicketStore
from ticketing.store.model import StoredDelegation, Ticket

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _open(store: TicketStore, key: str, number: int) -> Ticket:
    ticket = store.open_ticket(
        key, request_id=f"req_{number}", created=NOW, deadline=NOW + timedelta(hours=1)
    )
    url = f"https://github.com/acme/agents/issues/{number}"
    return store.set_issue(ticket.id, number=number, url=url, now=NOW)


def _delegation(child: Ticket, parent: Ticket, position: int) -> StoredDelegation:
    return StoredDelegation(
        child_id=child.id,
        parent_id=parent.id,
        position=position,
        question=f"question {position}",
        addressee="bob" if position == 0 else None,
        delegated_by="alice",
        comment_id=77,
        comment_url="https://github.com/acme/agents/issues/1#issuecomment-77",
        jti="delegation-jti",
        delegated_at=NOW,
    )


def test_children_are_recorded_once_and_listed_in_order(store: TicketStore) -> None:
    """Recording a child again (a retry) keeps one row; the parent lists them in order."""
    parent, first, second = (_open(store, k * 64, n) for k, n in (("a", 1), ("b", 2), ("c", 3)))
    for child, position in ((second, 1), (first, 0), (first, 0)):
        store.record_delegation(_delegation(child, parent, position))
    assert [d.child_id for d in store.delegations_of(parent.id)] == [first.id, second.id]
    assert store.delegation_of(first.id) == _delegation(first, parent, 0)
    assert store.delegation_of(parent.id) is None


def test_replayed_delegation_jti_is_spent_once(store: TicketStore) -> None:
    """A delegate act's jti is spent once, and is then a used jti for every later signature."""
    parent = _open(store, "a" * 64, 1)
    assert store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW)
    assert not store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW)
    assert store.is_jti_used("delegation-jti")


def test_delegation_of_a_ticket_no_longer_open_is_not_spent(store: TicketStore) -> None:
    """Only an open ticket can be split: an expired one spends nothing."""
    parent = _open(store, "a" * 64, 1)
    assert store.expire(parent.id, now=NOW)
    assert not store.spend_delegation("late-jti", parent_id=parent.id, now=NOW)
    assert not store.is_jti_used("late-jti")
