"""The one flow every front's completion takes: body, route, ticket, wait, answer.

Read the body under its limits, route the model (upstream or people), let the front parse it
into a ``ChatRequest`` (through its memory, if it keeps state), submit it (or re-attach a
retry to its ticket), start a draft, keep the client's line open with the front's heartbeats
while people think, and deliver what the front renders. A front (:mod:`proxy.fronts`) only
parses and renders; :func:`install_front` adds its routes.

A retry of a delivered answer is answered from the bytes rendered for it, before its body is
parsed (:mod:`proxy.answered_retries`), kept by the client, the front, the thread header and
the exact body, after the front's header check: a front renders from its body, the client
and the routed model (and, for a front with memory, what the body refers to, which a
delivered answer already holds), so nothing else can change what a retry is sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from aiohttp import web

from ticketing.desk import Desk, Outcome
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket
from ticketing.threads import THREAD_NAME_LIMIT

from .answered_retries import AnsweredRetries, RetryAnswer, RetryKey, retry_key
from .bodies import read_body
from .drafts import start_draft
from .errors import InvalidRequest, RateLimited
from .fronts import Front, Parsed, register_front
from .handlers import DESK, OPENING, ROUTES, SETTINGS, THREAD_HEADER, TICKET_HEADER
from .keepalive import heartbeat_interval, read_timeout, send_after_wait
from .middleware import CLIENT, REQUEST_ID
from .routing import UPSTREAM, RoutedModel, route_request
from .upstream import UPSTREAM_SESSION, forward_to_upstream
from .wire.requests import parse_json_body

log = logging.getLogger(__name__)

_SUBMIT_PATIENCE = 300.0
_MIN_SUBMIT_PATIENCE = 1.0
_SUBMIT_SHARE = 0.5
_SUBMIT_RETRY_AFTER = 5.0
# Rendered answers to retries of delivered requests, on every front (see install_front).
RETRIES = web.AppKey("answered_retries", AnsweredRetries)


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
    request: web.Request,
    desk: Desk,
    chat: ChatRequest,
    *,
    request_id: str,
    continues: int | None,
) -> Ticket:
    """Open or re-attach to the ticket, telling the client to retry if that takes too long.

    The opening goes on in the background (a client that disconnects does not stop it
    either), and the retry re-attaches to the ticket it opened.
    """
    opening = asyncio.create_task(
        desk.submit(
            chat, request_id=request_id, thread_name=thread_name(request), continues=continues
        )
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


def _answer_headers(desk: Desk, ticket: Ticket, *, stream: bool) -> dict[str, str]:
    """Return the headers of a ticket's answer, but for its x-request-id."""
    headers = {
        TICKET_HEADER: ticket.issue_url or "",
        # What an editor's signature names: `owner/repo#12`, or `owner/repo#12/3` for step 3.
        "x-ticketproxy-ref": desk.ticket_ref(ticket) if ticket.issue_number is not None else "",
    }
    if stream:
        headers["Cache-Control"] = "no-cache"
    return headers


def _settled_response(
    request_id: str, body: bytes, headers: Mapping[str, str], *, content_type: str
) -> web.Response:
    """Return an answer already decided: one plain response, no heartbeat machinery."""
    return web.Response(
        body=body, headers={"x-request-id": request_id, **headers}, content_type=content_type
    )


def _settled_body(
    front: Front[Any], outcome: Outcome, ticket: Ticket, terms: Any, *, stream: bool
) -> bytes:
    """Return the whole answer to a request whose ``ticket`` is already decided."""
    created = int(ticket.created_at.timestamp())
    body = (front.render_stream if stream else front.render_json)(outcome, terms, created)
    if stream and front.preamble is not None:
        return front.preamble(ticket, terms, created) + body
    return body


def _content_type(front: Front[Any], *, stream: bool) -> str:
    """Return the media type of the front's answer (without parameters, as aiohttp wants)."""
    framing = front.stream_framing if stream else front.json_framing
    return framing.content_type.partition(";")[0]


def _delivered_ticket(desk: Desk, request_key: str) -> int | None:
    """Return the ticket whose delivered answer a retry of this request gets now, or None."""
    outcome = desk.recent_delivery(request_key)
    return None if outcome is None else outcome.ticket.id


def _retry_answer(
    desk: Desk, front: Front[Any], outcome: Outcome, request_key: str, terms: Any, *, stream: bool
) -> RetryAnswer:
    """Return what a retry of this delivered request is sent: one plain, whole answer."""
    ticket = outcome.ticket
    return RetryAnswer(
        request_key=request_key,
        ticket_id=ticket.id,
        body=_settled_body(front, outcome, ticket, terms, stream=stream),
        headers=tuple(_answer_headers(desk, ticket, stream=stream).items()),
        content_type=_content_type(front, stream=stream),
    )


def _keep_for_retries(app: web.Application, retry: RetryKey, answer: RetryAnswer) -> None:
    """Keep ``answer`` for the retries of its request, if the desk hands them its ticket."""
    # What intake and settled() hand a retry: the delivered outcome the desk remembers.
    outcome = app[DESK].recent_delivery(answer.request_key)
    if outcome is not None and outcome.ticket.id == answer.ticket_id:
        app[RETRIES].remember(retry, answer)


async def read_request(request: web.Request) -> bytes:
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


async def _forward(
    request: web.Request, body: Any, routed: RoutedModel, front: Front[Any]
) -> web.StreamResponse:
    """Hand a request for an upstream-routed model to that model: no ticket is opened."""
    if front.upstream_endpoint is None:
        raise InvalidRequest(
            f"The model `{routed.requested}` is routed to an upstream model, which this "
            f"ticketproxy forwards chat completions to, not {front.name} requests: ask "
            "another model, or use /v1/chat/completions for this one.",
            param="model",
            code="unsupported_route",
        )
    return await forward_to_upstream(
        request,
        body,
        routed.route,
        endpoint=front.upstream_endpoint,
        session=request.app[UPSTREAM_SESSION],
        request_id=request[REQUEST_ID],
    )


async def _take(
    request: web.Request, front: Front[Any]
) -> web.StreamResponse | tuple[ChatRequest, Parsed[Any], RetryKey]:
    """Refuse, answer a kept retry, forward upstream, or parse: all before any ticket.

    Return the response when one is due now, else the ticket's request, the front's parse
    and the key its retries are kept by. Its frame ends here, before the wait begins.
    """
    # Everything that can be refused is refused here, before the 200 goes out.
    if front.check_headers is not None:
        front.check_headers(request.headers)
    raw = await read_request(request)
    thread = request.headers.get(THREAD_HEADER)
    retry = retry_key(client=request[CLIENT], front=front.name, thread=thread, body=raw)
    kept = request.app[RETRIES].find(retry, partial(_delivered_ticket, request.app[DESK]))
    if kept is not None:
        return _settled_response(
            request[REQUEST_ID], kept.body, dict(kept.headers), content_type=kept.content_type
        )
    body = parse_json_body(raw)
    del raw
    routed = route_request(request.app[ROUTES], body)
    if routed.route.kind == UPSTREAM:
        return await _forward(request, body, routed, front)
    if front.memory is None:
        parsed = front.parse(body, request[CLIENT], routed)
    else:
        parsed = front.memory.parse(request, body, routed)
    # The ticket names the canonical model; the answer echoes the id the client asked for.
    return replace(parsed.chat, model=routed.canonical), parsed, retry


async def answer_with(request: web.Request, front: Front[Any]) -> web.StreamResponse:
    """Refuse, route or ticket a request in ``front``'s dialect, then answer it in that dialect.

    A retry of a delivered answer is answered from the rendered bytes kept for it, before
    the body is parsed; the front's name is part of their key, as it renders them. Once
    delivered, the answer is kept for the retries of this request.

    One coroutine from the ticket to the answer, holding only what the answer needs: ten
    thousand of these may wait at once, and every frame and object held costs per wait.
    """
    taken = await _take(request, front)
    if isinstance(taken, web.StreamResponse):
        return taken
    chat, parsed, retry = taken
    del taken
    desk = request.app[DESK]
    request_id = request[REQUEST_ID]
    ticket = await _submit(request, desk, chat, request_id=request_id, continues=parsed.continues)
    if front.memory is not None:
        front.memory.keep(request, ticket, parsed)
    terms, stream = parsed.terms, parsed.stream
    start_draft(request.app, ticket, chat)
    # Held no longer: the store has the request, and a wait may last hours.
    key = chat.key
    del chat, parsed
    created = int(ticket.created_at.timestamp())
    settled = desk.settled(ticket)
    if settled is not None:
        # A retry of an answered request: rendered once, sent now and kept for its retries.
        answer = _retry_answer(desk, front, settled, key, terms, stream=stream)
        desk.delivered(settled)
        _keep_for_retries(request.app, retry, answer)
        return _settled_response(
            request_id, answer.body, dict(answer.headers), content_type=answer.content_type
        )
    # A future, not a task: the desk settles it, so a wait costs no task of its own.
    outcome = desk.watch(ticket)
    # Built in the call, so that only the response keeps them: the headers (as its own
    # copy), the preamble (until it is sent). The ticket is not kept either: the outcome
    # carries it.
    waiting = send_after_wait(
        request,
        outcome,
        render=partial(
            _render, front.render_stream if stream else front.render_json, terms, created
        ),
        interval=heartbeat_interval(
            request.headers, default=request.app[SETTINGS].heartbeat_interval
        ),
        headers={"x-request-id": request_id, **_answer_headers(desk, ticket, stream=stream)},
        framing=front.stream_framing if stream else front.json_framing,
        preamble=(
            front.preamble(ticket, terms, created) if stream and front.preamble is not None else b""
        ),
    )
    del ticket
    response, delivered = await waiting
    if delivered:
        result = outcome.result()
        desk.delivered(result)
        _keep_for_retries(
            request.app, retry, _retry_answer(desk, front, result, key, terms, stream=stream)
        )
    return response


def _render(
    render: Callable[[Outcome, Any, int], bytes], terms: Any, created: int, outcome: Outcome
) -> bytes:
    """Render ``outcome`` with the front's terms (a partial of this holds less than a closure)."""
    return render(outcome, terms, created)


def handler_for(front: Front[Any]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Return the route handler that answers ``front``'s requests.

    A partial, not a closure: a closure's coroutine would be one more frame per wait.
    """
    handle = partial(answer_with, front=front)
    handle.__doc__ = f"Answer a {front.name} request with a ticket's verified answer."
    return handle


def install_front(app: web.Application, front: Front[Any], *paths: str) -> None:
    """Serve ``front`` at ``paths`` (POST), and let the middleware know its envelope and key."""
    if RETRIES not in app:
        app[RETRIES] = AnsweredRetries()
    handle = handler_for(front)
    for path in paths:
        register_front(app, path, front)
        app.router.add_post(path, handle)
