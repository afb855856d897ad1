"""Tickets and agent-run threads in the ticket store (SQLite or PostgreSQL).

A ticket is stored ``creating`` before its issue exists, turns ``open`` when the issue is
recorded, and leaves the pending states once (answered or expired). Each ticket is a step
of a thread: the agent run whose first ticket it names, with replies and client thread
names pointing at the tickets they continue.
"""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import (
    PENDING_STATES,
    Row,
    ThreadStart,
    Ticket,
    TicketState,
    record_from_row,
)
from ticketing.store.sql_database import SQLDatabase, from_timestamp, to_timestamp
from ticketing.tree import child_slot


def ticket_from_row(row: Row) -> Ticket:
    """Build a ticket from a row of the tickets table."""
    return record_from_row(
        Ticket,
        row,
        state=TicketState,
        created_at=from_timestamp,
        deadline=from_timestamp,
        own_issue=bool,
    )


class SQLTickets(SQLDatabase):
    """Tickets and the threads of agent runs."""

    def get_ticket(self, ticket_id: int) -> Ticket | None:
        """Return the ticket with this id."""
        row = self._db.execute("SELECT * FROM tickets WHERE id = ?", (ticket_id,)).fetchone()
        return None if row is None else ticket_from_row(row)

    def latest_ticket_for_key(self, request_key: str) -> Ticket | None:
        """Return the newest ticket opened for this request key."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE request_key = ? ORDER BY id DESC LIMIT 1", (request_key,)
        ).fetchone()
        return None if row is None else ticket_from_row(row)

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
        children_after: int | None = None,
    ) -> Ticket:
        """Insert a ticket in state ``creating`` and return it.

        With ``thread`` the ticket is the next step of that agent run, unless the run
        already has a step waiting (one pending step per issue keeps every signed comment's
        ticket unambiguous): then, as without ``thread``, it starts a run of its own. A step
        past ``children_after`` steps is marked to open as a child issue of its own.
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
            own_issue = child_slot(step, children_after) is not None
            inserted = db.execute(
                "INSERT INTO tickets (request_key, request_id, state, created_at, deadline,"
                " updated_at, request, client, step, thread_id, parent_id, own_issue)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    request_key,
                    request_id,
                    TicketState.CREATING,
                    to_timestamp(created),
                    to_timestamp(deadline),
                    to_timestamp(created),
                    request,
                    client,
                    step,
                    thread_id,
                    parent_id,
                    int(own_issue),
                ),
            )
            ticket_id = int(inserted.fetchone()[0])
            if thread_id is None:
                db.execute("UPDATE tickets SET thread_id = id WHERE id = ?", (ticket_id,))
        ticket = self.get_ticket(ticket_id)
        assert ticket is not None
        return ticket

    def set_issue(self, ticket_id: int, *, number: int, url: str, now: datetime) -> Ticket:
        """Record the GitHub issue of a ticket and move it from ``creating`` to ``open``."""
        with self._transaction() as db:
            db.execute(
                "UPDATE tickets SET issue_number = ?, issue_url = ?, updated_at = ?,"
                " state = CASE state WHEN ? THEN ? ELSE state END WHERE id = ?",
                (number, url, to_timestamp(now), TicketState.CREATING, TicketState.OPEN, ticket_id),
            )
        ticket = self.get_ticket(ticket_id)
        assert ticket is not None
        return ticket

    def request_for(self, ticket_id: int) -> str | None:
        """Return the stored request of a ticket (JSON), if any."""
        request: str | None = self._scalar("SELECT request FROM tickets WHERE id = ?", (ticket_id,))
        return request

    def ticket_for_issue(self, number: int) -> Ticket | None:
        """Return the ticket whose issue has this number."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE issue_number = ? ORDER BY id DESC LIMIT 1", (number,)
        ).fetchone()
        return None if row is None else ticket_from_row(row)

    def pending_tickets(self) -> list[Ticket]:
        """Return every ticket still waiting for an answer, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state IN (?, ?, ?) ORDER BY id",
            tuple(PENDING_STATES),
        ).fetchall()
        return [ticket_from_row(row) for row in rows]

    def overdue_tickets(self, now: datetime) -> list[Ticket]:
        """Return the tickets still waiting whose deadline is ``now`` or earlier, oldest first."""
        # Read every poll: the rows of all pending tickets (thousands) would be built each time.
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state IN (?, ?, ?) AND deadline <= ? ORDER BY id",
            (*PENDING_STATES, to_timestamp(now)),
        ).fetchall()
        return [ticket_from_row(row) for row in rows]

    def count_pending(self) -> int:
        """Count tickets still waiting for an answer."""
        return int(
            self._scalar(
                "SELECT COUNT(*) FROM tickets WHERE state IN (?, ?, ?)", tuple(PENDING_STATES)
            )
        )

    def expire(self, ticket_id: int, *, now: datetime) -> bool:
        """Mark a pending ticket expired; return False when it was no longer pending."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tickets SET state = ?, updated_at = ? WHERE id = ? AND state IN (?, ?, ?)",
                (TicketState.EXPIRED, to_timestamp(now), ticket_id, *PENDING_STATES),
            )
            return cursor.rowcount == 1

    def recently_expired(self, *, since: datetime) -> list[Ticket]:
        """Return the tickets that expired at or after ``since``, oldest first."""
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE state = ? AND updated_at >= ? ORDER BY id",
            (TicketState.EXPIRED, to_timestamp(since)),
        ).fetchall()
        return [ticket_from_row(row) for row in rows]

    # --- threads (one issue per agent run) -------------------------------------------------

    def link_reply(self, fingerprint: str, ticket_id: int) -> None:
        """Remember that ticket ``ticket_id`` gave the reply with this fingerprint."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO thread_replies (fingerprint, ticket_id) VALUES (?, ?)"
                " ON CONFLICT (fingerprint) DO UPDATE SET ticket_id = excluded.ticket_id",
                (fingerprint, ticket_id),
            )

    def ticket_for_reply(self, fingerprint: str) -> Ticket | None:
        """Return the ticket that gave the reply with this fingerprint, if any."""
        row = self._db.execute(
            "SELECT t.* FROM thread_replies r JOIN tickets t ON t.id = r.ticket_id"
            " WHERE r.fingerprint = ?",
            (fingerprint,),
        ).fetchone()
        return None if row is None else ticket_from_row(row)

    def name_thread(self, name_key: str, thread_id: int) -> None:
        """Point a client's thread name at an agent run (the newest run with that name wins)."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO thread_names (name_key, thread_id) VALUES (?, ?)"
                " ON CONFLICT (name_key) DO UPDATE SET thread_id = excluded.thread_id",
                (name_key, thread_id),
            )

    def thread_for_name(self, name_key: str) -> int | None:
        """Return the agent run a client's thread name points at, if any."""
        thread_id = self._scalar(
            "SELECT thread_id FROM thread_names WHERE name_key = ?", (name_key,)
        )
        return None if thread_id is None else int(thread_id)

    def ticket_at_step(self, thread_id: int, step: int) -> Ticket | None:
        """Return step ``step`` of an agent run, if it exists."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE thread_id = ? AND step = ? ORDER BY id LIMIT 1",
            (thread_id, step),
        ).fetchone()
        return None if row is None else ticket_from_row(row)

    def own_issue_steps(self, thread_id: int, first: int, last: int) -> list[Ticket]:
        """Return the steps ``first`` to ``last`` of a run that have issues of their own."""
        rows = self._db.execute(
            "SELECT * FROM tickets WHERE thread_id = ? AND own_issue = 1 AND step BETWEEN ? AND ?"
            " AND issue_number IS NOT NULL ORDER BY step",
            (thread_id, first, last),
        ).fetchall()
        return [ticket_from_row(row) for row in rows]

    def newest_in_thread(self, thread_id: int) -> Ticket | None:
        """Return the newest step of an agent run."""
        row = self._db.execute(
            "SELECT * FROM tickets WHERE thread_id = ? ORDER BY step DESC, id DESC LIMIT 1",
            (thread_id,),
        ).fetchone()
        return None if row is None else ticket_from_row(row)

    def latest_thread_of_client(self, client: str) -> int | None:
        """Return the agent run this client's newest ticket on GitHub belongs to, if any."""
        thread_id = self._scalar(
            "SELECT thread_id FROM tickets WHERE client = ? AND issue_number IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            (client,),
        )
        return None if thread_id is None else int(thread_id)
