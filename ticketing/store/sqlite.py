"""The durable ticket store ticketproxy runs on: SQLite, in WAL mode.

Everything a restart must not lose lives here: tickets and their state, accepted answers
and whether they were delivered, the ``jti`` of every accepted signature, which comments
the bot already replied to, and the poll cursor. An answer is committed here before it is
returned to any client, and acceptance is one transaction that checks the ticket is still
open, so the first valid answer wins and no answer is delivered to two tickets.

:class:`SQLiteTicketStore` composes one class per part of that state (their SQL is shared
with :mod:`ticketing.store.postgres`), all over the one connection of
:class:`~ticketing.store.sqlite_database.SQLiteDatabase`. It is used from
the event-loop thread only; every call is a short local transaction.
"""

from __future__ import annotations

from ticketing.store.sqlite_answers import SQLiteAnswers
from ticketing.store.sqlite_database import SQLiteDatabase
from ticketing.store.sqlite_delegations import SQLiteDelegations
from ticketing.store.sqlite_drafts import SQLiteDrafts
from ticketing.store.sqlite_github_events import SQLiteGitHubEvents
from ticketing.store.sqlite_responses import SQLiteResponses
from ticketing.store.sqlite_tasks import SQLiteTasks
from ticketing.store.sqlite_tickets import SQLiteTickets
from ticketing.store.sqlite_tool_tasks import SQLiteToolTasks
from ticketing.store.sqlite_write_queue import SQLiteWriteQueue


class SQLiteTicketStore(
    SQLiteTickets,
    SQLiteAnswers,
    SQLiteWriteQueue,
    SQLiteDrafts,
    SQLiteGitHubEvents,
    SQLiteResponses,
    SQLiteTasks,
    SQLiteToolTasks,
    SQLiteDelegations,
    SQLiteDatabase,
):
    """SQLite-backed durable state for tickets, answers, used ``jti``s and the poll cursor."""
