"""The Responses API out: the ``response`` object and its typed stream events.

Reference: https://platform.openai.com/docs/api-reference/responses/object and
https://platform.openai.com/docs/api-reference/responses-streaming. Each field the openai
package's ``Response`` model requires is present (``parallel_tool_calls``, ``tool_choice``,
``tools`` echo the request). An expired ticket is a ``completed`` response whose text says
nobody answered, with no function call, as chat completions do (``fronts.released``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from proxy.wire.responses import completion_tokens
from ticketing.request import ToolCall

# The stream's preamble takes sequence numbers 0 and 1; the answer's events follow.
PREAMBLE_EVENTS = 2


@dataclass(frozen=True)
class ResponseEcho:
    """What a response echoes of its request, and its token estimate for ``usage``."""

    model: str
    input_tokens: int
    instructions: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    max_output_tokens: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    text: Mapping[str, Any] = field(default_factory=lambda: {"format": {"type": "text"}})
    user: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    previous_response_id: str | None = None
    store: bool = True


def _usage(echo: ResponseEcho, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": echo.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": echo.input_tokens + output_tokens,
    }


def render_response(
    *,
    response_id: str,
    created: int,
    echo: ResponseEcho,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a ``response`` object."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": echo.instructions,
        "max_output_tokens": echo.max_output_tokens,
        "metadata": dict(echo.metadata),
        "model": echo.model,
        "output": output,
        "parallel_tool_calls": echo.parallel_tool_calls,
        "previous_response_id": echo.previous_response_id,
        "reasoning": {"effort": None, "summary": None},
        "store": echo.store,
        "temperature": echo.temperature,
        "text": dict(echo.text),
        "tool_choice": echo.tool_choice,
        "tools": [dict(tool) for tool in echo.tools],
        "top_p": echo.top_p,
        "truncation": "disabled",
        "usage": usage,
        "user": echo.user,
    }


def _message(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content if status == "completed" else [],
    }


def _function_call(item_id: str, call: ToolCall, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


def _item_ids(response_id: str, count: int) -> tuple[str, list[str]]:
    base = response_id.removeprefix("resp_")
    return f"msg_{base}", [f"fc_{base}_{index}" for index in range(count)]


def render_output(
    response_id: str, content: str | None, tool_calls: tuple[ToolCall, ...]
) -> list[dict[str, Any]]:
    """Return the ``output`` items: a message with the text (if any), then each function call."""
    message_id, call_ids = _item_ids(response_id, len(tool_calls))
    # An empty answer is still one (empty) message: an agent reads output_text from it.
    text = content or ""
    items = [_message(message_id, text, "completed")] if text or not tool_calls else []
    items += [
        _function_call(item_id, call, call.arguments, "completed")
        for item_id, call in zip(call_ids, tool_calls, strict=True)
    ]
    return items


def render_completed(
    *,
    response_id: str,
    created: int,
    echo: ResponseEcho,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
) -> dict[str, Any]:
    """Return the completed ``response`` carrying an answer."""
    return render_response(
        response_id=response_id,
        created=created,
        echo=echo,
        status="completed",
        output=render_output(response_id, content, tool_calls),
        usage=_usage(echo, completion_tokens(content, tool_calls)),
    )


def render_preamble_events(
    *, response_id: str, created: int, echo: ResponseEcho
) -> list[dict[str, Any]]:
    """Return ``response.created`` and ``response.in_progress``, sent before the wait."""
    pending = render_response(
        response_id=response_id, created=created, echo=echo, status="in_progress", output=[]
    )
    return [
        {"type": "response.created", "response": pending, "sequence_number": 0},
        {"type": "response.in_progress", "response": pending, "sequence_number": 1},
    ]


def render_answer_events(
    *,
    response_id: str,
    created: int,
    echo: ResponseEcho,
    content: str | None,
    tool_calls: tuple[ToolCall, ...],
    piece: int = 256,
) -> list[dict[str, Any]]:
    """Return the events after the wait, in order, ending with ``response.completed``."""
    events: list[dict[str, Any]] = []
    message_id, call_ids = _item_ids(response_id, len(tool_calls))
    index = 0
    if content or not tool_calls:
        content = content or ""
        text_at = {"item_id": message_id, "output_index": index, "content_index": 0}
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        events.append(_added(index, _message(message_id, content, "in_progress")))
        events.append({"type": "response.content_part.added", **text_at, "part": part})
        for start in range(0, len(content), piece):
            delta = content[start : start + piece]
            events.append(
                {"type": "response.output_text.delta", **text_at, "delta": delta, "logprobs": []}
            )
        events.append(
            {"type": "response.output_text.done", **text_at, "text": content, "logprobs": []}
        )
        events.append(
            {"type": "response.content_part.done", **text_at, "part": {**part, "text": content}}
        )
        events.append(_done(index, _message(message_id, content, "completed")))
        index += 1
    for item_id, call in zip(call_ids, tool_calls, strict=True):
        at = {"item_id": item_id, "output_index": index}
        events.append(_added(index, _function_call(item_id, call, "", "in_progress")))
        events.append(
            {"type": "response.function_call_arguments.delta", **at, "delta": call.arguments}
        )
        events.append(
            {"type": "response.function_call_arguments.done", **at, "arguments": call.arguments}
        )
        events.append(_done(index, _function_call(item_id, call, call.arguments, "completed")))
        index += 1
    completed = render_completed(
        response_id=response_id,
        created=created,
        echo=echo,
        content=content,
        tool_calls=tool_calls,
    )
    events.append({"type": "response.completed", "response": completed})
    for number, event in enumerate(events, start=PREAMBLE_EVENTS):
        event["sequence_number"] = number
    return events


def _added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def sse_events(events: list[dict[str, Any]]) -> bytes:
    """Return typed SSE events: ``event: <type>`` and the JSON ``data`` line, each."""
    return "".join(
        f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
        for event in events
    ).encode()


# Sent if the wait fails after the 200: an `error` event the openai client raises on.
STREAM_FAILURE = sse_events(
    [
        {
            "type": "error",
            "code": "server_error",
            "message": "ticketproxy failed while waiting for the answer; retry the request "
            "to re-attach to its ticket",
            "param": None,
            "sequence_number": PREAMBLE_EVENTS,
            "error": {
                "type": "server_error",
                "code": "server_error",
                "message": "ticketproxy failed while waiting for the answer; retry the "
                "request to re-attach to its ticket",
                "param": None,
            },
        }
    ]
)
