"""Delegation flows on a whole in-process stack: sign a split, ask, wait for the children.

Shared by the delegation tests (``tests/proxy/test_delegation.py``, and
``tests/proxy/test_delegation_resume.py`` for the splits GitHub could not finish opening).
"""

from __future__ import annotations

import asyncio
from typing import Any

from auth.delegation import Delegation, render_delegations
from auth.roles import Act
from auth.sign import sign_comment
from tests.helpers.stack import REPO, Stack
from ticketing.store.model import StoredDelegation

QUESTIONS = (
    Delegation("Is the index on orders.created_at still used?", to="bob"),
    Delegation("Is last night's backup verified?", to="alice"),
)
FINAL = "Ship it: the index is unused and the backup is verified."


def delegation(
    stack: Stack,
    number: int = 1,
    *,
    signer: str = "alice",
    questions: tuple[Delegation, ...] = QUESTIONS,
    ticket: str | None = None,
) -> str:
    """Return a delegation of issue ``number``'s ticket signed by ``signer``."""
    return sign_comment(
        render_delegations(questions),
        ticket=ticket or f"{REPO}#{number}",
        key=stack.keys[signer],
        now=stack.clock(),
        act=Act.DELEGATE,
        delegations=questions,
    )


def ask(stack: Stack) -> asyncio.Task[Any]:
    """Send the agent's question; the task ends with what the agent receives."""
    client = stack.openai()
    question = "Can we ship the orders migration tonight?"
    return asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": question}]
        )
    )


async def children_of(stack: Stack, number: int = 1, count: int = 2) -> list[StoredDelegation]:
    """Wait until issue ``number``'s ticket has ``count`` delegated children; return them."""
    parent = stack.desk.store.ticket_for_issue(number)
    assert parent is not None
    for _ in range(500):
        found = stack.desk.store.delegations_of(parent.id)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"issue #{number} was never split into {count} children")


def child_issue(stack: Stack, child: StoredDelegation) -> int:
    """Return the issue number of a delegated child."""
    ticket = stack.desk.store.get_ticket(child.child_id)
    assert ticket is not None
    assert ticket.issue_number is not None
    return ticket.issue_number


async def replies_saying(stack: Stack, number: int, text: str, within: float = 10.0) -> list[str]:
    """Wait until a bot comment on issue ``number`` says ``text``; return all that do."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        found = [b for b in await stack.bot_replies(number, without=()) if text in b]
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(
        f"the bot never said {text!r} on #{number}: {await stack.comments(number)}"
    )


def sub_issue_numbers(stack: Stack, number: int) -> list[int]:
    """Return issue ``number``'s sub-issues as GitHub lists them (PyGithub)."""
    issue = stack.github("ticketproxy-bot").get_repo(REPO).get_issue(number)
    return [child.number for child in issue.get_sub_issues()]
