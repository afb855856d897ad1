"""Responses API responses in the ticket store: id → ticket, client, echo and items.

A response is kept once (a retry that re-attaches to its ticket keeps nothing new). Deleting
one drops what it echoes and its input items but keeps its row, so that a retry of the
request that made it cannot bring it back; its ticket (with the stored request), the issue
and the audit trail are not touched.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import StoredResponse, record_from_row
from ticketing.store.sql_database import SQLDatabase, from_timestamp, to_timestamp


class SQLResponses(SQLDatabase):
    """The Responses API's stored responses."""

    def keep_response(self, response: StoredResponse) -> None:
        """Record a response; a response already recorded (or deleted) is left as it is."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO responses (response_id, ticket_id, client, stored, previous_id,"
                " echo, items, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (
                    response.response_id,
                    response.ticket_id,
                    response.client,
                    int(response.stored),
                    response.previous_id,
                    response.echo if response.stored else "",
                    response.items if response.stored else "",
                    to_timestamp(response.created_at),
                ),
            )

    def response_for(self, response_id: str) -> StoredResponse | None:
        """Return a response by id, or None if it was never recorded or was deleted."""
        row = self._db.execute(
            "SELECT * FROM responses WHERE response_id = ? AND deleted_at IS NULL",
            (response_id,),
        ).fetchone()
        if row is None:
            return None
        return record_from_row(StoredResponse, row, stored=bool, created_at=from_timestamp)

    def delete_response(self, response_id: str, *, now: datetime) -> bool:
        """Forget a response's echo and items; return False if it was not there to delete."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE responses SET echo = '', items = '', deleted_at = ?"
                " WHERE response_id = ? AND deleted_at IS NULL",
                (to_timestamp(now), response_id),
            )
            return cursor.rowcount == 1
