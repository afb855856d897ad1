"""alice's agent answering as its own identity, opted in through her action's inputs.

The composite action's steps run as alice's dispatched workflow would, with
``answer-as-agent: true`` and the job's OIDC request variables pointing at a local issuer;
ticketproxy routes gpt-4-turbo to her fork and trusts that issuer and her listed workflow.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.agent_route_settings import VARIABLE, read_agent_routes
from tests.helpers.oidc_issuer import (
    AGENT_LOGIN,
    LocalIssuer,
    list_alices_agent,
    with_agent_account,
)
from tests.helpers.personal_agent import ROUTES, ask, host_alices_workflow, run_alices_action
from tests.helpers.review_flow import DANGEROUS, PROMPT, SHELL
from tests.helpers.stack import Stack, start_stack, stop_stack
from tests.helpers.upstream_stub import running_upstream_stub
from ticketing.render.drafts import parse_draft_comment
from ticketing.render.replies import reply_marker
from ticketing.store.model import TicketState

PLAIN = "The build folder is already empty; nothing to do."
RM_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "execute_shell", "arguments": '{"command": "rm -rf build"}'},
}


@pytest.fixture
def sandbox_config(sandbox_config: SandboxConfig) -> SandboxConfig:
    """Add the account alice's agent workflow posts as."""
    return with_agent_account(sandbox_config)


@pytest.fixture
async def agent_stack(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    issuer: LocalIssuer,
) -> AsyncIterator[Stack]:
    """Yield ticketproxy routing gpt-4-turbo to alice's agent, trusting the local issuer."""
    routes = read_agent_routes({VARIABLE: ROUTES})
    running = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        agent_routes=routes,
        oidc_issuer=issuer.url,
        max_wait=3600.0,
    )
    list_alices_agent(running.settings.keyring_path)
    host_alices_workflow(running)
    try:
        yield running
    finally:
        await stop_stack(running)


def answering(stack: Stack, issuer: LocalIssuer) -> dict[str, dict[str, str]]:
    """Return the opt-in: the action's inputs, and the job's OIDC request variables."""
    inputs = {
        "answer-as-agent": "true",
        "agent-login": AGENT_LOGIN,
        "github-token": stack.token(AGENT_LOGIN),
    }
    return {"inputs": inputs, "env": issuer.request_env()}


async def dispatched_url(stack: Stack) -> str:
    """Wait for the ticket's dispatch to alice's fork and return the ticket URL it carries."""
    await stack.wait_for_issue(1)
    await stack.desk.followups.drain()
    [dispatch] = stack.sandbox.sandbox.dispatches
    return dispatch.inputs["ticket_url"]


async def until_state(stack: Stack, state: TicketState, *, within: float = 10.0) -> None:
    """Settle until ticket 1 is in ``state`` (an agent's token is judged after a JWKS fetch)."""
    async with asyncio.timeout(within):
        while True:
            await stack.settle()
            ticket = stack.desk.store.ticket_for_issue(1)
            if ticket is not None and ticket.state is state:
                return
            await asyncio.sleep(0.05)


async def test_opted_in_action_answers_a_plain_ticket_as_alices_agent_and_it_is_released(
    agent_stack: Stack, issuer: LocalIssuer, tmp_path: Path
) -> None:
    """answer-as-agent: the action signs keylessly; the answer is released as alice's agent's."""
    pending = ask(agent_stack, PROMPT)
    url = await dispatched_url(agent_stack)
    async with running_upstream_stub(text=PLAIN) as model:
        steps = await run_alices_action(
            agent_stack, model, url, tmp_path / "run", **answering(agent_stack, issuer)
        )
        assert [step.returncode for step in steps] == [0], steps
        assert f"signed as {AGENT_LOGIN} (OIDC)" in steps[0].stdout
        completion = await asyncio.wait_for(pending, 15)
        assert completion.choices[0].message.content == PLAIN
    comments = await agent_stack.comments(1)
    posted = [c for c in comments if c.user.login == AGENT_LOGIN]
    assert len(posted) == 1
    assert parse_draft_comment(posted[0].body) is None, "an answer, not a draft"
    await agent_stack.settle()
    replies = await agent_stack.bot_replies(1)
    notice = next(r for r in replies if reply_marker("agent-answer") in r)
    assert "Answered by **alice's agent**" in notice
    assert "valid when received" in notice


async def test_opted_in_agents_shell_command_is_held_for_a_human(
    agent_stack: Stack, issuer: LocalIssuer, tmp_path: Path
) -> None:
    """The same agent's answer to a shell-command ticket waits for a person's approval."""
    pending = ask(agent_stack, PROMPT, tools=SHELL)
    url = await dispatched_url(agent_stack)
    async with running_upstream_stub(text=None, tool_calls=[RM_CALL]) as model:
        steps = await run_alices_action(
            agent_stack, model, url, tmp_path / "run", **answering(agent_stack, issuer)
        )
        assert [step.returncode for step in steps] == [0], steps
        await until_state(agent_stack, TicketState.NEEDS_REVIEW)
        # The same dispatch delivered twice: the held answer is not signed and posted again.
        again = await run_alices_action(
            agent_stack, model, url, tmp_path / "again", **answering(agent_stack, issuer)
        )
        assert len(model.received) == 1
    assert [step.returncode for step in again] == [0], again
    assert "already" in again[0].stdout
    ticket = agent_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    candidate = agent_stack.desk.store.pending_candidate(ticket.id)
    assert candidate is not None
    assert candidate.text == DANGEROUS
    assert not pending.done()
    notice = "\n".join(await agent_stack.bot_replies(1))
    assert "Security review needed" in notice
    pending.cancel()


async def test_answer_as_agent_without_the_agents_login_fails_before_asking_the_model(
    agent_stack: Stack, issuer: LocalIssuer, tmp_path: Path
) -> None:
    """answer-as-agent with no agent-login: the step fails naming --as, nothing is posted."""
    pending = ask(agent_stack, PROMPT)
    url = await dispatched_url(agent_stack)
    opt_in = answering(agent_stack, issuer)
    opt_in["inputs"]["agent-login"] = ""
    async with running_upstream_stub(text=PLAIN) as model:
        steps = await run_alices_action(agent_stack, model, url, tmp_path / "run", **opt_in)
        assert model.received == []
    assert [step.returncode for step in steps] == [2]
    assert "--as LOGIN" in steps[0].stderr
    assert [c for c in await agent_stack.comments(1) if c.user.login != "ticketproxy-bot"] == []
    pending.cancel()


async def test_answer_as_agent_set_to_anything_but_true_or_false_is_refused(
    agent_stack: Stack, issuer: LocalIssuer, tmp_path: Path
) -> None:
    """A misspelt opt-in ("yes") is an error, never silently the draft or the answer."""
    pending = ask(agent_stack, PROMPT)
    url = await dispatched_url(agent_stack)
    opt_in = answering(agent_stack, issuer)
    opt_in["inputs"]["answer-as-agent"] = "yes"
    async with running_upstream_stub(text=PLAIN) as model:
        steps = await run_alices_action(agent_stack, model, url, tmp_path / "run", **opt_in)
        assert model.received == []
    assert [step.returncode for step in steps] == [2]
    assert "must be true or false" in steps[0].stderr
    pending.cancel()
