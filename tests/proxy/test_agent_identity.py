"""An editor's agent answering under its own identity, through a real server and GitHub.

The agent's job is simulated as the composite action runs it: ``ticketproxy answer --oidc``
with ``ACTIONS_ID_TOKEN_REQUEST_URL`` and ``ACTIONS_ID_TOKEN_REQUEST_TOKEN`` pointing at a
local OIDC issuer (its own RSA key, JWKS and token endpoint on 127.0.0.1), posting as the
agent's account on the embedded GitHub, in front of ticketproxy trusting that issuer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from auth.keys import generate_signing_key
from auth.roles import Act
from auth.sign import sign_comment
from embedded_github import SandboxConfig
from tests.helpers.oidc_issuer import (
    AGENT_LOGIN,
    LocalIssuer,
    agent_answers,
    list_alices_agent,
    with_agent_account,
)
from tests.helpers.review_flow import DANGEROUS, PROMPT, SHELL
from tests.helpers.stack import REPO, Stack
from ticketing.render.drafts import draft_digest, render_draft_comment
from ticketing.render.replies import reply_marker
from ticketing.store.model import TicketState

PLAIN = "The build folder is already empty; nothing to do."


@pytest.fixture
def sandbox_config(sandbox_config: SandboxConfig) -> SandboxConfig:
    """Add the account alice's agent workflow posts as."""
    return with_agent_account(sandbox_config)


async def _until_state(stack: Stack, state: TicketState, *, within: float = 10.0) -> None:
    """Settle until ticket 1 is in ``state``: an agent's token is judged after a JWKS fetch."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        await stack.settle()
        ticket = stack.desk.store.ticket_for_issue(1)
        if ticket is not None and ticket.state is state:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"ticket 1 never reached {state}")
        await asyncio.sleep(0.05)


async def _replies_saying(stack: Stack, number: int, words: str, *, within: float = 10.0) -> str:
    """Settle until a bot reply on issue ``number`` says ``words``, and return the replies."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        await stack.settle()
        replies = "\n".join(await stack.bot_replies(number))
        if words in replies:
            return replies
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no bot reply on #{number} says {words!r}: {replies}")
        await asyncio.sleep(0.05)


async def test_opted_in_agent_answers_a_plain_text_ticket_with_an_oidc_bound_signature(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """alice's agent answers in plain text, keyless; it is released and said to be hers."""
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    issue = await agent_stack.wait_for_issue(1)
    assert await agent_answers(agent_stack, issuer, issue.html_url, PLAIN) == 0
    await agent_stack.settle()
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == PLAIN
    replies = await agent_stack.bot_replies(1)
    notice = next(r for r in replies if reply_marker("agent-answer") in r)
    assert "Answered by **alice's agent**" in notice
    assert "valid when received" in notice
    assert "424242" in notice
    assert issuer.jwks_requests == 1


async def test_agent_identity_answering_a_ticket_that_needs_review_is_held(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """The same agent's shell command is held for a person's approval, never released."""
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    issue = await agent_stack.wait_for_issue(1)
    assert await agent_answers(agent_stack, issuer, issue.html_url, DANGEROUS) == 0
    await _until_state(agent_stack, TicketState.NEEDS_REVIEW)
    assert not pending.done()
    notice = "\n".join(await agent_stack.bot_replies(1))
    assert "Security review needed" in notice
    assert "**agent\\-answers**" in notice
    assert "may answer in plain text only" in notice
    pending.cancel()


async def test_agent_identity_answering_a_plain_ticket_with_a_command_is_held(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """A command the policy would let a person run at once still waits when an agent sends it."""
    tools: list[Any] = [{**SHELL[0], "function": {**SHELL[0]["function"], "name": "list_files"}}]
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=tools)
    )
    issue = await agent_stack.wait_for_issue(1)
    call = '```tool_call\n{"name": "list_files", "arguments": {"command": "ls"}}\n```'
    assert await agent_answers(agent_stack, issuer, issue.html_url, call) == 0
    await _until_state(agent_stack, TicketState.NEEDS_REVIEW)
    pending.cancel()


async def test_draft_comment_passing_as_a_signed_answer_is_refused(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """A draft's comment, signed by the agent as if it were an answer, is refused."""
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    await agent_stack.wait_for_issue(1)
    draft = render_draft_comment(
        PLAIN, model="gpt-4o", digest=draft_digest(PLAIN), ticket=f"{REPO}#1"
    )
    # Without the bot's reply marker, which would only make the desk ignore it.
    posed = draft.replace(reply_marker("draft"), "").strip()
    key = generate_signing_key(login=AGENT_LOGIN)
    body = sign_comment(
        posed,
        ticket=f"{REPO}#1",
        key=key,
        now=agent_stack.clock(),
        oidc_token=issuer.mint(key.kid),
    )
    await agent_stack.comment(1, body, author=AGENT_LOGIN)
    await _replies_saying(agent_stack, 1, "a draft is a suggestion and never an answer")
    assert not pending.done()
    pending.cancel()


async def test_replayed_oidc_token_on_the_next_ticket_is_refused(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """A token that signed one posted answer cannot sign another, even on another ticket."""
    key = generate_signing_key(login=AGENT_LOGIN)
    token = issuer.mint(key.kid)
    client = agent_stack.openai()
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await agent_stack.wait_for_issue(1)
    now = agent_stack.clock()
    body = sign_comment(PLAIN, ticket=f"{REPO}#1", key=key, now=now, oidc_token=token)
    await agent_stack.comment(1, body, author=AGENT_LOGIN)
    await agent_stack.settle()
    assert (await asyncio.wait_for(first, 10)).choices[0].message.content == PLAIN
    other = [{"role": "user", "content": "Another question."}]
    second = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=other))
    await agent_stack.wait_for_issue(2)
    body = sign_comment(PLAIN, ticket=f"{REPO}#2", key=key, now=now, oidc_token=token)
    await agent_stack.comment(2, body, author=AGENT_LOGIN)
    await _replies_saying(agent_stack, 2, "already signed an answer")
    assert not second.done()
    second.cancel()


async def test_editor_approving_their_own_agents_held_command_is_refused(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """bob's agent's command waits for a reviewer other than bob: his approval is refused."""
    list_alices_agent(agent_stack.settings.keyring_path, on_behalf_of="bob")
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT, tools=SHELL)
    )
    issue = await agent_stack.wait_for_issue(1)
    assert await agent_answers(agent_stack, issuer, issue.html_url, DANGEROUS) == 0
    await _until_state(agent_stack, TicketState.NEEDS_REVIEW)
    approval = agent_stack.signed(
        "Fine.", number=1, signer="bob", act=Act.APPROVE, judged=DANGEROUS
    )
    await agent_stack.comment(1, approval, author="bob")
    await _replies_saying(agent_stack, 1, "cannot approve it")
    ticket = agent_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    assert ticket.state is TicketState.NEEDS_REVIEW
    assert not pending.done()
    pending.cancel()


async def test_agent_answer_waits_while_the_issuer_is_down_and_counts_once_it_is_back(
    agent_stack: Stack, issuer: LocalIssuer
) -> None:
    """An unreachable JWKS neither refuses nor loses the answer: it is judged later."""
    issuer.down = True
    pending = asyncio.create_task(
        agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    )
    issue = await agent_stack.wait_for_issue(1)
    assert await agent_answers(agent_stack, issuer, issue.html_url, PLAIN) == 0
    await agent_stack.settle()
    await agent_stack.settle()
    assert issuer.jwks_requests >= 1
    assert not pending.done()
    assert await agent_stack.bot_replies(1) == []
    issuer.down = False
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == PLAIN
