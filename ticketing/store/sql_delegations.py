"""Delegations in the ticket store: which child ticket answers which sub-question of which ticket.

Shared by the SQLite and PostgreSQL stores (their SQL is the same). A delegate act is
recorded with its sub-questions in the transaction that spends its jti, and stays
unfinished until every child is opened (or it is given up). A child is recorded once per
sub-question: recording it again (a retry after a crash, another replica) changes nothing,
and the writes that come with it (link, ping) are queued only by the one that recorded it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ticketing.store.model import DelegationAct, StoredDelegation, TicketState, record_from_row
from ticketing.store.sql_database import (
    Executor,
    SQLDatabase,
    from_optional_timestamp,
    from_timestamp,
    to_timestamp,
)
from ticketing.store.sql_write_queue import insert_writes

# Queued GitHub writes: (kind, issue number, encoded payload).
Writes = Sequence[tuple[str, int, str]]


def _questions(stored: str) -> tuple[tuple[str, str | None], ...]:
    return tuple((item["ask"], item.get("to")) for item in json.loads(stored))


def _act(row: Any) -> DelegationAct:
    return record_from_row(
        DelegationAct,
        row,
        questions=_questions,
        delegated_at=from_timestamp,
        stalled_at=from_optional_timestamp,
        ended_at=from_optional_timestamp,
    )


def _insert_act(db: Executor, act: DelegationAct) -> None:
    questions = [{"ask": ask, "to": to} for ask, to in act.questions]
    db.execute(
        "INSERT INTO delegation_acts (jti, parent_id, comment_id, comment_url, delegated_by,"
        " digest, questions, delegated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            act.jti,
            act.parent_id,
            act.comment_id,
            act.comment_url,
            act.delegated_by,
            act.digest,
            json.dumps(questions, ensure_ascii=False),
            to_timestamp(act.delegated_at),
        ),
    )


class SQLDelegations(SQLDatabase):
    """The delegations table: children by parent, and the parent of a child."""

    def spend_delegation(
        self, jti: str, *, parent_id: int, now: datetime, act: DelegationAct | None = None
    ) -> bool:
        """Record a delegate act's jti as used; False if it was, or the ticket is not open.

        With ``act``, the act (its sub-questions and addressees) is recorded in the same
        transaction, unfinished until its children are opened.
        """
        with self._transaction() as db:
            row = db.execute("SELECT state FROM tickets WHERE id = ?", (parent_id,)).fetchone()
            if row is None or TicketState(row[0]) is not TicketState.OPEN:
                return False
            if db.execute("SELECT 1 FROM used_jtis WHERE jti = ?", (jti,)).fetchone():
                return False
            db.execute(
                "INSERT INTO used_jtis (jti, ticket_id, used_at) VALUES (?, ?, ?)",
                (jti, parent_id, to_timestamp(now)),
            )
            if act is not None:
                _insert_act(db, act)
            return True

    def record_delegation(
        self, delegation: StoredDelegation, *, writes: Writes = (), now: datetime | None = None
    ) -> bool:
        """Record a child ticket of a delegated ticket, and queue ``writes`` with it.

        False, and nothing queued, if that child or another one for the same sub-question
        (jti and position) was recorded before.
        """
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO delegations (child_id, parent_id, position, question, addressee,"
                " delegated_by, comment_id, comment_url, jti, delegated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    delegation.child_id,
                    delegation.parent_id,
                    delegation.position,
                    delegation.question,
                    delegation.addressee,
                    delegation.delegated_by,
                    delegation.comment_id,
                    delegation.comment_url,
                    delegation.jti,
                    to_timestamp(delegation.delegated_at),
                ),
            )
            if cursor.rowcount != 1:
                return False
            insert_writes(db, writes, now=now or delegation.delegated_at)
            return True

    def delegation_of(self, child_id: int) -> StoredDelegation | None:
        """Return the delegation that opened ticket ``child_id``, or None if none did."""
        row = self._db.execute(
            "SELECT * FROM delegations WHERE child_id = ?", (child_id,)
        ).fetchone()
        return (
            None
            if row is None
            else record_from_row(StoredDelegation, row, delegated_at=from_timestamp)
        )

    def delegations_of(self, parent_id: int) -> list[StoredDelegation]:
        """Return the children ticket ``parent_id`` was split into, in their order."""
        rows = self._db.execute(
            "SELECT * FROM delegations WHERE parent_id = ? ORDER BY comment_id, position",
            (parent_id,),
        ).fetchall()
        return [record_from_row(StoredDelegation, row, delegated_at=from_timestamp) for row in rows]

    def delegation_act(self, jti: str) -> DelegationAct | None:
        """Return the delegate act whose jti is ``jti``, or None if none was recorded."""
        row = self._db.execute("SELECT * FROM delegation_acts WHERE jti = ?", (jti,)).fetchone()
        return None if row is None else _act(row)

    def delegation_acts_of(self, parent_id: int) -> list[DelegationAct]:
        """Return the delegate acts that split ticket ``parent_id``, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM delegation_acts WHERE parent_id = ? ORDER BY delegated_at, jti",
            (parent_id,),
        ).fetchall()
        return [_act(row) for row in rows]

    def unfinished_delegations(self) -> list[DelegationAct]:
        """Return the delegate acts whose children are not all opened yet, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM delegation_acts WHERE ended_at IS NULL ORDER BY delegated_at, jti"
        ).fetchall()
        return [_act(row) for row in rows]

    def note_delegation_stalled(self, jti: str, *, now: datetime, writes: Writes = ()) -> bool:
        """Mark an unfinished act as held up, queueing ``writes``; False if it was already."""
        return self._mark_act(
            "UPDATE delegation_acts SET stalled_at = ?"
            " WHERE jti = ? AND stalled_at IS NULL AND ended_at IS NULL",
            (to_timestamp(now), jti),
            now=now,
            writes=writes,
        )

    def end_delegation(self, jti: str, *, outcome: str, now: datetime, writes: Writes = ()) -> bool:
        """Mark an act done (``outcome``), queueing ``writes``; False if it had ended."""
        return self._mark_act(
            "UPDATE delegation_acts SET ended_at = ?, outcome = ?"
            " WHERE jti = ? AND ended_at IS NULL",
            (to_timestamp(now), outcome, jti),
            now=now,
            writes=writes,
        )

    def _mark_act(
        self, update: str, parameters: tuple[object, ...], *, now: datetime, writes: Writes
    ) -> bool:
        with self._transaction() as db:
            if db.execute(update, parameters).rowcount != 1:
                return False
            insert_writes(db, writes, now=now)
            return True
