"""Responses out: chat completions, their streamed chunks, legacy completions, model lists,
and the token estimates their ``usage`` reports.

References: https://platform.openai.com/docs/api-reference/chat/object,
https://platform.openai.com/docs/api-reference/chat-streaming and
https://platform.openai.com/docs/api-reference/models/list.
"""

from __future__ import annotations

import math
from typing import Any

from ticketing.request import ChatRequest, ToolCall

# A fixed "created" for models: they are ids of ticket routes, not trained artefacts.
MODEL_CREATED = 1_700_000_000
OWNED_BY = "ticketproxy"
SYSTEM_FINGERPRINT = "ticketproxy"


def count_tokens(text: str) -> int:
    """Estimate tokens the way OpenAI's rule of thumb does: about four characters each."""
    return math.ceil(len(text) / 4) if text else 0


def prompt_tokens(request: ChatRequest) -> int:
    """Estimate the prompt's tokens: each message's text plus a small per-message overhead."""
    return sum(count_tokens(m.content) + 4 for m in request.messages) + 3


def _assistant_message(
    content: str | None, tool_calls: tuple[ToolCall, ...], *, legacy: bool
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls and legacy:
        call = tool_calls[0]
        message["function_call"] = {"name": call.name, "arguments": call.arguments}
    elif tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in tool_calls
        ]
    return message


def completion_tokens(content: str | None, tool_calls: tuple[ToolCall, ...]) -> int:
    """Estimate the completion's tokens: its text plus each call's name and arguments."""
    return count_tokens(content or "") + sum(
        count_tokens(c.name) + count_tokens(c.arguments) for c in tool_calls
    )


def render_usage(prompt_token_count: int, completion_token_count: int) -> dict[str, int]:
    """Return a ``usage`` object."""
    return {
        "prompt_tokens": prompt_token_count,
        "completion_tokens": completion_token_count,
        "total_tokens": prompt_token_count + completion_token_count,
    }


def render_completion(
    *,
    completion_id: str,
    created: int,
    model: str,
    content: str | None,
    prompt_token_count: int,
    tool_calls: tuple[ToolCall, ...] = (),
    finish_reason: str = "stop",
    legacy_functions: bool = False,
) -> dict[str, Any]:
    """Return a ``chat.completion`` object with one assistant choice."""
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": _assistant_message(content, tool_calls, legacy=legacy_functions),
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": render_usage(prompt_token_count, completion_tokens(content, tool_calls)),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def render_chunks(
    *,
    completion_id: str,
    created: int,
    model: str,
    content: str | None,
    prompt_token_count: int,
    tool_calls: tuple[ToolCall, ...] = (),
    finish_reason: str = "stop",
    legacy_functions: bool = False,
    include_usage: bool = False,
    piece: int = 256,
) -> list[dict[str, Any]]:
    """Return the ``chat.completion.chunk`` events of a streamed answer, in order.

    https://platform.openai.com/docs/api-reference/chat-streaming: a first chunk with the
    role, content and tool-call deltas, a final chunk with ``finish_reason``, and, with
    ``stream_options.include_usage``, a last chunk with empty ``choices`` and the usage.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            body["usage"] = None
        return body

    chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
    text = content or ""
    for start in range(0, len(text), piece):
        chunks.append(chunk({"content": text[start : start + piece]}))
    if tool_calls and legacy_functions:
        call = tool_calls[0]
        chunks.append(chunk({"function_call": {"name": call.name, "arguments": ""}}))
        chunks.append(chunk({"function_call": {"arguments": call.arguments}}))
    else:
        for index, call in enumerate(tool_calls):
            chunks.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": call.arguments}}]})
            )
    chunks.append(chunk({}, finish_reason))
    if include_usage:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = render_usage(
            prompt_token_count, completion_tokens(content, tool_calls)
        )
        chunks.append(usage_chunk)
    return chunks


def render_model(model: str) -> dict[str, Any]:
    """Return one ``model`` object."""
    return {"id": model, "object": "model", "created": MODEL_CREATED, "owned_by": OWNED_BY}


def render_model_list(models: tuple[str, ...]) -> dict[str, Any]:
    """Return the ``list`` of models ``GET /v1/models`` answers."""
    return {"object": "list", "data": [render_model(m) for m in models]}


def render_legacy_completion(
    *,
    completion_id: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_token_count: int,
) -> dict[str, Any]:
    """Return a legacy ``text_completion`` object."""
    return {
        "id": completion_id,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish_reason}],
        "usage": render_usage(prompt_token_count, count_tokens(text)),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }


def render_legacy_chunks(
    *,
    completion_id: str,
    created: int,
    model: str,
    text: str,
    finish_reason: str,
    prompt_token_count: int,
    include_usage: bool = False,
    piece: int = 256,
) -> list[dict[str, Any]]:
    """Return the streamed events of a legacy completion, in order."""

    def chunk(fragment: str, finish: str | None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "text_completion",
            "created": created,
            "model": model,
            "choices": [{"text": fragment, "index": 0, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk(text[i : i + piece], None) for i in range(0, len(text), piece)]
    chunks.append(chunk("", finish_reason))
    if include_usage:
        usage = chunk("", None)
        usage["choices"] = []
        usage["usage"] = render_usage(prompt_token_count, count_tokens(text))
        chunks.append(usage)
    return chunks
