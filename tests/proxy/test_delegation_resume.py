"""A delegation GitHub could not finish opening is resumed, each sub-question once.

A real proxy (``create_app``) in front of the embedded GitHub, which fails every issue
creation after the first child's; the official ``openai`` client is the waiting agent.
Each test is named after the fault.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from auth.delegation import Delegation
from tests.helpers.delegation_flow import (
    FINAL,
    ask,
    child_issue,
    children_of,
    delegation,
    replies_saying,
    sub_issue_numbers,
)
from tests.helpers.stack import REPO, Stack

ISSUES = f"/repos/{REPO}/issues"
THREE = (
    Delegation("Is the index on orders.created_at still used?", to="bob"),
    Delegation("Is last night's backup verified?", to="alice"),
    Delegation("Who is on call tonight?"),
)


def issue_numbers(stack: Stack) -> list[int]:
    """Return every issue's number on GitHub (PyGithub, on a worker thread)."""
    repo = stack.github("ticketproxy-bot").get_repo(REPO)
    return sorted(issue.number for issue in repo.get_issues(state="all"))


async def delegate_while_github_fails_after_the_first_child(stack: Stack, status: int) -> None:
    """Split issue #1 in three; GitHub opens the first child, then answers ``status``."""
    sandbox = stack.sandbox.sandbox
    # The first creation goes through untouched; every later one fails.
    sandbox.inject_fault(method="POST", path=ISSUES, status=None)
    sandbox.inject_fault(
        method="POST", path=ISSUES, status=status, times=10_000, headers={"Retry-After": "1"}
    )
    await stack.comment(1, delegation(stack, questions=THREE))


async def test_github_down_after_the_first_child_opens_the_rest_once_it_is_back(
    stack: Stack,
) -> None:
    """The parent says 1 of 3 opened and retrying; once GitHub is back each opens once."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await delegate_while_github_fails_after_the_first_child(stack, 503)
    [stalled] = await replies_saying(stack, 1, "1 of 3 sub-questions opened (#2)")
    assert "GitHub is unavailable, retrying" in stalled
    assert len(await children_of(stack, count=1)) == 1
    stack.sandbox.sandbox.clear_faults()
    children = await children_of(stack, count=3)
    numbers = [child_issue(stack, child) for child in children]
    assert numbers == [2, 3, 4]
    [notice] = await replies_saying(stack, 1, "delegated this ticket into sub-questions")
    assert all(f"#{n}: " in notice for n in numbers)
    await stack.desk.followups.drain()
    # One issue per sub-question, none twice, each linked once under the parent.
    assert await asyncio.to_thread(issue_numbers, stack) == [1, 2, 3, 4]
    assert await asyncio.to_thread(sub_issue_numbers, stack, 1) == numbers
    for number, login in ((2, "bob"), (3, "alice")):
        pings = [b for b in await stack.bot_replies(number) if "@" in b]
        assert [p.split(",")[0] for p in pings] == [f"@{login}"]
    for number, login in zip(numbers, ("bob", "alice", "alice"), strict=True):
        await stack.comment(
            number, stack.signed(f"{login} says: yes.", number=number, signer=login), author=login
        )
    await replies_saying(stack, 1, "Every sub-question of this ticket is answered")
    assert not pending.done()
    await stack.answer(1, FINAL)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == FINAL


async def test_answers_of_opened_children_wait_for_the_children_not_yet_opened(
    stack: Stack,
) -> None:
    """Rate-limited after the first child: its answer alone is not listed as all answered."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await delegate_while_github_fails_after_the_first_child(stack, 429)
    await replies_saying(stack, 1, "1 of 3 sub-questions opened (#2)")
    await stack.comment(2, stack.signed("bob says: yes.", number=2, signer="bob"), author="bob")
    await replies_saying(stack, 2, "answers this sub-question of #1")
    await stack.desk.followups.drain()
    bodies = await stack.bot_replies(1)
    assert not [b for b in bodies if "Every sub-question of this ticket is answered" in b]
    pending.cancel()


async def test_github_down_until_the_childrens_deadline_gives_up_and_tells_the_editor(
    stack: Stack,
) -> None:
    """Past the children's deadline the rest are given up, said once; the parent is answerable."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await delegate_while_github_fails_after_the_first_child(stack, 503)
    await replies_saying(stack, 1, "1 of 3 sub-questions opened (#2)")
    # Past three quarters of the parent's wait: a child opened now would expire at once.
    stack.clock.offset = timedelta(seconds=50)
    [given_up] = await replies_saying(stack, 1, "given up:", within=15.0)
    assert "2 sub-question(s) could not be opened in time" in given_up
    assert "backup verified" in given_up
    assert "on call tonight" in given_up
    assert "can answer it directly" in given_up
    stack.sandbox.sandbox.clear_faults()
    parent = stack.desk.store.ticket_for_issue(1)
    assert parent is not None
    assert len(stack.desk.store.delegations_of(parent.id)) == 1
    assert not pending.done()
    await stack.answer(1, FINAL)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == FINAL
    assert await asyncio.to_thread(issue_numbers, stack) == [1, 2]


async def test_delegation_seen_again_before_any_child_opened_is_not_refused_as_a_replay(
    stack: Stack,
) -> None:
    """GitHub opens no child; the delegate comment seen again is ignored, not called a replay."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=ISSUES, status=503, times=10_000, headers={"Retry-After": "1"}
    )
    split = await stack.comment(1, delegation(stack, questions=THREE))
    await replies_saying(stack, 1, "0 of 3 sub-questions opened (none yet)")
    # Edited (same text): a new version of the comment, which the poll reads again.
    await asyncio.to_thread(split.edit, split.body)
    await stack.settle()
    await stack.settle()
    replies = await stack.bot_replies(1)
    assert [b for b in replies if "replay" in b.lower()] == []
    assert len(replies) == 1
    pending.cancel()
