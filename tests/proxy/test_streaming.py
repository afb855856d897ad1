"""``stream: true``: SSE heartbeats while people think, then chunks the client reassembles."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web

from proxy.handlers import SSE_FRAMING
from proxy.keepalive import send_after_wait
from tests.helpers.stack import CLIENT_KEY, Stack

PROMPT = [{"role": "user", "content": "Tell me a short story."}]


async def collect(stream: Any) -> tuple[str, list[Any]]:
    """Join the content deltas of an async stream and return them with every chunk."""
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


async def test_streamed_answer_arrives_as_chunks_the_async_client_reassembles(
    stack: Stack,
) -> None:
    """Role first, content deltas, a finish_reason, then the stream ends."""
    client = stack.openai()
    stream = await client.chat.completions.create(model="gpt-4o", messages=PROMPT, stream=True)
    pending = asyncio.create_task(collect(stream))
    await stack.wait_for_issue(1)
    story = "Once upon a time " * 40
    await stack.answer(1, story)
    text, chunks = await asyncio.wait_for(pending, 10)
    assert text == story.strip()
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1


async def test_stream_options_include_usage_adds_a_usage_chunk(stack: Stack) -> None:
    """With include_usage the last chunk has no choices and carries the usage."""
    client = stack.openai()
    stream = await client.chat.completions.create(
        model="gpt-4o", messages=PROMPT, stream=True, stream_options={"include_usage": True}
    )
    pending = asyncio.create_task(collect(stream))
    await stack.wait_for_issue(1)
    await stack.answer(1, "short")
    _, chunks = await asyncio.wait_for(pending, 10)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == chunks[-1].usage.prompt_tokens + 2


async def test_sync_streaming_client_reassembles_the_answer(stack: Stack) -> None:
    """The blocking client's stream iterator sees the same text."""

    def ask() -> str:
        client = openai.OpenAI(base_url=stack.base_url, api_key=CLIENT_KEY, max_retries=0)
        with client:
            stream = client.chat.completions.create(model="gpt-4o", messages=PROMPT, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    pending = asyncio.create_task(asyncio.to_thread(ask))
    await stack.wait_for_issue(1)
    await stack.answer(1, "streamed to a thread")
    assert await asyncio.wait_for(pending, 10) == "streamed to a thread"


async def test_sse_heartbeats_outlast_a_short_client_read_timeout(stack: Stack) -> None:
    """``: keep-alive`` comments keep a 1 s read timeout from firing during a 2.5 s wait."""
    client = stack.openai(timeout=openai.Timeout(1.0))
    stream = await client.chat.completions.create(model="gpt-4o", messages=PROMPT, stream=True)
    pending = asyncio.create_task(collect(stream))
    await stack.wait_for_issue(1)
    await asyncio.sleep(2.5)
    assert not pending.done()
    await stack.answer(1, "worth the wait")
    text, _ = await asyncio.wait_for(pending, 10)
    assert text == "worth the wait"


async def test_raw_stream_has_keep_alive_comments_and_ends_with_done(stack: Stack) -> None:
    """On the wire: comment heartbeats, ``data:`` events, and ``data: [DONE]`` last."""
    url = stack.base_url + "/chat/completions"
    body = {"model": "gpt-4o", "messages": PROMPT, "stream": True}

    async def read() -> str:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json=body, headers={"Authorization": f"Bearer {CLIENT_KEY}"}) as r,
        ):
            assert r.headers["Content-Type"].startswith("text/event-stream")
            return (await r.read()).decode()

    pending = asyncio.create_task(read())
    await stack.wait_for_issue(1)
    await asyncio.sleep(0.5)
    await stack.answer(1, "raw")
    raw = await asyncio.wait_for(pending, 10)
    assert raw.startswith(": keep-alive\n\n")
    assert raw.endswith("data: [DONE]\n\n")
    assert '"content": "raw"' in raw


async def test_streamed_expiry_says_nobody_answered(short_stack: Stack) -> None:
    """An expired ticket streams the plain expiry text and stops."""
    client = short_stack.openai()
    stream = await client.chat.completions.create(model="gpt-4o", messages=PROMPT, stream=True)
    text, chunks = await asyncio.wait_for(collect(stream), 10)
    assert "no" in text.lower()
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_legacy_completions_endpoint_answers_like_chat(stack: Stack) -> None:
    """``/v1/completions`` opens a ticket and returns a ``text_completion``."""
    client = stack.openai()
    pending = asyncio.create_task(
        client.completions.create(model="gpt-3.5-turbo", prompt="Say this is a test")
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, "This is a test")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.object == "text_completion"
    assert completion.choices[0].text == "This is a test"


async def test_legacy_completions_stream(stack: Stack) -> None:
    """The legacy endpoint streams too."""
    client = stack.openai()

    async def read() -> str:
        stream = await client.completions.create(
            model="gpt-3.5-turbo", prompt="Say this is a test", stream=True
        )
        return "".join([c.choices[0].text async for c in stream if c.choices])

    pending = asyncio.create_task(read())
    await stack.wait_for_issue(1)
    await stack.answer(1, "streamed legacy")
    assert await asyncio.wait_for(pending, 10) == "streamed legacy"


async def test_damaged_stored_answer_is_a_500_before_any_stream_starts(stack: Stack) -> None:
    """An answered ticket whose stored answer cannot be read fails plainly, in the envelope."""
    client = stack.openai()
    first = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    first.cancel()
    await stack.answer(1, "accepted while the client was away")
    await stack.settle()
    with sqlite3.connect(stack.settings.store_path) as db:
        db.execute("UPDATE answers SET release = '{damaged'")
    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT, stream=True)
    assert caught.value.status_code == 500


async def test_failure_after_the_stream_started_is_an_sse_error_event_the_client_raises(
    unused_tcp_port: int,
) -> None:
    """Once the 200 and heartbeats are out, a failure becomes an SSE error event, not a cut."""

    async def failing_wait() -> bytes:
        await asyncio.sleep(0.3)
        raise RuntimeError("the store went away")

    outcomes: list[bool] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        task = asyncio.create_task(failing_wait())
        response, delivered = await send_after_wait(
            request, task, render=lambda b: b, interval=0.05, headers={}, framing=SSE_FRAMING
        )
        # Checked by the test itself: an assert here would only be logged by aiohttp.
        outcomes.append(delivered)
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    try:
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{unused_tcp_port}/v1", api_key="k", max_retries=0
        )
        async with client:
            stream = await client.chat.completions.create(
                model="gpt-4o", messages=PROMPT, stream=True
            )
            with pytest.raises(openai.APIError) as caught:
                await collect(stream)
        assert "retry" in str(caught.value.message)
        for _ in range(100):  # the handler returns right after its last write
            if outcomes:
                break
            await asyncio.sleep(0.01)
        assert outcomes == [False]
    finally:
        await runner.cleanup()
