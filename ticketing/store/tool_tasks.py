"""MCP tasks: a tool call a client polls instead of waiting on, its record and its store.

Pure apart from the protocol. A task names the ticket its call opened (or re-attached to)
and the client key it belongs to; its state is read from that ticket, so only the call,
the ticket and a cancel are kept. Kept durably, so a task survives a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = ["StoredToolTask", "ToolTaskStore"]


@dataclass(frozen=True)
class StoredToolTask:
    """A task-augmented tool call: which tool, with which arguments, on which ticket."""

    task_id: str
    client: str
    tool: str
    # The call's arguments, as JSON.
    arguments: str
    ticket_id: int
    ttl_ms: int
    created_at: datetime
    canceled_at: datetime | None = None


class ToolTaskStore(Protocol):
    """MCP tasks, each private to the client key that created it."""

    def keep_tool_task(self, task: StoredToolTask) -> None:
        """Store a new task."""
        ...

    def tool_task(self, client: str, task_id: str) -> StoredToolTask | None:
        """Return this client's task, or None (also for another client's)."""
        ...

    def tool_tasks(
        self, client: str, limit: int, *, before: tuple[datetime, str] | None = None
    ) -> list[StoredToolTask]:
        """Return this client's newest tasks, newest first; only older than ``before``.

        ``before`` is the creation time and id of the last task of the previous page.
        """
        ...

    def cancel_tool_task(self, client: str, task_id: str, *, now: datetime) -> bool:
        """Record the task canceled; False if it was not this client's or already canceled."""
        ...
