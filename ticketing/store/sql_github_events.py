"""How far the ticket store has read GitHub: the poll cursor and webhook deliveries.

The repo-wide comment poll resumes from its cursor after a restart, and a webhook delivery
GitHub sends twice is handled once.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import PollCursor, record_from_row
from ticketing.store.sql_database import SQLDatabase, to_timestamp


class SQLGitHubEvents(SQLDatabase):
    """The comment-poll cursor and the webhook deliveries already handled."""

    def get_cursor(self) -> PollCursor:
        """Return where the comment poll resumes."""
        row = self._db.execute("SELECT since, etag FROM cursor WHERE name = 'comments'").fetchone()
        if row is None:
            return PollCursor(since=None, etag=None)
        return record_from_row(PollCursor, row)

    def set_cursor(self, cursor: PollCursor) -> None:
        """Persist where the comment poll resumes."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO cursor (name, since, etag) VALUES ('comments', ?, ?)"
                " ON CONFLICT (name) DO UPDATE SET since = excluded.since, etag = excluded.etag",
                (cursor.since, cursor.etag),
            )

    def record_delivery(self, delivery_id: str, *, now: datetime) -> bool:
        """Record a webhook delivery id; return False if it was handled before."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO webhook_deliveries (delivery_id, received_at) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                (delivery_id, to_timestamp(now)),
            )
            return cursor.rowcount == 1
