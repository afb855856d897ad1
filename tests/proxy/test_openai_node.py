"""The node ``openai`` package, run as a real process: chat completions and the Responses API."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.node_clients import run_script, while_running
from tests.helpers.stack import REPO, Stack

pytestmark = pytest.mark.slow
TOOL_CALL = (
    "```tool_call\n" + json.dumps({"name": "list_folder", "arguments": {"folder": "."}}) + "\n```"
)


def start(stack: Stack, scenario: str) -> asyncio.Task[dict[str, object]]:
    """Start ``tests/js/openai_node.mjs`` for ``scenario`` in the background."""
    return asyncio.create_task(run_script(stack, "openai_node.mjs", scenario, "openai"))


async def test_node_openai_chat_completion_gets_the_signed_answer(stack: Stack) -> None:
    """chat.completions.create returns the signed text with finish_reason stop."""
    run = start(stack, "chat-json")
    issue = await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "4")
    result = await asyncio.wait_for(run, 30)
    assert result == {"content": "4", "finish_reason": "stop"}
    assert "What is 2+2?" in issue.body


async def test_node_openai_streamed_chat_completion_assembles_the_answer(stack: Stack) -> None:
    """A streamed completion's deltas add up to the signed text, with a usage chunk."""
    run = start(stack, "chat-stream")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "Hello there.")
    result = await asyncio.wait_for(run, 30)
    assert result["content"] == "Hello there."
    assert result["finish_reason"] == "stop"
    assert result["usage"]["completion_tokens"] > 0


async def test_node_openai_chat_tool_call_and_follow_up_are_two_steps_of_one_issue(
    stack: Stack,
) -> None:
    """The tool call comes back parsed, and the tool's result is step 2 on the same issue."""
    run = start(stack, "chat-tool")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, TOOL_CALL)
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result["finish_reason"] == "tool_calls"
    assert result["calls"] == [{"name": "list_folder", "arguments": {"folder": "."}}]
    assert result["final"] == "Only README.md."
    assert [i.number for i in await stack.issues()] == [1]


async def test_node_openai_response_gets_the_signed_answer(stack: Stack) -> None:
    """responses.create returns a completed response whose output_text is the signed text."""
    run = start(stack, "responses-json")
    issue = await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "4")
    result = await asyncio.wait_for(run, 30)
    assert result["status"] == "completed"
    assert result["output_text"] == "4"
    assert str(result["id"]).startswith("resp_")
    assert "Be brief." in issue.body


async def test_node_openai_streamed_response_sends_the_typed_events(stack: Stack) -> None:
    """The stream's events arrive in order and its text deltas add up to the signed text."""
    run = start(stack, "responses-stream")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "Hello there.")
    result = await asyncio.wait_for(run, 30)
    assert result["types"][:2] == ["response.created", "response.in_progress"]
    assert result["types"][-1] == "response.completed"
    assert "response.output_text.delta" in result["types"]
    assert result["text"] == "Hello there."
    assert result["final_text"] == "Hello there."
    assert result["status"] == "completed"


async def test_node_openai_function_call_continued_by_previous_response_id_is_one_issue(
    stack: Stack,
) -> None:
    """A function_call, then its output sent with previous_response_id, are steps of one issue."""
    run = start(stack, "responses-tool")
    issue = await while_running(run, stack.wait_for_issue(1))
    assert "list_folder" in issue.body
    await stack.answer(1, TOOL_CALL)
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result["calls"] == [{"name": "list_folder", "arguments": {"folder": "."}}]
    assert result["final"] == "Only README.md."
    assert result["stored_status"] == "completed"
    assert [i.number for i in await stack.issues()] == [1]
