"""Replicas racing on one store, for real: two stores on one database, in two threads.

Each test runs on SQLite and on PostgreSQL (``conftest.py``): whatever the database, a
write is sent by one replica only, the first answer wins and a jti is spent once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from ticketing.store.interface import TicketStore
from ticketing.store.model import StoredAnswer, Ticket

from .conftest import OpenStore

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
WRITES = 40
Result = TypeVar("Result")


def at_once(work: Callable[[TicketStore], Result], stores: list[TicketStore]) -> list[Result]:
    """Run ``work`` on each store in its own thread, released together."""
    barrier = threading.Barrier(len(stores))

    def run(store: TicketStore) -> Result:
        barrier.wait()
        return work(store)

    with ThreadPoolExecutor(len(stores)) as pool:
        return list(pool.map(run, stores))


def drain(store: TicketStore) -> list[int]:
    """Work the queue as a replica's worker does: read due writes, claim each, 'send' it."""
    sent: list[int] = []
    while True:
        due = store.due_writes(now=NOW + timedelta(seconds=1), limit=5)
        if not due:
            return sent
        for write in due:
            # The claim: only the worker whose attempt count still matches may send it.
            if store.defer_write(write.id, until=NOW + timedelta(hours=1), attempts=write.attempts):
                sent.append(write.id)
                store.finish_write(write.id, now=NOW)


def open_issue(store: TicketStore) -> Ticket:
    """Open a ticket with issue 1."""
    ticket = store.open_ticket("ab" * 32, request_id="req_1", created=NOW, deadline=NOW)
    return store.set_issue(ticket.id, number=1, url="https://github.test/1", now=NOW)


def answer(ticket: Ticket, *, comment_id: int, jti: str) -> StoredAnswer:
    """Return a signed answer to ``ticket`` from comment ``comment_id``."""
    return StoredAnswer(
        ticket_id=ticket.id,
        comment_id=comment_id,
        comment_url=f"https://github.test/1#c{comment_id}",
        text=f"answer {comment_id}",
        signer="alice",
        kid="k1",
        jti=jti,
        digest="d",
        accepted_at=NOW,
        delivered_at=None,
    )


def test_two_replicas_draining_the_write_queue_send_each_write_once(
    open_store: OpenStore,
) -> None:
    """Two workers on two stores drain one queue at once: every write is sent exactly once."""
    first, second = open_store(), open_store()
    queued = [
        first.enqueue_write("comment", issue_number=n, payload="{}", now=NOW) for n in range(WRITES)
    ]
    sent_by_first, sent_by_second = at_once(drain, [first, second])
    assert sorted(sent_by_first + sent_by_second) == sorted(queued)
    assert second.pending_writes() == 0


def test_two_replicas_accepting_answers_to_one_ticket_at_once_release_only_one(
    open_store: OpenStore,
) -> None:
    """Two replicas accept different answers to one ticket at the same moment: one wins."""
    first, second = open_store(), open_store()
    ticket = open_issue(first)
    results = at_once(
        lambda store: store.accept_answer(
            answer(ticket, comment_id=501 if store is first else 502, jti=f"jti-{id(store)}")
        ),
        [first, second],
    )
    assert sorted(results) == [False, True]
    stored = second.answer_for(ticket.id)
    assert stored is not None
    assert stored.comment_id == (501 if results[0] else 502)


def test_one_signature_replayed_on_two_replicas_at_once_is_spent_once(
    open_store: OpenStore,
) -> None:
    """The same jti, sent to two tickets through two replicas at once, is accepted once."""
    first, second = open_store(), open_store()
    tickets = {first: open_issue(first), second: open_issue(second)}
    results = at_once(
        lambda store: store.accept_answer(
            answer(tickets[store], comment_id=601 if store is first else 602, jti="jti-shared")
        ),
        [first, second],
    )
    assert sorted(results) == [False, True]
    assert first.is_jti_used("jti-shared")
