"""``POST /v1/messages`` through the official anthropic SDK: answers, tools, streams, runs."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.anthropic_clients import LIST_FOLDER, async_client, sync_client, tool_call
from tests.helpers.stack import REPO, Stack

QUESTION: list[Any] = [{"role": "user", "content": "What files are in the workspace?"}]


async def test_async_client_gets_the_signed_answer_as_an_end_turn_message(stack: Stack) -> None:
    """A text question becomes a ticket, and the signed answer is the message's text block."""
    async with async_client(stack) as client:
        pending = asyncio.create_task(
            client.messages.create(
                model="claude-opus-4-8",
                max_tokens=256,
                system="Be brief.",
                messages=[{"role": "user", "content": "What is 2+2?"}],
            )
        )
        issue = await stack.wait_for_issue(1)
        await stack.answer(1, "4")
        message = await asyncio.wait_for(pending, 10)
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "4"  # type: ignore[union-attr]
    assert message.stop_reason == "end_turn"
    assert message.id.startswith("msg_")
    assert message.model == "claude-opus-4-8"
    assert message.usage.output_tokens == 1
    assert message.usage.input_tokens > 0
    assert "What is 2+2?" in issue.body
    assert "Be brief." in issue.body


async def test_sync_client_receives_tool_use_and_its_result_continues_the_issue(
    stack: Stack,
) -> None:
    """A tool_call answer is a tool_use block; its tool_result is step 2 of the same issue."""

    def ask(messages: list[Any]) -> Any:
        with sync_client(stack) as client:
            return client.messages.create(
                model="claude-opus-4-8", max_tokens=1024, messages=messages, tools=[LIST_FOLDER]
            )

    first = asyncio.create_task(asyncio.to_thread(ask, QUESTION))
    issue = await stack.wait_for_issue(1)
    assert "list_folder" in issue.body
    assert "## Answer template" in issue.body
    assert "tool_call" in issue.body
    await stack.answer(1, "Looking.\n\n" + tool_call("list_folder", {"folder": "."}))
    message = await asyncio.wait_for(first, 10)
    assert message.stop_reason == "tool_use"
    text, use = message.content
    assert text.text == "Looking."
    assert use.type == "tool_use"
    assert use.id.startswith("toolu_")
    assert use.name == "list_folder"
    assert use.input == {"folder": "."}
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "README.md"}
    follow_up = [
        *QUESTION,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [result]},
    ]
    second = asyncio.create_task(asyncio.to_thread(ask, follow_up))
    await wait_for_step(stack, 2)
    await stack.comment(1, stack.signed("Only README.md.", number=1, ticket=f"{REPO}#1/2"))
    reply = await asyncio.wait_for(second, 10)
    assert reply.content[0].text == "Only README.md."
    assert reply.stop_reason == "end_turn"
    assert [i.number for i in await stack.issues()] == [1]
    step = (await stack.comments(1))[-3:]
    assert any("README.md" in c.body for c in step)
