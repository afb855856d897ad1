"""Faults a test injects: errors before or after the real handler, and dropped connections."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from github import GithubException

from embedded_github import RunningSandbox, Sandbox, SandboxConfig, start_sandbox
from tests.helpers.embedded_github_clients import auth, github_client, user
from tests.helpers.github_openapi.contract import ContractChecker

ISSUES = "/repos/acme/agents/issues"


async def test_fault_after_handling_creates_the_issue_yet_answers_502(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``after_handling`` runs the real create, then answers 502: the issue exists anyway."""
    bot = user(sandbox_config, "ticketproxy-bot")
    github_sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=502, after_handling=True
    )
    async with aiohttp.ClientSession() as http:
        async with http.post(
            github_sandbox.api_url + ISSUES, json={"title": "twice?"}, headers=auth(bot)
        ) as failed:
            failed_body = await failed.json()
        async with http.get(github_sandbox.api_url + ISSUES, headers=auth(bot)) as listed:
            titles = [issue["title"] for issue in await listed.json()]
    assert failed.status == 502
    assert failed_body["message"] == "Bad Gateway"
    assert titles == ["twice?"]
    assert [r.status for r in github_sandbox.sandbox.requests] == [502, 200]


async def test_fault_before_handling_changes_nothing_and_is_used_up(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A plain fault answers instead of the handler, ``times`` times, with the given headers."""
    bot = user(sandbox_config, "ticketproxy-bot")
    github_sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/[^/]+/[^/]+/issues",
        status=429,
        times=2,
        headers={"retry-after": "7"},
        body={"message": "slow down"},
    )
    statuses = []
    async with aiohttp.ClientSession() as http:
        for _ in range(3):
            async with http.post(
                github_sandbox.api_url + ISSUES, json={"title": "t"}, headers=auth(bot)
            ) as answer:
                statuses.append((answer.status, answer.headers.get("retry-after")))
        async with http.get(github_sandbox.api_url + ISSUES, headers=auth(bot)) as listed:
            count = len(await listed.json())
    assert statuses == [(429, "7"), (429, "7"), (201, None)]
    assert count == 1


async def test_dropped_connection_reaches_pygithub_as_a_connection_error(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``drop_connection`` closes the line without an answer, as an unreachable GitHub would."""
    bot = user(sandbox_config, "ticketproxy-bot")
    github_sandbox.sandbox.inject_fault(
        method="GET", path=r"/repos/acme/agents", status=0, drop_connection=True
    )

    def scenario() -> str:
        with github_client(github_sandbox, bot) as gh:
            try:
                gh.get_repo("acme/agents")
            except GithubException as error:
                return f"github {error.status}"
            except Exception as error:
                return type(error).__name__
            return "answered"

    outcome = await asyncio.to_thread(scenario)
    assert outcome == "ConnectionError"
    assert github_sandbox.sandbox.requests[-1].status == 0


async def test_pygithub_maps_an_injected_server_error_to_githubexception(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """With retries off, PyGithub surfaces an injected 503 as ``GithubException(503)``."""
    bot = user(sandbox_config, "ticketproxy-bot")
    github_sandbox.sandbox.inject_fault(method="*", path=r"/repos/acme/agents", status=503)

    def scenario() -> None:
        with github_client(github_sandbox, bot) as gh:
            gh.get_repo("acme/agents")

    with pytest.raises(GithubException) as raised:
        await asyncio.to_thread(scenario)
    assert raised.value.status == 503


async def test_contract_checker_catches_an_answer_off_githubs_schema(
    sandbox_config: SandboxConfig,
) -> None:
    """The schema middleware is not vacuous: a 201 issue without its fields is reported."""
    sandbox = Sandbox(sandbox_config)
    checker = ContractChecker()
    running = await start_sandbox(sandbox, middlewares=[checker.middleware])
    bot = user(sandbox_config, "ticketproxy-bot")
    sandbox.inject_fault(method="POST", path=ISSUES, status=201, body={"id": "not-an-int"})
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.post(running.api_url + ISSUES, json={"title": "t"}, headers=auth(bot)) as answer,
        ):
            assert answer.status == 201
    finally:
        await running.stop()
        sandbox.close()
    assert len(checker.failures) == 1
    assert "POST /api/v3/repos/acme/agents/issues 201" in checker.failures[0]


async def wait_held(sandbox: Sandbox, count: int) -> None:
    """Wait until ``count`` requests are held by a ``hold`` fault."""
    for _ in range(500):
        if sandbox.held_requests == count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{sandbox.held_requests} requests held, not {count}")


async def test_hold_after_handling_creates_the_issue_and_withholds_the_answer_until_released(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """``hold`` with ``after_handling``: the issue exists while its creator still waits."""
    sandbox = github_sandbox.sandbox
    bot = user(sandbox_config, "ticketproxy-bot")
    sandbox.inject_fault(method="POST", path=ISSUES, status=None, after_handling=True, hold=True)
    async with aiohttp.ClientSession() as http:
        create = asyncio.create_task(
            http.post(github_sandbox.api_url + ISSUES, json={"title": "held"}, headers=auth(bot))
        )
        await wait_held(sandbox, 1)
        async with http.get(github_sandbox.api_url + ISSUES, headers=auth(bot)) as listed:
            titles = [issue["title"] for issue in await listed.json()]
        assert not create.done()
        sandbox.release_held()
        async with await create as created:
            assert created.status == 201
            assert (await created.json())["title"] == "held"
    assert titles == ["held"]
    assert sandbox.held_requests == 0


async def test_hold_before_handling_changes_nothing_until_released(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig
) -> None:
    """A plain ``hold`` is a hung GitHub: nothing is created until the test lets it go."""
    sandbox = github_sandbox.sandbox
    bot = user(sandbox_config, "ticketproxy-bot")
    sandbox.inject_fault(method="POST", path=ISSUES, status=None, hold=True)
    async with aiohttp.ClientSession() as http:
        create = asyncio.create_task(
            http.post(github_sandbox.api_url + ISSUES, json={"title": "hung"}, headers=auth(bot))
        )
        await wait_held(sandbox, 1)
        async with http.get(github_sandbox.api_url + ISSUES, headers=auth(bot)) as listed:
            assert await listed.json() == []
        sandbox.clear_faults()
        async with await create as created:
            assert created.status == 201
    assert sandbox.held_requests == 0
