"""Personal agents end to end: a routed ticket dispatches alice's agent, which drafts; alice signs.

The real sandbox GitHub (hosting alice's fork and its workflow), a real ticketproxy, the
official ``openai`` client as the agent, an OpenAI-compatible stub as alice's model, and the
composite action's own ``run`` steps executed as a runner would (tests/helpers/composite_action.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from auth.keys import write_signing_key
from embedded_github import RunningSandbox, SandboxConfig
from proxy.agent_route_settings import VARIABLE, read_agent_routes
from proxy.cli import main
from proxy.drafts import DRAFTER
from tests.helpers.github_openapi.validate import spec
from tests.helpers.personal_agent import (
    FORK,
    MODEL_KEY,
    ROUTES,
    host_alices_workflow,
    run_alices_action,
)
from tests.helpers.personal_agent import ask as ask_with
from tests.helpers.stack import REPO, Stack, start_stack, stop_stack
from tests.helpers.upstream_stub import UpstreamStub, running_upstream_stub
from ticketing.github.workflow_dispatch import MAX_INPUTS, dispatch_path
from ticketing.github.write_kinds import DISPATCH_REFUSED_ATTEMPTS
from ticketing.render.drafts import parse_draft_comment
from ticketing.store.model import DraftState

DISPATCH_PATH = r"/repos/alice/ticketproxy-agent/actions/workflows/agent\.yml/dispatches"
AGENT_DRAFT = "Run `ls` in the workspace first; nothing else is needed."
PROMPT = [{"role": "user", "content": "List the files in the workspace."}]


@pytest.fixture
async def agent_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a ticketproxy routing gpt-4-turbo tickets to alice's agent (README's example)."""
    routes = read_agent_routes({VARIABLE: ROUTES})
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, agent_routes=routes, max_wait=3600.0
    )
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def alices_model() -> AsyncIterator[UpstreamStub]:
    """Yield alice's OpenAI-compatible model, answering the agent's draft."""
    async with running_upstream_stub(text=AGENT_DRAFT) as stub:
        yield stub


def ask(stack: Stack) -> asyncio.Task[Any]:
    """Start a chat completion for gpt-4-turbo (routed to alice's agent) in the background."""
    return ask_with(stack, PROMPT)


async def sent_until_done(stack: Stack) -> None:
    """Send every queued write, moving the clock past each back-off (no real waiting)."""
    for _ in range(20):
        if stack.desk.followups.depth == 0:
            return
        stack.clock.offset += timedelta(seconds=120)
        await stack.desk.followups.send_due()
        await asyncio.sleep(0.01)
    raise AssertionError("the write queue never emptied")


async def test_a_routed_ticket_is_drafted_by_alices_agent_and_released_when_alice_signs(
    agent_stack: Stack, alices_model: UpstreamStub, tmp_path: Path
) -> None:
    """Dispatch recorded, "drafting by alice's agent" shown, the action drafts, alice signs."""
    host_alices_workflow(agent_stack)
    pending = ask(agent_stack)
    await agent_stack.wait_for_issue(1)
    await agent_stack.desk.followups.drain()
    ticket = agent_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    [dispatch] = agent_stack.sandbox.sandbox.dispatches
    assert dispatch.repo == FORK
    assert dispatch.ref == "main"
    assert dispatch.login == "ticketproxy-bot"
    assert dispatch.inputs == {"ticket_url": ticket.issue_url}
    [notice] = await agent_stack.bot_replies(1)
    assert "Drafting by alice\\'s agent" in notice
    draft = agent_stack.desk.store.draft_for(ticket.id)
    assert draft is not None
    assert draft.state is DraftState.DISPATCHED

    url = dispatch.inputs["ticket_url"]
    first = await run_alices_action(agent_stack, alices_model, url, tmp_path / "first")
    assert [step.returncode for step in first] == [0], first
    assert "draft by alice's agent posted" in first[0].stdout
    # The same dispatch delivered twice: the second run posts no second draft.
    again = await run_alices_action(agent_stack, alices_model, url, tmp_path / "again")
    assert [step.returncode for step in again] == [0], again
    assert "already" in again[0].stdout
    [asked] = alices_model.received
    assert asked.headers["Authorization"] == f"Bearer {MODEL_KEY}"
    assert "Prefer read-only commands" in asked.body["messages"][0]["content"]
    drafts = [c for c in await agent_stack.comments(1) if parse_draft_comment(c.body) is not None]
    [comment] = drafts
    assert comment.user.login == "alice"
    assert "drafted by **alice\\'s agent** with model **alices\\-model**" in comment.body
    parsed = parse_draft_comment(comment.body)
    assert parsed is not None
    assert (parsed.text, parsed.ticket) == (AGENT_DRAFT, f"{REPO}#1")
    assert MODEL_KEY not in comment.body
    assert not pending.done(), "a draft is never an answer"

    key_file = tmp_path / "alice.key.json"
    write_signing_key(key_file, agent_stack.keys["alice"])
    argv = ["answer", ticket.issue_url or "", "--draft", "--draft-by", "alice"]
    argv += ["--key", str(key_file)]
    code = await asyncio.to_thread(main, argv, {"GITHUB_TOKEN": agent_stack.token("alice")})
    assert code == 0
    completion = await asyncio.wait_for(pending, 15)
    assert completion.choices[0].message.content == AGENT_DRAFT


async def test_a_dispatch_refused_as_an_unknown_workflow_is_retried_then_given_up_visibly(
    agent_stack: Stack,
) -> None:
    """A 404 (no such workflow in the fork) is tried three times, then the ticket says so."""
    pending = ask(agent_stack)
    await agent_stack.wait_for_issue(1)
    await sent_until_done(agent_stack)
    tries = [
        r
        for r in agent_stack.sandbox.sandbox.requests
        if r.method == "POST" and r.path.endswith("/dispatches")
    ]
    assert [r.status for r in tries] == [404] * DISPATCH_REFUSED_ATTEMPTS
    replies = await agent_stack.bot_replies(1)
    assert any("could not be started" in body and "alice\\'s agent" in body for body in replies)
    assert agent_stack.sandbox.sandbox.dispatches == []
    assert not pending.done()
    pending.cancel()


async def test_github_down_during_the_dispatch_is_retried_until_it_is_sent(
    agent_stack: Stack,
) -> None:
    """A 502 from GitHub pauses the queue; the dispatch is sent once GitHub is back."""
    host_alices_workflow(agent_stack)
    agent_stack.sandbox.sandbox.inject_fault(method="POST", path=DISPATCH_PATH, status=502, times=2)
    pending = ask(agent_stack)
    await agent_stack.wait_for_issue(1)
    await sent_until_done(agent_stack)
    tries = [
        r.status for r in agent_stack.sandbox.sandbox.requests if r.path.endswith("/dispatches")
    ]
    assert tries == [502, 502, 204]
    assert len(agent_stack.sandbox.sandbox.dispatches) == 1
    replies = await agent_stack.bot_replies(1)
    assert not any("could not be started" in body for body in replies)
    pending.cancel()


async def test_a_ticket_for_another_model_dispatches_nothing(agent_stack: Stack) -> None:
    """Only the routed model's tickets go to alice's agent."""
    host_alices_workflow(agent_stack)
    create = agent_stack.openai().chat.completions.create(model="gpt-4o", messages=PROMPT)
    pending = asyncio.create_task(create)
    await agent_stack.wait_for_issue(1)
    await agent_stack.desk.followups.drain()
    assert agent_stack.sandbox.sandbox.dispatches == []
    assert await agent_stack.bot_replies(1) == []
    pending.cancel()


def test_a_routes_setting_that_does_not_parse_stops_serve_and_tells_the_operator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``serve`` with a malformed TICKETPROXY_AGENT_ROUTES exits 2 naming the variable."""
    code = main(["serve"], {VARIABLE: "gpt-4-turbo"})
    assert code == 2
    err = capsys.readouterr().err
    assert VARIABLE in err
    assert "WHAT=TARGET" in err


def test_ticketproxys_dispatch_body_matches_githubs_description() -> None:
    """The body ticketproxy sends has ``ref`` and string ``inputs`` within GitHub's limit."""
    path = "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"
    schema = spec()["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["ref"]
    assert schema["properties"]["inputs"]["maxProperties"] == MAX_INPUTS
    assert dispatch_path(FORK, "agent.yml") == (
        "/repos/alice/ticketproxy-agent/actions/workflows/agent.yml/dispatches"
    )


async def test_a_routed_ticket_gets_no_draft_from_the_upstream_drafter(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    alices_model: UpstreamStub,
) -> None:
    """With TICKETPROXY_DRAFT_URL on too, the agent's draft is the routed ticket's one draft."""
    routes = read_agent_routes({VARIABLE: ROUTES})
    stack = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        agent_routes=routes,
        draft_url=alices_model.base_url,
    )
    try:
        host_alices_workflow(stack)
        pending = ask(stack)
        await stack.wait_for_issue(1)
        await stack.desk.followups.drain()
        await stack.runner.app[DRAFTER].settle()
        assert alices_model.received == []
        assert len(stack.sandbox.sandbox.dispatches) == 1
        pending.cancel()
    finally:
        await stop_stack(stack)


def test_draft_by_without_draft_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--draft-by`` only says whose draft ``--draft`` signs; alone it is refused."""
    url = "http://127.0.0.1:9/acme/agents/issues/1"
    argv = ["answer", url, "--draft-by", "alice", "--key", str(tmp_path / "k.json")]
    assert main(argv, {"GITHUB_TOKEN": "t"}) == 2
    assert "give --draft too" in capsys.readouterr().err


async def test_an_agent_whose_model_fails_posts_nothing_and_leaks_no_key(
    agent_stack: Stack, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 500 from the editor's model fails the step (exit 2) naming the model, never its key."""
    host_alices_workflow(agent_stack)
    pending = ask(agent_stack)
    await agent_stack.wait_for_issue(1)
    ticket = agent_stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    async with running_upstream_stub(status=500) as broken:
        argv = ["agent-draft", ticket.issue_url or "", "--model-url", broken.base_url]
        argv += ["--model", "m", "--editor", "alice", "--prompt-file", "/nonexistent/agent.md"]
        env = {"GITHUB_TOKEN": agent_stack.token("alice"), "TICKETPROXY_AGENT_MODEL_KEY": MODEL_KEY}
        code = await asyncio.to_thread(main, argv, env)
    captured = capsys.readouterr()
    assert code == 2
    assert "answered HTTP 500" in captured.err
    assert MODEL_KEY not in captured.err + captured.out
    assert not [c for c in await agent_stack.comments(1) if parse_draft_comment(c.body)]
    pending.cancel()


async def test_a_ticket_labelled_in_its_metadata_dispatches_the_label_routes_agent(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """``label:billing``: a request whose metadata carries billing goes to alice's agent."""
    routes = read_agent_routes({VARIABLE: "label:billing=alice/ticketproxy-agent/agent.yml"})
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, agent_routes=routes)
    try:
        host_alices_workflow(stack)
        client = stack.openai()
        plain = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
        await stack.wait_for_issue(1)
        await stack.desk.followups.drain()
        assert stack.sandbox.sandbox.dispatches == []
        labelled = asyncio.create_task(
            client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": "Why was I charged twice?"}],
                metadata={"ticketproxy_labels": "urgent,billing"},
            )
        )
        await stack.wait_for_issue(2)
        await stack.desk.followups.drain()
        [dispatch] = stack.sandbox.sandbox.dispatches
        ticket = stack.desk.store.ticket_for_issue(2)
        assert ticket is not None
        assert dispatch.inputs == {"ticket_url": ticket.issue_url}
        plain.cancel()
        labelled.cancel()
    finally:
        await stop_stack(stack)
