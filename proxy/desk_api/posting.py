"""``POST /desk/api/v1/tickets/{number}/comments``: post a comment signed client-side.

The signature is made where the key is (the page's WebCrypto, the VS Code extension, the
CLI); this route never sees a private key. It checks the comment before GitHub does, as
the desk will once it is posted (:mod:`ticketing.desk.preflight` runs the desk's decision
table): it must verify, with the keyring, as a signed act on *this* ticket (its reference,
its step, an act the ticket takes now, the signer's role, the held answer's digest for a
judgement), and the desk must take it (not a self-approval, not a judgement when no answer
is held, not on a ticket that is closed, an answer its request can release), else 422
with the desk's reason and nothing is posted. It then posts it through the GitHub
adapter's one worker thread with the editor's own GitHub token (``X-GitHub-Token``), so the
comment is theirs, as if they had pasted it; the token is used for that one request and
never logged or stored.

A cross-site page cannot make this request: :mod:`proxy.origin_checks` refuses a foreign
``Origin`` and any body that is not ``application/json`` (415), and a request without an
``Origin`` (not a browser's) must carry the desk token as a bearer header, or come from
loopback to a desk with no token, never ride on the cookie alone.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import hdrs, web

from auth.errors import KeyringError
from auth.verify import Accepted
from ticketing.desk.preflight import Refused, preflight
from ticketing.errors import GitHubError, GitHubUnavailable
from ticketing.github.interface import EditorComments

from ..desk_page import DESK_CLOCK, DESK_PAGE
from ..handlers import DESK
from .routes import NO_STORE, error

GITHUB_TOKEN_HEADER = "X-GitHub-Token"  # noqa: S105 (a header's name, not a secret)
_BODY_LIMIT = 200_000
# The 422s: the signature does not verify for this ticket, or the desk would refuse the act.
SIGNATURE_REFUSED = "not_signed_for_this_ticket"
DESK_WOULD_REFUSE = "desk_would_refuse"
# The 422s: the signature does not verify for this ticket, or the desk would refuse the act.
SIGNATURE_REFUSED = "not_signed_for_this_ticket"
DESK_WOULD_REFUSE = "desk_would_refuse"


def csrf_refusal(request: web.Request) -> str | None:
    """Return why a POST without an ``Origin`` is refused, or None.

    Browsers name the page on every POST; one that does not comes from a program, which
    must then hold the desk token as a bearer header (a cookie would be sent by a browser on
    its own), unless the desk has no token and answers loopback only.
    """
    if request.headers.get(hdrs.ORIGIN) is not None:
        return None  # checked against this server's own origin by proxy.origin_checks
    if request.app[DESK_PAGE].token is None:
        return None
    scheme, _, given = request.headers.get(hdrs.AUTHORIZATION, "").partition(" ")
    if scheme.lower() == "bearer" and given.strip():
        return None
    return (
        "a signed comment posted without an Origin header must carry the desk token as "
        "`Authorization: Bearer <token>` (not a cookie or ?token=)"
    )


async def read_comment(request: web.Request) -> str | web.Response:
    """Return the ``body`` of the request's JSON, or the 400 that says what is wrong."""
    raw = await request.content.read(_BODY_LIMIT + 1)
    if len(raw) > _BODY_LIMIT:
        return error(413, "body_too_large", f"the request is larger than {_BODY_LIMIT} bytes")
    try:
        data: Any = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return error(400, "bad_json", 'send JSON: {"body": "<the signed comment>"}')
    comment = data.get("body") if isinstance(data, dict) else None
    if not isinstance(comment, str) or not comment.strip():
        return error(400, "bad_json", 'send JSON: {"body": "<the signed comment>"}')
    return comment


async def post_comment(request: web.Request) -> web.StreamResponse:
    """Check a signed comment for this ticket, then post it as the editor."""
    refused = csrf_refusal(request)
    if refused is not None:
        return error(403, "origin_required", refused)
    token = request.headers.get(GITHUB_TOKEN_HEADER, "").strip()
    if not token:
        return error(
            401,
            "github_token_missing",
            f"send your own GitHub token as {GITHUB_TOKEN_HEADER}: the comment is posted as you",
        )
    comment = await read_comment(request)
    if isinstance(comment, web.Response):
        return comment
    desk = request.app[DESK]
    number = int(request.match_info["number"])
    ticket = desk.store.ticket_for_issue(number)
    if ticket is None or ticket.issue_number is None:
        return error(404, "no_ticket", f"issue #{number} is not a ticket of this desk")
    reference = desk.ticket_ref(ticket)
    try:
        keyring = desk.keyring()
    except KeyringError as exc:
        return error(503, "keyring_unreadable", f"the keyring cannot be read now: {exc}")
    verdict = preflight(
        comment,
        ticket=ticket,
        store=desk.store,
        settings=desk.settings,
        keyring=keyring,
        now=request.app[DESK_CLOCK](),
    )
    if isinstance(verdict, Refused):
        return web.json_response(
            {
                "error": f"not posted: {verdict.detail}",
                "code": SIGNATURE_REFUSED if verdict.by_verifier else DESK_WOULD_REFUSE,
                "reason": verdict.reason,
                "ticket": reference,
            },
            status=422,
            headers=NO_STORE,
        )
    return await _post(request, number, comment, token, verdict, reference)


async def _post(
    request: web.Request,
    number: int,
    comment: str,
    token: str,
    verdict: Accepted,
    reference: str,
) -> web.StreamResponse:
    desk = request.app[DESK]
    github = desk.github
    if not isinstance(github, EditorComments):
        return error(501, "cannot_post", "this desk's GitHub adapter cannot post as an editor")
    try:
        posted = await github.post_comment_as(number, comment, token=token)
    except GitHubUnavailable as exc:
        return error(
            503,
            "github_unavailable",
            f"nothing was posted: GitHub cannot be reached now ({exc}); post it again later",
            **{hdrs.RETRY_AFTER: str(max(1, int(exc.retry_after)))},
        )
    except GitHubError as exc:
        return _github_refusal(exc, reference)
    desk.poke()  # find it now rather than at the next poll
    return web.json_response(
        {
            "comment": {"id": posted.id, "url": posted.url, "author": posted.author},
            "ticket": reference,
            "act": verdict.act.value,
            "signer": verdict.signer,
            "sha256": verdict.digest,
        },
        status=201,
        headers=NO_STORE,
    )


def _github_refusal(exc: GitHubError, reference: str) -> web.Response:
    if exc.status == 401:
        return error(
            401,
            "github_token_refused",
            f"nothing was posted: GitHub refused your GitHub token ({GITHUB_TOKEN_HEADER}); "
            "sign in again or make a new token, then post the same signed comment",
        )
    if exc.status in {403, 404}:
        return error(
            403,
            "github_forbidden",
            f"nothing was posted: GitHub does not let your token comment on {reference} "
            f"({exc.status}); it needs access to the repository's issues",
        )
    return error(502, "github_failed", f"nothing was posted: GitHub answered {exc.status}")
