"""The MCP Inspector's CLI mode (``inspector --cli``), as a Node process, against ``/mcp``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mcp_runs import answer_when_open, mcp_url
from tests.helpers.node_clients import NODE_MODULES, require_node_packages
from tests.helpers.stack import CLIENT_KEY, Stack

pytestmark = pytest.mark.slow

_PACKAGE = "@modelcontextprotocol/inspector"
_LAUNCHER = NODE_MODULES / _PACKAGE / "clients" / "launcher" / "build" / "index.js"


async def _inspect(stack: Stack, tmp_path: Path, *options: str) -> Any:
    """Run ``inspector --cli`` against the stack's /mcp with ``options``; return its JSON."""
    node = require_node_packages(_PACKAGE)
    # Its catalog and storage (under HOME) go to the test's folder, not the user's.
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "MCP_CATALOG_PATH": str(tmp_path / "catalog.json"),
        "NO_COLOR": "1",
    }
    process = await asyncio.create_subprocess_exec(
        node,
        str(_LAUNCHER),
        "--cli",
        mcp_url(stack),
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {CLIENT_KEY}",
        *options,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode(errors="replace")
    return json.loads(out)


async def test_inspector_cli_lists_the_tools(stack: Stack, tmp_path: Path) -> None:
    """The Inspector's CLI lists ask_team and request_approval with their schemas."""
    listed = await _inspect(stack, tmp_path, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert sorted(tools) == ["ask_team", "request_approval"]
    assert tools["ask_team"]["inputSchema"]["required"] == ["question"]


async def test_inspector_cli_calls_ask_team_and_gets_the_signed_answer(
    stack: Stack, tmp_path: Path
) -> None:
    """The Inspector's CLI calls ask_team; the result is the editor's signed answer."""
    editor = asyncio.create_task(answer_when_open(stack, "Friday is fine."))
    result = await _inspect(
        stack,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "ask_team",
        "--tool-arg",
        "question=Can we ship on Friday?",
    )
    await editor
    assert result["isError"] is False
    assert result["structuredContent"]["answer"] == "Friday is fine."
    assert result["structuredContent"]["signer"] == "alice"
