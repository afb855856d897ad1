"""The official ``mcp`` Python SDK client, run as a process against ticketproxy's ``/mcp``.

Usage: ``mcp_client.py URL KEY CALLS`` where CALLS is a JSON list of ``[tool, arguments]``.
It lists the tools, makes each call in turn (with a progress callback), and prints one JSON
line: the tools' names and titles, each call's result (or its error) and the progress
notifications it received.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp import Client
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
    report: dict[str, Any] = {"calls": []}
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
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
