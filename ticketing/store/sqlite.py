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
from ticketing.store.sqlite_database import SQLiteDatabase


class SQLiteTicketStore(
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
    SQLiteDatabase,
):
    """SQLite-backed durable state for tickets, answers, used ``jti``s and the poll cursor."""
