"""Pytest fixtures for the embedded GitHub server, the sandbox (a ``pytest_plugins`` entry).

- ``sandbox_config``: ``ticketproxy-bot`` (id 1, admin), ``alice`` (1001, write),
  ``bob`` (1002, write), ``mallory`` (1003, read); repo ``acme/agents``; random tokens.
- ``github_sandbox``: a running sandbox on 127.0.0.1 with the real clock, stopped after.
- ``sandbox_clock``: a ``ManualClock`` that tests move by hand.
- ``start_github_sandbox``: start more sandboxes with options (clock, limits, db_path).

Every sandbox started here checks each JSON answer against GitHub's OpenAPI schemas
(``tests/helpers/github_openapi``); a mismatch fails the test at teardown. Pass
``check_contract=False`` to ``start_github_sandbox`` for a test that injects off-spec bodies.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from embedded_github import RunningSandbox, Sandbox, SandboxConfig, SandboxUser, start_sandbox
from tests.helpers.github_openapi.contract import ContractChecker

REPO = "acme/agents"


class ManualClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        """Start at ``start`` (default 2026-01-01T00:00:00Z)."""
        self.now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        """Return the current time."""
        return self.now

    def advance(self, seconds: float) -> datetime:
        """Move time forward and return the new time."""
        self.now += timedelta(seconds=seconds)
        return self.now


def _token() -> str:
    # Shaped like a classic personal access token, random per test run.
    return "ghp_" + secrets.token_urlsafe(27)[:36]


@pytest.fixture
def sandbox_config() -> SandboxConfig:
    """Return the standard sandbox users and repository, with fresh random tokens."""
    return SandboxConfig(
        users=(
            SandboxUser("ticketproxy-bot", 1, _token(), "admin", "ticketproxy bot"),
            SandboxUser("alice", 1001, _token(), "write", "Alice Editor"),
            SandboxUser("bob", 1002, _token(), "write", "Bob Reviewer"),
            SandboxUser("mallory", 1003, _token(), "read", "Mallory Outsider"),
        ),
        repos=(REPO,),
    )


@pytest.fixture
def sandbox_clock() -> ManualClock:
    """Return a manual clock starting at 2026-01-01T00:00:00Z."""
    return ManualClock()


@pytest.fixture
async def start_github_sandbox(
    sandbox_config: SandboxConfig,
) -> AsyncIterator[Callable[..., Awaitable[RunningSandbox]]]:
    """Return a factory that starts sandboxes (Sandbox keyword options), all stopped after."""
    running: list[RunningSandbox] = []
    checkers: list[ContractChecker] = []

    async def start(
        config: SandboxConfig | None = None, *, check_contract: bool = True, **options: Any
    ) -> RunningSandbox:
        sandbox = Sandbox(config or sandbox_config, **options)
        middlewares = []
        if check_contract:
            checker = ContractChecker()
            checkers.append(checker)
            middlewares.append(checker.middleware)
        started = await start_sandbox(sandbox, middlewares=middlewares)
        running.append(started)
        return started

    yield start
    for started in running:
        await started.stop()
        started.sandbox.close()
    failures = [failure for checker in checkers for failure in checker.failures]
    if failures:
        pytest.fail("sandbox answers off GitHub's schema:\n" + "\n".join(failures))


@pytest.fixture
async def github_sandbox(
    start_github_sandbox: Callable[..., Awaitable[RunningSandbox]],
) -> RunningSandbox:
    """Return a running sandbox with the standard config and the real clock."""
    return await start_github_sandbox()
