"""A2A 1.0 over JSON-RPC at ``/a2a``, and its agent card: a thin adapter over TaskDesk.

A message without a ``taskId`` creates a task (its issue opens with the first step); one
with a ``taskId`` is that task's next step, accepted while the task needs input. The wire
is :mod:`.wire` (calls, parameters, errors) and :mod:`.tasks` (records as A2A objects), both
pure; the streaming methods are in :mod:`.streams`.

``SendMessage`` waits for the task to complete or need input, at most
``TICKETPROXY_STEP_WAIT`` seconds (then the task comes back working), or returns at once
with ``configuration.returnImmediately``. Tasks are private to their client key, as runs
are: another key's task is not found.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ticketing.store.task_records import Page

from ..agent_protocol.routes import public_origin, task_desk
from ..bodies import read_body
from ..errors import APIError
from ..fronts import Front, door_front, register_front
from ..handlers import SETTINGS
from ..middleware import CLIENT
from .adapter import start_message, task_errors, view_of
from .card import agent_card
from .streams import STREAM_METHODS
from .tasks import state_of, status_time, task_json
from .wire import (
    PROTOCOL_VERSION,
    A2AError,
    Call,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
    call_id_of,
    check_version,
    error_json,
    read_call,
    read_list_query,
    read_message,
    read_task_query,
    result_json,
)

__all__ = ["A2A_PATH", "CARD_PATH", "install_a2a"]

A2A_PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
VERSION_HEADER = "A2A-Version"
# Every task of a client, for ListTasks' filters and its order (newest status first).
_ALL_TASKS = Page(1, 1_000_000)

Method = Callable[[web.Request, Call], Awaitable[dict[str, Any]]]


def envelope(error: APIError) -> dict[str, Any]:
    """Return a refusal made before the call was read (key, origin, size) as JSON-RPC's."""
    code = -32603 if error.status >= 500 else -32600
    reason = (error.code or error.type).upper()
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}
    return {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": error.message, "data": [info]},
    }


# Registered as a front only for the middleware: its error envelope and where its key is.
A2A_FRONT: Front[None] = door_front("a2a", envelope)


def install_a2a(app: web.Application) -> None:
    """Serve A2A 1.0's JSON-RPC binding at ``/a2a`` and the public agent card."""
    register_front(app, A2A_PATH, A2A_FRONT)
    app.router.add_get(CARD_PATH, get_agent_card)
    app.router.add_post(A2A_PATH, call_method)


def _version() -> str:
    try:
        return importlib.metadata.version("ticketproxy")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def get_agent_card(request: web.Request) -> web.Response:
    """``GET /.well-known/agent-card.json``: public, no client key needed."""
    card = agent_card(public_origin(request) + A2A_PATH, version=_version())
    return web.json_response(card, headers={"Cache-Control": "public, max-age=300"})


async def call_method(request: web.Request) -> web.StreamResponse:
    """``POST /a2a``: one JSON-RPC call; errors are JSON-RPC error objects (HTTP 200)."""
    settings = request.app[SETTINGS]
    raw = await read_body(
        request,
        limit=settings.max_body_bytes,
        refusal="The call is larger than this ticketproxy accepts (TICKETPROXY_MAX_BODY_BYTES).",
        within=settings.body_timeout,
        setting="TICKETPROXY_BODY_TIMEOUT",
    )
    try:
        call = read_call(raw)
        check_version(request.headers.get(VERSION_HEADER) or request.query.get(VERSION_HEADER))
        stream = STREAM_METHODS.get(call.method)
        if stream is not None:
            return await stream(request, call)
        method = METHODS.get(call.method)
        if method is None:
            raise MethodNotFoundError(
                f"Method {call.method!r} does not exist in A2A {PROTOCOL_VERSION} or is not "
                f"served here: this agent serves {', '.join(sorted([*METHODS, *STREAM_METHODS]))}."
            )
        result = await method(request, call)
    except A2AError as exc:
        return web.json_response(error_json(call_id_of(raw), exc))
    return web.json_response(result_json(call.id, result))


async def send_message(request: web.Request, call: Call) -> dict[str, Any]:
    """``SendMessage``: wait until the task completes or needs input (bounded), or not."""
    incoming = read_message(call.params)
    wait = 0.0 if incoming.return_immediately else request.app[SETTINGS].step_wait
    task_id = await start_message(request, incoming, wait=wait)
    view = view_of(task_desk(request), request[CLIENT], task_id)
    return {"task": task_json(view, history_length=incoming.history_length)}


async def get_task(request: web.Request, call: Call) -> dict[str, Any]:
    """``GetTask``: the task as it is now, its newest step brought up to date."""
    task_id, history_length = read_task_query(call.params)
    view = view_of(task_desk(request), request[CLIENT], task_id)
    return task_json(view, history_length=history_length)


async def cancel_task(request: web.Request, call: Call) -> dict[str, Any]:
    """``CancelTask``: close the running step's ticket and record the task canceled."""
    task_id, history_length = read_task_query(call.params)
    tasks, client = task_desk(request), request[CLIENT]
    with task_errors(task_id):
        tasks.cancel(client, task_id)
    return task_json(view_of(tasks, client, task_id), history_length=history_length)


async def list_tasks(request: web.Request, call: Call) -> dict[str, Any]:
    """``ListTasks``: this key's tasks, newest status first, filtered and paged."""
    query = read_list_query(call.params)
    tasks, client = task_desk(request), request[CLIENT]
    found, _ = tasks.tasks(client, _ALL_TASKS)
    views = [
        view_of(tasks, client, task.task_id, files=query.include_artifacts)
        for task in found
        if query.context_id in (None, task.task_id)
    ]
    if query.status is not None:
        views = [view for view in views if state_of(view) == query.status]
    views.sort(key=status_time, reverse=True)
    page = views[query.offset : query.offset + query.page_size]
    after = query.offset + len(page)
    return {
        "tasks": [
            task_json(
                view,
                history_length=query.history_length,
                include_artifacts=query.include_artifacts,
            )
            for view in page
        ],
        "nextPageToken": str(after) if after < len(views) else "",
        "pageSize": query.page_size,
        "totalSize": len(views),
    }


async def no_push_notifications(request: web.Request, call: Call) -> dict[str, Any]:
    """The push notification config methods: the card offers none (§3.3.4)."""
    raise PushNotificationNotSupportedError(
        "This agent sends no push notifications (its card says pushNotifications: false): "
        "follow a task with SubscribeToTask or GetTask."
    )


async def no_extended_card(request: web.Request, call: Call) -> dict[str, Any]:
    """``GetExtendedAgentCard``: the card offers none (§3.3.4)."""
    raise UnsupportedOperationError(
        "This agent has no extended card: the public one at /.well-known/agent-card.json is all."
    )


METHODS: dict[str, Method] = {
    "SendMessage": send_message,
    "GetTask": get_task,
    "ListTasks": list_tasks,
    "CancelTask": cancel_task,
    "CreateTaskPushNotificationConfig": no_push_notifications,
    "GetTaskPushNotificationConfig": no_push_notifications,
    "ListTaskPushNotificationConfigs": no_push_notifications,
    "DeleteTaskPushNotificationConfig": no_push_notifications,
    "GetExtendedAgentCard": no_extended_card,
}
