"""Tests for proxy.keepalive: heartbeats well inside the client's read timeout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict

from proxy.keepalive import heartbeat_interval, send_after_wait

DEFAULT = 15.0


def interval_for(read_timeout: str | None, default: float = DEFAULT) -> float:
    """Return the heartbeat interval for a request carrying this read-timeout header."""
    headers: CIMultiDict[str] = CIMultiDict()
    if read_timeout is not None:
        # Sent as openai-python spells it; aiohttp's headers are case-insensitive.
        headers["X-Stainless-Read-Timeout"] = read_timeout
    return heartbeat_interval(headers, default=default)


def test_without_the_header_the_default_interval_is_used() -> None:
    """A client that names no read timeout gets the configured interval."""
    assert interval_for(None) == DEFAULT


def test_a_quarter_of_a_short_read_timeout_is_used() -> None:
    """A 20 s read timeout gets a heartbeat every 5 s, well inside it."""
    assert interval_for("20") == 5.0
    assert interval_for("20.0") == 5.0
    assert interval_for(" 8 ") == 2.0


def test_a_long_read_timeout_is_capped_at_the_default() -> None:
    """openai's 600 s default does not stretch the heartbeat beyond the setting."""
    assert interval_for("600") == DEFAULT
    assert interval_for("inf") == DEFAULT


def test_a_tiny_read_timeout_is_floored() -> None:
    """A read timeout of a millisecond still gets heartbeats no faster than every 0.05 s."""
    assert interval_for("0.001") == 0.05
    assert interval_for("1e-9") == 0.05


@pytest.mark.parametrize("garbage", ["", "soon", "10s", "0", "-30", "nan", "0x10"])
def test_garbage_or_non_positive_header_is_ignored(garbage: str) -> None:
    """A value that is not a positive number of seconds falls back to the default."""
    assert interval_for(garbage) == DEFAULT


def test_interval_never_exceeds_a_small_default() -> None:
    """With a 0.2 s setting (tests) a 600 s client still gets 0.2 s heartbeats."""
    assert interval_for("600", default=0.2) == 0.2
    assert interval_for("0.4", default=0.2) == pytest.approx(0.1)


# --- on the wire ---------------------------------------------------------------------------


@pytest.fixture
async def slow_server() -> AsyncIterator[str]:
    """Serve one route on 127.0.0.1 that answers after 0.3 s with heartbeats every 0.05 s."""

    async def handler(request: web.Request) -> web.StreamResponse:
        async def think() -> dict[str, str]:
            await asyncio.sleep(0.3)
            return {"answer": "42"}

        task = asyncio.create_task(think())
        response, delivered = await send_after_wait(
            request,
            task,
            render=lambda value: json.dumps(value).encode(),
            interval=heartbeat_interval(request.headers, default=0.05),
            headers={"x-request-id": "req_test"},
        )
        assert delivered
        return response

    app = web.Application()
    app.router.add_post("/wait", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/wait"
    await runner.cleanup()


async def test_waiting_response_sends_200_at_once_then_spaces_then_the_json(
    slow_server: str,
) -> None:
    """Headers arrive before the answer; the body is heartbeat spaces followed by valid JSON."""
    async with aiohttp.ClientSession() as session:
        started = asyncio.get_running_loop().time()
        async with session.post(slow_server) as response:
            headers_after = asyncio.get_running_loop().time() - started
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("application/json")
            assert response.headers["x-request-id"] == "req_test"
            raw = await response.read()
    assert headers_after < 0.25
    spaces = len(raw) - len(raw.lstrip(b" "))
    assert spaces >= 2
    assert json.loads(raw) == {"answer": "42"}
