"""Waiting for an agent run's tickets and steps, and reading what an answer was signed for."""

from __future__ import annotations

import asyncio
from typing import Any

import jwt

from auth.comment import split_signed_comment
from tests.helpers.stack import Stack


async def pending_issue(stack: Stack, within: float = 10.0) -> int:
    """Wait until a ticket is open on GitHub and return its issue number."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        for ticket in stack.desk.store.pending_tickets():
            if ticket.issue_number is not None:
                return ticket.issue_number
        await asyncio.sleep(0.02)
    raise AssertionError("no ticket was opened")


async def wait_for_step(stack: Stack, step: int, within: float = 10.0) -> None:
    """Wait until step ``step`` of a run is pending on its issue."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        for ticket in stack.desk.store.pending_tickets():
            if ticket.step == step and ticket.issue_number is not None:
                return
        await asyncio.sleep(0.02)
    raise AssertionError(f"step {step} was never opened")


def signed_claims(body: str) -> dict[str, Any]:
    """Return the claims of a signed comment's token, without checking its signature."""
    _, token = split_signed_comment(body)
    assert token is not None
    return dict(jwt.decode(token, options={"verify_signature": False}))
