"""MCP tasks in the ticket store, SQLite or PostgreSQL (see :mod:`ticketing.store.tool_tasks`)."""

from __future__ import annotations

from datetime import datetime

from ticketing.store.model import Row, record_from_row
from ticketing.store.sql_database import (
    SQLDatabase,
    from_optional_timestamp,
    from_timestamp,
    to_timestamp,
)
from ticketing.store.tool_tasks import StoredToolTask


def _task(row: Row) -> StoredToolTask:
    return record_from_row(
        StoredToolTask, row, created_at=from_timestamp, canceled_at=from_optional_timestamp
    )


class SQLToolTasks(SQLDatabase):
    """MCP tasks, in SQL that SQLite and PostgreSQL both run."""

    def keep_tool_task(self, task: StoredToolTask) -> None:
        """Store a new task."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO tool_tasks (task_id, client, tool, arguments, ticket_id, ttl_ms,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    task.task_id,
                    task.client,
                    task.tool,
                    task.arguments,
                    task.ticket_id,
                    task.ttl_ms,
                    to_timestamp(task.created_at),
                ),
            )

    def tool_task(self, client: str, task_id: str) -> StoredToolTask | None:
        """Return this client's task, or None (also for another client's)."""
        row = self._db.execute(
            "SELECT * FROM tool_tasks WHERE task_id = ? AND client = ?", (task_id, client)
        ).fetchone()
        return None if row is None else _task(row)

    def tool_tasks(
        self, client: str, limit: int, *, before: tuple[datetime, str] | None = None
    ) -> list[StoredToolTask]:
        """Return this client's newest tasks, newest first; only older than ``before``.

        ``before`` is the creation time and id of the last task of the previous page.
        """
        if before is None:
            rows = self._db.execute(
                "SELECT * FROM tool_tasks WHERE client = ?"
                " ORDER BY created_at DESC, task_id DESC LIMIT ?",
                (client, limit),
            ).fetchall()
        else:
            created, task_id = to_timestamp(before[0]), before[1]
            rows = self._db.execute(
                "SELECT * FROM tool_tasks WHERE client = ?"
                " AND (created_at < ? OR (created_at = ? AND task_id < ?))"
                " ORDER BY created_at DESC, task_id DESC LIMIT ?",
                (client, created, created, task_id, limit),
            ).fetchall()
        return [_task(row) for row in rows]

    def cancel_tool_task(self, client: str, task_id: str, *, now: datetime) -> bool:
        """Record the task canceled; False if it was not this client's or already canceled."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE tool_tasks SET canceled_at = ?"
                " WHERE task_id = ? AND client = ? AND canceled_at IS NULL",
                (to_timestamp(now), task_id, client),
            )
            return cursor.rowcount == 1
