"""ticketproxy authenticated as a GitHub App installation, against the sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.errors import ConfigError
from proxy.settings import Settings
from tests.helpers.github_app import APP_ID, INSTALLATION_ID, desk_app, private_pem
from tests.helpers.stack import REPO, Clock, Stack, start_stack, stop_stack

PROMPT = [{"role": "user", "content": "Say hello."}]
BOT = "ticket-desk[bot]"
APP_ENV = {
    "TICKETPROXY_GITHUB_REPO": REPO,
    "TICKETPROXY_GITHUB_APP_ID": str(APP_ID),
    "TICKETPROXY_GITHUB_APP_INSTALLATION_ID": str(INSTALLATION_ID),
}


async def start_app_stack(
    sandbox: RunningSandbox, config: SandboxConfig, tmp: Path, clock: Clock, *, key: str = "app"
) -> Stack:
    """Start a proxy that authenticates as the App (no bot login given: it asks GitHub)."""
    environ = {**APP_ENV, "TICKETPROXY_GITHUB_APP_PRIVATE_KEY": private_pem(key)}
    app = Settings.from_env(environ)
    return await start_stack(
        sandbox,
        config,
        tmp,
        clock=clock,
        bot_login=None,
        github_token=None,
        github_app_id=app.github_app_id,
        github_app_private_key=app.github_app_private_key,
        github_app_installation_id=app.github_app_installation_id,
    )


@pytest.fixture
def clock() -> Clock:
    """Return the one clock the sandbox and the proxy share, so tests can move both."""
    return Clock()


@pytest.fixture
async def app_sandbox(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
    sandbox_config: SandboxConfig,
    clock: Clock,
) -> RunningSandbox:
    """Return a sandbox with the ``ticket-desk`` App installed, on the shared clock."""
    return await start_github_sandbox(replace(sandbox_config, apps=(desk_app(),)), clock=clock)


@pytest.fixture
async def app_stack(
    app_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path, clock: Clock
) -> AsyncIterator[Stack]:
    """Yield a ticketproxy authenticated as the App in front of the sandbox."""
    config = replace(sandbox_config, apps=(desk_app(),))
    running = await start_app_stack(app_sandbox, config, tmp_path, clock)
    try:
        yield running
    finally:
        await stop_stack(running)


def token_grants(sandbox: RunningSandbox) -> list[int]:
    """Return the statuses of the installation-token requests the sandbox answered."""
    path = f"/app/installations/{INSTALLATION_ID}/access_tokens"
    return [r.status for r in sandbox.sandbox.requests if r.method == "POST" and r.path == path]


async def round_trip(stack: Stack, number: int, text: str) -> Any:
    """Send a request, answer its issue ``number`` with a signed ``text``; return the issue."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    issue = await stack.wait_for_issue(number)
    await stack.answer(number, text)
    completion = await asyncio.wait_for(pending, 10)
    assert completion.choices[0].message.content == text
    return issue


async def test_request_is_answered_end_to_end_with_the_proxy_acting_as_an_app(
    app_stack: Stack,
) -> None:
    """The issue is opened by the App's bot, and alice's signed answer is the completion."""
    issue = await round_trip(app_stack, 1, "Hello from a human.")
    assert issue.user.login == BOT
    assert app_stack.desk.bot_login == BOT
    assert token_grants(app_stack.sandbox) == [201]
    await app_stack.desk.followups.drain()
    comments = await app_stack.comments(1)
    bot_comments = [c for c in comments if c.user.login == BOT]
    # The bot's own notices are never taken for answers, by login or by reply marker.
    assert bot_comments
    assert sum(app_stack.desk.answers_rejected.values()) == 0
    closed = await app_stack.wait_for_issue(1)
    assert closed.state == "closed"


async def test_installation_token_is_renewed_after_it_expires(
    app_stack: Stack, clock: Clock
) -> None:
    """After the sandbox clock passes the token's hour, the proxy buys a new one and carries on."""
    await round_trip(app_stack, 1, "First answer.")
    clock.offset += timedelta(hours=1, minutes=1)
    await round_trip(app_stack, 2, "Second answer, after the token expired.")
    assert token_grants(app_stack.sandbox) == [201, 201]
    refused = [r for r in app_stack.sandbox.sandbox.requests if r.status == 401]
    assert refused, "the expired token was never refused, so no refresh was exercised"
    issue = await app_stack.wait_for_issue(2)
    assert issue.user.login == BOT


async def test_wrong_app_key_makes_readyz_name_the_variable(
    app_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path, clock: Clock
) -> None:
    """A valid RSA key that is not the App's fails readiness naming the private-key setting."""
    config = replace(sandbox_config, apps=(desk_app(),))
    stack = await start_app_stack(app_sandbox, config, tmp_path, clock, key="stranger")
    try:
        assert stack.desk.bot_login is None
        async with (
            aiohttp.ClientSession() as session,
            session.get(stack.base_url.removesuffix("/v1") + "/readyz") as response,
        ):
            status, body = response.status, await response.json()
        assert status == 503
        assert "TICKETPROXY_GITHUB_APP_PRIVATE_KEY" in " ".join(body["problems"])
        assert "could not be decoded" in " ".join(body["problems"])
        assert 201 not in token_grants(app_sandbox)
    finally:
        await stop_stack(stack)


def test_app_settings_are_read_and_the_key_stays_out_of_repr() -> None:
    """All three App variables configure the App, leave embedded mode, and hide the key."""
    settings = Settings.from_env(
        {**APP_ENV, "TICKETPROXY_GITHUB_APP_PRIVATE_KEY": private_pem("app")}
    )
    assert settings.github_app_id == str(APP_ID)
    assert settings.github_app_installation_id == INSTALLATION_ID
    assert not settings.embedded
    assert "PRIVATE KEY" not in repr(settings)


def test_app_key_can_come_from_a_file(tmp_path: Path) -> None:
    """``TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE`` names the .pem file instead of the text."""
    pem = tmp_path / "app.pem"
    pem.write_text(private_pem("app"), encoding="utf-8")
    settings = Settings.from_env({**APP_ENV, "TICKETPROXY_GITHUB_APP_PRIVATE_KEY_FILE": str(pem)})
    assert settings.github_app_private_key == private_pem("app").strip() + "\n"


def test_partial_app_settings_name_what_is_missing() -> None:
    """An App id and key without an installation id is refused, naming the missing one."""
    environ = dict(APP_ENV, TICKETPROXY_GITHUB_APP_PRIVATE_KEY=private_pem("app"))
    del environ["TICKETPROXY_GITHUB_APP_INSTALLATION_ID"]
    with pytest.raises(ConfigError, match="TICKETPROXY_GITHUB_APP_INSTALLATION_ID not set"):
        Settings.from_env(environ)


def test_token_and_app_together_are_refused() -> None:
    """Setting a token and an App at once asks the operator to pick one."""
    environ = {
        **APP_ENV,
        "TICKETPROXY_GITHUB_APP_PRIVATE_KEY": private_pem("app"),
        "TICKETPROXY_GITHUB_TOKEN": "ghp_example",
    }
    with pytest.raises(ConfigError, match="pick one"):
        Settings.from_env(environ)


def test_app_key_that_is_not_a_pem_private_key_is_refused_by_name() -> None:
    """Garbage in the private-key variable fails at start, naming the variable, not echoing it."""
    environ = {**APP_ENV, "TICKETPROXY_GITHUB_APP_PRIVATE_KEY": "not-a-key-s3cret"}
    with pytest.raises(ConfigError, match="TICKETPROXY_GITHUB_APP_PRIVATE_KEY") as caught:
        Settings.from_env(environ)
    assert "s3cret" not in str(caught.value)


async def test_calls_refused_with_the_same_token_reconnect_once(app_stack: Stack) -> None:
    """Calls GitHub refuses (401) with one token lead to one new connection, not one each."""
    await round_trip(app_stack, 1, "First answer.")
    github = app_stack.desk.github
    before = github.reconnects
    app_stack.sandbox.sandbox.inject_fault(
        method="GET",
        path=r"/repos/acme/agents/issues",
        status=401,
        times=4,
        body={"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
    )
    found = await asyncio.gather(
        *(github.find_issue_by_marker(f"<!-- no such marker {n} -->", scan=1) for n in range(4))
    )
    assert found == [None] * 4
    assert github.reconnects - before == 1
