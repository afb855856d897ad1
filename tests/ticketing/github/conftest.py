"""Fixtures of the GitHub adapter's tests: the bot's client on the embedded GitHub."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.sandbox_issues import no_sleep
from ticketing.github.client import GitHubClient

REPO = "acme/agents"


@pytest.fixture
def bot_token(sandbox_config: SandboxConfig) -> str:
    """Return the bot's token."""
    return next(u.token for u in sandbox_config.users if u.login == "ticketproxy-bot")


@pytest.fixture
async def client(github_sandbox: RunningSandbox, bot_token: str) -> AsyncIterator[GitHubClient]:
    """Yield a GitHub client acting as the bot, closed after the test."""
    running = GitHubClient(
        api_url=github_sandbox.api_url, token=bot_token, repo=REPO, sleep=no_sleep
    )
    yield running
    await running.close()
