"""The Anthropic Messages front: ``POST /v1/messages`` (and ``count_tokens``) on the one flow.

See :mod:`proxy.fronts`. Clients put their key in ``x-api-key`` (or, as the anthropic Python
SDK 2.x does, in ``Authorization: Bearer``). The stream opens with ``message_start`` as soon
as the ticket exists, keeps the line open with ``ping`` events while people think, then sends
the answer's blocks. An expiry is an ``end_turn`` message whose text says nobody answered,
with no tool use, as chat completions do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ticketing.desk import Outcome
from ticketing.store.model import Ticket

from .completion_flow import read_request
from .fronts import Front, Parsed, answer_id, bearer_key, released
from .handlers import ROUTES
from .keepalive import Framing
from .middleware import CLIENT
from .routing import RoutedModel, route_request
from .wire.anthropic_messages.objects import (
    PING,
    STREAM_FAILURE,
    Answer,
    anthropic_envelope,
    render_answer_events,
    render_message,
    render_start,
    sse_events,
    stop_of,
)
from .wire.anthropic_messages.requests import check_version, parse_messages_request
from .wire.requests import parse_json_body
from .wire.responses import prompt_tokens

MESSAGES_FRAMING = Framing(
    content_type="text/event-stream; charset=utf-8", heartbeat=PING, failure=STREAM_FAILURE
)


@dataclass(frozen=True)
class MessageTerms:
    """What a message's answer is rendered with: the client's model id, stops and estimate."""

    model: str
    input_tokens: int
    stop_sequences: tuple[str, ...]


def anthropic_key(headers: Mapping[str, str]) -> str | None:
    """Return the key of ``x-api-key``, or else of ``Authorization: Bearer``, or None."""
    key = headers.get("x-api-key")
    return key.strip() if key is not None else bearer_key(headers)


def _parse(body: dict[str, Any], client: str, routed: RoutedModel) -> Parsed[MessageTerms]:
    chat = parse_messages_request(body, client=client, model=routed.requested)
    terms = MessageTerms(
        model=routed.requested, input_tokens=prompt_tokens(chat), stop_sequences=chat.stop
    )
    return Parsed(chat=chat, terms=terms, stream=bool(body.get("stream")))


def _message_id(ticket: Ticket) -> str:
    return answer_id(ticket, "msg_")


def _answer(outcome: Outcome, terms: MessageTerms) -> Answer:
    release = released(outcome)
    # The answer as signed: a stop sequence it held was cut from the released content.
    signed = outcome.answer.text if outcome.answer is not None else None
    reason, sequence = stop_of(signed, release.tool_calls, terms.stop_sequences)
    return Answer(
        message_id=_message_id(outcome.ticket),
        model=terms.model,
        content=release.content,
        tool_calls=release.tool_calls,
        stop_reason=reason,
        stop_sequence=sequence,
        input_tokens=terms.input_tokens,
    )


def _render_json(outcome: Outcome, terms: MessageTerms, created: int) -> bytes:
    return json.dumps(render_message(_answer(outcome, terms)), ensure_ascii=False).encode()


def _render_stream(outcome: Outcome, terms: MessageTerms, created: int) -> bytes:
    return sse_events(render_answer_events(_answer(outcome, terms)))


def _preamble(ticket: Ticket, terms: MessageTerms, created: int) -> bytes:
    start = render_start(
        message_id=_message_id(ticket), model=terms.model, input_tokens=terms.input_tokens
    )
    return sse_events(start)


MESSAGES_FRONT: Front[MessageTerms] = Front(
    name="Anthropic Messages",
    parse=_parse,
    render_json=_render_json,
    render_stream=_render_stream,
    stream_framing=MESSAGES_FRAMING,
    preamble=_preamble,
    envelope=anthropic_envelope,
    client_key=anthropic_key,
    key_hint="Send `x-api-key: <key>`",
    check_headers=check_version,
)


async def count_tokens(request: web.Request) -> web.Response:
    """Answer ``POST /v1/messages/count_tokens`` with the estimate chat completions use."""
    check_version(request.headers)
    body = parse_json_body(await read_request(request))
    routed = route_request(request.app[ROUTES], body)
    chat = parse_messages_request(
        body, client=request[CLIENT], model=routed.requested, counting=True
    )
    return web.json_response({"input_tokens": prompt_tokens(chat)})
