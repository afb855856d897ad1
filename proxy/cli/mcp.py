"""The ``mcp`` command: MCP over stdio, bridged to a running ticketproxy or to its own.

With ``--url`` it talks to a running ticketproxy's ``/mcp`` with the client key of
``$TICKETPROXY_CLIENT_KEY``; without, it serves the configured ticketproxy (the embedded
default when no GitHub is set) in this process and talks to that, its quickstart on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Mapping

from proxy.cli.serve import serving
from proxy.cli.variables import CLIENT_KEY_VARIABLE
from proxy.mcp.stdio import bridge, stdio_streams
from proxy.settings import Settings

__all__ = ["mcp_stdio", "mcp_url"]


def mcp_url(url: str) -> str:
    """Return the ``/mcp`` endpoint of a ticketproxy named by its root, ``…/v1`` or ``…/mcp``."""
    root = url.rstrip("/")
    if root.endswith("/mcp"):
        return root
    return root.removesuffix("/v1") + "/mcp"


def mcp_stdio(
    args: argparse.Namespace, env: Mapping[str, str], settings: Callable[[], Settings]
) -> None:
    """Run the ``mcp`` command until the client closes stdin."""
    if args.url is not None:
        asyncio.run(_bridged(mcp_url(args.url), env.get(CLIENT_KEY_VARIABLE)))
    else:
        asyncio.run(_embedded(settings()))


async def _bridged(url: str, key: str | None) -> None:
    reader, write = await stdio_streams()
    await bridge(url, key=key, reader=reader, write=write)


async def _embedded(settings: Settings) -> None:
    settings.check_exposure()
    async with serving(settings, banner=sys.stderr) as base:
        key = settings.api_keys[0] if settings.api_keys else None
        await _bridged(mcp_url(base), key)
