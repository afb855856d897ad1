"""JSON-RPC 2.0's envelope, shared by the fronts that speak it (A2A and MCP).

Pure: no I/O. One request object in (batches are refused), a success response out; each
front shapes its own error objects and keeps its own methods and parameters.

The error tree (codes from the JSON-RPC 2.0 specification)::

    JsonRpcError        -32603  an internal error
     ├── ParseError     -32700  the body is not JSON
     ├── InvalidRequest -32600  not a JSON-RPC 2.0 request object
     ├── MethodNotFound -32601
     └── InvalidParams  -32602
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import ProxyError

__all__ = [
    "Call",
    "InvalidParams",
    "InvalidRequest",
    "JsonRpcError",
    "MethodNotFound",
    "ParseError",
    "call_from",
    "call_id_of",
    "read_call",
    "result_json",
]


class JsonRpcError(ProxyError):
    """A JSON-RPC error, answered as an error object with its code and message."""

    code: ClassVar[int] = -32603

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ParseError(JsonRpcError):
    """The body is not JSON."""

    code = -32700


class InvalidRequest(JsonRpcError):
    """The body is JSON but not a JSON-RPC 2.0 request object."""

    code = -32600


class MethodNotFound(JsonRpcError):
    """A method this server does not serve."""

    code = -32601


class InvalidParams(JsonRpcError):
    """The method's parameters are missing or malformed."""

    code = -32602


@dataclass(frozen=True)
class Call:
    """One JSON-RPC request: its id (echoed; absent in a notification), method and params."""

    id: str | int | None
    method: str
    params: dict[str, Any]


def read_call(raw: bytes) -> Call:
    """Read a JSON-RPC 2.0 request (batches are not accepted)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ParseError("The body is not valid JSON.") from None
    return call_from(body)


def call_from(body: object) -> Call:
    """Return the request a parsed JSON body holds, or refuse it."""
    if not isinstance(body, dict):
        raise InvalidRequest("Send one JSON-RPC 2.0 request object (batches are refused).")
    call_id = body.get("id")
    if body.get("jsonrpc") != "2.0":
        raise InvalidRequest('The request must say "jsonrpc": "2.0".')
    if call_id is not None and (isinstance(call_id, bool) or not isinstance(call_id, str | int)):
        raise InvalidRequest("`id` must be a string, a number or null.")
    method = body.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidRequest("`method` must be a non-empty string.")
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise InvalidParams("`params` must be an object.")
    return Call(id=call_id, method=method, params=params)


def call_id_of(raw: bytes) -> str | int | None:
    """Return the id of a request that was refused, if it can be read at all."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    call_id = body.get("id") if isinstance(body, dict) else None
    return call_id if isinstance(call_id, str | int) and not isinstance(call_id, bool) else None


def result_json(call_id: str | int | None, result: Mapping[str, Any]) -> dict[str, Any]:
    """Return a JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": call_id, "result": dict(result)}
