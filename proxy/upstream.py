"""Forward a request to an upstream OpenAI-compatible model and stream its answer back unchanged.

A model routed ``upstream`` (see :mod:`proxy.routing`) opens no ticket: the body goes to
the front's endpoint, ``{base_url}/chat/completions`` (or ``/completions``, ``/responses``),
with the upstream's own key, and the status, content type and body bytes come back as they
arrive, so SSE passes through chunk by chunk. The client's ticketproxy key is never
forwarded, and the upstream key is never logged or echoed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web

from .errors import UpstreamUnavailable
from .routing import Route

log = logging.getLogger(__name__)

UPSTREAM_SESSION = web.AppKey("upstream_session", aiohttp.ClientSession)
# Response headers worth passing on: how to read the body, and when a throttled client may retry.
_PASSED_HEADERS = ("Content-Type", "Cache-Control", "Retry-After")


async def upstream_session(app: web.Application) -> AsyncIterator[None]:
    """Keep one HTTP client session for every upstream request this app makes (cleanup_ctx)."""
    async with aiohttp.ClientSession() as session:
        app[UPSTREAM_SESSION] = session
        yield


async def forward_to_upstream(
    request: web.Request,
    body: dict[str, Any],
    route: Route,
    *,
    endpoint: str,
    session: aiohttp.ClientSession,
    request_id: str,
) -> web.StreamResponse:
    """POST ``body`` to the route's upstream ``endpoint`` and stream its response back unchanged."""
    if route.base_url is None:
        raise ValueError("an upstream route needs a base_url")
    payload = dict(body)
    if route.upstream_model is not None:
        payload["model"] = route.upstream_model
    url = route.base_url + endpoint
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        # Uncompressed, so the bytes we pass on are the bytes the upstream sent.
        "Accept-Encoding": "identity",
        "X-Request-Id": request_id,
    }
    if route.api_key is not None:
        headers["Authorization"] = f"Bearer {route.api_key}"
    # Bound connecting and each read, not the whole answer: a long stream is not a hang.
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=route.timeout, sock_read=route.timeout)
    requested = str(body.get("model"))
    try:
        upstream = await session.post(
            url, data=json.dumps(payload).encode(), headers=headers, timeout=timeout
        )
    except (aiohttp.ClientError, TimeoutError) as exc:
        log.warning(
            "request_id=%s upstream %s for model %s unavailable: %s",
            request_id,
            route.base_url,
            requested,
            type(exc).__name__,
        )
        raise UpstreamUnavailable(
            f"The upstream model behind `{requested}` is unreachable or did not answer in "
            "time; retry the request later.",
            code="upstream_unavailable",
        ) from None
    async with upstream:
        log.info(
            "request_id=%s model %s forwarded to upstream %s: %s",
            request_id,
            requested,
            route.base_url,
            upstream.status,
        )
        passed = {
            name: upstream.headers[name] for name in _PASSED_HEADERS if name in upstream.headers
        }
        response = web.StreamResponse(
            status=upstream.status, headers={**passed, "x-request-id": request_id}
        )
        await response.prepare(request)
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
        except ConnectionResetError:
            log.info("request_id=%s client disconnected during the upstream answer", request_id)
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The status is already out: cut the line, so the client sees an incomplete
            # body (an error it retries) rather than a truncated answer that looks whole.
            log.warning(
                "request_id=%s upstream %s failed mid-answer: %s",
                request_id,
                route.base_url,
                type(exc).__name__,
            )
            if request.transport is not None:
                request.transport.close()
    return response
