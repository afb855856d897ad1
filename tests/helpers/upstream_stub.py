"""A small OpenAI-compatible upstream for tests: canned text as JSON or SSE, recording requests.

It is a real aiohttp server on 127.0.0.1, port 0, answering ``/v1/chat/completions`` and the
legacy ``/v1/completions``. Tests read ``received`` to see what the proxy forwarded, and can
make it fail (``status``), stall (``delay``), hold a stream mid-way (``gate``), answer with
tool calls (``tool_calls``, non-streaming) or with a body that is not JSON (``raw``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CANNED_TEXT = "Hello from the upstream model."


@dataclass(frozen=True)
class Received:
    """One request the stub received."""

    path: str
    headers: Mapping[str, str]
    body: dict[str, Any]


@dataclass
class UpstreamStub:
    """An OpenAI-compatible model that always answers ``text``."""

    text: str | None = CANNED_TEXT
    # OpenAI-shaped tool calls for a non-streaming answer: {"id", "type", "function": {...}}.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    # When set, a non-streaming chat answer is these bytes, sent as they are (e.g. bad JSON).
    raw: bytes | None = None
    status: int = 200
    delay: float = 0.0
    # When set, a stream pauses after its first content chunk until the gate opens.
    gate: asyncio.Event | None = None
    # When true, a stream's connection is cut right after its first content chunk.
    cut_mid_stream: bool = False
    received: list[Received] = field(default_factory=list)
    base_url: str = ""
    streamed_first_chunk: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        """Return the stub's aiohttp application."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._legacy)
        return app

    async def _record(self, request: web.Request) -> dict[str, Any]:
        body = await request.json()
        self.received.append(Received(request.path, dict(request.headers), body))
        if self.delay:
            await asyncio.sleep(self.delay)
        return dict(body)

    def _error(self) -> web.Response:
        envelope = {
            "error": {
                "message": "upstream says no",
                "type": "invalid_request_error",
                "param": None,
                "code": "upstream_says_no",
            }
        }
        return web.json_response(envelope, status=self.status)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if self.status != 200:
            return self._error()
        model = str(body.get("model"))
        if not body.get("stream") and self.raw is not None:
            return web.Response(body=self.raw, content_type="application/json")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": self.text}
            if self.tool_calls:
                message["tool_calls"] = self.tool_calls
            return web.json_response(
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "logprobs": None,
                            "finish_reason": "tool_calls" if self.tool_calls else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
            chunk = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        await response.write(event({"role": "assistant", "content": ""}))
        words = (self.text or "").split(" ")
        for index, word in enumerate(words):
            await response.write(event({"content": word if index == 0 else " " + word}))
            if index == 0:
                self.streamed_first_chunk.set()
                if self.gate is not None:
                    await self.gate.wait()
                if self.cut_mid_stream and request.transport is not None:
                    request.transport.close()
                    return response
        await response.write(event({}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _legacy(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if self.status != 200:
            return self._error()
        return web.json_response(
            {
                "id": "cmpl-stub",
                "object": "text_completion",
                "created": 1_700_000_000,
                "model": str(body.get("model")),
                "choices": [
                    {"text": self.text or "", "index": 0, "logprobs": None, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
            }
        )


@asynccontextmanager
async def running_upstream_stub(**options: Any) -> AsyncIterator[UpstreamStub]:
    """Run an :class:`UpstreamStub` on 127.0.0.1, port 0, for the ``async with`` block."""
    stub = UpstreamStub(**options)
    runner = web.AppRunner(stub.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    stub.base_url = f"http://{host}:{port}/v1"
    try:
        yield stub
    finally:
        if stub.gate is not None:
            stub.gate.set()
        await runner.cleanup()
