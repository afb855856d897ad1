"""MCP tasks on the wire (specification 2025-11-25, "Tasks"): parameters in, tasks out.

Pure: no I/O, no clock. A task's status is read from its ticket: ``working`` while the
ticket waits (also while its answer is under review), ``completed`` once answered,
``failed`` when ``ask_team``'s ticket expired unanswered (its result is a tool error), and
``cancelled`` once the client canceled it. An expired ``request_approval`` completes: its
result is ``approved: false``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ticketing.desk import Outcome
from ticketing.store.tool_tasks import StoredToolTask

from .wire import InvalidParams

__all__ = [
    "RELATED_TASK",
    "TERMINAL",
    "next_cursor",
    "read_cursor",
    "read_task_id",
    "read_ttl",
    "related",
    "status_of",
    "task_json",
]

RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
# How often a client polling tasks/get is asked to come back, in milliseconds.
POLL_INTERVAL_MS = 5_000
DEFAULT_TTL_MS = 24 * 3600 * 1000
MAX_TTL_MS = 30 * 24 * 3600 * 1000


def read_ttl(task: object) -> int:
    """Return the task's time to live the call asked for (bounded), in milliseconds."""
    if not isinstance(task, dict):
        raise InvalidParams('`task` must be an object, such as {"ttl": 60000}.')
    ttl = task.get("ttl", DEFAULT_TTL_MS)
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise InvalidParams("`task.ttl` must be a positive number of milliseconds.")
    return min(ttl, MAX_TTL_MS)


def next_cursor(last: StoredToolTask) -> str:
    """Return the opaque ``nextCursor`` of the page that ended with ``last``."""
    position = json.dumps([last.created_at.timestamp(), last.task_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(position.encode()).decode().rstrip("=")


def read_cursor(params: Mapping[str, Any]) -> tuple[datetime, str] | None:
    """Return where a ``tasks/list`` page starts: after the cursor's task (None: the first)."""
    cursor = params.get("cursor")
    if cursor is None:
        return None
    position = _position(cursor) if isinstance(cursor, str) else None
    if position is None:
        raise InvalidParams(
            "`cursor` is not one this server gave: pass a tasks/list nextCursor as it was."
        )
    return position


def _position(cursor: str) -> tuple[datetime, str] | None:
    """Return the creation time and id a cursor carries, or None if it carries none."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, list) or len(decoded) != 2:
        return None
    seconds, task_id = decoded
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return None
    if not isinstance(task_id, str):
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC), task_id
    except (ValueError, OverflowError, OSError):
        return None


def read_task_id(params: Mapping[str, Any]) -> str:
    """Return the ``taskId`` of a tasks/get, tasks/result or tasks/cancel."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("`taskId` must be the id a task-augmented call returned.")
    return task_id


def status_of(task: StoredToolTask, outcome: Outcome | None) -> str:
    """Return the task's status from its cancel and its ticket's outcome (None: waiting)."""
    if task.canceled_at is not None:
        return "cancelled"
    if outcome is None:
        return "working"
    if outcome.release is None and task.tool == "ask_team":
        return "failed"
    return "completed"


_MESSAGES = {
    "working": "Waiting for the team's signed answer on {url}.",
    "completed": "The team answered on {url}.",
    "failed": "Nobody answered before the deadline on {url}.",
    "cancelled": "Cancelled; the ticket {url} was closed.",
}


def task_json(
    task: StoredToolTask, status: str, *, url: str, updated: datetime | None = None
) -> dict[str, Any]:
    """Return the task as MCP's ``Task`` object."""
    changed = task.canceled_at or updated or task.created_at
    return {
        "taskId": task.task_id,
        "status": status,
        "statusMessage": _MESSAGES[status].format(url=url or "its ticket"),
        "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(changed),
        "ttl": task.ttl_ms,
        "pollInterval": POLL_INTERVAL_MS,
    }


def related(result: Mapping[str, Any], task_id: str) -> dict[str, Any]:
    """Return a task's result with the ``_meta`` that names its task."""
    meta = {**result.get("_meta", {}), RELATED_TASK: {"taskId": task_id}}
    return {**result, "_meta": meta}


def _iso(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")
