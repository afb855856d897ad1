"""The TypeScript MCP SDK, as a Node process, waiting out a slow answer on progress alone."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.node_clients import run_script, while_running
from tests.helpers.stack import Stack

pytestmark = pytest.mark.slow

ANSWER_AFTER = 12.0


async def test_typescript_sdk_with_5s_timeout_gets_an_answer_signed_12s_later(
    stack: Stack,
) -> None:
    """A 5 s request timeout reset by progress outlasts a signed answer posted after 12 s."""
    run = asyncio.create_task(
        run_script(stack, "mcp_node.mjs", "ask-long", "@modelcontextprotocol/sdk")
    )
    await while_running(run, stack.wait_for_issue(1))
    await asyncio.sleep(ANSWER_AFTER)
    await stack.answer(1, "eu-west-1, as always.")
    report = await run
    assert report["tools"] == ["ask_team", "request_approval"]
    assert report["waited"] >= ANSWER_AFTER
    assert report["progress"] > 0
    result = report["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["answer"] == "eu-west-1, as always."
    assert result["structuredContent"]["signer"] == "alice"
