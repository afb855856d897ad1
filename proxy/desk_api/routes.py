"""The desk API's reading routes: the pending list, one ticket, and the OpenAPI description.

Each handler reads the store and the keyring, then hands plain values to the pure shapes of
:mod:`proxy.desk_api.shapes`. Access is the desk's (:func:`proxy.desk_page.refusal`: the
desk token, or loopback only); :mod:`proxy.origin_checks` has already refused foreign Hosts
and Origins before any of this runs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib import resources
from typing import Any

from aiohttp import web

from auth.errors import KeyringError
from auth.keyring import Keyring
from auth.logins import same_login
from auth.review_decision import decide
from auth.roles import Role
from embedded_github import render_markdown
from ticketing.desk import Desk, decode_release
from ticketing.render.redact import redact_request
from ticketing.render.templates import answer_template
from ticketing.render.ticket import ticket_title
from ticketing.request import ChatRequest
from ticketing.store.model import Ticket, TicketState

from ..desk_page import DESK_CLOCK, DESK_PAGE, RECENTLY_EXPIRED, refusal
from ..handlers import DESK
from . import shapes

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
# Titles never change once a ticket is rendered: kept by ticket id, a bounded number.
TITLES: web.AppKey[dict[int, str]] = web.AppKey("desk_api_titles", dict)
_TITLES_KEPT = 2048


def error(status: int, code: str, message: str, **headers: str) -> web.Response:
    """Return the desk API's error: ``{"error": <what to do>, "code": <machine name>}``."""
    return web.json_response(
        {"error": message, "code": code}, status=status, headers={**NO_STORE, **headers}
    )


def guarded(handler: Handler) -> Handler:
    """Refuse a request that may not use the desk (403) before ``handler`` runs."""

    @functools.wraps(handler)
    async def checked(request: web.Request) -> web.StreamResponse:
        reason = refusal(request, request.app[DESK_PAGE])
        if reason is not None:
            return error(403, "desk_access_refused", reason)
        return await handler(request)

    return checked


@functools.cache
def openapi_text() -> str:
    """Return the packaged OpenAPI description of the desk API (read once)."""
    return resources.files("proxy.desk_api").joinpath("openapi.json").read_text(encoding="utf-8")


def openapi_description() -> dict[str, Any]:
    """Return the OpenAPI description as a value."""
    value: dict[str, Any] = json.loads(openapi_text())
    return value


async def openapi(request: web.Request) -> web.StreamResponse:
    """``GET /desk/api/v1/openapi.json``: this API's OpenAPI 3.1 description."""
    return web.Response(text=openapi_text(), content_type="application/json", headers=NO_STORE)


async def config(request: web.Request) -> web.StreamResponse:
    """``GET /desk/api/v1/config``: the repository and GitHub's API address."""
    desk = request.app[DESK]
    return web.json_response(
        {"repo": desk.settings.repo, "github_api_url": request.app[DESK_PAGE].github_api_url},
        headers=NO_STORE,
    )


async def list_tickets(request: web.Request) -> web.StreamResponse:
    """``GET /desk/api/v1/tickets``: pending tickets, filtered by state, review and person."""
    chosen = shapes.parse_filter(dict(request.query))
    if isinstance(chosen, str):
        return error(400, "bad_filter", chosen)
    desk = request.app[DESK]
    now = request.app[DESK_CLOCK]()
    roles: frozenset[Role] = frozenset()
    if chosen.mine is not None:
        try:
            roles = roles_of(desk.keyring(), chosen.mine)
        except KeyringError as exc:
            return error(503, "keyring_unreadable", f"the keyring cannot be read now: {exc}")
    if chosen.state is TicketState.EXPIRED:
        tickets = desk.store.recently_expired(since=now - RECENTLY_EXPIRED)
    else:
        tickets = [t for t in desk.store.pending_tickets() if t.state in shapes.LISTED]
    entries = [listed(request.app, desk, t) for t in tickets if t.issue_number is not None]
    return web.json_response(
        {
            "tickets": [
                shapes.list_entry(entry, now=now)
                for entry in entries
                if shapes.kept(entry, chosen, roles)
            ]
        },
        headers=NO_STORE,
    )


async def show_ticket(request: web.Request) -> web.StreamResponse:
    """``GET /desk/api/v1/tickets/{number}``: one ticket's parts, review and signing terms."""
    desk = request.app[DESK]
    number = int(request.match_info["number"])
    ticket = desk.store.ticket_for_issue(number)
    if ticket is None or ticket.issue_number is None:
        return error(404, "no_ticket", f"issue #{number} is not a ticket of this desk")
    detail = ticket_detail(request.app, desk, ticket, now=request.app[DESK_CLOCK]())
    return web.json_response(detail, headers=NO_STORE)


def roles_of(keyring: Keyring, login: str) -> frozenset[Role]:
    """Return the roles ``login`` holds in the keyring (none for a stranger)."""
    return frozenset(
        role
        for role in Role
        if any(same_login(holder, login) for holder in keyring.logins_with_role(role))
    )


def stored_request(desk: Desk, ticket: Ticket) -> ChatRequest | None:
    """Return the ticket's request with secrets redacted, as the issue shows it; or None."""
    stored = desk.store.request_for(ticket.id)
    if not stored:
        return None
    shown, _ = redact_request(ChatRequest.from_json(stored))
    return shown


def listed(app: web.Application, desk: Desk, ticket: Ticket) -> shapes.ListedTicket:
    """Gather what a list entry shows: the reference, the title, who signed a held answer."""
    held = (
        desk.store.pending_candidate(ticket.id)
        if ticket.state is TicketState.NEEDS_REVIEW
        else None
    )
    return shapes.ListedTicket(
        ticket=ticket,
        reference=desk.ticket_ref(ticket),
        title=title_of(app, desk, ticket),
        held_by=None if held is None else held.signer,
    )


def title_of(app: web.Application, desk: Desk, ticket: Ticket) -> str:
    """Return the ticket's title (from the redacted request, without rendering it), kept."""
    titles = app[TITLES]
    title = titles.get(ticket.id)
    if title is None:
        request = stored_request(desk, ticket)
        title = "" if request is None else ticket_title(request, step=ticket.step)
        if len(titles) >= _TITLES_KEPT:
            titles.pop(next(iter(titles)))
        titles[ticket.id] = title
    return title


def ticket_detail(
    app: web.Application, desk: Desk, ticket: Ticket, *, now: datetime
) -> dict[str, Any]:
    """Describe one ticket: list entry, parts, template, draft, review, signing terms."""
    detail = shapes.list_entry(listed(app, desk, ticket), now=now)
    stored = desk.store.request_for(ticket.id)
    # The body as GitHub shows it (rendering redacts, and notes what it redacted); the
    # parts from the redacted request, so no secret of the agent reaches a client.
    body = desk.render(ticket, ChatRequest.from_json(stored)).body if stored else ""
    request = stored_request(desk, ticket)
    detail["body"] = body
    detail["body_html"] = render_markdown(body)
    detail.update(shapes.request_parts(request, render_markdown))
    detail["answer_template"] = (answer_template(request) if request else None) or ""
    detail["draft"] = shapes.draft_shape(desk.store.draft_for(ticket.id))
    held = (
        desk.store.pending_candidate(ticket.id)
        if ticket.state is TicketState.NEEDS_REVIEW
        else None
    )
    detail["review"] = None
    if held is not None:
        commands = decode_release(held.release).commands()
        approvers = [
            j.reviewer for j in desk.store.judgements_for(held.comment_id) if j.act == "approve"
        ]
        detail["review"] = shapes.review_shape(
            held,
            decide(desk.settings.policy, commands),
            [command.show() for command in commands],
            approvers,
            render_markdown,
        )
    detail["signing"] = shapes.signing_shape(ticket, desk.ticket_ref(ticket), held)
    detail["read_only"] = not detail["signing"]["acts"]
    return detail
