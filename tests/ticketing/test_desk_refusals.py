"""The desk refuses a second answer during review and a signature it has already spent."""

from __future__ import annotations

import asyncio

from auth.roles import Act
from tests.helpers.review_flow import DANGEROUS, SAFE, ask
from tests.helpers.stack import Stack
from ticketing.render.replies import render_rejection_reply
from ticketing.store.model import TicketState


def state_of(stack: Stack) -> TicketState:
    """Return the state of the ticket on issue #1."""
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    return ticket.state


async def test_second_answer_while_one_awaits_review_is_refused(unlocked_stack: Stack) -> None:
    """alice's answer during the review of bob's command is refused; the client still waits."""
    stack = unlocked_stack
    pending = await ask(stack)
    held = await stack.answer(1, DANGEROUS, signer="bob")
    await stack.settle()
    assert state_of(stack) is TicketState.NEEDS_REVIEW
    second = await stack.answer(1, SAFE, signer="alice")
    await stack.settle()
    expected = render_rejection_reply(
        comment_url=second.html_url,
        author="alice",
        detail="an answer is already waiting for review; a reviewer must reject it before "
        "another answer can count",
    )
    assert expected in await stack.bot_replies(1)
    assert state_of(stack) is TicketState.NEEDS_REVIEW
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    candidate = stack.desk.store.pending_candidate(ticket.id)
    assert candidate is not None
    assert (candidate.comment_id, candidate.signer) == (held.id, "bob")
    await asyncio.sleep(0.2)
    assert not pending.done()
    pending.cancel()


async def test_signed_answer_whose_jti_was_used_is_refused_as_replayed(
    unlocked_stack: Stack,
) -> None:
    """bob re-posts his exact signed command after mallory rejected it: refused as a replay."""
    stack = unlocked_stack
    pending = await ask(stack)
    signed = stack.signed(DANGEROUS, number=1, signer="bob")
    await stack.comment(1, signed, author="bob")
    await stack.settle()
    assert state_of(stack) is TicketState.NEEDS_REVIEW
    rejection = stack.signed(
        "Deleting build is not needed.",
        number=1,
        signer="mallory",
        act=Act.REJECT,
        judged=DANGEROUS,
    )
    await stack.comment(1, rejection, author="mallory")
    await stack.settle()
    # The ticket is open again, so the copy is judged as a fresh answer, not as a review.
    assert state_of(stack) is TicketState.OPEN
    copy = await stack.comment(1, signed, author="bob")
    await stack.settle()
    expected = render_rejection_reply(
        comment_url=copy.html_url,
        author="bob",
        detail="This signature was already used; sign the answer again to post it anew.",
    )
    assert expected in await stack.bot_replies(1)
    assert state_of(stack) is TicketState.OPEN
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert stack.desk.store.pending_candidate(ticket.id) is None
    assert stack.desk.answers_rejected["replayed"] == 1
    await asyncio.sleep(0.2)
    assert not pending.done()
    pending.cancel()
