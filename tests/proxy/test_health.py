"""``/healthz`` (liveness) and ``/readyz`` (readiness: store answers, GitHub takes the token)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.stack import Stack, start_stack, stop_stack

PROMPT = [{"role": "user", "content": "List the open pull requests."}]


async def get(stack: Stack, path: str) -> tuple[int, Any]:
    """GET ``path`` on the proxy with no client key; return the status and JSON body."""
    url = stack.base_url.removesuffix("/v1") + path
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.json()


async def test_healthz_says_the_process_is_up_without_a_client_key(stack: Stack) -> None:
    """``/healthz`` answers 200 ``ok`` and needs no client key."""
    assert await get(stack, "/healthz") == (200, {"status": "ok"})


async def test_readyz_is_ready_and_counts_pending_tickets_when_all_is_well(stack: Stack) -> None:
    """With the store up and GitHub taking the token, ``/readyz`` is 200 with the pending count."""
    assert await get(stack, "/readyz") == (200, {"status": "ready", "pending_tickets": 0})
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    assert await get(stack, "/readyz") == (200, {"status": "ready", "pending_tickets": 1})
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending


async def test_readyz_is_503_after_github_rejects_the_token(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A revoked token (GitHub's 401) is unready from the start, naming the variable to fix."""
    stack = await start_stack(
        github_sandbox, sandbox_config, tmp_path, github_token="ghp_revoked0000000000000000000000"
    )
    try:
        assert "GitHub refuses ticketproxy's settings" in caplog.text
        assert "TICKETPROXY_GITHUB_TOKEN" in caplog.text
        status, body = await get(stack, "/readyz")
        assert status == 503
        assert body["status"] == "not ready"
        [problem] = body["problems"]
        assert "401" in problem
        assert "TICKETPROXY_GITHUB_TOKEN" in problem
        client = stack.openai()
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
        assert (await get(stack, "/readyz"))[0] == 503
    finally:
        await stop_stack(stack)


async def test_wrong_repository_makes_readyz_503_from_the_start_and_after_its_404s(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A repository the token cannot see is unready at start and stays so after GitHub's 404s."""
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, github_repo="acme/nope")
    try:
        assert "TICKETPROXY_GITHUB_REPO" in caplog.text
        status, body = await get(stack, "/readyz")
        assert status == 503
        [problem] = body["problems"]
        assert "404" in problem
        assert "TICKETPROXY_GITHUB_REPO" in problem
        client = stack.openai()
        for _ in range(2):
            with pytest.raises(openai.InternalServerError):
                await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
            assert (await get(stack, "/readyz"))[0] == 503
    finally:
        await stop_stack(stack)


async def test_repository_with_issues_turned_off_makes_readyz_503_saying_so(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """A repository with Issues turned off cannot hold tickets: unready, naming the fix."""
    [bot] = [user for user in sandbox_config.users if user.login == "ticketproxy-bot"]
    headers = {"Authorization": f"token {bot.token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{github_sandbox.api_url}/repos/acme/agents", headers=headers) as response,
    ):
        repository = await response.json()
    github_sandbox.sandbox.inject_fault(
        method="GET",
        path=r"/repos/acme/agents",
        status=200,
        body={**repository, "has_issues": False},
    )
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path)
    try:
        status, body = await get(stack, "/readyz")
        assert status == 503
        [problem] = body["problems"]
        assert "Issues are turned off on acme/agents" in problem
    finally:
        await stop_stack(stack)


async def test_readyz_stays_ready_while_github_rate_limits(stack: Stack) -> None:
    """A secondary rate limit is back-pressure, not a broken token: the proxy stays ready."""
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues",
        status=403,
        headers={"retry-after": "120"},
        body={"message": "You have exceeded a secondary rate limit."},
    )
    client = stack.openai()
    with pytest.raises(openai.RateLimitError):
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert stack.desk.github.last_failure is not None
    assert (await get(stack, "/readyz"))[0] == 200


async def test_readyz_is_503_when_the_ticket_store_does_not_answer(stack: Stack) -> None:
    """A store that cannot be queried (here: its connection closed) makes the proxy unready."""
    stack.desk.store.close()
    status, body = await get(stack, "/readyz")
    assert status == 503
    assert "pending_tickets" not in body
    [problem] = body["problems"]
    assert problem.startswith("the ticket store does not answer")
