"""Two in-process replicas on one sandbox, and what the replica tests share."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from embedded_github import RunningSandbox, SandboxConfig
from proxy.wire.requests import parse_chat_request
from tests.helpers.stack import Stack, start_stack

SECRET = "webhook-secret-0123456789abcdef"
PROMPT: Any = [{"role": "user", "content": "Which files are in the workspace?"}]


Host = tuple[Path, dict[str, Any]]


async def start_replicas(
    sandbox: RunningSandbox, config: SandboxConfig, hosts: list[Host], **overrides: Any
) -> list[Stack]:
    """Start a replica on each host, all with the first one's signing keys and keyring."""
    (first_dir, first_store), (second_dir, second_store) = hosts
    first = await start_stack(sandbox, config, first_dir, **first_store, **overrides)
    second = await start_stack(
        sandbox,
        config,
        second_dir,
        keys=first.keys,
        keyring_path=first.settings.keyring_path,
        **second_store,
        **overrides,
    )
    return [first, second]


async def until(condition: Any, within: float = 10.0) -> None:
    """Wait until ``condition()`` is true, failing after ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition never became true")
        await asyncio.sleep(0.02)


async def open_ticket(stack: Stack) -> None:
    """Open a ticket through ``stack``'s desk, with no client left waiting on it.

    A client still waiting would hold the replica's shutdown until its ticket's deadline.
    """
    request = parse_chat_request(
        {"model": "gpt-4o", "messages": PROMPT}, client="test", models=frozenset({"gpt-4o"})
    )
    await stack.desk.submit(request, request_id="req-replicas")
    await stack.wait_for_issue(1)
