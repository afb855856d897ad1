"""The store's delegations, on SQLite and PostgreSQL: children by parent, spent jtis, acts."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from tests.ticketing.store.conftest import OpenStore
from ticketing.store.interface import TicketStore
from ticketing.store.model import DelegationAct, StoredDelegation, Ticket

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


def _act(parent: Ticket, jti: str = "delegation-jti") -> DelegationAct:
    return DelegationAct(
        jti=jti,
        parent_id=parent.id,
        comment_id=77,
        comment_url="https://github.com/acme/agents/issues/1#issuecomment-77",
        delegated_by="alice",
        digest="d" * 64,
        questions=(("question 0", "bob"), ("question 1", None), ("question 2", None)),
        delegated_at=NOW,
    )


def _comment(number: int, body: str) -> tuple[str, int, str]:
    return ("comment", number, json.dumps({"body": body}))


def test_delegate_act_is_recorded_with_its_sub_questions_in_the_jti_spending_transaction(
    store: TicketStore,
) -> None:
    """The act's sub-questions and addressees are kept with its spent jti, unfinished."""
    parent = _open(store, "a" * 64, 1)
    assert store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW, act=_act(parent))
    assert store.is_jti_used("delegation-jti")
    assert store.delegation_act("delegation-jti") == _act(parent)
    assert store.unfinished_delegations() == [_act(parent)]
    assert store.delegation_acts_of(parent.id) == [_act(parent)]


def test_replayed_delegate_act_records_no_second_act(store: TicketStore) -> None:
    """A replay spends nothing and leaves the first act as it was."""
    parent = _open(store, "a" * 64, 1)
    assert store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW, act=_act(parent))
    again = replace(_act(parent), questions=(("something else", None),))
    assert not store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW, act=again)
    assert store.delegation_act("delegation-jti") == _act(parent)


def test_second_child_for_one_sub_question_is_not_recorded_nor_its_writes_queued(
    open_store: OpenStore,
) -> None:
    """Two replicas opening one sub-question: one child is recorded, its ping queued once."""
    first, second = open_store(), open_store()
    parent, one, other = (_open(first, k * 64, n) for k, n in (("a", 1), ("b", 2), ("c", 3)))
    ping = [_comment(2, "@bob, this sub-question is for you")]
    assert first.record_delegation(_delegation(one, parent, 0), writes=ping, now=NOW)
    assert not second.record_delegation(_delegation(other, parent, 0), writes=ping, now=NOW)
    assert not second.record_delegation(_delegation(one, parent, 0), writes=ping, now=NOW)
    assert [d.child_id for d in first.delegations_of(parent.id)] == [one.id]
    assert first.pending_writes() == 1


def test_stalled_and_ended_notices_of_an_act_are_queued_once(store: TicketStore) -> None:
    """Each notice comes with its mark, once; an ended act is no longer unfinished."""
    parent = _open(store, "a" * 64, 1)
    store.spend_delegation("delegation-jti", parent_id=parent.id, now=NOW, act=_act(parent))
    later = NOW + timedelta(minutes=1)
    stalled = [_comment(1, "1 of 3 sub-questions opened")]
    assert store.note_delegation_stalled("delegation-jti", now=later, writes=stalled)
    assert not store.note_delegation_stalled("delegation-jti", now=later, writes=stalled)
    given_up = [_comment(1, "given up")]
    assert store.end_delegation("delegation-jti", outcome="given_up", now=later, writes=given_up)
    assert not store.end_delegation("delegation-jti", outcome="opened", now=later)
    assert store.pending_writes() == 2
    assert store.unfinished_delegations() == []
    ended = store.delegation_act("delegation-jti")
    assert ended == replace(_act(parent), stalled_at=later, ended_at=later, outcome="given_up")
