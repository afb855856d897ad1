"""Delegations in the ticket store: which child ticket answers which sub-question of which ticket.

Shared by the SQLite and PostgreSQL stores (their SQL is the same). A child is recorded once:
recording it again (a retry after a crash) changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import StoredDelegation, TicketState, record_from_row
from ticketing.store.sql_database import SQLDatabase, from_timestamp, to_timestamp


class SQLDelegations(SQLDatabase):
    """The delegations table: children by parent, and the parent of a child."""

    def spend_delegation(self, jti: str, *, parent_id: int, now: datetime) -> bool:
        """Record a delegate act's jti as used; False if it was, or the ticket is not open."""
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
            return True

    def record_delegation(self, delegation: StoredDelegation) -> None:
        """Record a child ticket of a delegated ticket; a child recorded before is kept."""
        with self._transaction() as db:
            db.execute(
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
