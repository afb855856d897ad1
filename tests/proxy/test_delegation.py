"""Delegation end to end: an editor splits a ticket, others answer its children, one finalises.

A real proxy (``create_app``) in front of the embedded GitHub, the official ``openai`` client
as the waiting agent, PyGithub for what GitHub shows. Keyring: alice and bob are editors,
mallory a reviewer only.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from datetime import timedelta
from typing import Any

from auth.comment import text_digest
from auth.delegation import Delegation
from proxy.cli import main
from tests.helpers.delegation_flow import (
    FINAL,
    QUESTIONS,
    ask,
    child_issue,
    children_of,
    delegation,
    replies_saying,
    sub_issue_numbers,
)
from tests.helpers.stack import REPO, Stack
from ticketing.store.model import TicketState


async def audit_json(stack: Stack, url: str) -> list[dict[str, Any]]:
    """Run ``ticketproxy audit URL --json`` in a thread; return one object per ticket."""
    argv = ["audit", url, "--keyring", str(stack.tmp / "keyring.json"), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = await asyncio.to_thread(main, argv, {})
    assert code == 0, out.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def issue_state(stack: Stack, number: int) -> str:
    """Return issue ``number``'s state on GitHub (PyGithub, on a worker thread)."""
    return str(stack.github("ticketproxy-bot").get_repo(REPO).get_issue(number).state)


async def test_delegated_ticket_is_answered_by_its_children_then_finalised(stack: Stack) -> None:
    """Two children for bob and alice are answered; the agent gets only the editor's final."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack))
    children = await children_of(stack)
    assert [(c.question, c.addressee) for c in children] == [(q.ask, q.to) for q in QUESTIONS]
    numbers = [child_issue(stack, c) for c in children]
    await stack.desk.followups.drain()
    assert await asyncio.to_thread(sub_issue_numbers, stack, 1) == numbers
    for number, login in zip(numbers, ("bob", "alice"), strict=True):
        pings = [b for b in await stack.bot_replies(number) if "@" in b]
        assert len(pings) == 1
        assert pings[0].startswith(f"@{login}, this sub-question of #1 is for you")
    for number, login in zip(numbers, ("bob", "alice"), strict=True):
        body = stack.signed(f"{login} says: yes.", number=number, signer=login)
        await stack.comment(number, body, author=login)
    [listed] = await replies_saying(stack, 1, "Every sub-question of this ticket is answered")
    for number, login in zip(numbers, ("bob", "alice"), strict=True):
        answer = stack.desk.store.answer_for(stack.desk.store.ticket_for_issue(number).id)  # type: ignore[union-attr]
        assert answer is not None
        assert f"#{number}: " in listed
        assert f"answered by **{login}**, [`sha256:{answer.digest}`]" in listed
    assert not pending.done()
    await stack.answer(1, FINAL)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == FINAL
    await stack.desk.followups.drain()
    for number in numbers:
        assert await asyncio.to_thread(issue_state, stack, number) == "closed"
    await replies_saying(stack, 1, "Delivered to the agent")
    audits = await audit_json(stack, f"{stack.sandbox.web_url}/{REPO}/issues/1")
    assert [(a["ticket"], a["verdict"]) for a in audits] == [
        (f"{REPO}#{n}", "ok") for n in (1, *numbers)
    ]
    parent, *children_audits = audits
    assert parent["answer"]["signer"] == "alice"
    assert parent["answer"]["sha256"] == text_digest(FINAL)
    [split] = [note for note in parent["notes"] if note.startswith("delegated by alice")]
    assert f"into #{numbers[0]}, #{numbers[1]}" in split
    assert [a["answer"]["signer"] for a in children_audits] == ["bob", "alice"]


async def test_delegate_by_a_reviewer_only_key_is_refused(unlocked_stack: Stack) -> None:
    """Mallory, a reviewer only, cannot split a ticket: refused, told, nothing opened."""
    stack = unlocked_stack
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack, signer="mallory"), author="mallory")
    [refusal] = await replies_saying(stack, 1, "was not accepted")
    assert "lacks the editor role" in refusal
    assert stack.desk.store.delegations_of(stack.desk.store.ticket_for_issue(1).id) == []  # type: ignore[union-attr]
    assert [i.number for i in await stack.issues()] == [1]
    assert not pending.done()
    pending.cancel()


async def test_replayed_delegate_is_refused(stack: Stack) -> None:
    """The same signed delegation posted twice splits the ticket once; the copy is refused."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    body = delegation(stack)
    await stack.comment(1, body)
    await children_of(stack)
    await stack.comment(1, body)
    [refusal] = await replies_saying(stack, 1, "already used")
    assert "was not accepted" in refusal
    await stack.settle()
    assert len(stack.desk.store.delegations_of(stack.desk.store.ticket_for_issue(1).id)) == 2  # type: ignore[union-attr]
    assert len(await stack.issues()) == 3
    pending.cancel()


async def test_delegate_for_another_ticket_is_refused(stack: Stack) -> None:
    """A delegation signed for issue #7 splits nothing on issue #1."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack, ticket=f"{REPO}#7"))
    [refusal] = await replies_saying(stack, 1, "was not accepted")
    assert "another ticket" in refusal
    assert [i.number for i in await stack.issues()] == [1]
    pending.cancel()


async def test_delegate_to_a_login_not_in_the_keyring_is_refused_and_told(stack: Stack) -> None:
    """A sub-question for oscar, who holds no key, is refused, naming oscar."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    questions = (Delegation("Who owns the orders table?", to="oscar"),)
    await stack.comment(1, delegation(stack, questions=questions))
    [refusal] = await replies_saying(stack, 1, "was not accepted")
    assert "oscar" in refusal
    assert "keyring" in refusal
    assert [i.number for i in await stack.issues()] == [1]
    pending.cancel()


async def test_childs_answer_signed_for_the_parents_reference_is_refused(stack: Stack) -> None:
    """Bob's answer on his child, signed for the parent's reference, answers neither."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack))
    children = await children_of(stack)
    number = child_issue(stack, children[0])
    wrong = stack.signed("Yes.", number=number, signer="bob", ticket=f"{REPO}#1")
    await stack.comment(number, wrong, author="bob")
    [refusal] = await replies_saying(stack, number, "was not accepted")
    assert "another ticket" in refusal
    child = stack.desk.store.get_ticket(children[0].child_id)
    assert child is not None
    assert child.state is TicketState.OPEN
    assert not pending.done()
    pending.cancel()


async def test_expired_child_marks_the_parent_which_is_still_answerable(stack: Stack) -> None:
    """Children expire before their parent: the parent says so and an editor answers it."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack))
    children = await children_of(stack)
    # Past the children's deadline (three quarters of the parent's wait), not the parent's.
    stack.clock.offset = timedelta(seconds=50)
    notices = []
    for child in children:
        said = f"Sub-issue #{child_issue(stack, child)} ("
        notices += await replies_saying(stack, 1, said)
    assert all("still open" in notice for notice in notices)
    assert not pending.done()
    await stack.answer(1, FINAL)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == FINAL


async def test_parent_answered_directly_closes_its_children_as_superseded(stack: Stack) -> None:
    """An editor may answer the parent at once: its open children close as superseded."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    await stack.comment(1, delegation(stack))
    children = await children_of(stack)
    await stack.answer(1, FINAL)
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == FINAL
    for child in children:
        number = child_issue(stack, child)
        await replies_saying(stack, number, "closed as superseded")
        ticket = stack.desk.store.get_ticket(child.child_id)
        assert ticket is not None
        assert ticket.state is TicketState.EXPIRED


async def test_delegation_edited_after_the_split_fails_the_audit(stack: Stack) -> None:
    """A delegate comment reworded after the bot split the ticket no longer verifies: mismatch."""
    pending = ask(stack)
    await stack.wait_for_issue(1)
    posted = await stack.comment(1, delegation(stack))
    children = await children_of(stack)
    await stack.answer(1, FINAL)
    await asyncio.wait_for(pending, 10)
    await replies_saying(stack, 1, "Delivered to the agent")
    body = str(posted.body).replace("still used", "dropped")
    await asyncio.to_thread(posted.edit, body)
    argv = ["audit", f"{stack.sandbox.web_url}/{REPO}/issues/1", "--keyring"]
    argv.append(str(stack.tmp / "keyring.json"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = await asyncio.to_thread(main, argv, {})
    assert code == 1, out.getvalue()
    assert f"{REPO}#1: mismatch" in out.getvalue()
    assert f"the delegation in comment {posted.id} does not verify" in out.getvalue()
    for child in children:
        assert f"{REPO}#{child_issue(stack, child)}: unanswered" in out.getvalue()
