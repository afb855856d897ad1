"""A TCP link to a real server that a test can cut, as a network partition does.

A process pointed at the link's port reaches the server through it; :meth:`CuttableLink.cut`
closes every connection through it and refuses new ones for a while, so that one process
loses the server while the others, connected directly, keep it.
"""

from __future__ import annotations

import asyncio
import contextlib

_CHUNK = 65536


class CuttableLink:
    """Forward 127.0.0.1:``port`` to 127.0.0.1:``target``, until cut."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._refusing_until = 0.0
        self.port = 0

    async def start(self) -> None:
        """Listen on a free loopback port."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    def cut(self, *, hold: float) -> None:
        """Close every connection through the link, and refuse new ones for ``hold`` seconds."""
        self._refusing_until = asyncio.get_running_loop().time() + hold
        for writer in list(self._writers):
            writer.transport.abort()

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        self.cut(hold=0)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if asyncio.get_running_loop().time() < self._refusing_until:
            writer.transport.abort()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self._target
            )
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, upstream_writer))
        pumps = [
            asyncio.create_task(self._pump(reader, upstream_writer)),
            asyncio.create_task(self._pump(upstream_reader, writer)),
        ]
        self._tasks.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
                self._tasks.discard(pump)
            for end in (writer, upstream_writer):
                self._writers.discard(end)
                end.transport.abort()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(_CHUNK):
                writer.write(data)
                await writer.drain()
