"""The node ``@anthropic-ai/sdk``, run as a real process against ``/v1/messages``."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.anthropic_clients import tool_call
from tests.helpers.node_clients import run_script, while_running
from tests.helpers.stack import REPO, Stack

pytestmark = pytest.mark.slow


def start(stack: Stack, scenario: str) -> asyncio.Task[dict[str, object]]:
    """Start ``tests/js/anthropic_node.mjs`` for ``scenario`` against the proxy's root."""
    root = stack.base_url.removesuffix("/v1")
    return asyncio.create_task(
        run_script(stack, "anthropic_node.mjs", scenario, "@anthropic-ai/sdk", base_url=root)
    )


async def test_node_anthropic_tool_use_and_its_result_are_two_steps_of_one_issue(
    stack: Stack,
) -> None:
    """messages.create gets a tool_use block; its tool_result is answered as step 2."""
    run = start(stack, "messages-tool")
    issue = await while_running(run, stack.wait_for_issue(1))
    assert "list_folder" in issue.body
    await stack.answer(1, "Looking.\n\n" + tool_call("list_folder", {"folder": "."}))
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result == {
        "stop_reason": "tool_use",
        "uses": [{"name": "list_folder", "input": {"folder": "."}}],
        "final": "Only README.md.",
        "final_stop_reason": "end_turn",
    }
    assert [i.number for i in await stack.issues()] == [1]


async def test_node_anthropic_stream_helper_assembles_the_signed_answer(stack: Stack) -> None:
    """messages.stream's events arrive in Anthropic's order and its text is the answer."""
    run = start(stack, "messages-stream")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "Hello there.")
    result = await asyncio.wait_for(run, 30)
    assert result["text"] == "Hello there."
    assert result["stop_reason"] == "end_turn"
    assert str(result["id"]).startswith("msg_")
    assert result["types"][0] == "message_start"
    assert result["types"][-2:] == ["message_delta", "message_stop"]
    assert "content_block_delta" in result["types"]
