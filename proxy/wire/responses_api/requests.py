"""A Responses API body in, validated into the ``ChatRequest`` a ticket carries.

Reference: https://platform.openai.com/docs/api-reference/responses/create. ``instructions``
become the system message; ``input`` (a string, or items: messages, ``function_call`` and
``function_call_output``) becomes the conversation, so the ticket reads exactly like a chat
completion's. Tools are flat (``{"type": "function", "name", "parameters", ...}``);
built-in tools run on OpenAI's servers and are refused, saying why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from proxy.errors import InvalidRequest
from proxy.wire.invalid import require
from proxy.wire.messages import parse_message
from proxy.wire.tools import parse_response_format, parse_tools
from ticketing.request import ChatRequest, Message, ToolCall, request_key

# Tool types OpenAI runs itself; people answering a ticket cannot run them for the agent.
BUILT_IN_TOOLS = frozenset(
    {
        "web_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "file_search",
        "computer_use_preview",
        "computer_use",
        "code_interpreter",
        "image_generation",
        "mcp",
        "local_shell",
        "shell",
        "apply_patch",
        "custom",
    }
)
_MESSAGE_ROLES = frozenset({"user", "system", "developer", "assistant"})


def _refuse_built_in(kind: Any, param: str) -> None:
    if kind in BUILT_IN_TOOLS:
        raise InvalidRequest(
            f"the built-in tool {kind!r} runs on OpenAI's servers, and the people answering "
            "this ticketproxy cannot run it for you: offer it as a function tool "
            '({"type": "function", "name": ..., "parameters": ...}) that your agent runs',
            param=param,
            code="unsupported_tool",
        )


def _chat_tools(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``tools`` and ``tool_choice`` in chat's nested form, refusing built-in tools."""
    raw = body.get("tools")
    require(raw is None or isinstance(raw, list), "tools must be an array", "tools", "invalid_type")
    nested: list[Any] = []
    for index, tool in enumerate(raw or []):
        param = f"tools[{index}]"
        require(isinstance(tool, dict), "each tool must be an object", param, "invalid_type")
        _refuse_built_in(tool.get("type"), f"{param}.type")
        require(tool.get("type") == "function", "tool type must be 'function'", f"{param}.type")
        function = {k: v for k, v in tool.items() if k != "type"}
        nested.append({"type": "function", "function": function})
    chat: dict[str, Any] = {"tools": nested}
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        _refuse_built_in(choice.get("type"), "tool_choice.type")
        require(
            choice.get("type") == "function",
            "tool_choice must be auto, none, required or {'type': 'function', 'name': ...}",
            "tool_choice",
        )
        choice = {"type": "function", "function": {"name": choice.get("name")}}
    chat["tool_choice"] = choice
    return chat


def _text_format(body: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``text.format`` as chat's ``response_format`` (checked before release)."""
    text = body.get("text")
    if text is None:
        return {}
    require(isinstance(text, dict), "text must be an object", "text", "invalid_type")
    fmt = text.get("format")
    if fmt is None:
        return {}
    require(isinstance(fmt, dict), "text.format must be an object", "text.format", "invalid_type")
    if fmt.get("type") == "json_schema":
        spec = {k: v for k, v in fmt.items() if k != "type"}
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    return {"response_format": fmt}


def _content(value: Any) -> Any:
    """Return a message item's content with output_text parts read as text parts."""
    if not isinstance(value, list):
        return value
    parts: list[Any] = []
    for part in value:
        if isinstance(part, dict) and part.get("type") == "output_text":
            part = {"type": "text", "text": part.get("text")}
        parts.append(part)
    return parts


def _call_output(value: Any, param: str) -> str:
    if isinstance(value, str):
        return value
    require(isinstance(value, list), "output must be a string or an array of parts", param)
    texts: list[str] = []
    for index, part in enumerate(value):
        where = f"{param}[{index}]"
        require(
            isinstance(part, dict) and part.get("type") == "input_text",
            "output parts must be input_text: people are shown text only",
            where,
            "unsupported_content",
        )
        require(isinstance(part.get("text"), str), "an input_text part needs 'text'", where)
        texts.append(part["text"])
    return "\n".join(texts)


def _string(item: Mapping[str, Any], name: str, param: str) -> str:
    value = item.get(name)
    require(isinstance(value, str) and value != "", f"{name} must be a string", f"{param}.{name}")
    assert isinstance(value, str)
    return value


def _append_call(messages: list[Message], call: ToolCall) -> None:
    """Add a function call to the assistant turn it belongs to (or start one)."""
    last = messages[-1] if messages else None
    if last is not None and last.role == "assistant":
        # One assistant turn: its text and its calls, as a chat message carries them.
        messages[-1] = Message(
            role="assistant", content=last.content, tool_calls=(*last.tool_calls, call)
        )
    else:
        messages.append(Message(role="assistant", content="", tool_calls=(call,)))


def _read_item(item: Any, param: str, messages: list[Message], issued: set[str]) -> None:
    """Add one input item to the conversation, checking a call output against ``issued``."""
    require(isinstance(item, dict), "each input item must be an object", param, "invalid_type")
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        require(
            role in _MESSAGE_ROLES,
            "role must be one of assistant, developer, system, user",
            f"{param}.role",
        )
        chat = {"role": role, "content": _content(item.get("content"))}
        try:
            messages.append(parse_message(chat, 0))
        except InvalidRequest as error:
            # Named as the client sent it: input[i], not chat's messages[i].
            where = (error.param or "").replace("messages[0]", param, 1)
            raise InvalidRequest(error.message, param=where, code=error.code) from None
    elif kind == "function_call":
        call_id = _string(item, "call_id", param)
        arguments = item.get("arguments", "")
        require(isinstance(arguments, str), "arguments must be a string", f"{param}.arguments")
        _append_call(messages, ToolCall(call_id, _string(item, "name", param), arguments))
        issued.add(call_id)
    elif kind == "function_call_output":
        call_id = _string(item, "call_id", param)
        require(
            call_id in issued,
            f"no function_call in input (or in the previous response's output) has call_id "
            f"{call_id!r}: send the function_call item this output answers before it",
            f"{param}.call_id",
            "unknown_call_id",
        )
        output = _call_output(item.get("output"), f"{param}.output")
        messages.append(Message(role="tool", content=output, tool_call_id=call_id))
    elif kind != "reasoning":  # a model's reasoning summary: people have none, and need none
        raise InvalidRequest(
            f"input items of type {kind!r} are not supported: send message, "
            "function_call, function_call_output and item_reference items",
            param=f"{param}.type",
            code="unsupported_item",
        )


def _input_messages(
    value: Any, context: Sequence[Any] = (), issued: frozenset[str] = frozenset()
) -> list[Message]:
    """Return the conversation: ``context`` (a previous response's), then what ``input`` holds.

    A ``function_call_output`` in ``input`` must answer a call issued earlier in ``input``
    or in ``issued`` (the previous response's function calls).
    """
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    require(isinstance(value, list), "input must be a string or an array of items", "input")
    require(len(value) > 0, "input must not be empty", "input", "empty_array")
    messages: list[Message] = []
    known: set[str] = set()
    for item in context:
        # Stored from an earlier, valid request: read as it was then.
        _read_item(item, "previous_response_id", messages, known)
    known = set(issued)
    for index, item in enumerate(value):
        _read_item(item, f"input[{index}]", messages, known)
    return messages


def _refuse_what_people_cannot_do(body: Mapping[str, Any]) -> None:
    if body.get("background"):
        raise InvalidRequest(
            "background responses are not available: wait for the answer, which keeps the "
            "connection open with keep-alives while people think",
            param="background",
            code="unsupported_parameter",
        )
    if body.get("conversation") is not None:
        raise InvalidRequest(
            "conversations are not available here: chain responses with "
            "previous_response_id, or send the whole conversation in input",
            param="conversation",
            code="unsupported_parameter",
        )
    store = body.get("store")
    require(store is None or isinstance(store, bool), "store must be a boolean", "store")
    for name, low, high in (("temperature", 0, 2), ("top_p", 0, 1)):
        value = body.get(name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        require(
            value is None or (number and math.isfinite(value) and low <= value <= high),
            f"{name} must be a number between {low} and {high}",
            name,
        )


def parse_responses_request(
    body: Any,
    *,
    client: str,
    model: str,
    context: Sequence[Any] = (),
    issued: frozenset[str] = frozenset(),
) -> ChatRequest:
    """Validate a ``POST /v1/responses`` body and return the request a ticket carries.

    ``context`` holds the input and output items of the response named by
    ``previous_response_id`` (its instructions are not carried over, as OpenAI does), and
    ``issued`` the call ids of its function calls, which ``input`` may answer.
    """
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.", code="invalid_type")
    instructions = body.get("instructions")
    require(
        instructions is None or isinstance(instructions, str),
        "instructions must be a string",
        "instructions",
        "invalid_type",
    )
    require("input" in body, "you must provide input", "input", "missing")
    messages = _input_messages(body.get("input"), context, issued)
    if instructions:
        messages.insert(0, Message(role="system", content=instructions))
    _refuse_what_people_cannot_do(body)
    chat_body = _chat_tools(body)
    tools, tool_choice, _ = parse_tools(chat_body)
    response_format = parse_response_format(_text_format(body))
    parallel = body.get("parallel_tool_calls", True)
    require(
        isinstance(parallel, bool), "parallel_tool_calls must be a boolean", "parallel_tool_calls"
    )
    max_tokens = body.get("max_output_tokens")
    require(
        max_tokens is None
        or (isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 1),
        "max_output_tokens must be a positive integer",
        "max_output_tokens",
    )
    user = body.get("user")
    require(user is None or isinstance(user, str), "user must be a string", "user", "invalid_type")
    metadata = body.get("metadata") or {}
    require(
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values()),
        "metadata must be an object of strings",
        "metadata",
        "invalid_type",
    )
    stream = body.get("stream", False)
    require(stream is None or isinstance(stream, bool), "stream must be a boolean", "stream")
    return ChatRequest(
        model=model,
        messages=tuple(messages),
        client=client,
        user=user,
        metadata=dict(metadata),
        max_tokens=max_tokens,
        # A distinct key space: the same words sent to chat completions are another request.
        key=request_key(client, {**body, "/v1/responses": True}),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        response_format=response_format,
    )
