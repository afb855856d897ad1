"""A proxy started for the ``/desk/`` page tests, the page's URLs, and reading its JSON API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.stack import Stack, start_stack

PROMPT = [{"role": "user", "content": "Write the word hello into hello.txt, then finish."}]
# The token of the guarded desk (the ``guarded_stack`` fixture); never to appear in a log.
DESK_TOKEN = "desk-token-in-the-log-0123456789"


async def start_desk_stack(
    sandbox: RunningSandbox, config: SandboxConfig, tmp: Path, *, desk_token: str | None = None
) -> Stack:
    """Start a proxy (the desk page is part of every app), optionally guarded by a token."""
    return await start_stack(sandbox, config, tmp, desk_token=desk_token)


def desk_url(stack: Stack, path: str = "") -> str:
    """Return the URL of ``/desk/<path>`` on the stack's proxy."""
    return stack.base_url.removesuffix("/v1") + "/desk/" + path


async def get_json(url: str, **kwargs: Any) -> tuple[int, Any]:
    """GET ``url`` and return its status and JSON body."""
    async with aiohttp.ClientSession() as session, session.get(url, **kwargs) as response:
        return response.status, await response.json()
