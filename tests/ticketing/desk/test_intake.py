"""Tests for ticketing.desk.intake: what becomes of a ticket GitHub would not open."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.helpers.stack import Stack
from ticketing.desk.intake import OPENINGS_AT_ONCE
from ticketing.store.model import TicketState

PROMPT = [{"role": "user", "content": "Which branch do I deploy?"}]


@pytest.mark.parametrize("status", [401, 404], ids=["bad-token", "missing-repository"])
async def test_opening_refused_for_a_configuration_error_ends_the_ticket_not_resumed(
    stack: Stack, status: int
) -> None:
    """A ticket GitHub refused for the settings is expired, so no later start resumes it."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=status, body={"message": "no"}
    )
    with pytest.raises(openai.InternalServerError):
        await stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    ticket = stack.desk.store.get_ticket(1)
    assert ticket is not None
    assert ticket.state is TicketState.EXPIRED
    assert ticket.issue_number is None
    assert stack.desk.store.count_pending() == 0
    assert stack.desk.store.pending_tickets() == []


async def test_opening_github_was_too_busy_for_stays_pending_for_the_retry(stack: Stack) -> None:
    """A transient failure (GitHub's 503) keeps the ticket "creating", so the retry resumes it."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=503, times=3
    )
    with pytest.raises(openai.RateLimitError):
        await stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    ticket = stack.desk.store.get_ticket(1)
    assert ticket is not None
    assert ticket.state is TicketState.CREATING
    assert stack.desk.store.count_pending() == 1


async def test_retry_after_the_operator_fixed_the_settings_opens_a_new_ticket(
    stack: Stack,
) -> None:
    """Once GitHub takes the ticket again, the same request opens a fresh issue and waits."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=401, body={"message": "no"}
    )
    client = stack.openai()
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    pending = stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    task = asyncio.ensure_future(pending)
    await stack.wait_for_issue(1)
    await stack.answer(1, "main")
    assert (await asyncio.wait_for(task, 10)).choices[0].message.content == "main"
    second = stack.desk.store.get_ticket(2)
    assert second is not None
    assert second.issue_number == 1


async def test_burst_larger_than_the_openings_at_once_opens_every_issue(stack: Stack) -> None:
    """More requests at once than OPENINGS_AT_ONCE: each waits its turn and gets its issue."""
    count = OPENINGS_AT_ONCE + 4
    client = stack.openai()
    tasks = [
        asyncio.ensure_future(
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": f"Question {n}?"}]
            )
        )
        for n in range(count)
    ]
    await stack.wait_for_issue(count)
    assert len(await stack.issues()) == count
    for task in tasks:
        task.cancel()


async def test_refused_openings_do_not_use_up_the_openings_at_once(stack: Stack) -> None:
    """More openings than OPENINGS_AT_ONCE refused in a row: the next request still opens."""
    refused = OPENINGS_AT_ONCE + 1
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues",
        status=401,
        times=refused,
        body={"message": "no"},
    )
    client = stack.openai()
    for n in range(refused):
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": f"Refused {n}?"}]
            )
    task = asyncio.ensure_future(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "main")
    assert (await asyncio.wait_for(task, 10)).choices[0].message.content == "main"
