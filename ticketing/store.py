"""The durable ticket store (SQLite, WAL).

Everything a restart must not lose lives here: tickets and their state, accepted answers
and whether they were delivered, the ``jti`` of every accepted signature, which comments
the bot already replied to, and the poll cursor. An answer is committed here before it is
returned to any client, and acceptance is one transaction that checks the ticket is still
open, so the first valid answer wins and no answer is delivered to two tickets.

The store is used from the event-loop thread only; every call is a short local transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from .errors import StoreError

SCHEMA_VERSION = 2

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE tickets (
        id            INTEGER PRIMARY KEY,
        request_key   TEXT NOT NULL,
        request_id    TEXT NOT NULL,
        state         TEXT NOT NULL,
        issue_number  INTEGER,
        issue_url     TEXT,
        created_at    REAL NOT NULL,
        deadline      REAL NOT NULL,
        updated_at    REAL NOT NULL
    );
    CREATE INDEX tickets_by_key ON tickets (request_key, id);
    CREATE INDEX tickets_by_issue ON tickets (issue_number);
    CREATE INDEX tickets_by_state ON tickets (state);
    CREATE TABLE answers (
        ticket_id     INTEGER PRIMARY KEY REFERENCES tickets (id),
        comment_id    INTEGER NOT NULL UNIQUE,
        comment_url   TEXT NOT NULL,
        text          TEXT NOT NULL,
        signer        TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        accepted_at   REAL NOT NULL,
        delivered_at  REAL
    );
    CREATE TABLE used_jtis (
        jti           TEXT PRIMARY KEY,
        ticket_id     INTEGER NOT NULL,
        used_at       REAL NOT NULL
    );
    CREATE TABLE replied_comments (
        comment_id    INTEGER PRIMARY KEY,
        ticket_id     INTEGER,
        kind          TEXT NOT NULL,
        replied_at    REAL NOT NULL
    );
    CREATE TABLE cursor (
        name          TEXT PRIMARY KEY,
        since         TEXT,
        etag          TEXT
    );
    """,
    # The request itself (to check answers against its tools and formats after a restart)
    # and what was released to the agent (text, tool calls, finish reason).
    2: """
    ALTER TABLE tickets ADD COLUMN request TEXT;
    ALTER TABLE answers ADD COLUMN release TEXT NOT NULL DEFAULT '';
    """,
}


class TicketState(StrEnum):
    """Where a ticket is in its life."""

    CREATING = "creating"  # stored, issue not yet confirmed on GitHub
    OPEN = "open"  # issue exists, awaiting a signed answer
    ANSWERED = "answered"  # a signed answer is committed, not yet delivered
    DELIVERED = "delivered"  # the answer reached a client
    EXPIRED = "expired"  # nobody answered before the deadline

    @property
    def pending(self) -> bool:
        """Say whether the ticket still waits for an answer."""
        return self in {TicketState.CREATING, TicketState.OPEN}


@dataclass(frozen=True)
class Ticket:
    """One request waiting for (or answered by) a human."""

    id: int
    request_key: str
    request_id: str
    state: TicketState
    issue_number: int | None
    issue_url: str | None
    created_at: datetime
    deadline: datetime


@dataclass(frozen=True)
class StoredAnswer:
    """An accepted, verified answer."""

    ticket_id: int
    comment_id: int
    comment_url: str
    text: str
    signer: str
    kid: str
    jti: str
    digest: str
    accepted_at: datetime
    delivered_at: datetime | None
    release: str = ""


@dataclass(frozen=True)
class PollCursor:
    """Where the repo-wide comment poll resumes: GitHub's ``since`` and the last ETag."""

    since: str | None
    etag: str | None


def _ts(value: datetime) -> float:
    return value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


class TicketStore:
    """SQLite-backed durable state for tickets, answers, used ``jti``s and the poll cursor."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the ticket store at {self.path}: {exc}") from exc
        self._db.row_factory = sqlite3.Row
        try:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            # sqlite3 only notices a file that is not a database (or is locked, or
            # read-only) at the first statement, so name the file here too.
            self._db.close()
            raise StoreError(f"cannot use the ticket store at {self.path}: {exc}") from exc
        except StoreError:
            self._db.close()
            raise

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front, so a check-then-write such as
        # "accept only if still open" cannot interleave with another process's write.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the ticket store at {self.path} has schema version {version}, newer than this "
                f"ticketproxy understands ({SCHEMA_VERSION}); upgrade ticketproxy"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self._transaction() as db:
                for statement in _MIGRATIONS[target].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {target}")

    # --- tickets -------------------------------------------------------------------------

    @staticmethod
    def _ticket(row: sqlite3.Row) -> Ticket:
        return Ticket(
            id=row["id"],
            request_key=row["request_key"],
            request_id=row["request_id"],
            state=TicketState(row["state"]),
            issue_number=row["issue_number"],
            issue_url=row["issue_url"],
            created_at=datetime.fromtimestamp(row["created_at"], UTC),
            deadline=datetime.fromtimestamp(row["deadline"], UTC),
        )

    def get_ticket(self, ticket_id: int) -> Ticket | None:
        """Return the ticket with this id."""
        row = self._db.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
        return None if row is None else self._ticket(row)

    def latest_ticket_for_key(self, request_key: str) -> Ticket | None:
        """Return the newest ticket opened for this request key."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE request_key = ? ORDER BY id DESC LIMIT 1", (request_key,)
        ).fetchone()
        return None if row is None else self._ticket(row)

    def open_ticket(
        self,
        request_key: str,
        *,
        request_id: str,
        created: datetime,
        deadline: datetime,
        request: str | None = None,
    ) -> Ticket:
        """Insert a ticket in state ``creating`` and return it."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO tickets (request_key, request_id, state, created_at, deadline,"
                " updated_at, request) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    request_key,
                    request_id,
                    TicketState.CREATING,
                    _ts(created),
                    _ts(deadline),
                    _ts(created),
                    request,
                ),
            )
            ticket_id = cursor.lastrowid
        assert ticket_id is not None
        ticket = self.get_ticket(ticket_id)
        assert ticket is not None
        return ticket

    def set_issue(self, ticket_id: int, *, number: int, url: str, now: datetime) -> Ticket:
        """Record the GitHub issue of a ticket and move it from ``creating`` to ``open``."""
        with self._transaction() as db:
            db.execute(
                "UPDATE tickets SET issue_number = ?, issue_url = ?, updated_at = ?,"
                " state = CASE state WHEN ? THEN ? ELSE state END WHERE id = ?",
                (number, url, _ts(now), TicketState.CREATING, TicketState.OPEN, ticket_id),
            )
        ticket = self.get_ticket(ticket_id)
        assert ticket is not None
        return ticket

    def request_for(self, ticket_id: int) -> str | None:
        """Return the stored request of a ticket (JSON), if any."""
        row = self._db.execute("SELECT request FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
        return None if row is None else row["request"]

    def ticket_for_issue(self, number: int) -> Ticket | None:
        """Return the ticket whose issue has this number."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE issue_number = ? ORDER BY id DESC LIMIT 1", (number,)
        ).fetchone()
        return None if row is None else self._ticket(row)

    def pending_tickets(self) -> list[Ticket]:
        """Return every ticket still waiting for an answer, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state IN (?, ?) ORDER BY id",
            (TicketState.CREATING, TicketState.OPEN),
        ).fetchall()
        return [self._ticket(row) for row in rows]

    def count_pending(self) -> int:
        """Count tickets still waiting for an answer."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM tickets WHERE state IN (?, ?)",
            (TicketState.CREATING, TicketState.OPEN),
        ).fetchone()
        return int(row[0])

    def expire(self, ticket_id: int, *, now: datetime) -> bool:
        """Mark a pending ticket expired; return False when it was no longer pending."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state IN (?, ?)",
                (TicketState.EXPIRED, _ts(now), ticket_id, TicketState.CREATING, TicketState.OPEN),
            )
            return cursor.rowcount == 1

    # --- answers -------------------------------------------------------------------------

    def is_jti_used(self, jti: str) -> bool:
        """Say whether a signature with this ``jti`` was ever accepted."""
        row = self._db.execute("SELECT 1 FROM used_jtis WHERE jti = ?", (jti,)).fetchone()
        return row is not None

    def accept_answer(self, answer: StoredAnswer) -> bool:
        """Commit an answer if its ticket is still open and its ``jti`` unused.

        Return False, changing nothing, when the ticket was already answered or expired,
        or the signature or the comment was already used: the first valid answer wins.
        """
        with self._transaction() as db:
            state = db.execute(
                "SELECT state FROM tickets WHERE id = ?", (answer.ticket_id,)
            ).fetchone()
            if state is None or TicketState(state["state"]) is not TicketState.OPEN:
                return False
            if db.execute("SELECT 1 FROM used_jtis WHERE jti = ?", (answer.jti,)).fetchone():
                return False
            # One comment answers one ticket: re-signed (new jti) on a ticket that shares
            # its issue, it loses here rather than raising on the UNIQUE constraint.
            if db.execute(
                "SELECT 1 FROM answers WHERE comment_id = ?", (answer.comment_id,)
            ).fetchone():
                return False
            db.execute(
                "INSERT INTO used_jtis (jti, ticket_id, used_at) VALUES (?, ?, ?)",
                (answer.jti, answer.ticket_id, _ts(answer.accepted_at)),
            )
            db.execute(
                "INSERT INTO answers (ticket_id, comment_id, comment_url, text, signer, kid, jti,"
                " digest, accepted_at, delivered_at, release)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
                (
                    answer.ticket_id,
                    answer.comment_id,
                    answer.comment_url,
                    answer.text,
                    answer.signer,
                    answer.kid,
                    answer.jti,
                    answer.digest,
                    _ts(answer.accepted_at),
                    answer.release,
                ),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ?",
                (TicketState.ANSWERED, _ts(answer.accepted_at), answer.ticket_id),
            )
        return True

    def answer_for(self, ticket_id: int) -> StoredAnswer | None:
        """Return the accepted answer of a ticket."""
        row = self._db.execute("SELECT * FROM answers WHERE ticket_id = ?", (ticket_id,)).fetchone()
        if row is None:
            return None
        accepted_at = _dt(row["accepted_at"])
        assert accepted_at is not None
        return StoredAnswer(
            ticket_id=row["ticket_id"],
            comment_id=row["comment_id"],
            comment_url=row["comment_url"],
            text=row["text"],
            signer=row["signer"],
            kid=row["kid"],
            jti=row["jti"],
            digest=row["digest"],
            accepted_at=accepted_at,
            delivered_at=_dt(row["delivered_at"]),
            release=row["release"],
        )

    def mark_delivered(self, ticket_id: int, *, now: datetime) -> bool:
        """Record the first delivery of an answer; return False if it was delivered before."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE answers SET delivered_at = ? WHERE ticket_id = ? AND delivered_at IS NULL",
                (_ts(now), ticket_id),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (TicketState.DELIVERED, _ts(now), ticket_id, TicketState.ANSWERED),
            )
            return cursor.rowcount == 1

    # --- replies and cursor --------------------------------------------------------------

    def claim_reply(
        self, comment_id: int, *, ticket_id: int | None, kind: str, now: datetime
    ) -> bool:
        """Reserve the one reply a comment may get; return False if it already had one."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO replied_comments (comment_id, ticket_id, kind, replied_at)"
                " VALUES (?, ?, ?, ?)",
                (comment_id, ticket_id, kind, _ts(now)),
            )
            return cursor.rowcount == 1

    def count_replies(self, ticket_id: int) -> int:
        """Count the replies the bot made on a ticket."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM replied_comments WHERE ticket_id = ?", (ticket_id,)
        ).fetchone()
        return int(row[0])

    def get_cursor(self) -> PollCursor:
        """Return where the comment poll resumes."""
        row = self._db.execute("SELECT since, etag FROM cursor WHERE name = 'comments'").fetchone()
        if row is None:
            return PollCursor(since=None, etag=None)
        return PollCursor(since=row["since"], etag=row["etag"])

    def set_cursor(self, cursor: PollCursor) -> None:
        """Persist where the comment poll resumes."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO cursor (name, since, etag) VALUES ('comments', ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET since = excluded.since, etag = excluded.etag",
                (cursor.since, cursor.etag),
            )
