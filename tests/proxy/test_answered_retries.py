"""Retries of a delivered answer, answered from kept bytes: never to another request."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.answered_retries import AnsweredRetries, RetryAnswer, retry_key
from proxy.completion_flow import RETRIES
from proxy.handlers import THREAD_HEADER
from tests.helpers.raw_requests import JSON_AUTH, assert_envelope
from tests.helpers.stack import Stack, start_stack, stop_stack

OTHER_KEY = "test-other-client-key-9876543210"
PROMPT = [{"role": "user", "content": "Is the build green? Answer in one sentence."}]
BODY = json.dumps({"model": "gpt-4o", "messages": PROMPT}).encode()
STREAMED = json.dumps({"model": "gpt-4o", "messages": PROMPT, "stream": True}).encode()
RESPONSES_BODY = json.dumps({"model": "gpt-4o", "input": PROMPT[0]["content"]}).encode()
RESPONSES_STREAMED = json.dumps(
    {"model": "gpt-4o", "input": PROMPT[0]["content"], "stream": True}
).encode()
ANSWER = "The build is green."
# Differ from one request to the next whatever answers them.
PER_REQUEST = {"x-request-id", "date"}


@dataclass(frozen=True)
class Reply:
    """One raw HTTP reply from the proxy."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def content(self) -> str:
        """Return the completion's content."""
        return str(json.loads(self.body)["choices"][0]["message"]["content"])


async def post(
    stack: Stack,
    body: bytes = BODY,
    *,
    headers: dict[str, str] | None = None,
    path: str = "/v1/chat/completions",
) -> Reply:
    """POST ``body`` as it is, with the client key unless ``headers`` say otherwise."""
    url = stack.base_url.removesuffix("/v1") + path
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers={**JSON_AUTH, **(headers or {})}) as response,
    ):
        kept = {k.lower(): v for k, v in response.headers.items() if k.lower() not in PER_REQUEST}
        return Reply(response.status, kept, await response.read())


async def answered(
    stack: Stack,
    body: bytes = BODY,
    *,
    number: int = 1,
    text: str = ANSWER,
    path: str = "/v1/chat/completions",
) -> Reply:
    """Send ``body``, answer its issue ``number`` with ``text`` and return the delivery."""
    first = asyncio.create_task(post(stack, body, path=path))
    await stack.wait_for_issue(number)
    await stack.answer(number, text)
    return await asyncio.wait_for(first, 10)


def retries(stack: Stack) -> AnsweredRetries:
    """Return the proxy's kept answers."""
    return stack.runner.app[RETRIES]


@pytest.fixture
async def two_key_stack(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that takes two client keys."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, api_keys=("test-client-key-0123456789", OTHER_KEY)
    )
    try:
        yield running
    finally:
        await stop_stack(running)


@pytest.mark.parametrize("body", [BODY, STREAMED], ids=["json", "sse"])
async def test_retry_answered_from_kept_bytes_is_byte_identical_to_the_full_path(
    stack: Stack, body: bytes
) -> None:
    """A kept answer is exactly what the full path sends a retry: body, id, headers."""
    await answered(stack, body)
    kept = await post(stack, body)
    assert retries(stack).hits == 1
    retries(stack).clear()
    full = await post(stack, body)
    assert retries(stack).hits == 1  # the full path served it
    assert kept.status == full.status == 200
    assert kept.body == full.body
    assert kept.headers == full.headers
    assert (await post(stack, body)).body == full.body
    assert retries(stack).hits == 2
    assert len(await stack.issues()) == 1


@pytest.mark.parametrize("body", [RESPONSES_BODY, RESPONSES_STREAMED], ids=["json", "sse"])
async def test_responses_retry_answered_from_kept_bytes_is_byte_identical_to_the_full_path(
    stack: Stack, body: bytes
) -> None:
    """A retry on ``/v1/responses`` gets exactly what the full path sends, preamble and all."""
    await answered(stack, body, path="/v1/responses")
    kept = await post(stack, body, path="/v1/responses")
    assert retries(stack).hits == 1
    retries(stack).clear()
    full = await post(stack, body, path="/v1/responses")
    assert retries(stack).hits == 1  # the full path served it
    assert kept.status == full.status == 200
    assert ANSWER.encode() in kept.body
    assert kept.body == full.body
    assert kept.headers == full.headers
    assert len(await stack.issues()) == 1


async def test_same_bytes_on_the_chat_route_do_not_get_the_kept_responses_answer(
    stack: Stack,
) -> None:
    """Bytes kept for ``/v1/responses`` are not sent for ``/v1/chat/completions``."""
    await answered(stack, RESPONSES_BODY, path="/v1/responses")
    assert (await post(stack, RESPONSES_BODY, path="/v1/responses")).status == 200
    assert retries(stack).hits == 1
    reply = await post(stack, RESPONSES_BODY)
    assert reply.status == 400
    assert ANSWER.encode() not in reply.body
    assert retries(stack).hits == 1


async def test_retry_with_another_client_key_gets_its_own_ticket_not_the_kept_answer(
    two_key_stack: Stack,
) -> None:
    """The same bytes under another client key are another client's request."""
    stack = two_key_stack
    await answered(stack)
    other = asyncio.create_task(post(stack, headers={"Authorization": f"Bearer {OTHER_KEY}"}))
    await stack.wait_for_issue(2)
    await stack.answer(2, "The other client's answer.")
    reply = await asyncio.wait_for(other, 10)
    assert reply.content == "The other client's answer."
    assert retries(stack).hits == 0


async def test_retry_with_another_thread_header_misses_the_kept_answer(stack: Stack) -> None:
    """A thread header the kept answer was not given for sends the retry the full path."""
    await answered(stack)
    reply = await post(stack, headers={THREAD_HEADER: "run-b"})
    assert reply.content == ANSWER  # the full path re-attaches by request key
    assert retries(stack).hits == 0


async def test_retry_with_one_body_byte_changed_misses_the_kept_answer(stack: Stack) -> None:
    """A body that differs by one (insignificant) byte is not answered from kept bytes."""
    await answered(stack)
    reply = await post(stack, BODY + b" ")
    assert reply.content == ANSWER  # the full path: the same JSON, the same ticket
    assert retries(stack).hits == 0


async def test_request_with_one_prompt_byte_changed_gets_its_own_ticket(stack: Stack) -> None:
    """A changed prompt never receives the answer kept for the original one."""
    await answered(stack)
    changed = BODY.replace(b"green?", b"green!")
    reply = await answered(stack, changed, number=2, text="A different question.")
    assert reply.content == "A different question."
    assert retries(stack).hits == 0


async def test_same_bytes_on_the_legacy_route_do_not_get_the_kept_chat_answer(
    stack: Stack,
) -> None:
    """Bytes kept for chat completions are not sent for ``/v1/completions``."""
    await answered(stack)
    reply = await post(stack, path="/v1/completions")
    assert reply.status == 400
    assert_envelope(json.loads(reply.body), param="prompt")


async def test_retry_after_the_redeliver_window_misses_the_kept_answer(stack: Stack) -> None:
    """Past the redeliver window the kept answer is dropped and a new ticket opens."""
    await answered(stack)
    stack.clock.offset += stack.desk.settings.redeliver_window + timedelta(seconds=1)
    reply = await answered(stack, number=2, text="Asked again later.")
    assert reply.content == "Asked again later."
    assert retries(stack).hits == 0


async def test_retry_with_a_bad_client_key_is_refused_though_its_answer_is_kept(
    stack: Stack,
) -> None:
    """A kept answer does not skip authentication."""
    await answered(stack)
    reply = await post(stack, headers={"Authorization": "Bearer not-a-client-key"})
    assert reply.status == 401
    assert_envelope(json.loads(reply.body), code="invalid_api_key")
    assert ANSWER.encode() not in reply.body


async def test_retry_from_a_rebinding_host_is_refused_though_its_answer_is_kept(
    stack: Stack,
) -> None:
    """A kept answer does not skip the DNS-rebinding Host check."""
    await answered(stack)
    reply = await post(stack, headers={"Host": "evil.example"})
    assert reply.status == 403
    assert_envelope(json.loads(reply.body), code="origin_not_allowed")
    assert ANSWER.encode() not in reply.body


MESSAGES_BODY = json.dumps(
    {"model": "claude-opus-4-8", "max_tokens": 64, "messages": PROMPT}
).encode()
MESSAGES_HEADERS = {"x-api-key": "test-client-key-0123456789", "anthropic-version": "2023-06-01"}


async def test_retry_with_an_unpublished_anthropic_version_is_refused_though_its_answer_is_kept(
    stack: Stack,
) -> None:
    """A kept Messages answer does not skip the front's own header check."""
    first = asyncio.create_task(
        post(stack, MESSAGES_BODY, headers=MESSAGES_HEADERS, path="/v1/messages")
    )
    await stack.wait_for_issue(1)
    await stack.answer(1, ANSWER)
    assert (await asyncio.wait_for(first, 10)).status == 200
    again = await post(stack, MESSAGES_BODY, headers=MESSAGES_HEADERS, path="/v1/messages")
    assert again.status == 200
    assert retries(stack).hits == 1
    bad = {**MESSAGES_HEADERS, "anthropic-version": "2099-01-01"}
    reply = await post(stack, MESSAGES_BODY, headers=bad, path="/v1/messages")
    assert reply.status == 400
    assert ANSWER.encode() not in reply.body


R, A, B, C = (
    retry_key(client="c", front="chat", thread=None, body=b) for b in (b"r", b"a", b"b", b"c")
)


def kept(ticket_id: int = 7, body: bytes = b"{}") -> RetryAnswer:
    """Return a kept answer for ticket ``ticket_id``."""
    return RetryAnswer(
        request_key="k", ticket_id=ticket_id, body=body, headers=(), content_type="application/json"
    )


def test_kept_answer_of_a_ticket_the_desk_no_longer_delivers_is_dropped() -> None:
    """Once the desk delivers another ticket (or none) for the request, the bytes go."""
    cache = AnsweredRetries()
    cache.remember(R, kept(7))
    delivered: dict[str, Any] = {"k": 8}
    assert cache.find(R, delivered.get) is None
    delivered["k"] = 7
    assert cache.find(R, delivered.get) is None  # dropped for good
    cache.remember(R, kept(7))
    assert cache.find(R, {}.get) is None


def test_kept_answers_are_bounded_least_recently_used_out() -> None:
    """The cache holds at most its capacity; the answer used least recently goes first."""
    cache = AnsweredRetries(capacity=2)
    for key in (A, B):
        cache.remember(key, kept())
    assert cache.find(A, {"k": 7}.get) is not None
    cache.remember(C, kept())
    assert len(cache) == 2
    assert cache.find(B, {"k": 7}.get) is None
    assert cache.find(A, {"k": 7}.get) is not None


def test_answer_too_large_to_keep_is_not_kept() -> None:
    """A huge answer is left to the full path rather than held in memory."""
    cache = AnsweredRetries(max_body_bytes=4)
    cache.remember(R, kept(body=b"12345"))
    assert len(cache) == 0


def test_retry_keys_cannot_be_confused_by_moving_bytes_between_parts() -> None:
    """Client, front, thread header and body are each kept apart in the key."""
    keys = {
        retry_key(client="ab", front="chat", thread=None, body=b"{}"),
        retry_key(client="a", front="bchat", thread=None, body=b"{}"),
        retry_key(client="ab", front="chat", thread="", body=b"{}"),
        retry_key(client="ab", front="chat", thread="{", body=b"}"),
        retry_key(client="ab", front="legacy", thread=None, body=b"{}"),
    }
    assert len(keys) == 5
