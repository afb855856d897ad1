"""``request_approval`` under the review policy: signed rejections and N-of-M approvals."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from auth.policy import ReviewPolicy
from auth.roles import Act
from tests.helpers.mcp_runs import approving_call, held_for_review, judge, run_sdk_client
from tests.helpers.stack import Stack
from ticketing.store.model import TicketState

pytestmark = pytest.mark.slow

_ARGUMENTS = {"action": "Deploy", "command": "make deploy"}
_TWO_APPROVALS = """
[[rules]]
name = "commands"
tools = ["run_*"]
approvals = 2
"""


async def test_reviewers_signed_rejection_returns_approved_false_with_the_reason(
    stack: Stack,
) -> None:
    """A reviewer's signed rejection of the held approval ends the call: approved false, why."""
    call = approving_call(_ARGUMENTS)
    approval = asyncio.create_task(run_sdk_client(stack, [["request_approval", _ARGUMENTS]]))
    await stack.wait_for_issue(1)
    await stack.answer(1, call, signer="alice")
    await held_for_review(stack)
    note = "Not during the freeze."
    await judge(stack, call, reviewer="bob", act=Act.REJECT, note=note)
    report = await asyncio.wait_for(approval, 30)
    result = report["calls"][0]
    assert result["isError"] is False
    structured = result["structuredContent"]
    assert structured["approved"] is False
    assert structured["reason"] == note
    assert structured["reviewers"] == ["bob"]
    assert structured["signer"] == "bob"
    assert structured["ticket_url"].endswith("/issues/1")
    assert "Rejected by bob" in result["content"][0]["text"]


async def test_a_rejection_leaves_a_waiting_chat_completion_waiting(stack: Stack) -> None:
    """Only a watcher that asks for it settles on a rejection; others wait for another answer."""
    call = approving_call(_ARGUMENTS)
    approval = asyncio.create_task(run_sdk_client(stack, [["request_approval", _ARGUMENTS]]))
    ticket = (await stack.wait_for_issue(1)) and stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    completion = stack.desk.watch(ticket)
    await stack.answer(1, call, signer="alice")
    await held_for_review(stack)
    await judge(stack, call, reviewer="bob", act=Act.REJECT, note="No.")
    await asyncio.wait_for(approval, 30)
    await stack.settle()
    assert not completion.done()
    reopened = stack.desk.store.get_ticket(ticket.id)
    assert reopened is not None
    assert reopened.state is TicketState.OPEN
    completion.cancel()


async def test_two_reviewer_policy_approves_only_after_both_sign(unlocked_stack: Stack) -> None:
    """With approvals = 2, the call stays waiting after one approval and returns after two."""
    stack = unlocked_stack  # mallory, a reviewer only, may comment
    stack.desk.settings = replace(
        stack.desk.settings, policy=ReviewPolicy.from_toml(_TWO_APPROVALS)
    )
    call = approving_call(_ARGUMENTS)
    approval = asyncio.create_task(run_sdk_client(stack, [["request_approval", _ARGUMENTS]]))
    await stack.wait_for_issue(1)
    await stack.answer(1, call, signer="alice")
    await held_for_review(stack)
    await judge(stack, call, reviewer="bob", act=Act.APPROVE, note="Fine by me.")
    for _ in range(10):
        await stack.settle()
    await asyncio.sleep(0.5)
    assert not approval.done()
    await judge(stack, call, reviewer="mallory", act=Act.APPROVE, note="Fine.")
    report = await asyncio.wait_for(approval, 30)
    structured = report["calls"][0]["structuredContent"]
    assert structured["approved"] is True
    assert structured["reviewers"] == ["bob", "mallory"]
