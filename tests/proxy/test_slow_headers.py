"""A header section trickled in a byte at a time is cut within TICKETPROXY_HEADER_TIMEOUT."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from embedded_github import RunningSandbox, SandboxConfig
from proxy.settings import Settings
from tests.helpers.stack import Stack, start_stack, stop_stack

HEADER_TIMEOUT = 0.5


@pytest.fixture
async def impatient(
    github_sandbox: RunningSandbox, sandbox_config: SandboxConfig, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Yield a stack that cuts a connection whose headers take longer than half a second."""
    running = await start_stack(
        github_sandbox, sandbox_config, tmp_path, header_timeout=HEADER_TIMEOUT
    )
    try:
        yield running
    finally:
        await stop_stack(running)


async def test_header_slowloris_is_cut(impatient: Stack) -> None:
    """A client sending headers a byte at a time, forever, is disconnected soon after the limit."""
    host, port = impatient.base_url.removeprefix("http://").split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    loop = asyncio.get_running_loop()
    started = loop.time()
    head = f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n" + "X-Slow: a\r\n" * 1000

    async def trickle() -> None:
        for byte in head.encode():
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.02)

    sending = asyncio.create_task(trickle())
    try:
        async with asyncio.timeout(5):
            answered = await reader.read()  # EOF once the server closes the connection
        # Still trickling when cut: the close is the deadline's, not the end of the headers.
        assert not sending.done()
    finally:
        sending.cancel()
        writer.close()
        await asyncio.gather(sending, writer.wait_closed(), return_exceptions=True)
    assert answered == b""
    assert HEADER_TIMEOUT <= loop.time() - started < HEADER_TIMEOUT + 2


async def test_prompt_request_is_still_answered_under_the_header_limit(impatient: Stack) -> None:
    """A whole request sent at once within the limit is answered as usual."""
    host, port = impatient.base_url.removeprefix("http://").split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        await writer.drain()
        async with asyncio.timeout(5):
            status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 200"), status
    finally:
        writer.close()
        await writer.wait_closed()


def test_header_timeout_comes_from_ticketproxy_header_timeout() -> None:
    """The limit is read at start-up, 65 seconds unless set, and refused when not a number."""
    assert Settings.from_env({}).header_timeout == 65.0
    assert Settings.from_env({"TICKETPROXY_HEADER_TIMEOUT": "10"}).header_timeout == 10.0
    with pytest.raises(Exception, match="TICKETPROXY_HEADER_TIMEOUT"):
        Settings.from_env({"TICKETPROXY_HEADER_TIMEOUT": "soon"})
