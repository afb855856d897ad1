"""A2A 1.0's JSON-RPC binding: calls and their parameters in, results and errors out.

Pure: no I/O. Follows the A2A 1.0 specification (``docs/specification.md`` §9 and
``specification/a2a.proto`` in a2aproject/A2A) as the official ``a2a-sdk`` client sends it:
PascalCase methods (``SendMessage``, ``GetTask``, …), camelCase ProtoJSON fields, the
version in the ``A2A-Version`` header (an absent one means 0.3, which this server does not
speak). Errors are JSON-RPC error objects with the spec's codes and a
``google.rpc.ErrorInfo`` naming the reason; they go out with HTTP 200, where the client
reads them (it raises on any other status before looking at the body).

The error tree::

    A2AError(code, reason)
     ├── JSONParseError            -32700  the body is not JSON
     ├── InvalidRequestError       -32600  not a JSON-RPC 2.0 request
     ├── MethodNotFoundError       -32601
     ├── InvalidParamsError        -32602
     ├── TaskNotFoundError         -32001  also another client key's task
     ├── TaskNotCancelableError    -32002  the task already ended
     ├── PushNotificationNotSupportedError -32003  the card offers no push notifications
     ├── UnsupportedOperationError -32004  e.g. a message to a task in a terminal state
     ├── ContentTypeNotSupportedError -32005
     └── VersionNotSupportedError  -32009
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import json_rpc
from ..json_rpc import Call, call_id_of, result_json

__all__ = [
    "PROTOCOL_VERSION",
    "A2AError",
    "Call",
    "ContentTypeNotSupportedError",
    "FilePart",
    "Incoming",
    "InvalidParamsError",
    "InvalidRequestError",
    "JSONParseError",
    "ListQuery",
    "MethodNotFoundError",
    "PushNotificationNotSupportedError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "call_id_of",
    "check_version",
    "error_json",
    "read_call",
    "read_list_query",
    "read_message",
    "read_task_query",
    "result_json",
]

PROTOCOL_VERSION = "1.0"
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class A2AError(Exception):
    """An A2A error, answered as a JSON-RPC error object."""

    code: ClassVar[int] = -32603
    reason: ClassVar[str] = "INTERNAL_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class JSONParseError(A2AError):
    """The body is not valid JSON."""

    code, reason = -32700, "PARSE_ERROR"


class InvalidRequestError(A2AError):
    """The body is JSON but not a JSON-RPC 2.0 request object."""

    code, reason = -32600, "INVALID_REQUEST"


class MethodNotFoundError(A2AError):
    """No such method in A2A 1.0 (or one this agent does not serve)."""

    code, reason = -32601, "METHOD_NOT_FOUND"


class InvalidParamsError(A2AError):
    """The method's parameters are missing or malformed."""

    code, reason = -32602, "INVALID_PARAMS"


class TaskNotFoundError(A2AError):
    """No such task for this client key."""

    code, reason = -32001, "TASK_NOT_FOUND"


class TaskNotCancelableError(A2AError):
    """The task already reached a terminal state."""

    code, reason = -32002, "TASK_NOT_CANCELABLE"


class PushNotificationNotSupportedError(A2AError):
    """Push notification configs were asked for; the card says they are not offered."""

    code, reason = -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"


class UnsupportedOperationError(A2AError):
    """The operation (or this use of it) is not supported."""

    code, reason = -32004, "UNSUPPORTED_OPERATION"


class ContentTypeNotSupportedError(A2AError):
    """A message part's kind or media type is not accepted."""

    code, reason = -32005, "CONTENT_TYPE_NOT_SUPPORTED"


class VersionNotSupportedError(A2AError):
    """The ``A2A-Version`` the client speaks is not 1.x."""

    code, reason = -32009, "VERSION_NOT_SUPPORTED"


# JSON-RPC's envelope errors, as A2A names them (with their ErrorInfo reasons).
_BY_CODE: dict[int, type[A2AError]] = {
    error.code: error
    for error in (JSONParseError, InvalidRequestError, MethodNotFoundError, InvalidParamsError)
}


@dataclass(frozen=True)
class FilePart:
    """A file the client sent in a message, by value."""

    name: str
    media_type: str
    data: bytes


@dataclass(frozen=True)
class Incoming:
    """A ``SendMessage`` request as the task desk takes it."""

    text: str | None
    data: list[Any] = field(default_factory=list)
    files: list[FilePart] = field(default_factory=list)
    task_id: str | None = None
    context_id: str | None = None
    return_immediately: bool = False
    history_length: int | None = None


@dataclass(frozen=True)
class ListQuery:
    """A ``ListTasks`` request: filters, page and what each task carries."""

    offset: int = 0
    page_size: int = DEFAULT_PAGE_SIZE
    context_id: str | None = None
    status: str | None = None
    history_length: int | None = None
    include_artifacts: bool = False


def check_version(sent: str | None) -> None:
    """Refuse any A2A version but 1.x (an absent or empty one means 0.3, per §3.6.2)."""
    version = (sent or "").strip() or "0.3"
    major = version.split(".", 1)[0]
    if major != "1":
        raise VersionNotSupportedError(
            f"A2A version {version!r} is not supported: this agent speaks A2A "
            f"{PROTOCOL_VERSION}. Send the header `A2A-Version: {PROTOCOL_VERSION}` (an "
            "absent header means 0.3)."
        )


def read_call(raw: bytes) -> Call:
    """Read a JSON-RPC 2.0 request (batches are not accepted), refusing as A2A's errors."""
    try:
        return json_rpc.read_call(raw)
    except json_rpc.JsonRpcError as exc:
        raise _BY_CODE[exc.code](exc.message) from None


def error_json(
    call_id: str | int | None, error: A2AError, metadata: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Return a JSON-RPC error response: the code, the message, an ErrorInfo with the reason."""
    info: dict[str, Any] = {"@type": _ERROR_INFO, "reason": error.reason}
    info["domain"] = "a2a-protocol.org"
    if metadata:
        info["metadata"] = dict(metadata)
    body = {"code": error.code, "message": error.message, "data": [info]}
    return {"jsonrpc": "2.0", "id": call_id, "error": body}


def _optional_str(params: Mapping[str, Any], name: str, where: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidParamsError(f"`{where}{name}` must be a string.")
    return value


def _history_length(params: Mapping[str, Any], where: str = "") -> int | None:
    value = params.get("historyLength")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidParamsError(f"`{where}historyLength` must be an integer of at least 0.")
    return value


def read_message(params: Mapping[str, Any]) -> Incoming:
    """Read ``SendMessage``'s parameters: the user's message and the configuration."""
    message = params.get("message")
    if not isinstance(message, dict):
        raise InvalidParamsError("`message` is required: the user's message with its parts.")
    role = message.get("role")
    if role not in ("ROLE_USER", "user"):
        raise InvalidParamsError('`message.role` must be "ROLE_USER": the client speaks as one.')
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise InvalidParamsError("`message.parts` must hold at least one part.")
    texts: list[str] = []
    data: list[Any] = []
    files: list[FilePart] = []
    for index, part in enumerate(parts):
        _read_part(part, index, texts, data, files)
    config = params.get("configuration") or {}
    if not isinstance(config, dict):
        raise InvalidParamsError("`configuration` must be an object.")
    immediately = config.get("returnImmediately", False)
    if not isinstance(immediately, bool):
        raise InvalidParamsError("`configuration.returnImmediately` must be a boolean.")
    return Incoming(
        text="\n\n".join(texts) or None,
        data=data,
        files=files,
        task_id=_optional_str(message, "taskId", "message."),
        context_id=_optional_str(message, "contextId", "message."),
        return_immediately=immediately,
        history_length=_history_length(config, "configuration."),
    )


def _read_part(
    part: object, index: int, texts: list[str], data: list[Any], files: list[FilePart]
) -> None:
    where = f"message.parts[{index}]"
    if not isinstance(part, dict):
        raise InvalidParamsError(f"`{where}` must be an object.")
    if isinstance(part.get("text"), str):
        texts.append(part["text"])
    elif "data" in part:
        data.append(part["data"])
    elif isinstance(part.get("raw"), str):
        try:
            content = base64.b64decode(part["raw"], validate=True)
        except (binascii.Error, ValueError):
            raise InvalidParamsError(f"`{where}.raw` must be base64.") from None
        name = part.get("filename") or f"part-{index + 1}"
        if not isinstance(name, str):
            raise InvalidParamsError(f"`{where}.filename` must be a string.")
        media_type = part.get("mediaType") or "application/octet-stream"
        files.append(FilePart(name=name, media_type=str(media_type), data=content))
    elif "url" in part:
        raise ContentTypeNotSupportedError(
            f"`{where}` is a file by URL, which this agent does not fetch: send its bytes "
            "in `raw` (base64) instead."
        )
    else:
        raise InvalidParamsError(f"`{where}` must carry `text`, `data` or `raw`.")


def read_task_query(params: Mapping[str, Any]) -> tuple[str, int | None]:
    """Read ``GetTask``'s, ``CancelTask``'s or ``SubscribeToTask``'s task id (and history)."""
    task_id = params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParamsError("`id` (the task's id) is required.")
    return task_id, _history_length(params)


def read_list_query(params: Mapping[str, Any]) -> ListQuery:
    """Read ``ListTasks``'s filters and page (the page token is an opaque offset)."""
    size = params.get("pageSize", DEFAULT_PAGE_SIZE) or DEFAULT_PAGE_SIZE
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_PAGE_SIZE:
        raise InvalidParamsError(f"`pageSize` must be an integer from 1 to {MAX_PAGE_SIZE}.")
    token = params.get("pageToken") or ""
    if not isinstance(token, str) or (token and not (token.isascii() and token.isdigit())):
        raise InvalidParamsError("`pageToken` must be a `nextPageToken` this agent returned.")
    include = params.get("includeArtifacts", False)
    if not isinstance(include, bool):
        raise InvalidParamsError("`includeArtifacts` must be a boolean.")
    return ListQuery(
        offset=int(token or 0),
        page_size=size,
        context_id=_optional_str(params, "contextId", ""),
        status=_optional_str(params, "status", ""),
        history_length=_history_length(params),
        include_artifacts=include,
    )
