"""The ticket store on PostgreSQL, for replicas on several hosts.

:class:`PostgresTicketStore` is the same parts as
:class:`~ticketing.store.sqlite.SQLiteTicketStore` (their SQL runs on both databases),
composed over :class:`~ticketing.store.postgres_database.PostgresDatabase`: a connection
pool, migrations under an advisory lock, and write transactions that are serialised across
replicas as SQLite's are across processes. ``TICKETPROXY_DATABASE_URL`` selects it.
"""

from __future__ import annotations

from ticketing.store.postgres_database import PostgresDatabase
from ticketing.store.sqlite_answers import SQLiteAnswers
from ticketing.store.sqlite_delegations import SQLiteDelegations
from ticketing.store.sqlite_drafts import SQLiteDrafts
from ticketing.store.sqlite_github_events import SQLiteGitHubEvents
from ticketing.store.sqlite_responses import SQLiteResponses
from ticketing.store.sqlite_tasks import SQLiteTasks
from ticketing.store.sqlite_tickets import SQLiteTickets
from ticketing.store.sqlite_tool_tasks import SQLiteToolTasks
from ticketing.store.sqlite_write_queue import SQLiteWriteQueue


class PostgresTicketStore(
    SQLiteTickets,
    SQLiteAnswers,
    SQLiteWriteQueue,
    SQLiteDrafts,
    SQLiteGitHubEvents,
    SQLiteResponses,
    SQLiteTasks,
    SQLiteToolTasks,
    SQLiteDelegations,
    PostgresDatabase,
):
    """PostgreSQL-backed durable state, shared by replicas on any number of hosts."""
