"""The desk API refuses what a stranger, a foreign page or a wrong comment sends, losing nothing.

Every response read through :class:`DeskApi` is checked against the OpenAPI description.
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import Any
from unittest import mock

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from proxy.access_log import REDACTED, AccessLog
from proxy.desk_api.routes import guarded, list_tickets
from proxy.desk_page import DESK_PAGE, DeskPageSettings
from tests.helpers.desk_api import DeskApi
from tests.helpers.desk_page import DESK_TOKEN, PROMPT
from tests.helpers.stack import Stack

EVIL = "evil.example"
ANSWER = "hello.txt is written."


async def _ticket(stack: Stack, number: int = 1) -> Any:
    client = stack.openai()
    task = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(number)
    return task


async def _comment_count(stack: Stack, number: int = 1) -> int:
    return len(await stack.comments(number))


def _port(stack: Stack) -> str:
    return stack.base_url.removesuffix("/v1").rsplit(":", 1)[1]


async def test_no_token_from_another_machine_is_refused() -> None:
    """Without a desk token, a client that is not on this machine gets a 403 and no data."""
    app = web.Application()
    app[DESK_PAGE] = DeskPageSettings()
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        ("192.0.2.9", 40000) if name == "peername" else default
    )
    request = make_mocked_request("GET", "/desk/api/v1/tickets", app=app, transport=transport)
    response = await guarded(list_tickets)(request)
    assert response.status == 403
    assert isinstance(response, web.Response)
    assert response.text is not None
    assert "loopback" in response.text


async def test_wrong_desk_token_is_refused(guarded_stack: Stack) -> None:
    """A bearer that is not the desk token reads nothing."""
    api = DeskApi(guarded_stack, headers={"Authorization": "Bearer not-the-desk-token"})
    status, data = await api.get("tickets")
    assert status == 403
    assert data["code"] == "desk_access_refused"
    status, _ = await DeskApi(guarded_stack, headers={"Authorization": f"Bearer {DESK_TOKEN}"}).get(
        "tickets"
    )
    assert status == 200


async def test_dns_rebinding_host_is_refused(desk_stack: Stack) -> None:
    """A page that rebinds its own name to 127.0.0.1 cannot read the API."""
    status, data = await DeskApi(desk_stack).get(
        "tickets", headers={"Host": f"{EVIL}:{_port(desk_stack)}"}
    )
    assert status == 403
    assert "DNS rebinding" in data["error"]


async def test_cross_site_origin_on_post_is_refused(desk_stack: Stack) -> None:
    """A signed comment POSTed by a page of another origin is refused, and nothing is posted."""
    pending = await _ticket(desk_stack)
    before = await _comment_count(desk_stack)
    status, data = await DeskApi(desk_stack).post_comment(
        1,
        desk_stack.signed(ANSWER, number=1),
        github_token=desk_stack.token("alice"),
        headers={"Origin": f"https://{EVIL}"},
    )
    pending.cancel()
    assert status == 403
    assert "another origin" in data["error"]
    assert await _comment_count(desk_stack) == before


async def test_same_origin_post_is_let_through(desk_stack: Stack) -> None:
    """The page's own origin may post (the refusal above is about the origin, not the POST)."""
    pending = await _ticket(desk_stack)
    origin = desk_stack.base_url.removesuffix("/v1")
    status, _ = await DeskApi(desk_stack).post_comment(
        1,
        desk_stack.signed(ANSWER, number=1),
        github_token=desk_stack.token("alice"),
        headers={"Origin": origin},
    )
    pending.cancel()
    assert status == 201


async def test_form_encoded_post_is_refused(desk_stack: Stack) -> None:
    """A form (which any page may send cross-site) is not JSON: 415, nothing posted."""
    pending = await _ticket(desk_stack)
    before = await _comment_count(desk_stack)
    status, data = await DeskApi(desk_stack).call(
        "POST",
        "tickets/1/comments",
        data="body=x",
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-GitHub-Token": desk_stack.token("alice"),
        },
    )
    pending.cancel()
    assert status == 415
    assert "application/json" in data["error"]
    assert await _comment_count(desk_stack) == before


async def test_cookie_alone_without_origin_cannot_post(guarded_stack: Stack) -> None:
    """A POST with no Origin must carry the desk token as a bearer, not ride on the cookie."""
    pending = await _ticket(guarded_stack)
    status, data = await DeskApi(
        guarded_stack, headers={"Cookie": f"ticketproxy_desk_token={DESK_TOKEN}"}
    ).post_comment(
        1, guarded_stack.signed(ANSWER, number=1), github_token=guarded_stack.token("alice")
    )
    assert status == 403
    assert data["code"] == "origin_required"
    status, _ = await DeskApi(
        guarded_stack, headers={"Authorization": f"Bearer {DESK_TOKEN}"}
    ).post_comment(
        1, guarded_stack.signed(ANSWER, number=1), github_token=guarded_stack.token("alice")
    )
    pending.cancel()
    assert status == 201


async def test_signed_comment_for_another_ticket_is_refused(desk_stack: Stack) -> None:
    """An answer signed for issue #2 cannot be posted on #1: 422, nothing posted."""
    pending = await _ticket(desk_stack)
    before = await _comment_count(desk_stack)
    status, data = await DeskApi(desk_stack).post_comment(
        1, desk_stack.signed(ANSWER, number=2), github_token=desk_stack.token("alice")
    )
    pending.cancel()
    assert status == 422
    assert data["reason"] == "wrong_ticket"
    assert data["ticket"].endswith("#1")
    assert await _comment_count(desk_stack) == before


async def test_comment_that_is_not_signed_is_refused(desk_stack: Stack) -> None:
    """Plain text is not a signed answer: 422 saying so, nothing posted."""
    pending = await _ticket(desk_stack)
    status, data = await DeskApi(desk_stack).post_comment(
        1, ANSWER, github_token=desk_stack.token("alice")
    )
    pending.cancel()
    assert status == 422
    assert data["reason"] == "unsigned"
    assert "signature" in data["error"]


async def test_edited_after_signing_is_refused(desk_stack: Stack) -> None:
    """A signed answer whose text was changed after signing is refused before GitHub sees it."""
    pending = await _ticket(desk_stack)
    signed = desk_stack.signed(ANSWER, number=1).replace("written", "deleted")
    status, data = await DeskApi(desk_stack).post_comment(
        1, signed, github_token=desk_stack.token("alice")
    )
    pending.cancel()
    assert status == 422
    assert data["reason"] == "text_mismatch"


async def test_missing_github_token_is_asked_for(desk_stack: Stack) -> None:
    """Without the editor's GitHub token nothing can be posted as them: 401 naming the header."""
    pending = await _ticket(desk_stack)
    status, data = await DeskApi(desk_stack).post_comment(
        1, desk_stack.signed(ANSWER, number=1), github_token=None
    )
    pending.cancel()
    assert status == 401
    assert "X-GitHub-Token" in data["error"]


async def test_github_refusing_the_editors_token_is_a_clear_error(desk_stack: Stack) -> None:
    """GitHub's 401 for the editor's token is told as such; readiness does not blame ours."""
    pending = await _ticket(desk_stack)
    signed = desk_stack.signed(ANSWER, number=1)
    before = await _comment_count(desk_stack)
    api = DeskApi(desk_stack)
    status, data = await api.post_comment(1, signed, github_token="ghp_revoked_token_0123")
    assert status == 401
    assert data["code"] == "github_token_refused"
    assert "nothing was posted" in data["error"]
    assert await _comment_count(desk_stack) == before
    assert desk_stack.desk.github.last_failure is None
    # Nothing lost: the same signed comment goes through with a good token.
    status, _ = await api.post_comment(1, signed, github_token=desk_stack.token("alice"))
    pending.cancel()
    assert status == 201


async def test_editor_token_without_write_access_is_told_nothing_was_posted(
    desk_stack: Stack,
) -> None:
    """A token GitHub will not let comment (read access only) gets a 403 saying why."""
    pending = await _ticket(desk_stack)
    status, data = await DeskApi(desk_stack).post_comment(
        1, desk_stack.signed(ANSWER, number=1), github_token=desk_stack.token("mallory")
    )
    pending.cancel()
    assert status == 403
    assert data["code"] == "github_forbidden"


async def test_github_down_is_a_503_and_nothing_is_lost(desk_stack: Stack) -> None:
    """GitHub failing the post gives 503 with Retry-After; the same comment posts later."""
    pending = await _ticket(desk_stack)
    signed = desk_stack.signed(ANSWER, number=1)
    desk_stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/[^/]+/[^/]+/issues/1/comments", status=503
    )
    api = DeskApi(desk_stack)
    status, data = await api.post_comment(1, signed, github_token=desk_stack.token("alice"))
    assert status == 503
    assert data["code"] == "github_unavailable"
    status, _ = await api.post_comment(1, signed, github_token=desk_stack.token("alice"))
    pending.cancel()
    assert status == 201


def test_editors_github_token_is_never_written_to_the_access_log() -> None:
    """An access-log format asking for X-GitHub-Token gets ``[redacted]``, never the token."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.desk_api.access_log")
    logger.addHandler(logging.StreamHandler(stream))
    logger.setLevel(logging.INFO)
    logger.propagate = False
    request = make_mocked_request(
        "POST", "/desk/api/v1/tickets/1/comments", headers={"X-GitHub-Token": "ghp_secret_1"}
    )
    AccessLog(logger, "%r %{X-GitHub-Token}i").log(request, web.Response(status=201), 0.01)
    assert "ghp_secret_1" not in stream.getvalue()
    assert REDACTED in stream.getvalue()
