"""Webhooks: the pure signature check and payload reader, the desk's handling, and the
sandbox's deliveries (GitHub's headers, signatures and documented payloads)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.embedded_github_clients import auth, user
from tests.helpers.github_openapi.validate import assert_matches_schema
from tests.helpers.stack import REPO, Clock, Stack, start_stack, stop_stack
from ticketing.errors import (
    BadPayload,
    BadSignature,
    MissingSignature,
    TicketingError,
    WebhookError,
)
from ticketing.github.interface import Comment
from ticketing.github.webhooks import (
    CommentEvent,
    parse_comment_event,
    sign_payload,
    validate_signature,
)
from ticketing.store.model import TicketState

# GitHub's documented test vector:
# https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
VECTOR_SECRET = "It's a Secret to Everybody"
VECTOR_BODY = b"Hello, World!"
VECTOR_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
SECRET = "webhook-secret-0123456789abcdef"
ISSUES = "/repos/acme/agents/issues"


def comment_payload(action: str = "created", **comment: Any) -> dict[str, Any]:
    """Return a trimmed ``issue_comment`` payload with the fields ticketproxy reads."""
    base: dict[str, Any] = {
        "id": 42,
        "html_url": "https://github.com/acme/agents/issues/3#issuecomment-42",
        "issue_url": "https://api.github.com/repos/acme/agents/issues/3",
        "body": "the answer",
        "user": {"login": "alice", "id": 1001},
        "created_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:05:00Z",
    }
    base.update(comment)
    return {
        "action": action,
        "issue": {"number": 3, "title": "a ticket"},
        "comment": base,
        "repository": {"full_name": "acme/agents"},
        "sender": {"login": "alice", "id": 1001},
    }


# --- the signature -------------------------------------------------------------------------


def test_github_test_vector_validates() -> None:
    """GitHub's published secret, body and signature are accepted, and signing reproduces it."""
    validate_signature(VECTOR_BODY, signature=VECTOR_SIGNATURE, secret=VECTOR_SECRET)
    assert sign_payload(VECTOR_BODY, secret=VECTOR_SECRET) == VECTOR_SIGNATURE


def test_body_altered_after_signing_is_rejected() -> None:
    """One byte changed in the body no longer matches the signature."""
    with pytest.raises(BadSignature):
        validate_signature(b"Hello, World?", signature=VECTOR_SIGNATURE, secret=VECTOR_SECRET)


def test_signature_made_with_another_secret_is_rejected() -> None:
    """A sender who does not know the secret cannot produce a matching signature."""
    forged = sign_payload(VECTOR_BODY, secret="a guess at the secret")
    with pytest.raises(BadSignature):
        validate_signature(VECTOR_BODY, signature=forged, secret=VECTOR_SECRET)


@pytest.mark.parametrize("signature", [None, ""])
def test_missing_signature_is_rejected(signature: str | None) -> None:
    """A delivery with no (or an empty) signature header is refused as unsigned."""
    with pytest.raises(MissingSignature):
        validate_signature(VECTOR_BODY, signature=signature, secret=VECTOR_SECRET)


def test_legacy_sha1_or_bare_hex_signature_is_rejected() -> None:
    """Only ``sha256=<hex>`` counts: the bare digest or the old SHA-1 header form does not."""
    bare = VECTOR_SIGNATURE.removeprefix("sha256=")
    for signature in (bare, "sha1=" + bare, VECTOR_SIGNATURE.upper()):
        with pytest.raises(BadSignature):
            validate_signature(VECTOR_BODY, signature=signature, secret=VECTOR_SECRET)


def test_non_ascii_signature_is_rejected_rather_than_crashing() -> None:
    """A header with non-ASCII text is a bad signature, not a TypeError from compare_digest."""
    with pytest.raises(BadSignature):
        validate_signature(VECTOR_BODY, signature="sha256=é" * 8, secret=VECTOR_SECRET)


def test_webhook_errors_belong_to_the_ticketing_error_tree() -> None:
    """Callers catching TicketingError or WebhookError catch every webhook failure."""
    for error in (MissingSignature, BadSignature, BadPayload):
        assert issubclass(error, WebhookError)
    assert issubclass(WebhookError, TicketingError)


# --- reading the payload -------------------------------------------------------------------


def test_created_comment_payload_becomes_a_comment_event() -> None:
    """The comment's id, issue, author, body, times and repository are read as the poll's are."""
    event = parse_comment_event(comment_payload())
    assert event == CommentEvent(
        action="created",
        comment=Comment(
            id=42,
            issue_number=3,
            body="the answer",
            author_login="alice",
            author_id=1001,
            created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            updated_at=datetime(2026, 1, 2, 3, 5, tzinfo=UTC),
            url="https://github.com/acme/agents/issues/3#issuecomment-42",
        ),
        repo="acme/agents",
    )


def test_edited_and_deleted_payloads_keep_their_action() -> None:
    """An edit carries the new body; a deletion is reported as deleted."""
    edited = parse_comment_event(comment_payload("edited", body="new text"))
    deleted = parse_comment_event(comment_payload("deleted"))
    assert edited is not None
    assert edited.action == "edited"
    assert edited.comment.body == "new text"
    assert deleted is not None
    assert deleted.action == "deleted"


def test_other_events_and_actions_are_not_comment_events() -> None:
    """A pinned comment, an ``issues`` payload or a ping is not read as a comment event."""
    assert parse_comment_event(comment_payload("pinned")) is None
    assert parse_comment_event({"action": "opened", "issue": {"number": 1}}) is None
    assert parse_comment_event({"zen": "Keep it logically awesome.", "hook_id": 1}) is None


def test_comment_on_a_pull_request_is_not_a_comment_event() -> None:
    """Tickets are issues, so a pull-request comment can never answer one."""
    payload = comment_payload()
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/acme/agents/pulls/3"}
    assert parse_comment_event(payload) is None


def test_comment_of_a_deleted_account_is_attributed_to_ghost() -> None:
    """GitHub sends ``user: null`` for a deleted account; it reads as the ghost user."""
    event = parse_comment_event(comment_payload(user=None))
    assert event is not None
    assert (event.comment.author_login, event.comment.author_id) == ("ghost", 10137)


def test_garbled_comment_payload_is_a_bad_payload() -> None:
    """A comment id that is not a number raises BadPayload rather than a bare ValueError."""
    with pytest.raises(BadPayload):
        parse_comment_event(comment_payload(id="forty-two"))
    with pytest.raises(BadPayload):
        parse_comment_event({**comment_payload(), "repository": None})


# --- the desk --------------------------------------------------------------------------------


@pytest.fixture
async def quiet_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that polls only once an hour, so only webhooks (here: calls) act."""
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, poll_interval=3600.0)
    try:
        yield running
    finally:
        await stop_stack(running)


async def _ticket(stack: Stack) -> asyncio.Task[Any]:
    client = stack.openai()
    messages: Any = [{"role": "user", "content": "Which files are there?"}]
    task = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))
    await stack.wait_for_issue(1)
    return task


async def _comment_event(stack: Stack, body: str, *, repo: str = REPO) -> CommentEvent:
    posted = await stack.comment(1, body)
    return CommentEvent(
        action="created",
        comment=Comment(
            id=posted.id,
            issue_number=1,
            body=body,
            author_login="alice",
            author_id=1001,
            created_at=posted.created_at,
            updated_at=posted.updated_at,
            url=posted.html_url,
        ),
        repo=repo,
    )


async def test_comment_event_answers_the_ticket_through_the_same_checks(
    quiet_stack: Stack,
) -> None:
    """A verified comment event for this repository is accepted and released to the client."""
    stack = quiet_stack
    pending = await _ticket(stack)
    event = await _comment_event(stack, stack.signed("README.md", number=1))
    await stack.desk.receive_comment_event(event)
    completion = await asyncio.wait_for(pending, 5)
    assert completion.choices[0].message.content == "README.md"
    assert stack.desk.last_webhook_at is not None


async def test_comment_event_from_another_repository_changes_nothing(quiet_stack: Stack) -> None:
    """A signed answer reported for issue #1 of another repository does not answer ticket #1."""
    stack = quiet_stack
    pending = await _ticket(stack)
    event = await _comment_event(stack, stack.signed("README.md", number=1), repo="acme/other")
    await stack.desk.receive_comment_event(event)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.OPEN
    assert stack.desk.last_webhook_at is None
    pending.cancel()


async def test_poll_slows_to_the_backstop_while_webhooks_arrive_and_recovers_after(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """With a fresh webhook the poller waits ``factor`` times longer; ten quiet minutes undo it."""
    stack = await start_stack(
        github_sandbox, sandbox_config, tmp_path, poll_interval=0.05, max_wait=3600.0
    )
    try:
        desk = stack.desk
        desk.settings = replace(desk.settings, webhook_backstop_factor=10_000.0)
        pending = await _ticket(stack)
        await desk.receive_comment_event(await _comment_event(stack, "still thinking"))
        desk.poke()
        await asyncio.sleep(0.1)
        slowed = desk.polls
        await asyncio.sleep(0.5)
        assert desk.polls == slowed  # 0.05 s x 10,000: no poll in half a second
        stack.clock.offset = timedelta(minutes=11)
        desk.poke()
        await asyncio.sleep(0.5)
        assert desk.polls >= slowed + 4  # back to every 0.05 s
        pending.cancel()
    finally:
        await stop_stack(stack)


# --- the sandbox's deliveries ----------------------------------------------------------------


class Receiver:
    """A webhook receiver on 127.0.0.1 that records each delivery and can hold its answer."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.release = asyncio.Event()
        self.release.set()
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.received.append((dict(request.headers), body))
        await self.release.wait()
        return web.json_response({"ok": True})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/hook"

    async def stop(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """Yield a running webhook receiver."""
    running = Receiver()
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def _api(
    running: RunningSandbox, config: SandboxConfig, method: str, path: str, **body: Any
) -> Any:
    async with (
        aiohttp.ClientSession() as http,
        http.request(
            method,
            running.api_url + path,
            json=body or None,
            headers=auth(user(config, "alice" if "comments" in path else "ticketproxy-bot")),
        ) as response,
    ):
        assert response.status < 300, await response.text()
        return None if response.status == 204 else await response.json()


async def test_sandbox_delivers_signed_comment_events_that_match_githubs_schema(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    receiver: Receiver,
) -> None:
    """Create, edit, delete: three signed deliveries with GitHub's headers and payloads."""
    clock = Clock()
    running = await start_github_sandbox(clock=clock)
    running.sandbox.add_webhook(receiver.url, secret=SECRET)
    await _api(running, sandbox_config, "POST", ISSUES, title="ticket")
    made = await _api(running, sandbox_config, "POST", ISSUES + "/1/comments", body="first")
    clock.offset = timedelta(seconds=5)
    one = f"/repos/acme/agents/issues/comments/{made['id']}"
    await _api(running, sandbox_config, "PATCH", one, body="second")
    await _api(running, sandbox_config, "DELETE", one)
    await running.sandbox.drain_webhooks()

    deliveries = running.sandbox.deliveries
    assert [d.action for d in deliveries] == ["created", "edited", "deleted"]
    assert [d.status for d in deliveries] == [200, 200, 200]
    assert len({d.id for d in deliveries}) == 3
    for delivery, (headers, body) in zip(deliveries, receiver.received, strict=True):
        assert body == delivery.body
        assert headers["X-GitHub-Event"] == "issue_comment"
        assert headers["X-GitHub-Delivery"] == delivery.id
        assert headers["User-Agent"].startswith("GitHub-Hookshot/")
        assert headers["Content-Type"] == "application/json"
        validate_signature(body, signature=headers["X-Hub-Signature-256"], secret=SECRET)
        assert_matches_schema(json.loads(body), f"webhook-issue-comment-{delivery.action}")
        event = parse_comment_event(json.loads(body))
        assert event is not None
        assert (event.repo, event.comment.id, event.comment.issue_number) == (REPO, made["id"], 1)
    created, edited, _ = (d.payload for d in deliveries)
    assert created["comment"]["body"] == "first"
    assert edited["comment"]["body"] == "second"
    assert edited["changes"] == {"body": {"from": "first"}}
    assert edited["sender"]["login"] == "alice"


async def test_sandbox_answers_the_api_call_before_the_receiver_answers_the_delivery(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, receiver: Receiver
) -> None:
    """A receiver that has not answered yet does not hold up the comment's 201."""
    github_sandbox.sandbox.add_webhook(receiver.url, secret=SECRET)
    receiver.release.clear()
    await _api(github_sandbox, sandbox_config, "POST", ISSUES, title="ticket")
    await asyncio.wait_for(
        _api(github_sandbox, sandbox_config, "POST", ISSUES + "/1/comments", body="hi"), 2
    )
    assert github_sandbox.sandbox.deliveries == []
    receiver.release.set()
    await github_sandbox.sandbox.drain_webhooks()
    assert [d.status for d in github_sandbox.sandbox.deliveries] == [200]


async def test_unreachable_receiver_is_recorded_and_not_retried(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, receiver: Receiver
) -> None:
    """Like GitHub, a failed delivery is recorded with no status and not sent again by itself."""
    await receiver.stop()
    github_sandbox.sandbox.add_webhook(receiver.url, secret=SECRET)
    await _api(github_sandbox, sandbox_config, "POST", ISSUES, title="ticket")
    await _api(github_sandbox, sandbox_config, "POST", ISSUES + "/1/comments", body="hi")
    await github_sandbox.sandbox.drain_webhooks()
    await asyncio.sleep(0.1)
    deliveries = github_sandbox.sandbox.deliveries
    assert len(deliveries) == 1
    assert deliveries[0].status == 0
    assert "Connect" in deliveries[0].response


async def test_redelivery_sends_the_same_delivery_id_and_body_again(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, receiver: Receiver
) -> None:
    """``redeliver`` repeats a delivery byte for byte, as a duplicate from GitHub would be."""
    github_sandbox.sandbox.add_webhook(receiver.url, secret=SECRET)
    await _api(github_sandbox, sandbox_config, "POST", ISSUES, title="ticket")
    await _api(github_sandbox, sandbox_config, "POST", ISSUES + "/1/comments", body="hi")
    await github_sandbox.sandbox.drain_webhooks()
    first = github_sandbox.sandbox.deliveries[0]
    again = await github_sandbox.sandbox.redeliver(first.id)
    assert again.redelivery
    assert not first.redelivery
    assert (again.id, again.body, again.status) == (first.id, first.body, 200)
    (headers_1, body_1), (headers_2, body_2) = receiver.received
    assert body_1 == body_2
    assert headers_1["X-GitHub-Delivery"] == headers_2["X-GitHub-Delivery"]
    assert headers_1["X-Hub-Signature-256"] == headers_2["X-Hub-Signature-256"]
    with pytest.raises(KeyError):
        await github_sandbox.sandbox.redeliver("no-such-delivery")
