"""The desk API refuses, before posting, every comment the desk's decision table would refuse.

Each refusal is a 422 carrying the desk's own reason, and nothing reaches GitHub: the
editor keeps the signed comment. Every response is checked against the OpenAPI description.
"""

from __future__ import annotations

import asyncio
from typing import Any

from auth.roles import Act
from tests.helpers.desk_api import DeskApi
from tests.helpers.review_flow import DANGEROUS, SAFE, ask
from tests.helpers.stack import Stack


async def _held(stack: Stack, *, author: str) -> asyncio.Task[Any]:
    """Ask for a command and hold ``author``'s dangerous answer for review."""
    pending = await ask(stack)
    await stack.answer(1, DANGEROUS, signer=author)
    await stack.settle()
    _, detail = await DeskApi(stack).get("tickets/1")
    assert detail["state"] == "needs-review"
    return pending


async def _refused(stack: Stack, body: str, *, poster: str) -> dict[str, Any]:
    """Post ``body`` through the API, assert a 422 that posted nothing, and return it."""
    before = len(await stack.comments(1))
    status, data = await DeskApi(stack).post_comment(1, body, github_token=stack.token(poster))
    assert status == 422, data
    assert data["error"].startswith("not posted: ")
    assert len(await stack.comments(1)) == before
    return dict(data)


async def test_self_approval_is_refused_before_posting(desk_stack: Stack) -> None:
    """The held answer's own author cannot post an approval of it: 422 self-approval."""
    pending = await _held(desk_stack, author="bob")
    approval = desk_stack.signed("Fine.", number=1, signer="bob", act=Act.APPROVE, judged=DANGEROUS)
    data = await _refused(desk_stack, approval, poster="bob")
    pending.cancel()
    assert data["reason"] == "self-approval"
    assert data["code"] == "desk_would_refuse"
    assert "another reviewer" in data["error"]


async def test_approval_by_a_signer_without_the_reviewer_role_is_refused(
    desk_stack: Stack,
) -> None:
    """An editor who is no reviewer cannot post an approval: 422 role_missing."""
    pending = await _held(desk_stack, author="bob")
    approval = desk_stack.signed(
        "Fine.", number=1, signer="alice", act=Act.APPROVE, judged=DANGEROUS
    )
    data = await _refused(desk_stack, approval, poster="alice")
    pending.cancel()
    assert data["reason"] == "role_missing"
    assert "reviewer" in data["error"]


async def test_judgement_of_no_held_answer_is_refused(desk_stack: Stack) -> None:
    """An approval on a ticket that holds no answer counts for nothing: 422 early-judgement."""
    pending = await ask(desk_stack)
    approval = desk_stack.signed("Fine.", number=1, signer="bob", act=Act.APPROVE, judged=DANGEROUS)
    data = await _refused(desk_stack, approval, poster="bob")
    pending.cancel()
    assert data["reason"] == "early-judgement"
    assert data["code"] == "desk_would_refuse"


async def test_approval_of_another_text_than_the_held_answer_is_refused(
    desk_stack: Stack,
) -> None:
    """An approval signed over a different answer's sha256 is refused: 422 text_mismatch."""
    pending = await _held(desk_stack, author="alice")
    approval = desk_stack.signed("Fine.", number=1, signer="bob", act=Act.APPROVE, judged=SAFE)
    data = await _refused(desk_stack, approval, poster="bob")
    pending.cancel()
    assert data["reason"] == "text_mismatch"
    assert data["code"] == "not_signed_for_this_ticket"


async def test_answer_on_a_delivered_ticket_is_refused(desk_stack: Stack) -> None:
    """A ticket whose answer the agent received takes no other answer: 422 late."""
    pending = await ask(desk_stack)
    await desk_stack.answer(1, SAFE, signer="alice")
    await asyncio.wait_for(pending, 10)
    await desk_stack.settle()
    late = desk_stack.signed("Another answer.", number=1, signer="bob")
    data = await _refused(desk_stack, late, poster="bob")
    assert data["reason"] == "late"
    assert "delivered" in data["error"]


async def test_answer_calling_a_tool_the_agent_lacks_is_refused(desk_stack: Stack) -> None:
    """A tool call the request offered no tool for cannot be released: 422 unreleasable."""
    pending = await ask(desk_stack)
    unknown = '```tool_call\n{"name": "format_disk", "arguments": {}}\n```'
    data = await _refused(desk_stack, desk_stack.signed(unknown, number=1), poster="alice")
    pending.cancel()
    assert data["reason"] == "unreleasable"
    assert "format_disk" in data["error"]


async def test_answer_in_reply_to_a_held_answer_is_refused(desk_stack: Stack) -> None:
    """While an answer waits for review another answer does not count: 422 wrong_act."""
    pending = await _held(desk_stack, author="alice")
    data = await _refused(desk_stack, desk_stack.signed(SAFE, number=1), poster="alice")
    pending.cancel()
    assert data["reason"] == "wrong_act"
    assert "waiting for review" in data["error"]
