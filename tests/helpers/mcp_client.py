"""The official ``mcp`` Python SDK client, run as a process against ticketproxy's MCP.

Usage: ``mcp_client.py URL KEY CALLS`` where CALLS is a JSON list of ``[tool, arguments]``:
URL is a ``/mcp`` endpoint (streamable HTTP); ``stdio:BASE_URL`` starts ``ticketproxy mcp
--url BASE_URL`` (the key in its environment) and talks to it over stdio;
``embedded:DATA_DIR`` starts ``ticketproxy mcp`` on the embedded default in that folder. It
lists the tools, makes each call in turn (with a progress callback), and prints one JSON
line: the tools' names and titles, each call's result (or its error) and the progress
notifications it received.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def _counter(progress: list[float]) -> Any:
    async def note(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    return note


async def main(url: str, key: str, calls: list[list[Any]]) -> dict[str, Any]:
    """Connect, list the tools, make the calls, and return what happened."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    server: Any = streamable_http_client(url, http_client=http)
    if url.startswith("stdio:"):
        server = StdioServerParameters(
            command=str(Path(sys.executable).parent / "ticketproxy"),
            args=["mcp", "--url", url.removeprefix("stdio:")],
            env={**os.environ, "TICKETPROXY_CLIENT_KEY": key},
        )
    if url.startswith("embedded:"):
        # The embedded default, in its own data folder and on a port of its own choosing.
        server = StdioServerParameters(
            command=str(Path(sys.executable).parent / "ticketproxy"),
            args=["mcp", "--port", "0"],
            env={**os.environ, "TICKETPROXY_DATA_DIR": url.removeprefix("embedded:")},
        )
    report: dict[str, Any] = {"calls": []}
    async with http, Client(server) as client:
        listed = await client.list_tools()
        report["tools"] = {tool.name: tool.title for tool in listed.tools}
        for name, arguments in calls:
            progress: list[float] = []
            try:
                result = await client.call_tool(
                    name, arguments, progress_callback=_counter(progress)
                )
                outcome: dict[str, Any] = result.model_dump(mode="json", by_alias=True)
            except MCPError as exc:
                outcome = {"error": {"code": exc.error.code, "message": exc.error.message}}
            outcome["progress"] = len(progress)
            report["calls"].append(outcome)
    return report


if __name__ == "__main__":
    found = asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
    print(json.dumps(found))
