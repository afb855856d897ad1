"""Hostile request bodies: nested past the depth limit, or trickled in, refused at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.settings import Settings
from tests.helpers.raw_requests import AUTH, assert_envelope, raw
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack
from ticketing.github.webhooks import sign_payload
from ticketing.json_depth import MAX_JSON_DEPTH
from ticketing.render.continuations import MAX_CONTINUATIONS

SECRET = "webhook-secret-0123456789abcdef"
PROMPT = [{"role": "user", "content": "hi"}]
JSON_HEADERS = {**AUTH, "Content-Type": "application/json"}


def nested(depth: int, leaf: str = "1") -> str:
    """Return JSON text of ``depth`` arrays, one inside the other, around ``leaf``."""
    return "[" * depth + leaf + "]" * depth


def nested_objects(depth: int) -> dict[str, Any]:
    """Return a JSON Schema nested ``depth`` object levels deep, built without recursion."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.fixture
async def hostile(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that takes webhooks and cuts bodies that take longer than half a second."""
    running = await start_stack(
        github_sandbox,
        sandbox_config,
        tmp_path,
        webhook_secret=SECRET,
        deliver_webhooks=False,
        body_timeout=0.5,
    )
    try:
        yield running
    finally:
        await stop_stack(running)


def assert_too_deep(status: int, body: Any) -> None:
    """Check the 400 that names the depth limit."""
    assert status == 400, body
    assert_envelope(body, code="json_too_deep")
    assert body["error"]["type"] == "invalid_request_error"
    assert f"more than {MAX_JSON_DEPTH} levels deep" in body["error"]["message"]


async def test_json_nested_200000_deep_is_a_400_not_a_500(hostile: Stack) -> None:
    """Metadata nested 200,000 deep is refused with a 400 saying why, and opens no ticket."""
    data = f'{{"model": "gpt-4o", "messages": {json.dumps(PROMPT)}, "metadata": {nested(200_000)}}}'
    status, _, body = await raw(
        hostile, "POST", "/v1/chat/completions", data=data.encode(), headers=JSON_HEADERS
    )
    assert_too_deep(status, body)
    assert await hostile.issues() == []


async def test_json_nested_one_level_past_the_limit_is_a_400(hostile: Stack) -> None:
    """A body the decoder reads fine but that nests past the limit is refused all the same."""
    # The body object itself is the first level, "metadata" the next.
    data = {"model": "gpt-4o", "messages": PROMPT, "metadata": json.loads(nested(MAX_JSON_DEPTH))}
    status, _, body = await raw(
        hostile,
        "POST",
        "/v1/chat/completions",
        data=json.dumps(data).encode(),
        headers=JSON_HEADERS,
    )
    assert_too_deep(status, body)


async def test_tool_schema_3000_levels_deep_is_a_400_not_a_500(hostile: Stack) -> None:
    """A tool whose parameters nest 3,000 objects deep is refused through the openai client."""
    tool: Any = {
        "type": "function",
        "function": {"name": "deep", "parameters": nested_objects(3_000)},
    }
    data = f'{{"model": "gpt-4o", "messages": {json.dumps(PROMPT)}, "tools": ['
    # Too deep for json.dumps to write: assembled by hand, level by level.
    opening = '{"type": "object", "properties": {"a": ' * 3_000
    closing = "}}" * 3_000
    data += (
        '{"type": "function", "function": {"name": "deep", "parameters": '
        + opening
        + '{"type": "string"}'
        + closing
        + "}}]}"
    )
    assert tool["function"]["name"] == "deep"
    status, _, body = await raw(
        hostile, "POST", "/v1/chat/completions", data=data.encode(), headers=JSON_HEADERS
    )
    assert_too_deep(status, body)
    assert await hostile.issues() == []


async def test_legacy_completion_nested_200000_deep_is_a_400_not_a_500(hostile: Stack) -> None:
    """``/v1/completions`` refuses a deep body the same way."""
    data = f'{{"model": "gpt-4o", "prompt": "hi", "metadata": {nested(200_000)}}}'
    status, _, body = await raw(
        hostile, "POST", "/v1/completions", data=data.encode(), headers=JSON_HEADERS
    )
    assert_too_deep(status, body)


async def test_webhook_payload_nested_200000_deep_is_a_400_not_a_500(hostile: Stack) -> None:
    """A signed delivery nested 200,000 deep is refused with a 400, and nothing is recorded."""
    payload = f'{{"action": "created", "comment": {nested(200_000)}}}'.encode()
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "deep-1",
        "X-Hub-Signature-256": sign_payload(payload, secret=SECRET),
    }
    status, _, body = await raw(hostile, "POST", "/github/webhook", data=payload, headers=headers)
    assert_too_deep(status, body)
    assert "webhook payload" in body["error"]["message"]
    # Refused before it was recorded: GitHub's redelivery of it would be looked at again.
    assert hostile.desk.store.record_delivery("deep-1", now=hostile.clock())


async def trickle(
    stack: Stack, path: str, headers: dict[str, str], sent: bytes, length: int
) -> str:
    """Send headers and ``sent`` of a ``length``-byte body, then stall; return the response."""
    host, port = stack.base_url.removeprefix("http://").split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {length}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + sent)
        await writer.drain()
        # The rest never comes; the proxy must answer and close on its own.
        async with asyncio.timeout(10):
            return (await reader.read()).decode()
    finally:
        writer.close()
        await writer.wait_closed()


async def test_trickled_body_times_out_with_408(hostile: Stack) -> None:
    """A client that sends half its body and stalls gets a 408 envelope, and no ticket."""
    body = json.dumps({"model": "gpt-4o", "messages": PROMPT}).encode()
    headers = {"Authorization": f"Bearer {CLIENT_KEY}", "Content-Type": "application/json"}
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await trickle(
        hostile, "/v1/chat/completions", headers, body[: len(body) // 2], len(body)
    )
    assert response.startswith("HTTP/1.1 408"), response
    envelope = json.loads(response.split("\r\n\r\n", 1)[1])
    assert_envelope(envelope, code="body_timeout")
    assert "TICKETPROXY_BODY_TIMEOUT" in envelope["error"]["message"]
    assert loop.time() - started < 5
    assert await hostile.issues() == []


async def test_trickled_webhook_delivery_times_out_with_408(hostile: Stack) -> None:
    """The webhook route reads its body under the same deadline."""
    payload = b'{"zen": "Keep it logically awesome."}'
    headers = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "ping",
        "X-GitHub-Delivery": "slow-1",
        "X-Hub-Signature-256": sign_payload(payload, secret=SECRET),
    }
    response = await trickle(hostile, "/github/webhook", headers, payload[:10], len(payload))
    assert response.startswith("HTTP/1.1 408"), response


def test_body_timeout_comes_from_ticketproxy_body_timeout() -> None:
    """The deadline is read at start-up, 30 seconds unless set, and refused when not a number."""
    assert Settings.from_env({}).body_timeout == 30.0
    assert Settings.from_env({"TICKETPROXY_BODY_TIMEOUT": "5"}).body_timeout == 5.0
    with pytest.raises(Exception, match="TICKETPROXY_BODY_TIMEOUT"):
        Settings.from_env({"TICKETPROXY_BODY_TIMEOUT": "soon"})


async def test_1_9_mb_prompt_opens_one_issue_with_at_most_5_continuations(stack: Stack) -> None:
    """A huge prompt costs the shared write budget the issue and MAX_CONTINUATIONS comments,
    not thirty; the ticket is still answered, and the whole request stays in the store."""
    lines = [f"line {index:07d}: the log the agent wants read" for index in range(45_000)]
    prompt = "\n".join(lines)
    assert len(prompt) > 1_900_000
    client = stack.openai()
    pending = asyncio.create_task(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": prompt}]
        )
    )
    await stack.wait_for_issue(1)
    parts = [c.body for c in await stack.comments(1)]
    assert len(parts) == MAX_CONTINUATIONS
    assert "**Left out:**" in parts[-1]
    ticket = stack.desk.store.ticket_for_issue(1)
    assert ticket is not None
    stored = stack.desk.store.request_for(ticket.id)
    assert stored is not None
    assert lines[-1] in stored
    await stack.answer(1, "Read what fits.")
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == "Read what fits."
