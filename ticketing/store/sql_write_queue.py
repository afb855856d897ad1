"""The durable queue of GitHub writes, and the bot's replies, in the ticket store.

Bookkeeping writes (labels, replies, closing) are queued here before they are sent, so a
restart loses none. A comment gets at most one reply from the bot: the claim on it is
taken in the same transaction that queues the reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ticketing.store.model import QueuedWrite, ReplyClaim, record_from_row
from ticketing.store.sql_database import (
    Executor,
    SQLDatabase,
    from_optional_timestamp,
    to_timestamp,
)


def insert_writes(
    db: Executor,
    writes: Sequence[tuple[str, int, str]],
    *,
    now: datetime,
    not_before: datetime | None = None,
) -> list[int]:
    """Queue GitHub writes (kind, issue number, payload) in ``db``'s open transaction."""
    ids: list[int] = []
    for kind, issue_number, payload in writes:
        inserted = db.execute(
            "INSERT INTO write_queue (kind, issue_number, payload, not_before,"
            " created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
            (kind, issue_number, payload, to_timestamp(not_before or now), to_timestamp(now)),
        )
        ids.append(int(inserted.fetchone()[0]))
    return ids


class SQLWriteQueue(SQLDatabase):
    """Queued GitHub writes and the comments the bot replied to."""

    def enqueue_write(
        self,
        kind: str,
        *,
        issue_number: int,
        payload: str,
        now: datetime,
        not_before: datetime | None = None,
    ) -> int:
        """Queue one GitHub write, due at ``not_before`` (default now), and return its id."""
        ids = self.enqueue_writes([(kind, issue_number, payload)], now=now, not_before=not_before)
        assert ids is not None
        return ids[0]

    def enqueue_writes(
        self,
        writes: Sequence[tuple[str, int, str]],
        *,
        now: datetime,
        claim: ReplyClaim | None = None,
        not_before: datetime | None = None,
    ) -> list[int] | None:
        """Queue GitHub writes (kind, issue number, payload) in one transaction; return ids.

        With ``claim``, the writes are the one reply a comment may get: they are queued only
        if the comment had none, in the same transaction as the claim (so a crash can
        neither lose the reply nor send it twice), and None says it had one.
        """
        with self._transaction() as db:
            if claim is not None:
                cursor = db.execute(
                    "INSERT INTO replied_comments (comment_id, ticket_id, kind, replied_at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (claim.comment_id, claim.ticket_id, claim.kind, to_timestamp(now)),
                )
                if cursor.rowcount != 1:
                    return None
            ids = insert_writes(db, writes, now=now, not_before=not_before)
        return ids

    def due_writes(self, *, now: datetime, limit: int = 50) -> list[QueuedWrite]:
        """Return queued writes whose time has come, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM write_queue WHERE done_at IS NULL AND not_before <= ?"
            " ORDER BY id LIMIT ?",
            (to_timestamp(now), limit),
        ).fetchall()
        return [record_from_row(QueuedWrite, row) for row in rows]

    def pending_writes(self) -> int:
        """Count writes not yet done."""
        return int(self._scalar("SELECT COUNT(*) FROM write_queue WHERE done_at IS NULL"))

    def next_write_due(self) -> datetime | None:
        """Return when the earliest queued write is due, if any."""
        return from_optional_timestamp(
            self._scalar("SELECT MIN(not_before) FROM write_queue WHERE done_at IS NULL")
        )

    def finish_write(self, write_id: int, *, now: datetime, failure: str | None = None) -> None:
        """Mark a queued write done (or abandoned, with the reason)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE write_queue SET done_at = ?, failure = ? WHERE id = ?",
                (to_timestamp(now), failure, write_id),
            )

    def drop_unsent_writes(
        self, kind: str, *, issue_number: int, now: datetime, failure: str
    ) -> int:
        """Finish, with ``failure``, the writes of ``kind`` on an issue never tried yet."""
        with self._transaction() as db:
            # attempts = 0: a write another replica has claimed is left to it.
            cursor = db.execute(
                "UPDATE write_queue SET done_at = ?, failure = ? WHERE kind = ?"
                " AND issue_number = ? AND done_at IS NULL AND attempts = 0",
                (to_timestamp(now), failure, kind, issue_number),
            )
            return cursor.rowcount

    def defer_write(self, write_id: int, *, until: datetime, attempts: int | None = None) -> bool:
        """Try a queued write again later; with ``attempts``, only if no one else took it.

        Replicas sharing the store each run a queue worker: the attempt count read with
        the row is the claim, so only one of them sends a given write.
        """
        with self._transaction() as db:
            if attempts is None:
                cursor = db.execute(
                    "UPDATE write_queue SET attempts = attempts + 1, not_before = ? WHERE id = ?",
                    (to_timestamp(until), write_id),
                )
            else:
                cursor = db.execute(
                    "UPDATE write_queue SET attempts = attempts + 1, not_before = ?"
                    " WHERE id = ? AND attempts = ? AND done_at IS NULL",
                    (to_timestamp(until), write_id, attempts),
                )
            return cursor.rowcount == 1

    # --- replies -------------------------------------------------------------------------

    def claim_reply(
        self, comment_id: int, *, ticket_id: int | None, kind: str, now: datetime
    ) -> bool:
        """Reserve the one reply a comment may get; return False if it already had one."""
        claim = ReplyClaim(comment_id=comment_id, ticket_id=ticket_id, kind=kind)
        return self.enqueue_writes([], now=now, claim=claim) is not None

    def count_replies(self, ticket_id: int) -> int:
        """Count the replies the bot made on a ticket."""
        return int(
            self._scalar("SELECT COUNT(*) FROM replied_comments WHERE ticket_id = ?", (ticket_id,))
        )
