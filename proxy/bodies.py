"""Read a request body under a size cap and a deadline, without aiohttp keeping a copy of it.

``Request.read()`` caches the raw bytes on the request for as long as it lives, and a chat
completion lives for as long as its ticket waits: thousands of waiting prompts would stay
in memory twice. Reading the stream here leaves the only copy with the caller, who drops
it once parsed.

The whole body must arrive within ``within`` seconds of the first read: aiohttp waits for
a body's bytes as long as the client keeps the connection open, so a client sending one
byte now and then would hold its connection and buffer forever. A deadline on the whole
body, rather than on each read, also cuts a client that sends a byte just before each read
would time out.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from .errors import PayloadTooLarge, RequestTimeout

_CHUNK = 64 * 1024


async def read_body(
    request: web.Request, *, limit: int, refusal: str, within: float, setting: str
) -> bytes:
    """Return the body, refusing it past ``limit`` bytes (413) or ``within`` seconds (408).

    ``refusal`` says why a body is too large; ``setting`` names the variable that sets
    ``within``, for the 408's message.
    """
    length = request.content_length
    if length is not None and length > limit:
        raise _too_large(refusal)
    if request.content.is_eof():
        # The whole body came with the headers (the usual case): nothing is left to wait for.
        body = request.content.read_nowait()
        if len(body) > limit:
            raise _too_large(refusal)
        return body
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(within):
            async for chunk in request.content.iter_chunked(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise _too_large(refusal)
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeout(
            f"The request body did not arrive within {within:g} seconds ({setting}); "
            f"{size} bytes came. Send the whole body at once, then retry.",
            code="body_timeout",
        ) from None
    return b"".join(chunks)


def _too_large(refusal: str) -> PayloadTooLarge:
    # Built only when refused: most bodies are not, and each request would pay for it.
    return PayloadTooLarge(refusal, code="request_too_large")
