"""MCP's streamable HTTP transport at ``/mcp``: a thin adapter over the desk's life cycle.

The client key is a bearer token and a foreign ``Origin`` is refused (the front door does
both before this module sees the request, as for ``/v1``). ``initialize``, ``ping`` and
``tools/list`` are answered with JSON. ``tools/call`` opens (or re-attaches to) the ticket
through ``Desk.submit`` and waits on ``Desk.watch`` (:mod:`.waiting`: progress over SSE
while people think), or, task-augmented, returns a task at once (:mod:`.tasks`, which also
serves ``tasks/*``). No session is kept:
the ``Mcp-Session-Id`` given at ``initialize`` only carries the client's name (see
:func:`proxy.mcp.wire.new_session_id`), so any replica, or this one after a restart, serves
the next call.
"""

from __future__ import annotations

import importlib.metadata
import logging
from functools import partial
from typing import Any

from aiohttp import web

from auth.errors import KeyringError
from ticketing.desk import Desk

from ..bodies import read_body
from ..errors import APIError, MethodNotAllowed
from ..fronts import Front, door_front, register_front
from ..handlers import DESK, SETTINGS
from ..middleware import CLIENT, REQUEST_ID
from .addressing import Addressee, resolve_addressee
from .task_wire import read_ttl
from .tasks import TASK_METHODS, start_task
from .tools import TOOLS, read_tool_call, refused_result, tool_request
from .waiting import answer_when_settled, tool_result
from .wire import (
    SUPPORTED_VERSIONS,
    InvalidParams,
    McpError,
    Message,
    MethodNotFound,
    agent_of_session,
    error_json,
    negotiate_version,
    new_session_id,
    read_message,
    result_json,
)

__all__ = ["MCP_PATH", "install_mcp"]

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
_INSTRUCTIONS = (
    "Use ask_team when you need a person's decision or knowledge, and request_approval "
    "before a risky action. Answers are signed by people and may take minutes or hours."
)


def _envelope(error: APIError) -> dict[str, Any]:
    """Return a refusal made before the message was read (key, origin, size) as JSON-RPC's."""
    code = -32603 if error.status >= 500 else -32600
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": error.message}}


# Registered as a front only for the front door: its error envelope and where its key is.
MCP_FRONT: Front[None] = door_front("mcp", _envelope)


def install_mcp(app: web.Application) -> None:
    """Serve MCP's streamable HTTP transport at ``/mcp``."""
    register_front(app, MCP_PATH, MCP_FRONT)
    app.router.add_post(MCP_PATH, post_message)
    app.router.add_get(MCP_PATH, no_stream)
    app.router.add_delete(MCP_PATH, no_stream)


async def no_stream(request: web.Request) -> web.StreamResponse:
    """``GET`` and ``DELETE /mcp``: no server-initiated stream, no session to end (405)."""
    raise MethodNotAllowed(
        f"{request.method} {MCP_PATH} is not served: this server sends nothing unasked and "
        "keeps no session; POST each JSON-RPC message.",
        code="method_not_allowed",
    )


def _version() -> str:
    try:
        return importlib.metadata.version("ticketproxy")
    except importlib.metadata.PackageNotFoundError:
        return "0"


async def post_message(request: web.Request) -> web.StreamResponse:
    """``POST /mcp``: one JSON-RPC message; a request is answered, a notification taken."""
    settings = request.app[SETTINGS]
    raw = await read_body(
        request,
        limit=settings.max_body_bytes,
        refusal="The message is larger than this ticketproxy accepts (TICKETPROXY_MAX_BODY_BYTES).",
        within=settings.body_timeout,
        setting="TICKETPROXY_BODY_TIMEOUT",
    )
    try:
        message = read_message(raw)
    except McpError as exc:
        return web.json_response(error_json(None, exc), status=400)
    if not message.is_request:
        return web.Response(status=202)
    try:
        _check_version(request)
        if message.method == "tools/call":
            return await call_tool(request, message)
        task_method = TASK_METHODS.get(message.method)
        if task_method is not None:
            return await task_method(request, message)
        result = _answer(message)
    except McpError as exc:
        return web.json_response(error_json(message.id, exc))
    response = web.json_response(result_json(message.id, result))
    if message.method == "initialize":
        response.headers[SESSION_HEADER] = new_session_id(message.params)
    return response


def _check_version(request: web.Request) -> None:
    """Refuse a protocol version header this server does not speak (the spec's 400)."""
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in SUPPORTED_VERSIONS:
        raise web.HTTPBadRequest(
            text=f"MCP-Protocol-Version {version!r} is not served: use one of "
            f"{', '.join(SUPPORTED_VERSIONS)}."
        )


def _answer(message: Message) -> dict[str, Any]:
    """Answer the methods that need no ticket."""
    if message.method == "initialize":
        return {
            "protocolVersion": negotiate_version(message.params),
            "capabilities": {
                "tools": {"listChanged": False},
                # Task-augmented tools/call (2025-11-25): poll instead of holding the call.
                "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            },
            "serverInfo": {"name": "ticketproxy", "title": "ticketproxy", "version": _version()},
            "instructions": _INSTRUCTIONS,
        }
    if message.method == "ping":
        return {}
    if message.method == "tools/list":
        return {"tools": list(TOOLS.values())}
    raise MethodNotFound(
        f"Method {message.method!r} is not served here: this server offers initialize, ping, "
        "tools/list, tools/call and tasks/get, tasks/result, tasks/list, tasks/cancel."
    )


async def call_tool(request: web.Request, message: Message) -> web.StreamResponse:
    """``tools/call``: open or re-attach to the ticket, then wait for it or return a task."""
    desk = request.app[DESK]
    checked = read_tool_call(message.params)
    addressee: Addressee | None = None
    if not isinstance(checked, list) and "to" in checked.arguments:
        # Checked before the ticket opens: a name not in the keyring leaves no ticket.
        found = _addressee(desk, checked.arguments["to"])
        if isinstance(found, str):
            checked = [found]
        else:
            addressee = found
    task = message.params.get("task")
    if isinstance(checked, list):
        if task is not None:
            raise InvalidParams(refused_result(checked)["content"][0]["text"])
        return web.json_response(result_json(message.id, refused_result(checked)))
    # Read before the ticket opens: a refused ttl must leave no ticket behind.
    ttl = None if task is None else read_ttl(task)
    chat = tool_request(
        checked,
        client=request[CLIENT],
        agent=agent_of_session(request.headers.get(SESSION_HEADER)),
        addressee=addressee,
    )
    ticket = await desk.submit(chat, request_id=request[REQUEST_ID])
    del chat
    if ttl is not None:
        return web.json_response(result_json(message.id, start_task(request, checked, ticket, ttl)))
    render = partial(tool_result, desk, checked)
    return await answer_when_settled(request, message, ticket, render, rejection=checked.approval)


def _addressee(desk: Desk, to: str) -> Addressee | str:
    """Return who ``to`` names in the keyring now, or the problem with it."""
    try:
        keyring = desk.keyring()
    except KeyringError as exc:
        # The operator's problem, not the agent's: said as a server error, with the cause.
        log.error("ask_team's `to` cannot be checked: the keyring is unreadable: %s", exc)
        raise McpError(f"This ticketproxy cannot read its keyring to check `to`: {exc}") from None
    return resolve_addressee(to, keyring)
