"""MCP tasks (specification 2025-11-25): a tool call a client polls, across reconnects.

A task-augmented ``tools/call`` opens (or re-attaches to) its ticket and returns the task at
once; ``tasks/get`` reads its status from the ticket, ``tasks/result`` waits for the
outcome as ``tools/call`` does (progress over SSE), ``tasks/list`` lists the client's
tasks and ``tasks/cancel`` closes the ticket (``Desk.expire``). Tasks are kept in the store
(:class:`ticketing.store.tool_tasks.ToolTaskStore`), private to their client key: another
key's task is not found.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from ticketing.desk import Desk, Outcome
from ticketing.store.model import Ticket
from ticketing.store.tool_tasks import StoredToolTask

from ..handlers import DESK
from ..middleware import CLIENT
from .task_wire import (
    TERMINAL,
    next_cursor,
    read_cursor,
    read_task_id,
    related,
    status_of,
    task_json,
)
from .tools import REQUEST_APPROVAL, ToolCall
from .waiting import answer_when_settled, tool_result
from .wire import InvalidParams, Message, result_json

__all__ = ["TASK_METHODS", "start_task"]

# tasks/list gives this many of the client's tasks a page; nextCursor leads to the next.
PAGE_SIZE = 20

TaskMethod = Callable[[web.Request, Message], Awaitable[web.StreamResponse]]


def start_task(request: web.Request, call: ToolCall, ticket: Ticket, ttl: int) -> dict[str, Any]:
    """Record a task for the call's ticket; return ``CreateTaskResult``."""
    desk = request.app[DESK]
    stored = StoredToolTask(
        task_id=f"task_{secrets.token_urlsafe(18)}",
        client=request[CLIENT],
        tool=call.name,
        arguments=json.dumps(dict(call.arguments), ensure_ascii=False),
        ticket_id=ticket.id,
        ttl_ms=ttl,
        created_at=desk.clock(),
    )
    desk.store.keep_tool_task(stored)
    return {"task": task_json(stored, "working", url=ticket.issue_url or "")}


def _found(request: web.Request, message: Message) -> tuple[StoredToolTask, Ticket]:
    """Return the client's task named in the message, and its ticket; refuse any other."""
    task_id = read_task_id(message.params)
    store = request.app[DESK].store
    task = store.tool_task(request[CLIENT], task_id)
    ticket = None if task is None else store.get_ticket(task.ticket_id)
    if task is None or ticket is None:
        raise InvalidParams(
            f"Task {task_id!r} was not found (tasks are private to the client key that "
            "created them)."
        )
    return task, ticket


def _settled(desk: Desk, task: StoredToolTask, ticket: Ticket) -> Outcome | None:
    """Return the task's outcome so far: an approval also ends on a reviewer's rejection."""
    return desk.settled(ticket, rejection=task.tool == REQUEST_APPROVAL["name"])


def _view(desk: Desk, task: StoredToolTask, ticket: Ticket) -> dict[str, Any]:
    outcome = _settled(desk, task, ticket)
    updated = None if outcome is None or outcome.answer is None else outcome.answer.accepted_at
    return task_json(task, status_of(task, outcome), url=ticket.issue_url or "", updated=updated)


async def get_task(request: web.Request, message: Message) -> web.StreamResponse:
    """``tasks/get``: the task's status, read from its ticket without waiting."""
    task, ticket = _found(request, message)
    return web.json_response(result_json(message.id, _view(request.app[DESK], task, ticket)))


async def list_tasks(request: web.Request, message: Message) -> web.StreamResponse:
    """``tasks/list``: the client's tasks, newest first, a page at a time (``cursor``)."""
    desk = request.app[DESK]
    before = read_cursor(message.params)
    # One more than a page: whether it comes says whether there is a next page.
    tasks = desk.store.tool_tasks(request[CLIENT], PAGE_SIZE + 1, before=before)
    page = tasks[:PAGE_SIZE]
    views = []
    for task in page:
        ticket = desk.store.get_ticket(task.ticket_id)
        if ticket is not None:
            views.append(_view(desk, task, ticket))
    result: dict[str, Any] = {"tasks": views}
    if len(tasks) > PAGE_SIZE:
        result["nextCursor"] = next_cursor(page[-1])
    return web.json_response(result_json(message.id, result))


async def task_result(request: web.Request, message: Message) -> web.StreamResponse:
    """``tasks/result``: wait for the task's outcome and return the tool's result."""
    task, ticket = _found(request, message)
    if task.canceled_at is not None:
        raise InvalidParams(f"Task {task.task_id!r} was cancelled: it has no result.")
    call = ToolCall(task.tool, json.loads(task.arguments))
    render = partial(_related_result, request.app[DESK], call, task.task_id)
    return await answer_when_settled(request, message, ticket, render, rejection=call.approval)


def _related_result(desk: Desk, call: ToolCall, task_id: str, outcome: Outcome) -> dict[str, Any]:
    return related(tool_result(desk, call, outcome), task_id)


async def cancel_task(request: web.Request, message: Message) -> web.StreamResponse:
    """``tasks/cancel``: close the waiting ticket and record the task cancelled."""
    desk = request.app[DESK]
    task, ticket = _found(request, message)
    status = status_of(task, _settled(desk, task, ticket))
    if status in TERMINAL:
        raise InvalidParams(f"Task {task.task_id!r} is already {status}: it cannot be cancelled.")
    desk.expire(ticket)
    desk.store.cancel_tool_task(task.client, task.task_id, now=desk.clock())
    task, ticket = _found(request, message)
    return web.json_response(result_json(message.id, _view(desk, task, ticket)))


TASK_METHODS: dict[str, TaskMethod] = {
    "tasks/get": get_task,
    "tasks/list": list_tasks,
    "tasks/result": task_result,
    "tasks/cancel": cancel_task,
}
