"""``POST /v1/messages`` through the official anthropic SDK: answers, tools, streams, runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.helpers.agent_runs import wait_for_step
from tests.helpers.anthropic_clients import LIST_FOLDER, async_client, sync_client, tool_call
from tests.helpers.raw_requests import raw
from tests.helpers.stack import CLIENT_KEY, REPO, Stack

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
        {
            "role": "assistant",
            "content": [b.model_dump(exclude_none=True) for b in message.content],
        },
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


async def test_stream_true_sends_anthropic_events_in_order(stack: Stack) -> None:
    """message_start before the wait, then each block's start, delta and stop, then the end."""
    async with async_client(stack) as client:
        stream = await client.messages.create(
            model="claude-opus-4-8",
            max_tokens=1024,
            messages=[{"role": "user", "content": "List the folder, then say why."}],
            tools=[LIST_FOLDER],
            stream=True,
        )
        events: list[Any] = []

        async def collect() -> None:
            async for event in stream:
                events.append(event)

        pending = asyncio.create_task(collect())
        await stack.wait_for_issue(1)
        await asyncio.sleep(0.3)
        assert [e.type for e in events] == ["message_start"]
        await stack.answer(1, "Looking.\n\n" + tool_call("list_folder", {"folder": "."}))
        await asyncio.wait_for(pending, 10)
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[2].delta.type == "text_delta"
    assert events[5].delta.type == "input_json_delta"
    assert events[7].delta.stop_reason == "tool_use"
    assert events[0].message.id.startswith("msg_")


async def test_messages_stream_helper_accumulates_the_final_message(stack: Stack) -> None:
    """client.messages.stream() yields the text as it arrives and a complete final message."""
    async with async_client(stack) as client:

        async def run() -> Any:
            async with client.messages.stream(
                model="claude-opus-4-8",
                max_tokens=1024,
                messages=QUESTION,
                tools=[LIST_FOLDER],
            ) as stream:
                texts = [text async for text in stream.text_stream]
                return texts, await stream.get_final_message()

        pending = asyncio.create_task(run())
        await stack.wait_for_issue(1)
        await stack.answer(1, "One moment.\n\n" + tool_call("list_folder", {"folder": "src"}))
        texts, final = await asyncio.wait_for(pending, 10)
    assert "".join(texts) == "One moment."
    assert final.stop_reason == "tool_use"
    assert final.content[1].input == {"folder": "src"}


async def test_heartbeats_are_ping_events_while_people_think(stack: Stack) -> None:
    """A waiting stream sends `event: ping`, which the SDK skips, so its read timeout resets."""
    async with async_client(stack) as client:
        request = client.messages.with_raw_response.create(
            model="claude-opus-4-8", max_tokens=64, messages=QUESTION, stream=True
        )
        pending = asyncio.create_task(request)
        await stack.wait_for_issue(1)
        raw = await asyncio.wait_for(pending, 10)
        await asyncio.sleep(0.5)  # the stack beats every 0.2 s
        await stack.answer(1, "README.md")
        body = b"".join([chunk async for chunk in raw.http_response.aiter_bytes()])
    text = body.decode()
    assert text.startswith("event: message_start\n")
    assert 'event: ping\ndata: {"type": "ping"}\n\n' in text
    assert text.rstrip().endswith('event: message_stop\ndata: {"type": "message_stop"}')


async def test_retry_of_an_answered_message_re_attaches_with_the_same_id(stack: Stack) -> None:
    """The same request sent again, even as a stream, gets the same message from one ticket."""
    async with async_client(stack) as client:
        first = asyncio.create_task(
            client.messages.create(model="claude-opus-4-8", max_tokens=64, messages=QUESTION)
        )
        await stack.wait_for_issue(1)
        await stack.answer(1, "README.md")
        answered = await asyncio.wait_for(first, 10)
        async with client.messages.stream(
            model="claude-opus-4-8", max_tokens=64, messages=QUESTION
        ) as stream:
            again = await stream.get_final_message()
    assert again.id == answered.id
    assert again.content[0].text == "README.md"
    assert len(await stack.issues()) == 1


async def test_expired_message_is_end_turn_saying_nobody_answered(short_stack: Stack) -> None:
    """An expiry is an end_turn message with the plain text and no tool use."""
    async with async_client(short_stack) as client:
        message = await client.messages.create(
            model="claude-opus-4-8", max_tokens=1024, messages=QUESTION, tools=[LIST_FOLDER]
        )
    assert message.stop_reason == "end_turn"
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text.startswith("No human answered this request in time.")


async def test_answer_cut_at_a_stop_sequence_says_which(stack: Stack) -> None:
    """An answer holding one of stop_sequences is cut there, with stop_reason stop_sequence."""
    async with async_client(stack) as client:
        pending = asyncio.create_task(
            client.messages.create(
                model="claude-opus-4-8",
                max_tokens=64,
                messages=QUESTION,
                stop_sequences=["END", "\n\nHuman:"],
            )
        )
        await stack.wait_for_issue(1)
        await stack.answer(1, "README.md END and more")
        message = await asyncio.wait_for(pending, 10)
    assert message.content[0].text == "README.md "
    assert message.stop_reason == "stop_sequence"
    assert message.stop_sequence == "END"


async def test_count_tokens_gives_the_chat_estimate_and_opens_no_ticket(stack: Stack) -> None:
    """count_tokens reads the body as /v1/messages does and answers at once, with no ticket."""
    async with async_client(stack) as client:
        counted = await client.messages.count_tokens(
            model="claude-opus-4-8", system="Be brief.", messages=QUESTION, tools=[LIST_FOLDER]
        )
    # Two messages, 9 and 32 characters: (ceil(9/4) + 4) + (ceil(32/4) + 4) + 3.
    assert counted.input_tokens == (3 + 4) + (8 + 4) + 3
    assert await stack.issues() == []


async def test_x_api_key_without_anthropic_version_is_answered(stack: Stack) -> None:
    """A hand-written client with x-api-key and no anthropic-version is served like the SDK."""
    body = {"model": "claude-opus-4-8", "max_tokens": 64, "messages": QUESTION}
    headers = {"x-api-key": CLIENT_KEY, "Content-Type": "application/json"}
    pending = asyncio.create_task(
        raw(stack, "POST", "/v1/messages", data=json.dumps(body).encode(), headers=headers)
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "README.md")
    status, _, message = await asyncio.wait_for(pending, 10)
    assert status == 200
    assert message["content"] == [{"type": "text", "text": "README.md"}]
    assert message["type"] == "message"
