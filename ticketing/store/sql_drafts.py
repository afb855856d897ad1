"""Drafts in the ticket store: an upstream model's suggested answer per ticket.

A ticket gets at most one draft. It is claimed before the model is asked, so retries and
replicas never ask twice; a claim left by a process that stopped mid-draft may be taken
over once it is stale.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import DraftState, StoredDraft, record_from_row
from ticketing.store.sql_database import SQLDatabase, from_timestamp, to_timestamp


class SQLDrafts(SQLDatabase):
    """Claims on drafts and how each draft ended."""

    def claim_draft(
        self, ticket_id: int, *, now: datetime, stale_before: datetime | None = None
    ) -> bool:
        """Reserve the one draft a ticket may get; False if it was claimed before.

        A claim last touched before ``stale_before`` was left by a process that stopped
        while drafting: it may be taken over.
        """
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO drafts (ticket_id, state, created_at, updated_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (ticket_id, DraftState.CLAIMED, to_timestamp(now), to_timestamp(now)),
            )
            if cursor.rowcount == 1:
                return True
            if stale_before is None:
                return False
            cursor = db.execute(
                "UPDATE drafts SET updated_at = ? WHERE ticket_id = ? AND state = ?"
                " AND updated_at < ?",
                (to_timestamp(now), ticket_id, DraftState.CLAIMED, to_timestamp(stale_before)),
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
        agent: str | None = None,
    ) -> bool:
        """Record how a claimed draft ended (posted or failed); False if it was not claimed."""
        if state is DraftState.CLAIMED:
            raise ValueError("a draft is finished as posted or failed")
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE drafts SET state = ?, model = ?, text = ?, digest = ?, detail = ?,"
                " agent = ?, updated_at = ? WHERE ticket_id = ? AND state = ?",
                (
                    state,
                    model,
                    text,
                    digest,
                    detail,
                    agent,
                    to_timestamp(now),
                    ticket_id,
                    DraftState.CLAIMED,
                ),
            )
            return cursor.rowcount == 1

    def take_agent_draft(
        self, ticket_id: int, *, agent: str, now: datetime, text: str, digest: str, comment_url: str
    ) -> bool:
        """Keep the newest draft ``agent``'s personal agent posted; False if not dispatched to it.

        Only a draft dispatched to that agent (or one it posted already, which the newer
        replaces, as ``answer --draft --draft-by`` signs the newest) is taken.
        """
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE drafts SET state = ?, text = ?, digest = ?, comment_url = ?,"
                " updated_at = ? WHERE ticket_id = ? AND agent = ? COLLATE NOCASE"
                " AND state IN (?, ?)",
                (
                    DraftState.POSTED,
                    text,
                    digest,
                    comment_url,
                    to_timestamp(now),
                    ticket_id,
                    agent,
                    DraftState.DISPATCHED,
                    DraftState.POSTED,
                ),
            )
            return cursor.rowcount == 1

    def draft_for(self, ticket_id: int) -> StoredDraft | None:
        """Return a ticket's draft, in whatever state it is."""
        row = self._db.execute("SELECT * FROM drafts WHERE ticket_id = ?", (ticket_id,)).fetchone()
        if row is None:
            return None
        return record_from_row(StoredDraft, row, state=DraftState, created_at=from_timestamp)
