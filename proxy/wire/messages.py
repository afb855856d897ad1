"""Chat messages in: roles, text content parts, and the tool calls an assistant made.

Reference: https://platform.openai.com/docs/api-reference/chat/create (``messages``).
"""

from __future__ import annotations

import json
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require
from ticketing.request import Message, ToolCall

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _text_content(content: Any, param: str, *, nullable: bool) -> str:
    if content is None:
        require(nullable, "content must not be null for this role", param, "invalid_type")
        return ""
    if isinstance(content, str):
        return content
    require(isinstance(content, list), "content must be a string or an array of parts", param)
    texts: list[str] = []
    for index, part in enumerate(content):
        where = f"{param}[{index}]"
        require(isinstance(part, dict), "each content part must be an object", where)
        kind = part.get("type")
        if kind in {"text", "input_text"}:
            require(isinstance(part.get("text"), str), "a text part needs a string 'text'", where)
            texts.append(part["text"])
        elif kind == "refusal":
            texts.append(str(part.get("refusal", "")))
        else:
            raise InvalidRequest(
                f"content parts of type {kind!r} are not supported: ticketproxy shows people "
                "text only; send text parts",
                param=where,
                code="unsupported_content",
            )
    return "\n".join(texts)


def _tool_calls(value: Any, param: str) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    require(isinstance(value, list), "tool_calls must be an array", param)
    calls: list[ToolCall] = []
    for index, call in enumerate(value):
        where = f"{param}[{index}]"
        require(isinstance(call, dict), "each tool call must be an object", where)
        function = call.get("function")
        require(isinstance(function, dict), "a tool call needs a 'function' object", where)
        name = function.get("name")
        require(isinstance(name, str) and name != "", "a tool call needs a function name", where)
        arguments = function.get("arguments", "")
        # AutoGPT echoes arguments back as a JSON object, not a string: accept both.
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        call_id = call.get("id")
        require(
            call_id is None or isinstance(call_id, str), "a tool call id must be a string", where
        )
        calls.append(ToolCall(id=call_id or "", name=name, arguments=arguments))
    return tuple(calls)


def parse_message(value: Any, index: int) -> Message:
    """Validate ``messages[index]`` and return it as a ticket's ``Message``."""
    param = f"messages[{index}]"
    require(isinstance(value, dict), "each message must be an object", param, "invalid_type")
    role = value.get("role")
    require(
        isinstance(role, str) and role in ROLES,
        f"role must be one of {', '.join(sorted(ROLES))}",
        f"{param}.role",
    )
    tool_calls = _tool_calls(value.get("tool_calls"), f"{param}.tool_calls")
    if value.get("function_call") is not None:
        tool_calls += _tool_calls(
            [{"id": "", "function": value["function_call"]}], f"{param}.function_call"
        )
    content = _text_content(
        value.get("content"), f"{param}.content", nullable=role == "assistant" and bool(tool_calls)
    )
    name = value.get("name")
    require(name is None or isinstance(name, str), "name must be a string", f"{param}.name")
    tool_call_id = value.get("tool_call_id")
    if role == "tool":
        require(
            isinstance(tool_call_id, str),
            "a tool message needs tool_call_id",
            f"{param}.tool_call_id",
        )
    return Message(
        role=role,
        content=content,
        name=name,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
    )
