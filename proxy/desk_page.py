"""The answer page ``/desk/``: editors list pending tickets, then sign and post in the browser.

The list also holds the tickets that expired in the last hour, shown read-only. A ticket
with a posted draft (:mod:`proxy.drafts`) carries its exact text, so an editor can sign it
unchanged in one click, or edit it first; either way it is an ordinary signed answer.

The page is static (``proxy/static/``: ``desk.html`` and the scripts in ``SCRIPTS``, among
them the vendored markdown renderer and sanitiser of ``static/vendor/``); it reads tickets from
the desk API (:mod:`proxy.desk_api`, ``/desk/api/v1``), follows its event stream, and posts
signed comments through it. Private keys
never reach the server: the browser imports the editor's key file into WebCrypto as a
non-extractable key and signs there. The unversioned ``/desk/api/*`` reads below are kept,
unchanged, for scripts written against them; nothing here uses them any more.

Access: with no desk token configured the desk answers loopback clients only (a browser on
this machine); with ``TICKETPROXY_DESK_TOKEN`` set it answers whoever presents that token as
``Authorization: Bearer <token>`` (what the page sends), the ``ticketproxy_desk_token``
cookie, or ``?token=<token>``. The desk is for editors, not agents, so the client API keys of
``/v1`` do not open it. :mod:`proxy.origin_checks` refuses foreign Hosts and Origins and
non-JSON POSTs; the desk API's one POST adds its own CSRF rule (see
:mod:`proxy.desk_api.posting`).
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from aiohttp import web

from embedded_github import render_markdown
from ticketing.clock import utc_now
from ticketing.desk import Desk, decode_release
from ticketing.github.client import GITHUB_API_URL
from ticketing.render.redact import redact_request
from ticketing.render.templates import answer_template
from ticketing.request import ChatRequest
from ticketing.store.model import DraftState, Ticket, TicketState

from .handlers import DESK
from .setting_values import DESK_TOKEN_ENV
from .settings import Settings, is_loopback

_STATES = {
    TicketState.OPEN: "awaiting answer",
    TicketState.NEEDS_REVIEW: "needs review",
}
# Expired tickets stay on the list this long, read-only, so editors see what was missed.
RECENTLY_EXPIRED = timedelta(hours=1)
# The cookie that may carry the desk token (set by a reverse proxy's sign-in, say).
DESK_TOKEN_COOKIE = "ticketproxy_desk_token"  # noqa: S105 (a cookie name, not a secret)
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class DeskPageSettings:
    """What the desk page needs: GitHub's API base for the browser, and its access token."""

    github_api_url: str = GITHUB_API_URL
    # Kept out of repr so a logged settings object never shows the secret.
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> DeskPageSettings:
        """Take GitHub's API base and the desk token (``TICKETPROXY_DESK_TOKEN``) from settings."""
        api_url = (settings.github_api_url or GITHUB_API_URL).rstrip("/")
        return cls(github_api_url=api_url, token=settings.desk_token)


DESK_PAGE = web.AppKey("desk_page", DeskPageSettings)
DESK_CLOCK: web.AppKey[Callable[[], datetime]] = web.AppKey("desk_clock")


def install_desk_page(
    app: web.Application,
    settings: DeskPageSettings,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Add the ``/desk/`` page and its ``/desk/api/*`` JSON routes to ``app``."""
    app[DESK_PAGE] = settings
    app[DESK_CLOCK] = clock
    app.router.add_get("/desk", _redirect_to_page)
    # The page and its script hold no ticket data and no secret; only the API is guarded.
    app.router.add_get("/desk/", _page)
    app.router.add_get("/desk/{name:[a-z-]+\\.js}", _script)
    app.router.add_get("/desk/vendor/{name:[a-z.-]+\\.js}", _script)
    app.router.add_get("/desk/api/config", _guarded(_config))
    app.router.add_get("/desk/api/tickets", _guarded(_tickets))
    app.router.add_get("/desk/api/tickets/{number:[0-9]+}", _guarded(_ticket))


def refusal(request: web.Request, settings: DeskPageSettings) -> str | None:
    """Return why this request may not use the desk, or None when it may."""
    if settings.token is None:
        if request.remote is not None and is_loopback(request.remote):
            return None
        return (
            "the desk answers only on this machine (loopback); set "
            f"{DESK_TOKEN_ENV} to open it to other machines with a token"
        )
    presented = presented_token(request)
    # Constant-time, so the token cannot be guessed one character at a time.
    if presented and hmac.compare_digest(presented.encode(), settings.token.encode()):
        return None
    return (
        f"the desk needs its token ({DESK_TOKEN_ENV}) as `Authorization: Bearer <token>`, "
        f"the {DESK_TOKEN_COOKIE} cookie, or ?token= (open the page as /desk/#token=<token>)"
    )


def presented_token(request: web.Request) -> str:
    """Return the desk token a request carries: bearer header, then cookie, then ``?token=``.

    The query is the last resort (curl, old links): addresses end up in logs and histories,
    so the page takes its token from ``#token=``, which browsers never send, and sends it as
    a header. The access log redacts ``?token=`` all the same.
    """
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and given.strip():
        return given.strip()
    cookie = request.cookies.get(DESK_TOKEN_COOKIE, "")
    if cookie:
        return cookie
    return request.query.get("token", "")


def _guarded(handler: _Handler) -> _Handler:
    async def guarded(request: web.Request) -> web.StreamResponse:
        reason = refusal(request, request.app[DESK_PAGE])
        if reason is not None:
            return web.json_response({"error": reason}, status=403, headers=_NO_STORE)
        return await handler(request)

    return guarded


_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


@functools.cache
def _static(name: str) -> str:
    # Packaged files that do not change while the process runs: read once.
    return resources.files("proxy").joinpath("static", *name.split("/")).read_text(encoding="utf-8")


async def _redirect_to_page(request: web.Request) -> web.StreamResponse:
    raise web.HTTPFound(request.rel_url.with_path("/desk/"))


async def _page(request: web.Request) -> web.StreamResponse:
    # The page talks only to this proxy (it posts through the desk API, not to GitHub); no
    # inline script at all.
    policy = (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return web.Response(
        text=_static("desk.html"),
        content_type="text/html",
        headers={**_NO_STORE, "Content-Security-Policy": policy, "X-Frame-Options": "DENY"},
    )


# The page's scripts, its own and the vendored renderer and sanitiser (static/vendor/README.md):
# a fixed list, so no request names any other file.
SCRIPTS = frozenset(
    {
        "desk.js",
        "desk-sign.js",
        "desk-render.js",
        "desk-form.js",
        "desk-live.js",
        "vendor/markdown-it.min.js",
        "vendor/purify.min.js",
    }
)


async def _script(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if request.path.startswith("/desk/vendor/"):
        name = f"vendor/{name}"
    if name not in SCRIPTS:
        raise web.HTTPNotFound()
    return web.Response(
        text=_static(name), content_type="application/javascript", headers=_NO_STORE
    )


async def _config(request: web.Request) -> web.StreamResponse:
    desk = request.app[DESK]
    settings = request.app[DESK_PAGE]
    return web.json_response(
        {"github_api_url": settings.github_api_url, "repo": desk.settings.repo},
        headers=_NO_STORE,
    )


async def _tickets(request: web.Request) -> web.StreamResponse:
    desk = request.app[DESK]
    now = request.app[DESK_CLOCK]()
    listed = [
        ticket_summary(desk, ticket, now=now)
        for ticket in desk.store.pending_tickets()
        if ticket.issue_number is not None and ticket.state in _STATES
    ]
    listed += expired_summaries(desk, now=now)
    return web.json_response({"tickets": listed}, headers=_NO_STORE)


async def _ticket(request: web.Request) -> web.StreamResponse:
    desk = request.app[DESK]
    number = int(request.match_info["number"])
    ticket = desk.store.ticket_for_issue(number)
    if ticket is None or not _shown(ticket):
        return web.json_response(
            {"error": f"issue #{number} has no ticket waiting for an answer or a review"},
            status=404,
            headers=_NO_STORE,
        )
    detail = ticket_detail(desk, ticket, now=request.app[DESK_CLOCK]())
    return web.json_response(detail, headers=_NO_STORE)


def ticket_summary(desk: Desk, ticket: Ticket, *, now: datetime) -> dict[str, Any]:
    """Describe a pending ticket for the list: issue, reference, step, state and age."""
    return {
        "number": ticket.issue_number,
        "step": ticket.step,
        "url": ticket.issue_url,
        "ref": desk.ticket_ref(ticket),
        "state": _STATES.get(ticket.state, ticket.state.value),
        "age_seconds": max(0, int((now - ticket.created_at).total_seconds())),
        "created_at": ticket.created_at.isoformat(),
        "deadline": ticket.deadline.isoformat(),
    }


def ticket_detail(desk: Desk, ticket: Ticket, *, now: datetime) -> dict[str, Any]:
    """Describe one ticket: its body as text and as HTML, the answer template, any candidate."""
    detail = ticket_summary(desk, ticket, now=now)
    stored = desk.store.request_for(ticket.id)
    request = ChatRequest.from_json(stored) if stored else None
    body = ""
    template = ""
    if request is not None:
        # Rendered as GitHub shows it (the issue, or the step's comment): redacted, so no
        # secret of the agent reaches the page.
        body = desk.render(ticket, request).body
        shown, _ = redact_request(request)
        template = answer_template(shown) or ""
    detail["body"] = body
    # The page shows this HTML as is: rendered and sanitised here, as the sandbox's page does.
    detail["body_html"] = render_markdown(body)
    detail["template"] = template
    detail["candidate"] = None
    candidate = desk.store.pending_candidate(ticket.id)
    if candidate is not None:
        release = decode_release(candidate.release)
        commands = release.commands()
        detail["candidate"] = {
            "digest": candidate.digest,
            "text": candidate.text,
            "signer": candidate.signer,
            "comment_url": candidate.comment_url,
            "required": candidate.required,
            "commands": [command.show() for command in commands],
        }
    detail.update(draft_detail(desk, ticket))
    return detail


def _shown(ticket: Ticket) -> bool:
    """Say whether the page shows a ticket: pending ones, and expired ones read-only."""
    return ticket.state in _STATES or ticket.state is TicketState.EXPIRED


def expired_summaries(desk: Desk, *, now: datetime) -> list[dict[str, Any]]:
    """Describe the tickets that expired within RECENTLY_EXPIRED, newest last, read-only."""
    return [
        ticket_summary(desk, ticket, now=now)
        for ticket in desk.store.recently_expired(since=now - RECENTLY_EXPIRED)
        if ticket.issue_number is not None
    ]


def draft_detail(desk: Desk, ticket: Ticket) -> dict[str, Any]:
    """Return whether the ticket is read-only, and its posted draft (text to sign), if any."""
    draft = desk.store.draft_for(ticket.id)
    shown = None
    if draft is not None and draft.state is DraftState.POSTED:
        shown = {"text": draft.text, "model": draft.model, "digest": draft.digest}
    return {"read_only": ticket.state not in _STATES, "draft": shown}
