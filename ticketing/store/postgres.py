"""The ticket store on PostgreSQL, for replicas on several hosts.

:class:`PostgresTicketStore` is the same parts as
:class:`~ticketing.store.sqlite.SQLiteTicketStore` (their SQL runs on both databases),
composed over :class:`~ticketing.store.postgres_database.PostgresDatabase`: a connection
pool, migrations under an advisory lock, and write transactions that are serialised across
replicas as SQLite's are across processes. ``TICKETPROXY_DATABASE_URL`` selects it.
"""

from __future__ import annotations

from ticketing.store.postgres_database import PostgresDatabase
from ticketing.store.sql_answers import SQLAnswers
from ticketing.store.sql_delegations import SQLDelegations
from ticketing.store.sql_drafts import SQLDrafts
from ticketing.store.sql_github_events import SQLGitHubEvents
from ticketing.store.sql_issuer_keys import SQLIssuerKeys
from ticketing.store.sql_responses import SQLResponses
from ticketing.store.sql_tasks import SQLTasks
from ticketing.store.sql_tickets import SQLTickets
from ticketing.store.sql_tool_tasks import SQLToolTasks
from ticketing.store.sql_write_queue import SQLWriteQueue


class PostgresTicketStore(
    SQLTickets,
    SQLAnswers,
    SQLWriteQueue,
    SQLDrafts,
    SQLGitHubEvents,
    SQLResponses,
    SQLTasks,
    SQLToolTasks,
    SQLDelegations,
    SQLIssuerKeys,
    PostgresDatabase,
):
    """PostgreSQL-backed durable state, shared by replicas on any number of hosts."""
