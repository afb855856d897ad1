"""Dangerous commands wait for a security reviewer's signed approval, never the author's own."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

from github import Auth, Github

from auth.keyring import Keyring
from auth.policy import ReviewPolicy
from auth.roles import Act
from tests.helpers.review_flow import DANGEROUS, SAFE, ask
from tests.helpers.stack import REPO, Stack
from ticketing.audit.comments import AuditComment
from ticketing.audit.issue import audit_issue
from ticketing.store.model import TicketState


async def under_review(stack: Stack) -> None:
    """Post bob's dangerous answer and wait until the ticket holds it for review."""
    await stack.answer(1, DANGEROUS, signer="bob")
    await stack.settle()
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.NEEDS_REVIEW


async def review(stack: Stack, *, reviewer: str, act: Act = Act.APPROVE, note: str = "ok") -> None:
    """Post a signed approval or rejection of the dangerous answer."""
    body = stack.signed(note, number=1, signer=reviewer, act=act, judged=DANGEROUS)
    await stack.comment(1, body, author=reviewer)
    await stack.settle()


async def test_dangerous_command_is_released_only_after_a_reviewer_approves(
    unlocked_stack: Stack,
) -> None:
    """bob's shell command waits, the notice quotes it, and mallory's approval releases it."""
    stack = unlocked_stack
    pending = await ask(stack)
    await under_review(stack)
    assert not pending.done()
    notices = await stack.bot_replies(1)
    assert len(notices) == 1
    assert "rm -rf build" in notices[0]
    assert "@mallory" in notices[0]
    assert "@bob" not in notices[0]
    issue = await stack.wait_for_issue(1)
    assert "needs-review" in {label.name for label in issue.labels}
    await review(stack, reviewer="mallory")
    completion = await asyncio.wait_for(pending, 10)
    call = (completion.choices[0].message.tool_calls or [])[0]
    assert json.loads(call.function.arguments) == {"command": "rm -rf build"}


async def test_self_approval_is_refused(unlocked_stack: Stack) -> None:
    """bob cannot approve his own answer: a reply says so and the command stays held."""
    stack = unlocked_stack
    pending = await ask(stack)
    await under_review(stack)
    await review(stack, reviewer="bob")
    assert not pending.done()
    replies = await stack.bot_replies(1)
    assert any("cannot approve" in r for r in replies)
    pending.cancel()


async def test_reviewer_without_the_role_is_refused(unlocked_stack: Stack) -> None:
    """alice is an editor but not a reviewer: her approval does not count."""
    stack = unlocked_stack
    pending = await ask(stack)
    await under_review(stack)
    await review(stack, reviewer="alice")
    assert not pending.done()
    assert len(await stack.bot_replies(1)) == 2  # the review notice, then the refusal
    pending.cancel()


async def test_approval_for_a_different_text_is_refused(unlocked_stack: Stack) -> None:
    """An approval whose sha256 names another answer does not release this one."""
    stack = unlocked_stack
    pending = await ask(stack)
    await under_review(stack)
    body = stack.signed("ok", number=1, signer="mallory", act=Act.APPROVE, judged="ls")
    await stack.comment(1, body, author="mallory")
    await stack.settle()
    assert not pending.done()
    assert any("different text" in r for r in await stack.bot_replies(1))
    pending.cancel()


async def test_approval_before_the_answer_is_refused(unlocked_stack: Stack) -> None:
    """An approval posted while no answer waits for review is refused with a reply."""
    stack = unlocked_stack
    pending = await ask(stack)
    await review(stack, reviewer="mallory")
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.OPEN
    assert any("no answer is waiting for review" in r for r in await stack.bot_replies(1))
    pending.cancel()


async def test_reused_approval_jti_is_refused(unlocked_stack: Stack) -> None:
    """The same signed approval posted twice counts once; the copy is refused as a replay."""
    stack = unlocked_stack
    stack.desk.settings = replace(stack.desk.settings, policy=ReviewPolicy.from_toml(TWO_APPROVALS))
    pending = await ask(stack)
    await under_review(stack)
    approval = stack.signed("ok", number=1, signer="mallory", act=Act.APPROVE, judged=DANGEROUS)
    await stack.comment(1, approval, author="mallory")
    await stack.settle()
    await stack.comment(1, approval, author="mallory")
    await stack.settle()
    assert not pending.done()
    assert any("already used" in r for r in await stack.bot_replies(1))
    pending.cancel()


TWO_APPROVALS = """
[[rules]]
name = "shell"
tools = ["execute_*"]
approvals = 2
"""


async def test_rejected_command_never_reaches_the_client(unlocked_stack: Stack) -> None:
    """mallory rejects the shell command; the ticket reopens and a safe answer is released."""
    stack = unlocked_stack
    pending = await ask(stack)
    await under_review(stack)
    await review(stack, reviewer="mallory", act=Act.REJECT, note="Deleting build is not needed.")
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.OPEN
    assert any("rejected" in r for r in await stack.bot_replies(1))
    assert not pending.done()
    await stack.answer(1, SAFE, signer="bob")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.tool_calls is None
    assert completion.choices[0].message.content == SAFE


async def test_reviewed_autogpt_command_audits_clean_end_to_end(unlocked_stack: Stack) -> None:
    """An AutoGPT shell step goes through answer, review and release, and the audit verifies it."""
    stack = unlocked_stack
    await test_dangerous_command_is_released_only_after_a_reviewer_approves(stack)
    await stack.desk.followups.drain()

    def fetch() -> list[Any]:
        github = Github(base_url=stack.sandbox.api_url, auth=Auth.Token(stack.token("alice")))
        return list(github.get_repo(REPO).get_issue(1).get_comments())

    comments = [
        AuditComment(
            id=c.id,
            author_login=c.user.login,
            author_id=c.user.id,
            body=c.body,
            created_at=c.created_at,
            updated_at=c.updated_at,
            url=c.html_url,
        )
        for c in await asyncio.to_thread(fetch)
    ]
    audit = audit_issue(
        f"{REPO}#1",
        comments,
        keyring_history=Keyring.load(stack.settings.keyring_path),
        bot_login="ticketproxy-bot",
        policy=ReviewPolicy.default(),
    )
    assert audit.verdict == "ok", audit.problems
    assert audit.answer is not None
    assert audit.answer.signer == "bob"
    assert [a.signer for a in audit.approvals] == ["mallory"]
