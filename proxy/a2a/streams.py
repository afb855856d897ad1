"""A2A's streaming methods, ``SendStreamingMessage`` and ``SubscribeToTask``, as SSE.

Each stream begins with the Task, then sends a ``statusUpdate`` whenever its state changes
and an ``artifactUpdate`` for each new artifact, and closes once the task completes, fails,
is canceled or needs input (the client answers with its next message). While people think,
an SSE comment every ``TICKETPROXY_HEARTBEAT_INTERVAL`` seconds keeps the connection open.
A refusal before the stream opens is a plain JSON-RPC error; if the server stops meanwhile,
an ``error`` event says to subscribe again.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ticketing.errors import DeskStopped
from ticketing.store.task_records import StepStatus

from ..agent_protocol.routes import task_desk
from ..handlers import SETTINGS
from ..middleware import CLIENT
from .adapter import start_message, view_of
from .tasks import (
    SETTLED_STATES,
    TERMINAL_STATES,
    artifact_events,
    state_of,
    status_event,
    task_json,
)
from .wire import (
    A2AError,
    Call,
    UnsupportedOperationError,
    error_json,
    read_message,
    read_task_query,
    result_json,
)

__all__ = ["STREAM_METHODS"]

StreamMethod = Callable[[web.Request, Call], Awaitable[web.StreamResponse]]


class _Restarting(A2AError):
    code, reason = -32603, "SERVER_STOPPING"


async def send_streaming_message(request: web.Request, call: Call) -> web.StreamResponse:
    """``SendStreamingMessage``: the task, then its updates until it settles."""
    incoming = read_message(call.params)
    task_id = await start_message(request, incoming, wait=0)
    return await _stream(request, call, task_id, incoming.history_length)


async def subscribe_to_task(request: web.Request, call: Call) -> web.StreamResponse:
    """``SubscribeToTask``: the task as it is, then its updates until it settles."""
    task_id, history_length = read_task_query(call.params)
    view = view_of(task_desk(request), request[CLIENT], task_id, files=False)
    state = state_of(view)
    if state in TERMINAL_STATES:
        raise UnsupportedOperationError(
            f"Task {task_id!r} is {state.removeprefix('TASK_STATE_').lower()}: it will not "
            "change again, so there is nothing to subscribe to (GetTask shows it)."
        )
    return await _stream(request, call, task_id, history_length)


async def _send(response: web.StreamResponse, call: Call, result: dict[str, Any]) -> None:
    data = json.dumps(result_json(call.id, result), ensure_ascii=False)
    await response.write(f"data: {data}\n\n".encode())


async def _stream(
    request: web.Request, call: Call, task_id: str, history_length: int | None
) -> web.StreamResponse:
    tasks, client = task_desk(request), request[CLIENT]
    heartbeat = request.app[SETTINGS].heartbeat_interval
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
    )
    await response.prepare(request)
    view = view_of(tasks, client, task_id)
    first = task_json(view, history_length=history_length)
    await _send(response, call, {"task": first})
    seen = {artifact["artifactId"] for artifact in first.get("artifacts", [])}
    state = state_of(view)
    try:
        while state not in SETTLED_STATES:
            step = view.newest
            if step is None or step.status is not StepStatus.RUNNING:
                await asyncio.sleep(heartbeat)  # its ticket is not open yet (GitHub was busy)
            else:
                await tasks.wait(step, heartbeat)
            view = view_of(tasks, client, task_id)
            for event in artifact_events(view, seen):
                await _send(response, call, event)
            if state_of(view) != state:
                state = state_of(view)
                await _send(response, call, status_event(view))
            else:
                await response.write(b": people are still thinking\n\n")
    except DeskStopped:
        stopping = _Restarting(
            "ticketproxy is restarting: call SubscribeToTask again to follow the task."
        )
        data = json.dumps(error_json(call.id, stopping))
        await response.write(f"event: error\ndata: {data}\n\n".encode())
    await response.write_eof()
    return response


STREAM_METHODS: dict[str, StreamMethod] = {
    "SendStreamingMessage": send_streaming_message,
    "SubscribeToTask": subscribe_to_task,
}
