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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ticketing.errors import StoreError
from ticketing.store.model import (
    PENDING_STATES,
    Candidate,
    DraftState,
    PollCursor,
    QueuedWrite,
    ReplyClaim,
    StoredAnswer,
    StoredDraft,
    StoredJudgement,
    ThreadStart,
    Ticket,
    TicketState,
)

SCHEMA_VERSION = 7

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
    # Webhook deliveries already handled (GitHub may deliver one twice).
    3: """
    CREATE TABLE webhook_deliveries (
        delivery_id   TEXT PRIMARY KEY,
        received_at   REAL NOT NULL
    );
    """,
    # GitHub bookkeeping writes (labels, replies, closing) survive a restart.
    4: """
    CREATE TABLE write_queue (
        id            INTEGER PRIMARY KEY,
        kind          TEXT NOT NULL,
        issue_number  INTEGER NOT NULL,
        payload       TEXT NOT NULL,
        attempts      INTEGER NOT NULL DEFAULT 0,
        not_before    REAL NOT NULL,
        created_at    REAL NOT NULL,
        done_at       REAL,
        failure       TEXT
    );
    CREATE INDEX write_queue_due ON write_queue (done_at, not_before, id);
    """,
    # Answers that wait for reviewers, and the reviewers' signed approvals and rejections.
    5: """
    CREATE TABLE candidates (
        comment_id    INTEGER PRIMARY KEY,
        ticket_id     INTEGER NOT NULL REFERENCES tickets (id),
        comment_url   TEXT NOT NULL,
        text          TEXT NOT NULL,
        signer        TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        release       TEXT NOT NULL,
        required      INTEGER NOT NULL,
        posted_at     REAL NOT NULL,
        proposed_at   REAL NOT NULL,
        state         TEXT NOT NULL
    );
    CREATE INDEX candidates_by_ticket ON candidates (ticket_id, state);
    CREATE TABLE judgements (
        comment_id    INTEGER PRIMARY KEY,
        candidate_id  INTEGER NOT NULL REFERENCES candidates (comment_id),
        act           TEXT NOT NULL,
        reviewer      TEXT NOT NULL,
        kid           TEXT NOT NULL,
        jti           TEXT NOT NULL,
        digest        TEXT NOT NULL,
        posted_at     REAL NOT NULL
    );
    """,
    # One issue per agent run: a ticket is step `step` of the thread opened by ticket
    # `thread_id`, continuing ticket `parent_id`. Replies delivered (by fingerprint, see
    # ticketing.threads) and threads named by clients point at the tickets they continue.
    6: """
    ALTER TABLE tickets ADD COLUMN step INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE tickets ADD COLUMN thread_id INTEGER;
    ALTER TABLE tickets ADD COLUMN parent_id INTEGER;
    ALTER TABLE tickets ADD COLUMN client TEXT;
    UPDATE tickets SET thread_id = id;
    CREATE INDEX tickets_by_thread ON tickets (thread_id, step);
    CREATE INDEX tickets_by_client ON tickets (client, id);
    CREATE TABLE thread_replies (
        fingerprint   TEXT PRIMARY KEY,
        ticket_id     INTEGER NOT NULL REFERENCES tickets (id)
    );
    CREATE TABLE thread_names (
        name_key      TEXT PRIMARY KEY,
        thread_id     INTEGER NOT NULL REFERENCES tickets (id)
    );
    """,
    # An upstream model's suggested answer, at most one per ticket (claimed before it is
    # asked for, so retries and replicas never ask twice).
    7: """
    CREATE TABLE drafts (
        ticket_id     INTEGER PRIMARY KEY REFERENCES tickets (id),
        state         TEXT NOT NULL,
        model         TEXT NOT NULL DEFAULT '',
        text          TEXT NOT NULL DEFAULT '',
        digest        TEXT NOT NULL DEFAULT '',
        created_at    REAL NOT NULL,
        updated_at    REAL NOT NULL,
        detail        TEXT
    );
    """,
}


def _ts(value: datetime) -> float:
    return value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _spend_jti_on_open_ticket(
    db: sqlite3.Connection,
    *,
    ticket_id: int,
    jti: str,
    comment_id: int,
    comments: str,
    at: datetime,
) -> bool:
    """Inside a transaction: check the ticket is open and the jti and comment unused, then
    record the jti as used. ``comments`` is a fixed table name (answers or candidates)."""
    state = db.execute("SELECT state FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
    if state is None or TicketState(state["state"]) is not TicketState.OPEN:
        return False
    return _spend_jti(
        db, ticket_id=ticket_id, jti=jti, comment_id=comment_id, comments=comments, at=at
    )


def _spend_jti(
    db: sqlite3.Connection,
    *,
    ticket_id: int,
    jti: str,
    comment_id: int,
    comments: str,
    at: datetime,
) -> bool:
    """Inside a transaction: record the jti as used unless it, or the comment, was used.

    ``comments`` is a fixed table name: answers, candidates or judgements.
    """
    if db.execute("SELECT 1 FROM used_jtis WHERE jti = ?", (jti,)).fetchone():
        return False
    if comments not in {"answers", "candidates", "judgements"}:
        raise ValueError(comments)
    query = f"SELECT 1 FROM {comments} WHERE comment_id = ?"  # noqa: S608 - fixed names
    if db.execute(query, (comment_id,)).fetchone():
        return False
    db.execute(
        "INSERT INTO used_jtis (jti, ticket_id, used_at) VALUES (?, ?, ?)",
        (jti, ticket_id, _ts(at)),
    )
    return True


def _insert_answer(db: sqlite3.Connection, answer: StoredAnswer) -> None:
    """Inside a transaction: store an answer as the one its ticket released."""
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


class SQLiteTicketStore:
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
            step=row["step"],
            thread_id=row["thread_id"],
            parent_id=row["parent_id"],
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
        client: str | None = None,
        thread: ThreadStart | None = None,
    ) -> Ticket:
        """Insert a ticket in state ``creating`` and return it.

        With ``thread`` the ticket is the next step of that agent run, unless the run
        already has a step waiting (one pending step per issue keeps every signed comment's
        ticket unambiguous): then, as without ``thread``, it starts a run of its own.
        """
        with self._transaction() as db:
            step = 1
            thread_id: int | None = None
            parent_id: int | None = None
            if thread is not None:
                busy = db.execute(
                    "SELECT 1 FROM tickets WHERE thread_id = ? AND state IN (?, ?, ?) LIMIT 1",
                    (thread.thread_id, *PENDING_STATES),
                ).fetchone()
                if busy is None:
                    row = db.execute(
                        "SELECT MAX(step) FROM tickets WHERE thread_id = ?", (thread.thread_id,)
                    ).fetchone()
                    step = int(row[0] or 0) + 1
                    thread_id, parent_id = thread.thread_id, thread.parent_id
            cursor = db.execute(
                "INSERT INTO tickets (request_key, request_id, state, created_at, deadline,"
                " updated_at, request, client, step, thread_id, parent_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request_key,
                    request_id,
                    TicketState.CREATING,
                    _ts(created),
                    _ts(deadline),
                    _ts(created),
                    request,
                    client,
                    step,
                    thread_id,
                    parent_id,
                ),
            )
            ticket_id = cursor.lastrowid
            assert ticket_id is not None
            if thread_id is None:
                db.execute("UPDATE tickets SET thread_id = id WHERE id = ?", (ticket_id,))
        ticket = self.get_ticket(ticket_id)
        assert ticket is not None
        return ticket

    # --- threads (one issue per agent run) -------------------------------------------------

    def link_reply(self, fingerprint: str, ticket_id: int) -> None:
        """Remember that ticket ``ticket_id`` gave the reply with this fingerprint."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO thread_replies (fingerprint, ticket_id) VALUES (?, ?)",
                (fingerprint, ticket_id),
            )

    def ticket_for_reply(self, fingerprint: str) -> Ticket | None:
        """Return the ticket that gave the reply with this fingerprint, if any."""
        row = self._db.execute(
            "SELECT t.* FROM thread_replies r JOIN tickets t ON t.id = r.ticket_id"
            " WHERE r.fingerprint = ?",
            (fingerprint,),
        ).fetchone()
        return None if row is None else self._ticket(row)

    def name_thread(self, name_key: str, thread_id: int) -> None:
        """Point a client's thread name at an agent run (the newest run with that name wins)."""
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO thread_names (name_key, thread_id) VALUES (?, ?)",
                (name_key, thread_id),
            )

    def thread_for_name(self, name_key: str) -> int | None:
        """Return the agent run a client's thread name points at, if any."""
        row = self._db.execute(
            "SELECT thread_id FROM thread_names WHERE name_key = ?", (name_key,)
        ).fetchone()
        return None if row is None else int(row[0])

    def newest_in_thread(self, thread_id: int) -> Ticket | None:
        """Return the newest step of an agent run."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE thread_id = ? ORDER BY step DESC, id DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        return None if row is None else self._ticket(row)

    def latest_thread_of_client(self, client: str) -> int | None:
        """Return the agent run this client's newest ticket on GitHub belongs to, if any."""
        row = self._db.execute(
            "SELECT thread_id FROM tickets WHERE client = ? AND issue_number IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            (client,),
        ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

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
            "SELECT * FROM tickets WHERE state IN (?, ?, ?) ORDER BY id",
            tuple(PENDING_STATES),
        ).fetchall()
        return [self._ticket(row) for row in rows]

    def overdue_tickets(self, now: datetime) -> list[Ticket]:
        """Return the tickets still waiting whose deadline is ``now`` or earlier, oldest first."""
        # Read every poll: the rows of all pending tickets (thousands) would be built each time.
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state IN (?, ?, ?) AND deadline <= ? ORDER BY id",
            (*PENDING_STATES, _ts(now)),
        ).fetchall()
        return [self._ticket(row) for row in rows]

    def count_pending(self) -> int:
        """Count tickets still waiting for an answer."""
        row = self._db.execute(
            "SELECT COUNT(*) FROM tickets WHERE state IN (?, ?, ?)",
            tuple(PENDING_STATES),
        ).fetchone()
        return int(row[0])

    def expire(self, ticket_id: int, *, now: datetime) -> bool:
        """Mark a pending ticket expired; return False when it was no longer pending."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state IN (?, ?, ?)",
                (TicketState.EXPIRED, _ts(now), ticket_id, *PENDING_STATES),
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
            # One comment answers one ticket: re-signed (new jti) on a ticket that shares
            # its issue, it loses here rather than raising on the UNIQUE constraint.
            if not _spend_jti_on_open_ticket(
                db,
                ticket_id=answer.ticket_id,
                jti=answer.jti,
                comment_id=answer.comment_id,
                comments="answers",
                at=answer.accepted_at,
            ):
                return False
            _insert_answer(db, answer)
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

    # --- review --------------------------------------------------------------------------

    def propose_answer(self, candidate: Candidate) -> bool:
        """Hold a verified answer for review: the ticket must be open and the jti unused."""
        with self._transaction() as db:
            if not _spend_jti_on_open_ticket(
                db,
                ticket_id=candidate.ticket_id,
                jti=candidate.jti,
                comment_id=candidate.comment_id,
                comments="candidates",
                at=candidate.proposed_at,
            ):
                return False
            db.execute(
                "INSERT INTO candidates (comment_id, ticket_id, comment_url, text, signer, kid,"
                " jti, digest, release, required, posted_at, proposed_at, state)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                (
                    candidate.comment_id,
                    candidate.ticket_id,
                    candidate.comment_url,
                    candidate.text,
                    candidate.signer,
                    candidate.kid,
                    candidate.jti,
                    candidate.digest,
                    candidate.release,
                    candidate.required,
                    _ts(candidate.posted_at),
                    _ts(candidate.proposed_at),
                ),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ?",
                (TicketState.NEEDS_REVIEW, _ts(candidate.proposed_at), candidate.ticket_id),
            )
        return True

    def pending_candidate(self, ticket_id: int) -> Candidate | None:
        """Return the answer of a ticket that waits for review, if any."""
        row = self._db.execute(
            "SELECT * FROM candidates WHERE ticket_id = ? AND state = 'pending'"
            " ORDER BY proposed_at DESC LIMIT 1",
            (ticket_id,),
        ).fetchone()
        if row is None:
            return None
        return Candidate(
            ticket_id=row["ticket_id"],
            comment_id=row["comment_id"],
            comment_url=row["comment_url"],
            text=row["text"],
            signer=row["signer"],
            kid=row["kid"],
            jti=row["jti"],
            digest=row["digest"],
            release=row["release"],
            required=row["required"],
            posted_at=datetime.fromtimestamp(row["posted_at"], UTC),
            proposed_at=datetime.fromtimestamp(row["proposed_at"], UTC),
            state=row["state"],
        )

    def record_judgement(self, judgement: StoredJudgement, *, ticket_id: int) -> bool:
        """Keep a reviewer's verified judgement; False if its comment or jti was seen before."""
        with self._transaction() as db:
            if not _spend_jti(
                db,
                ticket_id=ticket_id,
                jti=judgement.jti,
                comment_id=judgement.comment_id,
                comments="judgements",
                at=judgement.posted_at,
            ):
                return False
            db.execute(
                "INSERT INTO judgements (comment_id, candidate_id, act, reviewer, kid, jti,"
                " digest, posted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    judgement.comment_id,
                    judgement.candidate_id,
                    judgement.act,
                    judgement.reviewer,
                    judgement.kid,
                    judgement.jti,
                    judgement.digest,
                    _ts(judgement.posted_at),
                ),
            )
        return True

    def judgements_for(self, candidate_id: int) -> list[StoredJudgement]:
        """Return the judgements recorded on a candidate answer, in posting order."""
        rows = self._db.execute(
            "SELECT * FROM judgements WHERE candidate_id = ? ORDER BY posted_at, comment_id",
            (candidate_id,),
        ).fetchall()
        return [
            StoredJudgement(
                comment_id=row["comment_id"],
                candidate_id=row["candidate_id"],
                act=row["act"],
                reviewer=row["reviewer"],
                kid=row["kid"],
                jti=row["jti"],
                digest=row["digest"],
                posted_at=datetime.fromtimestamp(row["posted_at"], UTC),
            )
            for row in rows
        ]

    def approve_candidate(self, candidate: Candidate, *, now: datetime) -> bool:
        """Release an approved candidate as the ticket's answer, in one transaction."""
        with self._transaction() as db:
            state = db.execute(
                "SELECT state FROM tickets WHERE id = ?", (candidate.ticket_id,)
            ).fetchone()
            if state is None or TicketState(state["state"]) is not TicketState.NEEDS_REVIEW:
                return False
            updated = db.execute(
                "UPDATE candidates SET state = 'approved'"
                " WHERE comment_id = ? AND state = 'pending'",
                (candidate.comment_id,),
            )
            if updated.rowcount != 1:
                return False
            _insert_answer(
                db,
                StoredAnswer(
                    ticket_id=candidate.ticket_id,
                    comment_id=candidate.comment_id,
                    comment_url=candidate.comment_url,
                    text=candidate.text,
                    signer=candidate.signer,
                    kid=candidate.kid,
                    jti=candidate.jti,
                    digest=candidate.digest,
                    accepted_at=now,
                    delivered_at=None,
                    release=candidate.release,
                ),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ?",
                (TicketState.ANSWERED, _ts(now), candidate.ticket_id),
            )
        return True

    def reject_candidate(self, candidate: Candidate, *, now: datetime) -> bool:
        """Drop a rejected candidate and reopen its ticket for a new answer."""
        with self._transaction() as db:
            updated = db.execute(
                "UPDATE candidates SET state = 'rejected'"
                " WHERE comment_id = ? AND state = 'pending'",
                (candidate.comment_id,),
            )
            if updated.rowcount != 1:
                return False
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (TicketState.OPEN, _ts(now), candidate.ticket_id, TicketState.NEEDS_REVIEW),
            )
        return True

    # --- webhook deliveries --------------------------------------------------------------

    def record_delivery(self, delivery_id: str, *, now: datetime) -> bool:
        """Record a webhook delivery id; return False if it was handled before."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO webhook_deliveries (delivery_id, received_at) VALUES (?, ?)",
                (delivery_id, _ts(now)),
            )
            return cursor.rowcount == 1

    # --- the durable write queue ---------------------------------------------------------

    def enqueue_write(self, kind: str, *, issue_number: int, payload: str, now: datetime) -> int:
        """Queue one GitHub write and return its id."""
        ids = self.enqueue_writes([(kind, issue_number, payload)], now=now)
        assert ids is not None
        return ids[0]

    def enqueue_writes(
        self,
        writes: Sequence[tuple[str, int, str]],
        *,
        now: datetime,
        claim: ReplyClaim | None = None,
    ) -> list[int] | None:
        """Queue GitHub writes (kind, issue number, payload) in one transaction; return ids.

        With ``claim``, the writes are the one reply a comment may get: they are queued only
        if the comment had none, in the same transaction as the claim (so a crash can
        neither lose the reply nor send it twice), and None says it had one.
        """
        ids: list[int] = []
        with self._transaction() as db:
            if claim is not None:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO replied_comments"
                    " (comment_id, ticket_id, kind, replied_at) VALUES (?, ?, ?, ?)",
                    (claim.comment_id, claim.ticket_id, claim.kind, _ts(now)),
                )
                if cursor.rowcount != 1:
                    return None
            for kind, issue_number, payload in writes:
                cursor = db.execute(
                    "INSERT INTO write_queue (kind, issue_number, payload, not_before,"
                    " created_at) VALUES (?, ?, ?, ?, ?)",
                    (kind, issue_number, payload, _ts(now), _ts(now)),
                )
                assert cursor.lastrowid is not None
                ids.append(cursor.lastrowid)
        return ids

    def due_writes(self, *, now: datetime, limit: int = 50) -> list[QueuedWrite]:
        """Return queued writes whose time has come, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM write_queue WHERE done_at IS NULL AND not_before <= ?"
            " ORDER BY id LIMIT ?",
            (_ts(now), limit),
        ).fetchall()
        return [
            QueuedWrite(
                id=row["id"],
                kind=row["kind"],
                issue_number=row["issue_number"],
                payload=row["payload"],
                attempts=row["attempts"],
            )
            for row in rows
        ]

    def pending_writes(self) -> int:
        """Count writes not yet done."""
        row = self._db.execute("SELECT COUNT(*) FROM write_queue WHERE done_at IS NULL").fetchone()
        return int(row[0])

    def next_write_due(self) -> datetime | None:
        """Return when the earliest queued write is due, if any."""
        row = self._db.execute(
            "SELECT MIN(not_before) FROM write_queue WHERE done_at IS NULL"
        ).fetchone()
        return _dt(row[0])

    def finish_write(self, write_id: int, *, now: datetime, failure: str | None = None) -> None:
        """Mark a queued write done (or abandoned, with the reason)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE write_queue SET done_at = ?, failure = ? WHERE id = ?",
                (_ts(now), failure, write_id),
            )

    def defer_write(self, write_id: int, *, until: datetime, attempts: int | None = None) -> bool:
        """Try a queued write again later; with ``attempts``, only if no one else took it.

        Replicas sharing the store each run a queue worker: the attempt count read with
        the row is the claim, so only one of them sends a given write.
        """
        with self._transaction() as db:
            if attempts is None:
                cursor = db.execute(
                    "UPDATE write_queue SET attempts = attempts + 1, not_before = ? WHERE id = ?",
                    (_ts(until), write_id),
                )
            else:
                cursor = db.execute(
                    "UPDATE write_queue SET attempts = attempts + 1, not_before = ?"
                    " WHERE id = ? AND attempts = ? AND done_at IS NULL",
                    (_ts(until), write_id, attempts),
                )
            return cursor.rowcount == 1

    # --- replies and cursor --------------------------------------------------------------

    def claim_reply(
        self, comment_id: int, *, ticket_id: int | None, kind: str, now: datetime
    ) -> bool:
        """Reserve the one reply a comment may get; return False if it already had one."""
        claim = ReplyClaim(comment_id=comment_id, ticket_id=ticket_id, kind=kind)
        return self.enqueue_writes([], now=now, claim=claim) is not None

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

    # --- drafts and recently expired tickets -----------------------------------------------

    def claim_draft(
        self, ticket_id: int, *, now: datetime, stale_before: datetime | None = None
    ) -> bool:
        """Reserve the one draft a ticket may get; False if it was claimed before.

        A claim last touched before ``stale_before`` was left by a process that stopped
        while drafting: it may be taken over.
        """
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT OR IGNORE INTO drafts (ticket_id, state, created_at, updated_at)"
                " VALUES (?, ?, ?, ?)",
                (ticket_id, DraftState.CLAIMED, _ts(now), _ts(now)),
            )
            if cursor.rowcount == 1:
                return True
            if stale_before is None:
                return False
            cursor = db.execute(
                "UPDATE drafts SET updated_at = ? WHERE ticket_id = ? AND state = ?"
                " AND updated_at < ?",
                (_ts(now), ticket_id, DraftState.CLAIMED, _ts(stale_before)),
            )
            return cursor.rowcount == 1

    def release_draft(self, ticket_id: int) -> None:
        """Give back a claim whose draft was abandoned (its process is stopping)."""
        with self._transaction() as db:
            db.execute(
                "DELETE FROM drafts WHERE ticket_id = ? AND state = ?",
                (ticket_id, DraftState.CLAIMED),
            )

    def finish_draft(
        self,
        ticket_id: int,
        *,
        state: DraftState,
        now: datetime,
        model: str = "",
        text: str = "",
        digest: str = "",
        detail: str | None = None,
    ) -> bool:
        """Record how a claimed draft ended (posted or failed); False if it was not claimed."""
        if state is DraftState.CLAIMED:
            raise ValueError("a draft is finished as posted or failed")
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE drafts SET state = ?, model = ?, text = ?, digest = ?, detail = ?,"
                " updated_at = ? WHERE ticket_id = ? AND state = ?",
                (state, model, text, digest, detail, _ts(now), ticket_id, DraftState.CLAIMED),
            )
            return cursor.rowcount == 1

    def draft_for(self, ticket_id: int) -> StoredDraft | None:
        """Return a ticket's draft, in whatever state it is."""
        row = self._db.execute("SELECT * FROM drafts WHERE ticket_id = ?", (ticket_id,)).fetchone()
        if row is None:
            return None
        return StoredDraft(
            ticket_id=row["ticket_id"],
            state=DraftState(row["state"]),
            model=row["model"],
            text=row["text"],
            digest=row["digest"],
            created_at=datetime.fromtimestamp(row["created_at"], UTC),
            detail=row["detail"],
        )

    def recently_expired(self, *, since: datetime) -> list[Ticket]:
        """Return the tickets that expired at or after ``since``, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state = ? AND updated_at >= ? ORDER BY id",
            (TicketState.EXPIRED, _ts(since)),
        ).fetchall()
        return [self._ticket(row) for row in rows]
