"""Reactions on editors' comments: only 👎 on a refused one (with a reply).

An accepted answer gets no reaction: its labels, the review notice and the delivered notice
say what a 👀 or a 🚀 would, and each reaction spends GitHub's content-creation budget.
"""

from __future__ import annotations

import asyncio
from typing import Any

from auth.roles import Act
from tests.helpers.review_flow import DANGEROUS, SHELL
from tests.helpers.stack import REPO, Stack


async def _reactions(stack: Stack, comment_id: int) -> set[tuple[str, str]]:
    """Return (content, login) of every reaction on an issue comment."""
    await stack.desk.followups.drain()

    def fetch() -> set[tuple[str, str]]:
        comment = stack.github("alice").get_repo(REPO).get_issue(1).get_comment(comment_id)
        return {(r.content, r.user.login) for r in comment.get_reactions()}

    return await asyncio.to_thread(fetch)


async def _ask(stack: Stack, text: str, **options: Any) -> asyncio.Task[Any]:
    client = stack.openai()
    task = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": text}], **options
        )
    )
    await stack.wait_for_issue(1)
    return task


async def test_delivered_answer_gets_no_reaction_only_the_delivered_notice(stack: Stack) -> None:
    """A delivered answer costs no reaction: the delivered notice tells the editor."""
    pending = await _ask(stack, "Say hi.")
    posted = await stack.answer(1, "hi")
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == "hi"
    assert await _reactions(stack, posted.id) == set()
    delivered = await stack.bot_replies(1, without=())
    assert len(delivered) == 1
    assert "<!-- ticketproxy:reply delivered -->" in delivered[0]


async def test_forged_answer_gets_a_thumbs_down_and_a_reply(stack: Stack) -> None:
    """An answer signed for another ticket is refused: 👎 on it and a reply saying why."""
    pending = await _ask(stack, "Say hi.")
    forged = stack.signed("hi", number=1, ticket=f"{REPO}#99")
    posted = await stack.comment(1, forged)
    await stack.settle()
    assert await _reactions(stack, posted.id) == {("-1", "ticketproxy-bot")}
    replies = await stack.bot_replies(1)
    assert len(replies) == 1
    assert "signature is for another ticket" in replies[0]
    assert not pending.done()
    pending.cancel()


async def test_unsigned_discussion_gets_no_reaction(stack: Stack) -> None:
    """Ordinary discussion on a ticket is left alone: no reaction, no reply."""
    pending = await _ask(stack, "Say hi.")
    posted = await stack.comment(1, "I will take this one.")
    await stack.settle()
    assert await _reactions(stack, posted.id) == set()
    assert await stack.bot_replies(1) == []
    pending.cancel()


async def test_answer_waiting_for_review_gets_the_notice_not_a_reaction(stack: Stack) -> None:
    """A risky answer held for review is told by the review notice; no reaction, before or after."""
    pending = await _ask(stack, "Clean up the build directory.", tools=SHELL)
    posted = await stack.answer(1, DANGEROUS)
    await stack.settle()
    assert await _reactions(stack, posted.id) == set()
    assert any("Security review needed" in r for r in await stack.bot_replies(1))
    approval = stack.signed(
        "Checked: only the build output.",
        number=1,
        signer="bob",
        act=Act.APPROVE,
        judged=DANGEROUS,
    )
    await stack.comment(1, approval, author="bob")
    await stack.settle()
    await asyncio.wait_for(pending, 10)
    assert await _reactions(stack, posted.id) == set()
