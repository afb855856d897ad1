"""Fixtures shared by the proxy tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.agent_route_settings import VARIABLE, read_agent_routes
from tests.helpers.desk_page import DESK_TOKEN, start_desk_stack
from tests.helpers.oidc_issuer import LocalIssuer, list_alices_agent, running_issuer
from tests.helpers.personal_agent import ROUTES, host_alices_workflow
from tests.helpers.stack import Stack, start_stack, stop_stack


@pytest.fixture
async def desk_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a running ticketproxy with the desk page, open to loopback clients."""
    running = await start_desk_stack(github_sandbox, sandbox_config, tmp_path)
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def guarded_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a running ticketproxy whose desk needs ``DESK_TOKEN``."""
    running = await start_desk_stack(
        github_sandbox, sandbox_config, tmp_path, desk_token=DESK_TOKEN
    )
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def routed_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield ticketproxy routing gpt-4-turbo tickets to alice's agent (README's example)."""
    routes = read_agent_routes({VARIABLE: ROUTES})
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, agent_routes=routes, max_wait=3600.0
    )
    host_alices_workflow(running)
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.fixture
async def issuer() -> AsyncIterator[LocalIssuer]:
    """Run the local OIDC issuer (its own RSA key, JWKS and token endpoint)."""
    async with running_issuer() as running:
        yield running


@pytest.fixture
async def agent_stack(
    github_sandbox: RunningSandbox,
    sandbox_config: SandboxConfig,
    tmp_path: Path,
    issuer: LocalIssuer,
) -> AsyncIterator[Stack]:
    """Yield ticketproxy trusting the local issuer, with alice's agent workflow listed.

    The module overrides ``sandbox_config`` with ``with_agent_account``, for the agent's
    account to post its answers.
    """
    running = await start_stack(github_sandbox, sandbox_config, tmp_path, oidc_issuer=issuer.url)
    list_alices_agent(running.settings.keyring_path)
    try:
        yield running
    finally:
        await stop_stack(running)
