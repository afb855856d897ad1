"""The Responses API front: ``POST /v1/responses`` on the one completion flow.

See :mod:`proxy.fronts`. The stream opens with ``response.created`` and
``response.in_progress`` as soon as the ticket exists, keeps the line open with SSE comments
while people think, then sends the answer's typed events. An expiry is a completed response
whose text says nobody answered (no function call), as chat completions do. Responses are
stored, and ``previous_response_id`` continues one (:mod:`proxy.stored_responses`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ticketing.desk import Outcome
from ticketing.store.model import Ticket

from .fronts import Front, Parsed, released
from .keepalive import Framing
from .routing import RoutedModel
from .stored_responses import ResponsesMemory, response_id_for
from .wire.responses import prompt_tokens
from .wire.responses_api.objects import (
    STREAM_FAILURE,
    ResponseEcho,
    render_answer_events,
    render_completed,
    render_preamble_events,
    sse_events,
)
from .wire.responses_api.requests import parse_responses_request

RESPONSES_FRAMING = Framing(
    content_type="text/event-stream; charset=utf-8",
    # An SSE comment: ignored by clients, but it resets their read timeout.
    heartbeat=b": keep-alive\n\n",
    failure=STREAM_FAILURE,
)


def _parse_in_context(
    body: dict[str, Any],
    client: str,
    routed: RoutedModel,
    context: Sequence[Any],
    issued: frozenset[str],
) -> Parsed[ResponseEcho]:
    """Parse a body after ``context``: the items of the response it continues, if any."""
    chat = parse_responses_request(
        body, client=client, model=routed.requested, context=context, issued=issued
    )
    text = body.get("text")
    echo = ResponseEcho(
        model=routed.requested,
        input_tokens=prompt_tokens(chat),
        instructions=body.get("instructions"),
        tools=tuple(body.get("tools") or ()),
        tool_choice=body.get("tool_choice") or "auto",
        parallel_tool_calls=chat.parallel_tool_calls,
        max_output_tokens=chat.max_tokens,
        metadata=chat.metadata,
        text=text if isinstance(text, dict) and "format" in text else {"format": {"type": "text"}},
        user=chat.user,
        temperature=body.get("temperature"),
        top_p=body.get("top_p"),
        previous_response_id=body.get("previous_response_id"),
        store=body.get("store") is not False,
    )
    return Parsed(chat=chat, terms=echo, stream=bool(body.get("stream")))


def _parse(body: dict[str, Any], client: str, routed: RoutedModel) -> Parsed[ResponseEcho]:
    return _parse_in_context(body, client, routed, (), frozenset())


def _fields(outcome: Outcome, echo: ResponseEcho, created: int) -> dict[str, Any]:
    release = released(outcome)
    return {
        "response_id": response_id_for(outcome.ticket),
        "created": created,
        "echo": echo,
        "content": release.content,
        "tool_calls": release.tool_calls,
    }


def _render_json(outcome: Outcome, echo: ResponseEcho, created: int) -> bytes:
    body = render_completed(**_fields(outcome, echo, created))
    return json.dumps(body, ensure_ascii=False).encode()


def _render_stream(outcome: Outcome, echo: ResponseEcho, created: int) -> bytes:
    return sse_events(render_answer_events(**_fields(outcome, echo, created)))


def _preamble(ticket: Ticket, echo: ResponseEcho, created: int) -> bytes:
    return sse_events(
        render_preamble_events(response_id=response_id_for(ticket), created=created, echo=echo)
    )


RESPONSES_FRONT: Front[ResponseEcho] = Front(
    name="Responses API",
    parse=_parse,
    render_json=_render_json,
    render_stream=_render_stream,
    stream_framing=RESPONSES_FRAMING,
    preamble=_preamble,
    upstream_endpoint="/responses",
    memory=ResponsesMemory(_parse_in_context),
)
