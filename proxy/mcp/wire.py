"""MCP's JSON-RPC messages over streamable HTTP: calls in; results, errors and events out.

Pure: no I/O. Follows the MCP specification (2025-11-25, "Base protocol" and "Transports"):
one JSON-RPC message per POST; a request is answered with JSON or, when the answer waits
for people, with an SSE stream that carries progress notifications before the response; a
notification or a response from the client is acknowledged with 202 and no body. The
JSON-RPC envelope and its errors are :mod:`proxy.json_rpc`'s (``McpError`` is its
``JsonRpcError``); ``InvalidParams`` is also an unknown tool, as the specification says.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..json_rpc import (
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    ParseError,
    call_from,
    result_json,
)
from ..json_rpc import JsonRpcError as McpError

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "InvalidParams",
    "InvalidRequest",
    "McpError",
    "Message",
    "MethodNotFound",
    "ParseError",
    "agent_of_session",
    "error_json",
    "negotiate_version",
    "new_session_id",
    "progress_json",
    "read_message",
    "result_json",
    "sse_data",
    "sse_event",
]

LATEST_VERSION = "2025-11-25"
# Newest first: the versions whose tools/call this server answers the same way.
SUPPORTED_VERSIONS = (LATEST_VERSION, "2025-06-18", "2025-03-26")
# How long a client's own name may be, as the ticket shows it.
_AGENT_NAME_LIMIT = 64


@dataclass(frozen=True)
class Message:
    """One JSON-RPC message a client sent: a request (it has an id) or a notification."""

    method: str
    params: Mapping[str, Any]
    id: str | int | None
    is_request: bool


def read_message(raw: bytes) -> Message:
    """Read one JSON-RPC 2.0 message; a response from the client reads as a notification."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ParseError("The body is not valid JSON.") from None
    if isinstance(body, dict) and "method" not in body and ("result" in body or "error" in body):
        # A response to a request of ours: this server sends none, so nothing waits for it.
        return Message(method="", params={}, id=None, is_request=False)
    call = call_from(body)
    return Message(method=call.method, params=call.params, id=call.id, is_request="id" in body)


def error_json(call_id: str | int | None, error: McpError) -> dict[str, Any]:
    """Return a JSON-RPC error response."""
    return {
        "jsonrpc": "2.0",
        "id": call_id,
        "error": {"code": error.code, "message": error.message},
    }


def progress_json(token: str | int, progress: float, message: str) -> dict[str, Any]:
    """Return a ``notifications/progress`` for the request that gave ``token``."""
    params = {"progressToken": token, "progress": progress, "message": message}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def sse_event(message: Mapping[str, Any]) -> bytes:
    """Return one SSE ``message`` event carrying a JSON-RPC message."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return f"event: message\ndata: {data}\n\n".encode()


def negotiate_version(params: Mapping[str, Any]) -> str:
    """Return the client's protocol version when served, else the newest one served."""
    asked = params.get("protocolVersion")
    return asked if asked in SUPPORTED_VERSIONS else LATEST_VERSION


def new_session_id(params: Mapping[str, Any]) -> str:
    """Return a session id that carries the client's own name (``clientInfo.name``).

    The server keeps no session: the id is random plus the name, hex-encoded, so that any
    replica, and this one after a restart, can show the agent's name on its tickets.
    """
    info = params.get("clientInfo")
    name = info.get("name") if isinstance(info, dict) else None
    shown = name[:_AGENT_NAME_LIMIT] if isinstance(name, str) else ""
    return f"{secrets.token_hex(8)}.{shown.encode().hex()}"


def agent_of_session(session_id: str | None) -> str:
    """Return the client's name a session id carries, or "MCP client" when none."""
    _, _, encoded = (session_id or "").partition(".")
    try:
        name = bytes.fromhex(encoded).decode()[:_AGENT_NAME_LIMIT]
    except ValueError:
        name = ""
    return name if name.strip() and name.isprintable() else "MCP client"


def sse_data(line: str, pending: list[str]) -> str | None:
    """Read one line of an SSE stream; return an event's data when the line ends it.

    ``pending`` holds the event's ``data:`` lines so far; comments and other fields are
    skipped (https://html.spec.whatwg.org/multipage/server-sent-events.html).
    """
    line = line.rstrip("\r\n")
    if not line:
        data = "\n".join(pending)
        pending.clear()
        return data or None
    if line.startswith("data:"):
        value = line[5:]
        pending.append(value[1:] if value.startswith(" ") else value)
    return None
