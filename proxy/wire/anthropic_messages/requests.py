"""A ``POST /v1/messages`` body in, validated into the ``ChatRequest`` a ticket carries.

Reference: https://docs.anthropic.com/en/api/messages. ``system`` becomes the first system
message (the run's anchor, as chat's is), ``messages`` the conversation (:mod:`.blocks`),
custom tools chat's functions (:mod:`.tools`). ``max_tokens`` is required, as Anthropic
requires it; ``thinking``, ``temperature``, ``top_p``, ``top_k``, ``context_management``
and prompt caching are accepted and ignored (people answer the same way either way).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require
from proxy.wire.tools import parse_response_format, parse_tools
from ticketing.request import ChatRequest, Message, request_key

from .blocks import parse_conversation, text_blocks
from .tools import chat_tools

VERSION_HEADER = "anthropic-version"
# The published versions (https://docs.anthropic.com/en/api/versioning): Claude Code sends
# 2023-06-01, the anthropic Python SDK 2.x sends 2026-10-21. Nothing this front answers
# differs between them.
KNOWN_VERSIONS = ("2023-01-01", "2023-06-01", "2026-10-21")


def check_version(headers: Mapping[str, str]) -> None:
    """Refuse an ``anthropic-version`` that is not a published version; allow none at all.

    Anthropic requires the header, but its SDKs and Claude Code always send it; a hand-written
    client that leaves it out gets the one shape this front speaks rather than a refusal.
    """
    version = headers.get(VERSION_HEADER)
    if version is None or version.strip() in KNOWN_VERSIONS:
        return
    raise InvalidRequest(
        f"anthropic-version {version!r} is not a published version of the Messages API; "
        f"send one of {', '.join(KNOWN_VERSIONS)}",
        param=VERSION_HEADER,
        code="unknown_version",
    )


def _number(body: Mapping[str, Any], name: str, high: float | None) -> None:
    value = body.get(name)
    if value is None:
        return
    number = isinstance(value, int | float) and not isinstance(value, bool)
    require(
        number and math.isfinite(value) and value >= 0 and (high is None or value <= high),
        f"{name} must be a number from 0" + ("" if high is None else f" to {high:g}"),
        name,
    )


def _max_tokens(body: Mapping[str, Any], *, required: bool) -> int | None:
    value = body.get("max_tokens")
    if value is None:
        require(not required, "max_tokens is required", "max_tokens", "missing")
        return None
    require(
        isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        "max_tokens must be a positive integer",
        "max_tokens",
    )
    assert isinstance(value, int)
    return value


def _stop_sequences(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("stop_sequences")
    if value is None:
        return ()
    require(
        isinstance(value, list) and all(isinstance(v, str) for v in value),
        "stop_sequences must be an array of strings",
        "stop_sequences",
    )
    return tuple(v for v in value if v)


def _metadata(body: Mapping[str, Any]) -> dict[str, str]:
    """Return ``metadata.user_id`` as the ticket's metadata (Claude Code's is its session)."""
    metadata = body.get("metadata")
    if metadata is None:
        return {}
    require(isinstance(metadata, dict), "metadata must be an object", "metadata", "invalid_type")
    user = metadata.get("user_id")
    require(
        user is None or isinstance(user, str),
        "metadata.user_id must be a string",
        "metadata.user_id",
        "invalid_type",
    )
    return {"user_id": user} if isinstance(user, str) and user else {}


def _system(body: Mapping[str, Any]) -> list[Message]:
    system = body.get("system")
    if system is None:
        return []
    text = text_blocks(system, "system")
    return [Message(role="system", content=text)] if text else []


def parse_messages_request(
    body: Any, *, client: str, model: str, counting: bool = False
) -> ChatRequest:
    """Validate a Messages body and return the request a ticket carries.

    ``counting`` is ``/v1/messages/count_tokens``, whose body needs no ``max_tokens``.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    max_tokens = _max_tokens(body, required=not counting)
    messages = _system(body) + parse_conversation(body.get("messages"))
    chat_body, parallel = chat_tools(body)
    try:
        tools, tool_choice, _ = parse_tools(chat_body)
    except InvalidRequest as error:
        # Named as the client sent it: tools[i].name, not chat's tools[i].function.name.
        where = (error.param or "").replace(".function", "", 1)
        raise InvalidRequest(error.message, param=where, code=error.code) from None
    response_format = parse_response_format(chat_body)
    _number(body, "temperature", 1)
    _number(body, "top_p", 1)
    _number(body, "top_k", None)
    thinking = body.get("thinking")
    require(
        thinking is None or isinstance(thinking, dict), "thinking must be an object", "thinking"
    )
    stream = body.get("stream", False)
    require(stream is None or isinstance(stream, bool), "stream must be a boolean", "stream")
    return ChatRequest(
        model=model,
        messages=tuple(messages),
        client=client,
        metadata=_metadata(body),
        max_tokens=max_tokens,
        # A distinct key space: the same words sent to another front are another request.
        key=request_key(client, {**body, "/v1/messages": True}),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        response_format=response_format,
        stop=_stop_sequences(body),
    )
