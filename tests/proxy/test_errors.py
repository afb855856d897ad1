"""Every refusal is answered at once, in OpenAI's error envelope, with its real status."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import openai
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from tests.helpers.raw_requests import assert_envelope, raw
from tests.helpers.stack import CLIENT_KEY, Stack, start_stack, stop_stack

PROMPT = [{"role": "user", "content": "hi"}]


async def test_malformed_json_is_a_400_with_the_envelope(stack: Stack) -> None:
    """A body that is not JSON is refused with 400 invalid_json and opens no ticket."""
    status, headers, body = await raw(stack, "POST", "/v1/chat/completions", data=b"{nope")
    assert status == 400
    assert_envelope(body, code="invalid_json")
    assert body["error"]["type"] == "invalid_request_error"
    assert headers["x-request-id"].startswith("req_"), headers
    assert await stack.issues() == []


async def test_body_that_is_not_an_object_is_a_400(stack: Stack) -> None:
    """A JSON array is not a request."""
    status, _, body = await raw(stack, "POST", "/v1/chat/completions", data=b"[1, 2]")
    assert status == 400
    assert_envelope(body, code="invalid_type")


async def test_missing_messages_is_a_400_naming_the_param(stack: Stack) -> None:
    """The official client raises BadRequestError naming ``messages``."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=[])
    assert caught.value.status_code == 400
    assert caught.value.param == "messages"


async def test_invalid_role_is_a_400_naming_the_message(stack: Stack) -> None:
    """A message with an unknown role is refused, naming where it is."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "wizard", "content": "x"}],  # type: ignore[list-item,misc]
        )
    assert caught.value.param == "messages[0].role"


async def test_model_id_nobody_configured_is_still_answered_by_people(stack: Stack) -> None:
    """Without a routes file any model id opens a ticket (agents pick ids of their own)."""
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-9000", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "Answered all the same.")
    completion = await asyncio.wait_for(pending, 10)
    assert completion.model == "gpt-9000"
    assert completion.choices[0].message.content == "Answered all the same."


async def test_temperature_out_of_range_is_a_400(stack: Stack) -> None:
    """Standard parameters are type- and range-checked."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT, temperature=7)
    assert caught.value.param == "temperature"


async def test_tool_choice_naming_an_unoffered_function_is_a_400(stack: Stack) -> None:
    """A named tool_choice must be one of the offered tools."""
    client = stack.openai()
    tool: Any = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
    choice: Any = {"type": "function", "function": {"name": "rm"}}
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o", messages=PROMPT, tools=[tool], tool_choice=choice
        )
    assert caught.value.param == "tool_choice"
    assert await stack.issues() == []


async def test_stream_options_without_stream_is_a_400(stack: Stack) -> None:
    """stream_options only makes sense with stream=true."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o", messages=PROMPT, stream_options={"include_usage": True}
        )
    assert caught.value.param == "stream_options"


async def test_bad_response_format_is_a_400(stack: Stack) -> None:
    """An unknown response_format type is refused, naming the field."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(
            model="gpt-4o",
            messages=PROMPT,
            response_format={"type": "yaml"},  # type: ignore[arg-type,typeddict-item]
        )
    assert caught.value.param == "response_format.type"


async def test_n_greater_than_one_is_refused(stack: Stack) -> None:
    """One team writes one answer: ``n=2`` is a 400."""
    client = stack.openai()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT, n=2)
    assert caught.value.param == "n"


async def test_body_over_the_size_limit_is_a_413(stack: Stack) -> None:
    """A body larger than TICKETPROXY_MAX_BODY_BYTES is refused with 413."""
    big = (
        b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "'
        + b"x" * (stack.settings.max_body_bytes + 10)
        + b'"}]}'
    )
    status, _, body = await raw(stack, "POST", "/v1/chat/completions", data=io.BytesIO(big))
    assert status == 413
    assert_envelope(body, code="request_too_large")


async def test_chunked_body_over_the_size_limit_sent_in_one_packet_is_a_413(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> None:
    """A body with no Content-Length that arrives whole with its headers is still capped."""
    stack = await start_stack(github_sandbox, sandbox_config, tmp_path, max_body_bytes=2048)
    try:
        await _send_chunked_over_the_limit(stack)
    finally:
        await stop_stack(stack)


async def _send_chunked_over_the_limit(stack: Stack) -> None:
    content = b"x" * (stack.settings.max_body_bytes + 10)
    big = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "' + content + b'"}]}'
    host, port = stack.base_url.removeprefix("http://").removesuffix("/v1").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {CLIENT_KEY}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + f"{len(big):x}\r\n".encode() + big + b"\r\n0\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    await writer.wait_closed()
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"request_too_large" in answer


async def test_unknown_route_is_a_404_with_the_envelope(stack: Stack) -> None:
    """Unknown routes answer OpenAI's 'Invalid URL' 404."""
    status, _, body = await raw(stack, "POST", "/v1/embeddings", data=b"{}")
    assert status == 404
    assert_envelope(body, code="unknown_url")
    assert "/v1/embeddings" in body["error"]["message"]


async def test_wrong_method_is_a_405_with_the_envelope(stack: Stack) -> None:
    """GET on the completions route is a 405 in the envelope."""
    status, _, body = await raw(stack, "GET", "/v1/chat/completions")
    assert status == 405
    assert_envelope(body, code="method_not_allowed")


async def test_bad_client_key_is_a_401_and_is_not_echoed(stack: Stack) -> None:
    """A wrong API key is refused with 401 invalid_api_key and the key never appears."""
    client = stack.openai(api_key="wrong-key-that-must-not-echo")
    with pytest.raises(openai.AuthenticationError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert caught.value.code == "invalid_api_key"
    assert "wrong-key-that-must-not-echo" not in str(caught.value.body)
    assert await stack.issues() == []


async def test_missing_client_key_is_a_401(stack: Stack) -> None:
    """No Authorization header at all is a 401 too, also on /v1/models."""
    status, _, body = await raw(stack, "GET", "/v1/models", headers={"X-Other": "1"})
    assert status == 401
    assert_envelope(body, code="invalid_api_key")


async def test_github_down_gives_429_with_retry_after_and_the_retry_opens_one_issue(
    stack: Stack,
) -> None:
    """When GitHub keeps failing the client gets a 429 it can retry; the retry succeeds."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=503, times=3
    )
    client = stack.openai()
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert int(caught.value.response.headers["retry-after"]) >= 1
    assert await stack.issues() == []
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "back online")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "back online"
    assert len(await stack.issues()) == 1


async def test_github_rate_limit_gives_429_with_github_retry_after(stack: Stack) -> None:
    """A secondary rate limit from GitHub becomes a 429 whose retry-after honours GitHub's."""
    stack.sandbox.sandbox.inject_fault(
        method="POST",
        path=r"/repos/acme/agents/issues",
        status=403,
        headers={"retry-after": "120"},
        body={"message": "You have exceeded a secondary rate limit."},
    )
    client = stack.openai()
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert caught.value.response.headers["retry-after"] == "120"


async def test_502_after_a_successful_create_opens_no_duplicate_issue(stack: Stack) -> None:
    """GitHub creates the issue but answers 502: the marker lookup finds it, no second issue."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=502, after_handling=True
    )
    client = stack.openai()
    pending = asyncio.create_task(client.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.wait_for_issue(1)
    await stack.answer(1, "only once")
    assert (await asyncio.wait_for(pending, 10)).choices[0].message.content == "only once"
    assert [i.number for i in await stack.issues()] == [1]


async def test_slow_github_gives_429_before_the_read_timeout_and_the_retry_reattaches(
    stack: Stack,
) -> None:
    """Issue creation slower than half the client's read timeout: a 429, then one issue."""
    stack.sandbox.sandbox.inject_fault(
        method="POST", path=r"/repos/acme/agents/issues", status=None, delay=4.0
    )
    # The openai client sends its read timeout as x-stainless-read-timeout (3 s here), and
    # raises APITimeoutError, not RateLimitError, if nothing comes back within it.
    client = stack.openai(timeout=3.0)
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="gpt-4o", messages=PROMPT)
    assert caught.value.code == "ticket_opening"
    assert float(caught.value.response.headers["retry-after"]) > 0
    # The opening went on without the client; the retry re-attaches to its issue.
    await stack.wait_for_issue(1)
    patient = stack.openai(timeout=30.0)
    pending = asyncio.create_task(patient.chat.completions.create(model="gpt-4o", messages=PROMPT))
    await stack.answer(1, "sorry for the wait")
    reply = await asyncio.wait_for(pending, 10)
    assert reply.choices[0].message.content == "sorry for the wait"
    assert [i.number for i in await stack.issues()] == [1]
