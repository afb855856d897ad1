"""Anthropic's Messages API out: the ``message`` object, its stream events, its errors.

Reference: https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/docs/build-with-claude/streaming. A released answer is a text
block (when it has text) followed by one ``tool_use`` block per call; ``stop_reason`` is
``tool_use`` when it calls tools, ``stop_sequence`` when the answer was cut at one of the
request's ``stop_sequences``, ``end_turn`` otherwise. ``max_tokens`` never applies: an answer
longer than the request allows is held back for the editor to shorten, never cut.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy.errors import APIError
from proxy.wire.responses import completion_tokens
from ticketing.request import ToolCall

# Anthropic's error types by HTTP status (https://docs.anthropic.com/en/api/errors).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
# An event is (name, data): the SSE ``event:`` line and its JSON.
Event = tuple[str, dict[str, Any]]


def error_type(status: int) -> str:
    """Return Anthropic's error type for an HTTP status."""
    if status in _ERROR_TYPES:
        return _ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_envelope(error: APIError) -> dict[str, Any]:
    """Return Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``.

    The envelope has no ``param``: the message names it first, as Anthropic's messages do.
    """
    message = error.message if error.param is None else f"{error.param}: {error.message}"
    return {"type": "error", "error": {"type": error_type(error.status), "message": message}}


@dataclass(frozen=True)
class Answer:
    """What a message carries: its id, model, blocks' sources, why it stopped, its usage."""

    message_id: str
    model: str
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    stop_sequence: str | None
    input_tokens: int


def stop_of(text: str | None, calls: Sequence[ToolCall], stops: Sequence[str]) -> tuple[str, Any]:
    """Return ``stop_reason`` and ``stop_sequence`` for an answer ``text`` and its calls."""
    if calls:
        return "tool_use", None
    found = [(text.find(s), s) for s in stops if text and s in text]
    if found:
        return "stop_sequence", min(found)[1]
    return "end_turn", None


def tool_use_id(call_id: str) -> str:
    """Return a released call's id as Anthropic spells its ids (``toolu_…``).

    Safe to rename: a run's next step is matched on the calls' names and arguments only.
    """
    return "toolu_" + call_id.removeprefix("call_")


def _input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def content_blocks(answer: Answer) -> list[dict[str, Any]]:
    """Return the message's content: a text block, then a ``tool_use`` block per call."""
    blocks: list[dict[str, Any]] = []
    if answer.content:
        blocks.append({"type": "text", "text": answer.content})
    for call in answer.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id(call.id),
                "name": call.name,
                "input": _input(call),
            }
        )
    return blocks


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _output_tokens(answer: Answer) -> int:
    return completion_tokens(answer.content, answer.tool_calls)


def render_message(answer: Answer) -> dict[str, Any]:
    """Return the ``message`` object of a non-streaming answer."""
    return {
        "id": answer.message_id,
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": content_blocks(answer),
        "stop_reason": answer.stop_reason,
        "stop_sequence": answer.stop_sequence,
        "usage": _usage(answer.input_tokens, _output_tokens(answer)),
    }


def render_start(*, message_id: str, model: str, input_tokens: int) -> list[Event]:
    """Return ``message_start``, sent as soon as the ticket exists."""
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(input_tokens, 0),
    }
    return [("message_start", {"type": "message_start", "message": message})]


def _block_events(index: int, block: dict[str, Any]) -> list[Event]:
    if block["type"] == "text":
        opened: dict[str, Any] = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    else:
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opened},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def render_answer_events(answer: Answer) -> list[Event]:
    """Return the events after the wait: each block's start, delta and stop, then the end."""
    events: list[Event] = []
    for index, block in enumerate(content_blocks(answer)):
        events += _block_events(index, block)
    delta = {"stop_reason": answer.stop_reason, "stop_sequence": answer.stop_sequence}
    usage = _usage(answer.input_tokens, _output_tokens(answer))
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def sse_events(events: list[Event]) -> bytes:
    """Return events as Server-Sent Events with Anthropic's ``event:`` names."""
    lines = [
        f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events
    ]
    return "".join(lines).encode()


PING = sse_events([("ping", {"type": "ping"})])
# The anthropic SDKs raise an APIStatusError for an `error` event.
STREAM_FAILURE = sse_events(
    [
        (
            "error",
            {
                "type": "error",
                "error": {
                    "type": "api_error",
                    "message": "ticketproxy failed while waiting for the answer; retry the "
                    "request to re-attach to its ticket",
                },
            },
        )
    ]
)
