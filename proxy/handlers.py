"""Route handlers: models, chat completions (JSON or SSE) and legacy completions."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aiohttp import web

from ticketing.desk import Desk, Outcome
from ticketing.release import Release
from ticketing.render.replies import render_expired_completion
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket
from ticketing.threads import THREAD_NAME_LIMIT

from .bodies import read_body
from .drafts import start_draft
from .errors import InvalidRequest, NotFound, RateLimited
from .keepalive import JSON_FRAMING, Framing, heartbeat_interval, read_timeout, send_after_wait
from .middleware import CLIENT, REQUEST_ID
from .routing import UPSTREAM, RoutedModel, RouteTable, route_request
from .settings import Settings
from .upstream import UPSTREAM_SESSION, forward_to_upstream
from .wire.requests import (
    parse_chat_request,
    parse_json_body,
    parse_legacy_completion,
    stream_settings,
)
from .wire.responses import (
    prompt_tokens,
    render_chunks,
    render_completion,
    render_legacy_chunks,
    render_legacy_completion,
    render_model,
    render_model_list,
)

log = logging.getLogger(__name__)

SETTINGS = web.AppKey("settings", Settings)


@dataclass
class Openings:
    """Ticket openings still running after their request gave up (see _submit)."""

    tasks: set[asyncio.Task[Ticket]] = field(default_factory=set)
    # Set once shutdown began: an opening handed over after that is cancelled at once.
    closing: bool = False


OPENING = web.AppKey("opening", Openings)
_SUBMIT_PATIENCE = 300.0
_MIN_SUBMIT_PATIENCE = 1.0
_SUBMIT_SHARE = 0.5
_SUBMIT_RETRY_AFTER = 5.0
DESK = web.AppKey("desk", Desk)
ROUTES = web.AppKey("routes", RouteTable)

# The issue (or step comment) a completion's ticket is on; the metrics time these requests.
TICKET_HEADER = "x-ticketproxy-ticket"
# A client may name its agent run: every request with the same name (from the same client
# key) lands on one issue, a step comment each.
THREAD_HEADER = "X-Ticketproxy-Thread"

SSE_FRAMING = Framing(
    content_type="text/event-stream; charset=utf-8",
    # An SSE comment: ignored by clients, but it resets their read timeout.
    heartbeat=b": keep-alive\n\n",
    # The openai client raises an APIError for an event that carries "error".
    failure=b'data: {"error": {"message": "ticketproxy failed while waiting for the answer;'
    b' retry the request to re-attach to its ticket", "type": "server_error",'
    b' "param": null, "code": null}}\n\n',
)


async def list_models(request: web.Request) -> web.Response:
    """List the model ids agents may ask for."""
    return web.json_response(render_model_list(request.app[ROUTES].listed))


async def get_model(request: web.Request) -> web.Response:
    """Describe one model id."""
    model = request.match_info["model"]
    if request.app[ROUTES].resolve(model) is None:
        raise NotFound(
            f"The model `{model}` does not exist on this ticketproxy",
            param="model",
            code="model_not_found",
        )
    return web.json_response(render_model(model))


def released(outcome: Outcome) -> Release:
    """Return what the agent receives: the released answer, or the plain expiry text."""
    release = outcome.release
    if release is not None:
        return release
    ticket = outcome.ticket
    text = render_expired_completion(deadline=ticket.deadline, ticket_url=ticket.issue_url or "")
    return Release(content=text, tool_calls=(), finish_reason="stop")


def _completion_id(outcome: Outcome, prefix: str) -> str:
    # Derived from the ticket, so a retry that re-attaches sees the same id.
    return f"{prefix}-{outcome.ticket.request_key[:20]}{outcome.ticket.id}"


def _sse(events: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def thread_name(request: web.Request) -> str | None:
    """Return the agent run the client named in the thread header, or None."""
    raw = request.headers.get(THREAD_HEADER)
    if raw is None:
        return None
    name = raw.strip()
    if not name or len(name) > THREAD_NAME_LIMIT or not name.isprintable():
        raise InvalidRequest(
            f"the {THREAD_HEADER} header must be 1 to {THREAD_NAME_LIMIT} printable characters",
            param=THREAD_HEADER,
            code="invalid_thread",
        )
    return name


def submit_patience(headers: Mapping[str, str]) -> float:
    """Return how long a request may wait for its ticket to be opened on GitHub.

    Nothing can be sent before the issue exists (a GitHub failure must still be a 429), so
    a client waits silently while issue creations queue up: past half its read timeout
    (``x-stainless-read-timeout``; 5 minutes when it names none) it is told to retry.
    """
    seconds = read_timeout(headers)
    if seconds is None:
        return _SUBMIT_PATIENCE
    return max(_MIN_SUBMIT_PATIENCE, min(_SUBMIT_PATIENCE, seconds * _SUBMIT_SHARE))


async def _submit(
    request: web.Request, desk: Desk, chat: ChatRequest, *, request_id: str
) -> Ticket:
    """Open or re-attach to the ticket, telling the client to retry if that takes too long.

    The opening goes on in the background (a client that disconnects does not stop it
    either), and the retry re-attaches to the ticket it opened.
    """
    opening = asyncio.create_task(
        desk.submit(chat, request_id=request_id, thread_name=thread_name(request))
    )
    try:
        # A timeout around a shield: the opening goes on when the client is told to retry.
        async with asyncio.timeout(submit_patience(request.headers)):
            return await asyncio.shield(opening)
    except TimeoutError:
        log.info(
            "request_id=%s ticket still opening on GitHub: asked the client to retry", request_id
        )
        raise RateLimited(
            "The ticket for this request is still being opened on GitHub (its queue is long);"
            " retry after the time in retry-after to re-attach to it.",
            retry_after=_SUBMIT_RETRY_AFTER,
            code="ticket_opening",
        ) from None
    finally:
        if not opening.done():
            _keep_until_done(request.app, opening, request_id)


def _keep_until_done(app: web.Application, task: asyncio.Task[Ticket], request_id: str) -> None:
    """Hold a ticket opening that outlived its request, and log how it ended."""
    openings = app[OPENING]
    pending = openings.tasks
    pending.add(task)

    def done(finished: asyncio.Task[Ticket]) -> None:
        pending.discard(finished)
        if finished.cancelled():
            return
        error = finished.exception()
        if error is not None:
            # The client was already told to retry; its retry meets the same fault anew.
            log.warning(
                "request_id=%s opening the ticket failed after the client left: %s",
                request_id,
                error,
            )

    task.add_done_callback(done)
    if openings.closing:
        # Handed over by a request cancelled during shutdown: the desk is about to stop.
        task.cancel()


async def cancel_openings(app: web.Application) -> None:
    """Stop ticket openings that outlived their requests (on shutdown, before the desk).

    Runs twice: when shutdown begins, and again just before the desk stops, for openings
    handed over by requests that aiohttp cancelled in between.
    """
    openings = app[OPENING]
    openings.closing = True
    pending = list(openings.tasks)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


async def _answer(
    request: web.Request,
    chat: ChatRequest,
    *,
    stream: bool,
    render: Callable[[Outcome, int], bytes],
) -> web.StreamResponse:
    """Open or re-attach to the ticket, keep the client's line open, then send the answer."""
    settings = request.app[SETTINGS]
    desk = request.app[DESK]
    request_id = request[REQUEST_ID]
    ticket = await _submit(request, desk, chat, request_id=request_id)
    start_draft(request.app, ticket, chat)
    # Held no longer: the store has the request, and a wait may last hours.
    del chat
    created = int(ticket.created_at.timestamp())
    headers = {
        "x-request-id": request_id,
        TICKET_HEADER: ticket.issue_url or "",
        # What an editor's signature names: `owner/repo#12`, or `owner/repo#12/3` for step 3.
        "x-ticketproxy-ref": desk.ticket_ref(ticket) if ticket.issue_number is not None else "",
    }
    if stream:
        headers["Cache-Control"] = "no-cache"
    settled = desk.settled(ticket)
    if settled is not None:
        # A retry of an answered request: one plain response, no heartbeat machinery.
        immediate = web.Response(
            body=render(settled, created),
            headers=headers,
            content_type="text/event-stream" if stream else "application/json",
        )
        desk.delivered(settled)
        return immediate
    # A future, not a task: the desk settles it, so a wait costs no task of its own.
    outcome = desk.watch(ticket)
    response, delivered = await send_after_wait(
        request,
        outcome,
        render=lambda outcome: render(outcome, created),
        interval=heartbeat_interval(request.headers, default=settings.heartbeat_interval),
        headers=headers,
        framing=SSE_FRAMING if stream else JSON_FRAMING,
    )
    if delivered:
        desk.delivered(outcome.result())
    return response


async def _forward(request: web.Request, body: Any, routed: RoutedModel) -> web.StreamResponse:
    """Hand a request for an upstream-routed model to that model: no ticket is opened."""
    return await forward_to_upstream(
        request,
        body,
        routed.route,
        session=request.app[UPSTREAM_SESSION],
        request_id=request[REQUEST_ID],
    )


async def _read_request(request: web.Request) -> bytes:
    """Read a completion request's body under TICKETPROXY_MAX_BODY_BYTES, in time."""
    settings = request.app[SETTINGS]
    limit = settings.max_body_bytes
    return await read_body(
        request,
        limit=limit,
        within=settings.body_timeout,
        setting="TICKETPROXY_BODY_TIMEOUT",
        refusal=f"The request body is larger than this ticketproxy accepts ({limit} bytes;"
        " TICKETPROXY_MAX_BODY_BYTES).",
    )


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a completion's answer is rendered with: the client's own terms."""

    model: str  # the id the client asked for (the ticket names the canonical one)
    legacy_functions: bool
    prompt_token_count: int
    stream: bool
    include_usage: bool


# Parses a body into the ticket's request: parse_chat_request or parse_legacy_completion.
_Parse = Callable[..., ChatRequest]
_Render = Callable[[Outcome, int, _Asked], bytes]


async def _completion(request: web.Request, parse: _Parse, render: _Render) -> web.StreamResponse:
    """Refuse, route or ticket a completion request, then answer it with ``render``."""
    # Everything that can be refused is refused here, before the 200 goes out.
    body = parse_json_body(await _read_request(request))
    routed = route_request(request.app[ROUTES], body)
    if routed.route.kind == UPSTREAM:
        return await _forward(request, body, routed)
    chat = parse(body, client=request[CLIENT], models=frozenset({routed.requested}))
    # The ticket names the canonical model; the completion echoes the id the client asked for.
    chat = replace(chat, model=routed.canonical)
    stream, include_usage = stream_settings(body)
    asked = _Asked(
        model=routed.requested,
        legacy_functions=chat.legacy_functions,
        prompt_token_count=prompt_tokens(chat),
        stream=stream,
        include_usage=include_usage,
    )
    # Held no longer: a waiting request keeps only what its answer needs (prompts are big).
    del body
    answer = _answer(
        request,
        chat,
        stream=stream,
        render=lambda outcome, created: render(outcome, created, asked),
    )
    del chat  # _answer drops it once the ticket is open, so no frame here keeps it
    return await answer


def _render_chat(outcome: Outcome, created: int, asked: _Asked) -> bytes:
    release = released(outcome)
    fields: dict[str, Any] = {
        "completion_id": _completion_id(outcome, "chatcmpl"),
        "created": created,
        "model": asked.model,
        "content": release.content,
        "tool_calls": release.tool_calls,
        "finish_reason": release.finish_reason,
        "legacy_functions": asked.legacy_functions,
        "prompt_token_count": asked.prompt_token_count,
    }
    if asked.stream:
        return _sse(render_chunks(**fields, include_usage=asked.include_usage))
    return json.dumps(render_completion(**fields), ensure_ascii=False).encode()


def _render_legacy(outcome: Outcome, created: int, asked: _Asked) -> bytes:
    release = released(outcome)
    fields: dict[str, Any] = {
        "completion_id": _completion_id(outcome, "cmpl"),
        "created": created,
        "model": asked.model,
        "text": release.content or "",
        "finish_reason": release.finish_reason,
        "prompt_token_count": asked.prompt_token_count,
    }
    if asked.stream:
        return _sse(render_legacy_chunks(**fields, include_usage=asked.include_usage))
    return json.dumps(render_legacy_completion(**fields), ensure_ascii=False).encode()


async def chat_completions(request: web.Request) -> web.StreamResponse:
    """Answer ``POST /v1/chat/completions`` with a ticket's verified answer."""
    return await _completion(request, parse_chat_request, _render_chat)


async def legacy_completions(request: web.Request) -> web.StreamResponse:
    """Answer the legacy ``POST /v1/completions`` the same way, as ``text_completion``."""
    return await _completion(request, parse_legacy_completion, _render_legacy)
