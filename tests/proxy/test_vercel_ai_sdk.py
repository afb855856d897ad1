"""The Vercel AI SDK's default OpenAI provider (the Responses API), run as a real process."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.node_clients import run_script, while_running
from tests.helpers.stack import REPO, Stack

pytestmark = pytest.mark.slow
PACKAGES = ("ai", "@ai-sdk/openai", "zod")
TOOL_CALL = (
    "```tool_call\n" + json.dumps({"name": "list_folder", "arguments": {"folder": "."}}) + "\n```"
)


def start(stack: Stack, scenario: str) -> asyncio.Task[dict[str, object]]:
    """Start ``tests/js/ai_sdk.mjs`` for ``scenario`` in the background."""
    return asyncio.create_task(run_script(stack, "ai_sdk.mjs", scenario, *PACKAGES))


async def test_ai_sdk_generate_text_tool_loop_lands_on_one_issue_as_two_steps(stack: Stack) -> None:
    """generateText runs the signed tool call, and its result is answered as step 2.

    The answer's text comes back to the proxy as an ``item_reference`` to the stored output.
    """
    run = start(stack, "generate-text-tool")
    issue = await while_running(run, stack.wait_for_issue(1))
    assert "list_folder" in issue.body
    assert "## Answer template" in issue.body
    await stack.answer(1, "Looking.\n\n" + TOOL_CALL)
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result["ran"] == ["."]
    assert result["text"] == "Only README.md."
    assert result["steps"] == 2
    assert result["finish_reason"] == "stop"
    assert [i.number for i in await stack.issues()] == [1]


async def test_ai_sdk_stream_text_tool_loop_runs_the_streamed_call(stack: Stack) -> None:
    """streamText reads the streamed function call, runs it, and streams step 2's answer."""
    run = start(stack, "stream-text-tool")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "Looking.\n\n" + TOOL_CALL)
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result["ran"] == ["."]
    assert result["text"] == "Looking.Only README.md."
    assert result["steps"] == 2
    assert [i.number for i in await stack.issues()] == [1]


async def test_ai_sdk_reasoning_model_with_store_off_runs_its_tool_loop(stack: Stack) -> None:
    """A developer message, reasoning, include and store: false, as sent for gpt-5, all work."""
    run = start(stack, "reasoning-store-false")
    issue = await while_running(run, stack.wait_for_issue(1))
    assert "Answer briefly." in issue.body
    await stack.answer(1, "Looking.\n\n" + TOOL_CALL)
    await while_running(run, wait_for_step(stack, 2))
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    result = await asyncio.wait_for(run, 30)
    assert result == {"text": "Only README.md.", "ran": ["."], "steps": 2}
    assert [i.number for i in await stack.issues()] == [1]


async def test_ai_sdk_generate_text_with_an_object_output_parses_the_answer(stack: Stack) -> None:
    """generateText with Output.object gets the signed JSON as its typed output."""
    run = start(stack, "output-object")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, '{"name": "Lyon", "country": "France"}')
    result = await asyncio.wait_for(run, 30)
    assert result["object"] == {"name": "Lyon", "country": "France"}


async def test_ai_sdk_stream_text_streams_the_signed_answer(stack: Stack) -> None:
    """streamText's text stream adds up to the signed answer."""
    run = start(stack, "stream-text")
    await while_running(run, stack.wait_for_issue(1))
    await stack.answer(1, "Hello there.")
    result = await asyncio.wait_for(run, 30)
    assert result == {"text": "Hello there.", "finish_reason": "stop"}


async def test_ai_sdk_generate_object_gets_json_that_fits_its_zod_schema(stack: Stack) -> None:
    """The zod schema is on the ticket; an answer not fitting it is held, one that fits parsed."""
    run = start(stack, "generate-object")
    issue = await while_running(run, stack.wait_for_issue(1))
    assert "country" in issue.body
    await stack.answer(1, "Paris")
    await stack.settle()
    assert not run.done()
    await stack.answer(1, '{"name": "Paris", "country": "France"}')
    result = await asyncio.wait_for(run, 30)
    assert result["object"] == {"name": "Paris", "country": "France"}
