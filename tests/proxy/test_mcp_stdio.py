"""``ticketproxy mcp`` over stdio, started by the official Python SDK's stdio client."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from proxy.cli.mcp import mcp_url
from proxy.mcp.wire import sse_data
from tests.helpers.mcp_runs import CLIENT, run_sdk_client
from tests.helpers.stack import CLIENT_KEY, Stack


async def _run(stack: Stack, calls: list[list[Any]], *, key: str = CLIENT_KEY) -> dict[str, Any]:
    base = stack.base_url.removesuffix("/v1")
    return await run_sdk_client(stack, calls, key=key, target=f"stdio:{base}")


@pytest.mark.slow
async def test_stdio_client_asks_the_team_through_ticketproxy_mcp(stack: Stack) -> None:
    """The SDK's stdio client starts ``ticketproxy mcp --url`` and gets the signed answer."""

    async def editor() -> None:
        await stack.wait_for_issue(1)
        await asyncio.sleep(1)
        await stack.answer(1, "Use the staging database.")

    task = asyncio.create_task(editor())
    report = await _run(stack, [["ask_team", {"question": "Which database?"}]])
    await task
    assert set(report["tools"]) == {"ask_team", "request_approval"}
    result = report["calls"][0]
    assert result["structuredContent"]["answer"] == "Use the staging database."
    assert result["structuredContent"]["signer"] == "alice"
    assert result["progress"] > 0


@pytest.mark.slow
async def test_stdio_with_a_wrong_client_key_gets_an_error_not_a_hang(stack: Stack) -> None:
    """A key the server refuses comes back to the stdio client as an error, at once."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        f"stdio:{stack.base_url.removesuffix('/v1')}",
        "not-a-client-key",
        "[]",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode != 0
    assert "API key" in err.decode() or "401" in err.decode()


@pytest.mark.slow
async def test_stdio_on_the_embedded_default_lists_the_tools(tmp_path: Path) -> None:
    """``ticketproxy mcp`` without --url serves the embedded default and offers both tools."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CLIENT),
        f"embedded:{tmp_path}",
        "unused",
        "[]",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    report = json.loads(out.decode().splitlines()[-1])
    assert set(report["tools"]) == {"ask_team", "request_approval"}


def test_mcp_url_takes_the_root_the_v1_base_or_the_endpoint() -> None:
    """``--url`` may name the server's root, its /v1 base URL or its /mcp endpoint."""
    for given in ("http://h:8080", "http://h:8080/", "http://h:8080/v1", "http://h:8080/mcp"):
        assert mcp_url(given) == "http://h:8080/mcp"


def test_sse_lines_give_each_events_data_once_it_ends() -> None:
    """An SSE event's data lines are joined and given at the blank line; comments skipped."""
    pending: list[str] = []
    lines = [": waiting\n", "event: message\n", 'data: {"a":\n', "data: 1}\n", "\n"]
    found = [sse_data(line, pending) for line in lines]
    assert found == [None, None, None, None, '{"a":\n1}']
