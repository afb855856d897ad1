"""The store's contract, on SQLite and PostgreSQL, and SQLite's own file and migrations.

Tests taking ``store`` or ``open_store`` run on both stores (``tests/ticketing/store/
conftest.py``); those opening a ``SQLiteTicketStore`` themselves test SQLite's file.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ticketing.errors import StoreError, StoreUnavailable
from ticketing.store.interface import TicketStore
from ticketing.store.model import PollCursor, ReplyClaim, StoredAnswer, Ticket, TicketState
from ticketing.store.sqlite import SQLiteTicketStore
from ticketing.store.sqlite_schema import _MIGRATIONS, SCHEMA_VERSION

from .conftest import OpenStore

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
DEADLINE = NOW + timedelta(hours=1)
KEY = "ab" * 32


def open_issue(store: TicketStore, key: str = KEY, number: int = 1) -> Ticket:
    """Open a ticket and give it issue ``number``, so that it is ``open``."""
    ticket = store.open_ticket(key, request_id=f"req_{number}", created=NOW, deadline=DEADLINE)
    return store.set_issue(
        ticket.id, number=number, url=f"https://github.com/acme/agents/issues/{number}", now=NOW
    )


def answer(ticket: Ticket, *, jti: str = "jti-1", comment_id: int = 501) -> StoredAnswer:
    """Return a verified answer for ``ticket``."""
    return StoredAnswer(
        ticket_id=ticket.id,
        comment_id=comment_id,
        comment_url=f"https://github.com/acme/agents/issues/1#issuecomment-{comment_id}",
        text="ls -la",
        signer="alice",
        kid="alice-2026",
        jti=jti,
        digest="0" * 64,
        accepted_at=NOW + timedelta(minutes=3),
        delivered_at=None,
    )


def user_version(path: Path) -> int:
    """Read the schema version straight from the SQLite file."""
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


# --- migrations ----------------------------------------------------------------------------


def test_fresh_database_starts_at_version_one_and_is_migrated_to_the_current_one(
    tmp_path: Path,
) -> None:
    """A new file gets every migration from 1 up, ending at SCHEMA_VERSION."""
    path = tmp_path / "tickets.sqlite3"
    SQLiteTicketStore(path).close()
    assert min(_MIGRATIONS) == 1
    assert sorted(_MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
    assert user_version(path) == SCHEMA_VERSION
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"tickets", "answers", "used_jtis", "replied_comments", "cursor"} <= tables


def test_version_one_database_is_upgraded_keeping_its_tickets(tmp_path: Path) -> None:
    """A store written by the first release opens, migrates, and still holds its tickets."""
    path = tmp_path / "tickets.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(_MIGRATIONS[1])
        db.execute(
            "INSERT INTO tickets (request_key, request_id, state, issue_number, issue_url,"
            " created_at, deadline, updated_at) VALUES (?, 'req_old', 'open', 3, 'u', ?, ?, ?)",
            (KEY, NOW.timestamp(), DEADLINE.timestamp(), NOW.timestamp()),
        )
        db.execute("PRAGMA user_version = 1")
    store = SQLiteTicketStore(path)
    try:
        assert user_version(path) == SCHEMA_VERSION
        ticket = store.ticket_for_issue(3)
        assert ticket is not None
        assert (ticket.request_id, ticket.state, ticket.deadline) == (
            "req_old",
            TicketState.OPEN,
            DEADLINE,
        )
        assert store.accept_answer(answer(ticket))
    finally:
        store.close()


def test_reopening_a_current_database_keeps_its_version_and_data(tmp_path: Path) -> None:
    """Opening an up-to-date store runs no migration again and loses nothing."""
    path = tmp_path / "tickets.sqlite3"
    first = SQLiteTicketStore(path)
    ticket = open_issue(first)
    first.close()
    second = SQLiteTicketStore(path)
    try:
        assert user_version(path) == SCHEMA_VERSION
        assert second.get_ticket(ticket.id) == ticket
    finally:
        second.close()


def test_database_from_a_newer_ticketproxy_is_refused_naming_its_path(tmp_path: Path) -> None:
    """A store with a newer schema version raises StoreError that names the file."""
    path = tmp_path / "future.sqlite3"
    newer = SCHEMA_VERSION + 5
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {newer}")
    with pytest.raises(StoreError) as caught:
        SQLiteTicketStore(path)
    assert str(path) in str(caught.value)
    assert f"schema version {newer}" in str(caught.value)
    assert user_version(path) == newer


def test_file_that_is_not_a_database_is_refused_naming_its_path(tmp_path: Path) -> None:
    """A garbage file raises StoreError naming the path, not a raw sqlite3 error."""
    path = tmp_path / "tickets.sqlite3"
    path.write_bytes(b"this is not an SQLite database, just text " * 50)
    with pytest.raises(StoreError) as caught:
        SQLiteTicketStore(path)
    assert str(path) in str(caught.value)


def test_store_in_a_missing_directory_is_refused_naming_its_path(tmp_path: Path) -> None:
    """A path whose directory does not exist raises StoreError naming the path."""
    path = tmp_path / "no" / "such" / "dir" / "tickets.sqlite3"
    with pytest.raises(StoreError) as caught:
        SQLiteTicketStore(path)
    assert str(path) in str(caught.value)


# --- tickets -------------------------------------------------------------------------------


def test_new_ticket_is_creating_and_pending_until_its_issue_is_set(store: TicketStore) -> None:
    """open_ticket stores a ``creating`` ticket; set_issue makes it ``open`` with its issue."""
    ticket = store.open_ticket(KEY, request_id="req_1", created=NOW, deadline=DEADLINE)
    assert ticket.state is TicketState.CREATING
    assert ticket.issue_number is None
    assert ticket.created_at == NOW
    assert ticket.deadline == DEADLINE
    assert store.pending_tickets() == [ticket]
    opened = store.set_issue(ticket.id, number=9, url="https://example.test/9", now=NOW)
    assert opened.state is TicketState.OPEN
    assert (opened.issue_number, opened.issue_url) == (9, "https://example.test/9")
    assert store.ticket_for_issue(9) == opened
    assert store.pending_tickets() == [opened]
    assert store.count_pending() == 1


def test_latest_ticket_for_a_key_is_the_newest_one(store: TicketStore) -> None:
    """Two tickets for one request key: the later one is returned; other keys see none."""
    first = open_issue(store, number=1)
    store.expire(first.id, now=NOW)
    second = open_issue(store, number=2)
    latest = store.latest_ticket_for_key(KEY)
    assert latest is not None
    assert latest.id == second.id
    assert store.latest_ticket_for_key("cd" * 32) is None


def test_pending_tickets_are_listed_oldest_first_and_exclude_finished_ones(
    store: TicketStore,
) -> None:
    """Expired and answered tickets leave the pending list."""
    tickets = [open_issue(store, key=f"{n:02x}" * 32, number=n) for n in range(1, 5)]
    store.expire(tickets[1].id, now=NOW)
    assert store.accept_answer(answer(tickets[2]))
    assert [t.id for t in store.pending_tickets()] == [tickets[0].id, tickets[3].id]
    assert store.count_pending() == 2


def test_overdue_tickets_are_the_pending_ones_past_their_deadline(store: TicketStore) -> None:
    """Only tickets still waiting whose deadline has come are overdue, oldest first."""
    tickets = [open_issue(store, key=f"{n:02x}" * 32, number=n) for n in range(1, 4)]
    store.expire(tickets[1].id, now=NOW)
    assert store.overdue_tickets(DEADLINE - timedelta(seconds=1)) == []
    assert [t.id for t in store.overdue_tickets(DEADLINE)] == [tickets[0].id, tickets[2].id]


def test_expire_moves_a_pending_ticket_once(store: TicketStore) -> None:
    """The first expire succeeds; a second finds the ticket no longer pending."""
    ticket = open_issue(store)
    assert store.expire(ticket.id, now=DEADLINE)
    assert store.expire(ticket.id, now=DEADLINE) is False
    expired = store.get_ticket(ticket.id)
    assert expired is not None
    assert expired.state is TicketState.EXPIRED
    assert not expired.state.pending


def test_expire_leaves_an_answered_ticket_answered(store: TicketStore) -> None:
    """A ticket answered just before its deadline is not expired afterwards."""
    ticket = open_issue(store)
    assert store.accept_answer(answer(ticket))
    assert store.expire(ticket.id, now=DEADLINE) is False
    current = store.get_ticket(ticket.id)
    assert current is not None
    assert current.state is TicketState.ANSWERED


def test_unknown_ticket_and_issue_are_none(store: TicketStore) -> None:
    """Lookups of what does not exist return None."""
    assert store.get_ticket(42) is None
    assert store.ticket_for_issue(42) is None
    assert store.answer_for(42) is None


# --- answers -------------------------------------------------------------------------------


def test_first_answer_is_committed_and_readable(store: TicketStore) -> None:
    """accept_answer stores the answer, marks the jti used and the ticket answered."""
    ticket = open_issue(store)
    stored = answer(ticket)
    assert store.accept_answer(stored)
    assert store.answer_for(ticket.id) == stored
    assert store.is_jti_used("jti-1")
    assert not store.is_jti_used("jti-2")
    current = store.get_ticket(ticket.id)
    assert current is not None
    assert current.state is TicketState.ANSWERED


def test_second_answer_on_the_same_ticket_loses(store: TicketStore) -> None:
    """First valid answer wins: a second accept returns False and changes nothing."""
    ticket = open_issue(store)
    assert store.accept_answer(answer(ticket, jti="jti-1", comment_id=501))
    late = replace(answer(ticket, jti="jti-2", comment_id=502), text="rm -rf /")
    assert store.accept_answer(late) is False
    kept = store.answer_for(ticket.id)
    assert kept is not None
    assert (kept.comment_id, kept.text) == (501, "ls -la")
    assert not store.is_jti_used("jti-2")


def test_same_jti_on_another_ticket_is_refused(store: TicketStore) -> None:
    """A signature already used once cannot answer a second ticket."""
    first = open_issue(store, key="01" * 32, number=1)
    second = open_issue(store, key="02" * 32, number=2)
    assert store.accept_answer(answer(first, jti="jti-1", comment_id=501))
    assert store.accept_answer(answer(second, jti="jti-1", comment_id=502)) is False
    assert store.answer_for(second.id) is None
    pending = store.get_ticket(second.id)
    assert pending is not None
    assert pending.state is TicketState.OPEN


def test_same_comment_on_another_ticket_is_refused_without_raising(store: TicketStore) -> None:
    """A comment that already answered one ticket returns False for another, not an error."""
    first = open_issue(store, key="01" * 32, number=1)
    second = open_issue(store, key="02" * 32, number=1)
    assert store.accept_answer(answer(first, jti="jti-1", comment_id=501))
    assert store.accept_answer(answer(second, jti="jti-2", comment_id=501)) is False
    assert store.answer_for(second.id) is None
    assert not store.is_jti_used("jti-2")


def test_answer_on_an_expired_ticket_is_refused(store: TicketStore) -> None:
    """A signed answer that arrives after expiry is not committed."""
    ticket = open_issue(store)
    store.expire(ticket.id, now=DEADLINE)
    assert store.accept_answer(answer(ticket)) is False
    assert store.answer_for(ticket.id) is None
    assert not store.is_jti_used("jti-1")


def test_answer_on_a_ticket_without_an_issue_is_refused(store: TicketStore) -> None:
    """A ticket still ``creating`` has no issue to be answered on."""
    ticket = store.open_ticket(KEY, request_id="req_1", created=NOW, deadline=DEADLINE)
    assert store.accept_answer(answer(ticket)) is False


def test_answer_for_an_unknown_ticket_is_refused(store: TicketStore) -> None:
    """accept_answer on a ticket id that does not exist returns False."""
    ticket = open_issue(store)
    assert store.accept_answer(replace(answer(ticket), ticket_id=ticket.id + 100)) is False


def test_mark_delivered_counts_only_the_first_delivery(store: TicketStore) -> None:
    """The first delivery is recorded with its time; the second returns False."""
    ticket = open_issue(store)
    store.accept_answer(answer(ticket))
    delivered_at = NOW + timedelta(minutes=4)
    assert store.mark_delivered(ticket.id, now=delivered_at)
    assert store.mark_delivered(ticket.id, now=delivered_at + timedelta(minutes=1)) is False
    stored = store.answer_for(ticket.id)
    assert stored is not None
    assert stored.delivered_at == delivered_at
    current = store.get_ticket(ticket.id)
    assert current is not None
    assert current.state is TicketState.DELIVERED


def test_mark_delivered_without_an_answer_is_false(store: TicketStore) -> None:
    """An open ticket has nothing to deliver and stays open."""
    ticket = open_issue(store)
    assert store.mark_delivered(ticket.id, now=NOW) is False
    current = store.get_ticket(ticket.id)
    assert current is not None
    assert current.state is TicketState.OPEN


# --- replies and cursor --------------------------------------------------------------------


def test_each_comment_can_be_replied_to_once(store: TicketStore) -> None:
    """claim_reply reserves a comment's one reply; replies are counted per ticket."""
    ticket = open_issue(store)
    assert store.claim_reply(701, ticket_id=ticket.id, kind="late", now=NOW)
    assert store.claim_reply(701, ticket_id=ticket.id, kind="rejected:x", now=NOW) is False
    assert store.claim_reply(702, ticket_id=ticket.id, kind="late", now=NOW)
    assert store.count_replies(ticket.id) == 2
    assert store.count_replies(ticket.id + 1) == 0


def test_cursor_is_empty_until_set_and_round_trips(store: TicketStore) -> None:
    """get_cursor starts empty, returns what was set, and the last set wins."""
    assert store.get_cursor() == PollCursor(since=None, etag=None)
    store.set_cursor(PollCursor(since="2026-01-02T03:04:00Z", etag='W/"abc"'))
    assert store.get_cursor() == PollCursor(since="2026-01-02T03:04:00Z", etag='W/"abc"')
    store.set_cursor(PollCursor(since="2026-01-02T03:05:00Z", etag=None))
    assert store.get_cursor() == PollCursor(since="2026-01-02T03:05:00Z", etag=None)


# --- durability ----------------------------------------------------------------------------


def test_everything_survives_closing_and_reopening_a_file_store(open_store: OpenStore) -> None:
    """Tickets, answers, jtis, replies and the cursor are all there after a restart."""
    first = open_store()
    answered = open_issue(first, key="01" * 32, number=1)
    waiting = open_issue(first, key="02" * 32, number=2)
    stored = answer(answered)
    first.accept_answer(stored)
    first.claim_reply(701, ticket_id=waiting.id, kind="late", now=NOW)
    first.set_cursor(PollCursor(since="2026-01-02T03:04:00Z", etag='W/"e"'))
    first.close()

    second = open_store()
    assert second.answer_for(answered.id) == stored
    assert second.is_jti_used(stored.jti)
    assert [t.id for t in second.pending_tickets()] == [waiting.id]
    assert second.claim_reply(701, ticket_id=waiting.id, kind="late", now=NOW) is False
    assert second.get_cursor() == PollCursor(since="2026-01-02T03:04:00Z", etag='W/"e"')


def test_file_store_uses_write_ahead_logging(tmp_path: Path) -> None:
    """The file store runs in WAL mode, so a reader never blocks the poller's writes."""
    path = tmp_path / "tickets.sqlite3"
    store = SQLiteTicketStore(path)
    try:
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_write_lock_held_by_another_process_is_back_pressure_not_a_crash(tmp_path: Path) -> None:
    """A write lock held past the busy timeout raises StoreUnavailable; then writes go on."""
    path = tmp_path / "tickets.sqlite3"
    store = SQLiteTicketStore(path, busy_timeout=0.1)
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # another process, mid-transaction
        with pytest.raises(StoreUnavailable) as caught:
            store.record_delivery("delivery-1", now=NOW)
        assert caught.value.retry_after > 0
        blocker.execute("COMMIT")
        assert store.record_delivery("delivery-1", now=NOW) is True
    finally:
        blocker.close()
        store.close()


def test_commit_is_visible_to_a_second_connection_before_close(open_store: OpenStore) -> None:
    """An accepted answer is committed at once: another process sees it without a close."""
    writer = open_store()
    reader = open_store()
    ticket = open_issue(writer)
    assert writer.accept_answer(answer(ticket))
    assert reader.is_jti_used("jti-1")
    # The reader's own transaction sees the writer's commit, so it cannot double-accept.
    assert reader.accept_answer(answer(ticket, jti="jti-2", comment_id=502)) is False


def test_a_queued_write_is_claimed_by_one_worker_only(open_store: OpenStore) -> None:
    """Two workers that read the same due write race to claim it; exactly one wins."""
    first = open_store()
    second = open_store()
    now = datetime.now(UTC)
    write_id = first.enqueue_write("comment", issue_number=1, payload="{}", now=now)
    (seen_by_first,) = first.due_writes(now=now)
    (seen_by_second,) = second.due_writes(now=now)
    later = now + timedelta(seconds=5)
    claims = [
        first.defer_write(write_id, until=later, attempts=seen_by_first.attempts),
        second.defer_write(write_id, until=later, attempts=seen_by_second.attempts),
    ]
    assert claims == [True, False]


def test_reply_and_its_claim_are_queued_in_one_transaction_and_only_once(
    store: TicketStore,
) -> None:
    """A comment's reply writes are queued with its claim; a second reply queues nothing."""
    ticket = store.open_ticket("k", request_id="r", created=NOW, deadline=NOW)
    claim = ReplyClaim(comment_id=801, ticket_id=ticket.id, kind="rejected:expired")
    writes = [("react", 1, "{}"), ("comment", 1, '{"body": "no"}')]
    first = store.enqueue_writes(writes, now=NOW, claim=claim)
    assert first is not None
    assert len(first) == 2
    assert store.enqueue_writes(writes, now=NOW, claim=claim) is None
    assert store.pending_writes() == 2
    assert store.count_replies(ticket.id) == 1


def test_dropping_unsent_writes_leaves_other_kinds_issues_and_claimed_ones(
    store: TicketStore,
) -> None:
    """Only untried writes of that kind on that issue are finished; a claimed one is kept."""
    later = NOW + timedelta(seconds=2)
    labels = store.enqueue_write(
        "set_labels", issue_number=1, payload="{}", now=NOW, not_before=later
    )
    claimed = store.enqueue_write("set_labels", issue_number=1, payload="{}", now=NOW)
    store.enqueue_write("set_labels", issue_number=2, payload="{}", now=NOW)
    store.enqueue_write("comment", issue_number=1, payload="{}", now=NOW)
    assert store.defer_write(claimed, until=later, attempts=0)
    assert labels not in [w.id for w in store.due_writes(now=NOW)]  # not due before `later`
    assert store.drop_unsent_writes("set_labels", issue_number=1, now=NOW, failure="x") == 1
    assert store.pending_writes() == 3
    assert labels not in [w.id for w in store.due_writes(now=later)]
