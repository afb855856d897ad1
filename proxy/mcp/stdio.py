"""``ticketproxy mcp``: MCP over stdio, bridged to a ticketproxy's streamable HTTP ``/mcp``.

Clients that start their servers as processes (Claude Code, VS Code, Cursor) speak
newline-delimited JSON-RPC on the process's stdin and stdout. Each message read is POSTed
to ``/mcp`` with the client key as a bearer token; what comes back (one JSON message, or an
SSE stream of progress notifications and then the response) is written to stdout, one
message a line. Requests run concurrently, so a ``ping`` is answered while a tool call
waits for people. Logs go to stderr: stdout carries only the protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from .wire import McpError, error_json, read_message, sse_data

__all__ = ["bridge"]

log = logging.getLogger(__name__)

SESSION_HEADER = "Mcp-Session-Id"
# A tool call may wait for hours; progress keeps the stream busy, so only silence times out.
_READ_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=600)
_LINE_LIMIT = 16 * 1024 * 1024

Write = Callable[[bytes], Awaitable[None]]


async def bridge(url: str, *, key: str | None, reader: asyncio.StreamReader, write: Write) -> None:
    """Forward each JSON-RPC line of ``reader`` to ``url`` and write back what it answers."""
    headers = {"Accept": "application/json, text/event-stream"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    session_id: list[str] = []
    pending: set[asyncio.Task[None]] = set()
    async with aiohttp.ClientSession(headers=headers, timeout=_READ_TIMEOUT) as http:
        while line := await reader.readline():
            if not line.strip():
                continue
            task = asyncio.create_task(_forward(http, url, line, session_id, write))
            pending.add(task)
            task.add_done_callback(pending.discard)
        # The client closed stdin: it is done, and so are the calls it was waiting for.
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def _forward(
    http: aiohttp.ClientSession, url: str, line: bytes, session_id: list[str], write: Write
) -> None:
    """POST one message; write the response's messages, or a JSON-RPC error if it failed."""
    try:
        message = read_message(line)
    except McpError as exc:
        await write(_line(error_json(None, exc)))
        return
    headers = {SESSION_HEADER: session_id[0]} if session_id else {}
    try:
        async with http.post(
            url, data=line, headers={"Content-Type": "application/json", **headers}
        ) as response:
            if SESSION_HEADER in response.headers and not session_id:
                session_id.append(response.headers[SESSION_HEADER])
            if response.status == 202 or not message.is_request:
                return
            if response.content_type == "text/event-stream":
                pending: list[str] = []
                async for raw in response.content:
                    data = sse_data(raw.decode(), pending)
                    if data is not None:
                        await write(data.encode() + b"\n")
                return
            body = await response.read()
            if response.status < 400 and response.content_type == "application/json":
                await write(body.strip() + b"\n")
                return
            problem = f"HTTP {response.status}: {_refusal(body)}"
    except aiohttp.ClientError as exc:
        problem = f"cannot reach {url}: {exc}"
    if message.is_request:
        log.error("the MCP message %r failed: %s", message.method, problem)
        await write(_line(error_json(message.id, McpError(f"ticketproxy at {url}: {problem}"))))


def _refusal(body: bytes) -> str:
    """Return the message of a refusal made before the server read the call (key, origin)."""
    try:
        error = json.loads(body)["error"]
        return str(error["message"])
    except (ValueError, KeyError, TypeError):
        return body.decode(errors="replace")[:500]


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def stdio_streams() -> tuple[asyncio.StreamReader, Write]:
    """Return a reader of this process's stdin and a writer of whole lines to its stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    async def write(data: bytes) -> None:
        # One write and a flush per message: lines never interleave on the one loop.
        out.write(data)
        out.flush()

    return reader, write
