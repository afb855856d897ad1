"""Answers, review candidates and reviewers' judgements in the ticket store (SQLite or PostgreSQL).

Each is a signed comment, and a signature counts once: accepting an answer, proposing a
candidate and recording a judgement all spend the signature's ``jti`` through
:func:`spend_jti`, in the same transaction that stores the comment. Accepting checks the
ticket is still open in that transaction too, so the first valid answer wins and no
answer is delivered to two tickets.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import (
    Candidate,
    StoredAnswer,
    StoredJudgement,
    TicketState,
    record_from_row,
)
from ticketing.store.sql_database import (
    Executor,
    SQLDatabase,
    from_optional_timestamp,
    from_timestamp,
    to_timestamp,
)

# The tables of signed comments, each keyed by comment id; names spliced into SQL below.
_SIGNED_COMMENTS = frozenset({"answers", "candidates", "judgements"})


def spend_jti(
    db: Executor,
    *,
    ticket_id: int,
    jti: str,
    comment_id: int,
    comments: str,
    at: datetime,
    only_if_open: bool,
) -> bool:
    """Inside a transaction, record the jti as used; False, recording nothing, if it was used.

    Also False when the comment is already in ``comments`` (answers, candidates or
    judgements) and, with ``only_if_open``, when the ticket is not open.
    """
    if only_if_open:
        state = db.execute("SELECT state FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
        if state is None or TicketState(state[0]) is not TicketState.OPEN:
            return False
    if db.execute("SELECT 1 FROM used_jtis WHERE jti = ?", (jti,)).fetchone():
        return False
    if comments not in _SIGNED_COMMENTS:
        raise ValueError(comments)
    query = f"SELECT 1 FROM {comments} WHERE comment_id = ?"  # noqa: S608 - fixed names
    if db.execute(query, (comment_id,)).fetchone():
        return False
    db.execute(
        "INSERT INTO used_jtis (jti, ticket_id, used_at) VALUES (?, ?, ?)",
        (jti, ticket_id, to_timestamp(at)),
    )
    return True


def _insert_answer(db: Executor, answer: StoredAnswer) -> None:
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
            to_timestamp(answer.accepted_at),
            answer.release,
        ),
    )


class SQLAnswers(SQLDatabase):
    """Accepted answers, candidates waiting for review and judgements on them."""

    def is_jti_used(self, jti: str) -> bool:
        """Say whether a signature with this ``jti`` was ever accepted."""
        return self._scalar("SELECT 1 FROM used_jtis WHERE jti = ?", (jti,)) is not None

    def accept_answer(self, answer: StoredAnswer) -> bool:
        """Commit an answer if its ticket is still open and its ``jti`` unused.

        Return False, changing nothing, when the ticket was already answered or expired,
        or the signature or the comment was already used: the first valid answer wins.
        """
        with self._transaction() as db:
            # One comment answers one ticket: re-signed (new jti) on a ticket that shares
            # its issue, it loses here rather than raising on the UNIQUE constraint.
            if not spend_jti(
                db,
                ticket_id=answer.ticket_id,
                jti=answer.jti,
                comment_id=answer.comment_id,
                comments="answers",
                at=answer.accepted_at,
                only_if_open=True,
            ):
                return False
            _insert_answer(db, answer)
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ?",
                (TicketState.ANSWERED, to_timestamp(answer.accepted_at), answer.ticket_id),
            )
        return True

    def answer_for(self, ticket_id: int) -> StoredAnswer | None:
        """Return the accepted answer of a ticket."""
        row = self._db.execute("SELECT * FROM answers WHERE ticket_id = ?", (ticket_id,)).fetchone()
        if row is None:
            return None
        return record_from_row(
            StoredAnswer,
            row,
            accepted_at=from_timestamp,
            delivered_at=from_optional_timestamp,
        )

    def mark_delivered(self, ticket_id: int, *, now: datetime) -> bool:
        """Record the first delivery of an answer; return False if it was delivered before."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE answers SET delivered_at = ? WHERE ticket_id = ? AND delivered_at IS NULL",
                (to_timestamp(now), ticket_id),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                (TicketState.DELIVERED, to_timestamp(now), ticket_id, TicketState.ANSWERED),
            )
            return cursor.rowcount == 1

    # --- review --------------------------------------------------------------------------

    def propose_answer(self, candidate: Candidate) -> bool:
        """Hold a verified answer for review: the ticket must be open and the jti unused."""
        with self._transaction() as db:
            if not spend_jti(
                db,
                ticket_id=candidate.ticket_id,
                jti=candidate.jti,
                comment_id=candidate.comment_id,
                comments="candidates",
                at=candidate.proposed_at,
                only_if_open=True,
            ):
                return False
            db.execute(
                "INSERT INTO candidates (comment_id, ticket_id, comment_url, text, signer, kid,"
                " jti, digest, release, required, posted_at, proposed_at, state, on_behalf_of)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
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
                    to_timestamp(candidate.posted_at),
                    to_timestamp(candidate.proposed_at),
                    candidate.on_behalf_of,
                ),
            )
            db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ?",
                (
                    TicketState.NEEDS_REVIEW,
                    to_timestamp(candidate.proposed_at),
                    candidate.ticket_id,
                ),
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
        return record_from_row(Candidate, row, posted_at=from_timestamp, proposed_at=from_timestamp)

    def rejected_candidate(self, ticket_id: int) -> Candidate | None:
        """Return the ticket's first answer that reviewers rejected, if any."""
        row = self._db.execute(
            "SELECT * FROM candidates WHERE ticket_id = ? AND state = 'rejected'"
            " ORDER BY proposed_at, comment_id LIMIT 1",
            (ticket_id,),
        ).fetchone()
        if row is None:
            return None
        return record_from_row(Candidate, row, posted_at=from_timestamp, proposed_at=from_timestamp)

    def record_judgement(self, judgement: StoredJudgement, *, ticket_id: int) -> bool:
        """Keep a reviewer's verified judgement; False if its comment or jti was seen before."""
        with self._transaction() as db:
            if not spend_jti(
                db,
                ticket_id=ticket_id,
                jti=judgement.jti,
                comment_id=judgement.comment_id,
                comments="judgements",
                at=judgement.posted_at,
                only_if_open=False,
            ):
                return False
            db.execute(
                "INSERT INTO judgements (comment_id, candidate_id, act, reviewer, kid, jti,"
                " digest, posted_at, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    judgement.comment_id,
                    judgement.candidate_id,
                    judgement.act,
                    judgement.reviewer,
                    judgement.kid,
                    judgement.jti,
                    judgement.digest,
                    to_timestamp(judgement.posted_at),
                    judgement.reason,
                ),
            )
        return True

    def judgements_for(self, candidate_id: int) -> list[StoredJudgement]:
        """Return the judgements recorded on a candidate answer, in posting order."""
        rows = self._db.execute(
            "SELECT * FROM judgements WHERE candidate_id = ? ORDER BY posted_at, comment_id",
            (candidate_id,),
        ).fetchall()
        return [record_from_row(StoredJudgement, row, posted_at=from_timestamp) for row in rows]

    def approve_candidate(self, candidate: Candidate, *, now: datetime) -> bool:
        """Release an approved candidate as the ticket's answer, in one transaction."""
        with self._transaction() as db:
            state = db.execute(
                "SELECT state FROM tickets WHERE id = ?", (candidate.ticket_id,)
            ).fetchone()
            if state is None or TicketState(state[0]) is not TicketState.NEEDS_REVIEW:
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
                (TicketState.ANSWERED, to_timestamp(now), candidate.ticket_id),
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
                (
                    TicketState.OPEN,
                    to_timestamp(now),
                    candidate.ticket_id,
                    TicketState.NEEDS_REVIEW,
                ),
            )
        return True
