"""A proxy that drafts answers with a stub upstream model, and waiting for its draft comment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from embedded_github import RunningSandbox, SandboxConfig
from proxy.drafts import DRAFTER, Drafter
from tests.helpers.stack import Stack, start_stack
from ticketing.store.model import Ticket

DRAFT_KEY = "sk-draft-key-that-must-stay-secret-0123456789"
DRAFT = "I will list the workspace first."


async def start_draft_stack(
    sandbox: RunningSandbox, config: SandboxConfig, tmp: Path, url: str, **overrides: Any
) -> Stack:
    """Start a proxy whose drafts come from the OpenAI-compatible server at ``url``."""
    return await start_stack(sandbox, config, tmp, draft_url=url, draft_key=DRAFT_KEY, **overrides)


def drafter(stack: Stack) -> Drafter:
    """Return the stack's drafter."""
    return stack.runner.app[DRAFTER]


async def drafted(stack: Stack, number: int = 1) -> Ticket:
    """Wait for issue ``number``, its draft, and the draft's comment; return the ticket."""
    await stack.wait_for_issue(number)
    await drafter(stack).settle()
    await stack.desk.followups.drain()
    ticket = stack.desk.store.ticket_for_issue(number)
    assert ticket is not None
    return ticket
