"""Read a request body under a size cap, without aiohttp keeping a copy of it.

``Request.read()`` caches the raw bytes on the request for as long as it lives, and a chat
completion lives for as long as its ticket waits: thousands of waiting prompts would stay
in memory twice. Reading the stream here leaves the only copy with the caller, who drops
it once parsed.
"""

from __future__ import annotations

from aiohttp import web

from .errors import PayloadTooLarge

_CHUNK = 64 * 1024


async def read_body(request: web.Request, *, limit: int, refusal: str) -> bytes:
    """Return the body, or raise PayloadTooLarge (413) saying ``refusal`` past ``limit``."""
    too_large = PayloadTooLarge(refusal, code="request_too_large")
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)
