"""The OpenAI chat completions and legacy completions fronts (see :mod:`proxy.fronts`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ticketing.desk import Outcome

from .fronts import Front, Parsed, answer_id, released
from .keepalive import SSE_FRAMING
from .routing import RoutedModel
from .wire.requests import parse_chat_request, parse_legacy_completion, stream_settings
from .wire.responses import (
    prompt_tokens,
    render_chunks,
    render_completion,
    render_legacy_chunks,
    render_legacy_completion,
)


@dataclass(frozen=True)
class CompletionTerms:
    """What a completion's answer is rendered with: the client's own terms."""

    model: str  # the id the client asked for (the ticket names the canonical one)
    legacy_functions: bool
    prompt_token_count: int
    include_usage: bool


def _sse(events: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def _parse_chat(body: dict[str, Any], client: str, routed: RoutedModel) -> Parsed[CompletionTerms]:
    chat = parse_chat_request(body, client=client, models=frozenset({routed.requested}))
    return _parsed(body, chat, routed)


def _parse_legacy(
    body: dict[str, Any], client: str, routed: RoutedModel
) -> Parsed[CompletionTerms]:
    chat = parse_legacy_completion(body, client=client, models=frozenset({routed.requested}))
    return _parsed(body, chat, routed)


def _parsed(body: dict[str, Any], chat: Any, routed: RoutedModel) -> Parsed[CompletionTerms]:
    stream, include_usage = stream_settings(body)
    terms = CompletionTerms(
        model=routed.requested,
        legacy_functions=chat.legacy_functions,
        prompt_token_count=prompt_tokens(chat),
        include_usage=include_usage,
    )
    return Parsed(chat=chat, terms=terms, stream=stream)


def _chat_fields(outcome: Outcome, terms: CompletionTerms, created: int) -> dict[str, Any]:
    release = released(outcome)
    return {
        "completion_id": answer_id(outcome.ticket, "chatcmpl-"),
        "created": created,
        "model": terms.model,
        "content": release.content,
        "tool_calls": release.tool_calls,
        "finish_reason": release.finish_reason,
        "legacy_functions": terms.legacy_functions,
        "prompt_token_count": terms.prompt_token_count,
    }


def _chat_json(outcome: Outcome, terms: CompletionTerms, created: int) -> bytes:
    fields = _chat_fields(outcome, terms, created)
    return json.dumps(render_completion(**fields), ensure_ascii=False).encode()


def _chat_stream(outcome: Outcome, terms: CompletionTerms, created: int) -> bytes:
    fields = _chat_fields(outcome, terms, created)
    return _sse(render_chunks(**fields, include_usage=terms.include_usage))


def _legacy_fields(outcome: Outcome, terms: CompletionTerms, created: int) -> dict[str, Any]:
    release = released(outcome)
    return {
        "completion_id": answer_id(outcome.ticket, "cmpl-"),
        "created": created,
        "model": terms.model,
        "text": release.content or "",
        "finish_reason": release.finish_reason,
        "prompt_token_count": terms.prompt_token_count,
    }


def _legacy_json(outcome: Outcome, terms: CompletionTerms, created: int) -> bytes:
    fields = _legacy_fields(outcome, terms, created)
    return json.dumps(render_legacy_completion(**fields), ensure_ascii=False).encode()


def _legacy_stream(outcome: Outcome, terms: CompletionTerms, created: int) -> bytes:
    fields = _legacy_fields(outcome, terms, created)
    return _sse(render_legacy_chunks(**fields, include_usage=terms.include_usage))


CHAT_FRONT: Front[CompletionTerms] = Front(
    name="chat completions",
    parse=_parse_chat,
    render_json=_chat_json,
    render_stream=_chat_stream,
    stream_framing=SSE_FRAMING,
    upstream_endpoint="/chat/completions",
)

LEGACY_FRONT: Front[CompletionTerms] = Front(
    name="legacy completions",
    parse=_parse_legacy,
    render_json=_legacy_json,
    render_stream=_legacy_stream,
    stream_framing=SSE_FRAMING,
    upstream_endpoint="/completions",
)
