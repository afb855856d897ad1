"""The official ``mcp`` Python SDK client (``mcp_client.py``) run as a process, and the team."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from auth.roles import Act
from tests.helpers.stack import CLIENT_KEY, Stack
from ticketing.store.model import TicketState

CLIENT = Path(__file__).resolve().parent / "mcp_client.py"


def mcp_url(stack: Stack) -> str:
    """Return the stack's streamable HTTP endpoint."""
    return stack.base_url.removesuffix("/v1") + "/mcp"


async def run_sdk_client(
    stack: Stack, calls: list[list[Any]], *, key: str = CLIENT_KEY, target: str | None = None
) -> dict[str, Any]:
    """Run the SDK client through ``calls``; return its report.

    ``target`` is what the client connects to (see ``mcp_client.py``): by default the
    stack's ``/mcp``.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        target or mcp_url(stack),
        key,
        json.dumps(calls),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    report: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    return report


async def answer_when_open(stack: Stack, text: str, *, number: int = 1, after: float = 0.0) -> None:
    """Post a signed answer once issue ``number`` is open, ``after`` seconds later."""
    await stack.wait_for_issue(number)
    await asyncio.sleep(after)
    await stack.answer(number, text)


def approving_call(arguments: dict[str, Any]) -> str:
    """Return the editor's answer that approves a ``request_approval`` with ``arguments``."""
    return f"```tool_call\n{json.dumps({'name': 'run_command', 'arguments': arguments})}\n```"


async def held_for_review(stack: Stack, number: int = 1) -> None:
    """Wait until the ticket of issue ``number`` holds its answer for review."""
    for _ in range(200):
        await stack.settle()
        ticket = stack.desk.store.ticket_for_issue(number)
        if ticket is not None and ticket.state is TicketState.NEEDS_REVIEW:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the approving answer was never held for review")


async def judge(
    stack: Stack, call: str, *, reviewer: str, act: Act, note: str, number: int = 1
) -> None:
    """Post ``reviewer``'s signed approval or rejection of the held answer ``call``."""
    body = stack.signed(note, number=number, signer=reviewer, act=act, judged=call)
    await stack.comment(number, body, author=reviewer)
