"""How the API's answers are written: GitHub's headers, JSON bodies, ETags, faults and CORS."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aiohttp import web

from embedded_github.errors import REST_DOCS, ApiError
from embedded_github.faults import FaultPlan
from embedded_github.limits import RateStatus

JSON_CONTENT_TYPE = "application/json; charset=utf-8"
# What GitHub's REST API sends so that pages in a browser can call it with a token.
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "ETag, Link, Location, Retry-After, X-GitHub-Request-Id,"
    " X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Used",
}
CORS_PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, PATCH, PUT, DELETE",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Accept, If-None-Match,"
    " X-GitHub-Api-Version",
    "Access-Control-Max-Age": "86400",
}


def base_headers(request_id: str, rate: RateStatus) -> dict[str, str]:
    """Return the headers GitHub puts on every API answer: version, request id, rate limit."""
    headers = {
        "x-github-api-version-selected": "2022-11-28",
        "x-github-media-type": "github.v3; format=json",
        "x-github-request-id": request_id,
        "x-content-type-options": "nosniff",
        "x-frame-options": "deny",
    }
    headers.update(rate.headers())
    return headers


def error_response(error: ApiError, request_id: str, rate: RateStatus) -> web.Response:
    """Return an error answer in GitHub's shape."""
    headers = base_headers(request_id, rate)
    headers.update(error.headers)
    return json_response(error.status, error.body(), headers)


def fault_response(fault: FaultPlan, request_id: str, rate: RateStatus) -> web.Response:
    """Return the answer a planned fault gives instead of the real one."""
    assert fault.status is not None  # a delay-only fault is answered by the real handler
    headers = base_headers(request_id, rate)
    headers.update(fault.headers)
    if fault.status in (204, 304):
        return web.Response(status=fault.status, headers=headers)
    body: Mapping[str, Any]
    if fault.body is not None:
        body = fault.body
    else:
        body = {
            "message": _phrase(fault.status),
            "documentation_url": REST_DOCS,
            "status": str(fault.status),
        }
    return json_response(fault.status, body, headers)


def json_response(status: int, payload: Any, headers: dict[str, str]) -> web.Response:
    """Return an answer whose body is ``payload`` encoded as GitHub encodes JSON."""
    headers = dict(headers)
    headers["Content-Type"] = JSON_CONTENT_TYPE
    return web.Response(status=status, body=encode_json(payload), headers=headers)


def encode_json(payload: Any) -> bytes:
    """Encode a payload compactly, in UTF-8, as GitHub's API does."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def weak_etag(body: bytes) -> str:
    """Return the weak ETag GitHub-style caching uses for an answer's body."""
    return f'W/"{hashlib.sha256(body).hexdigest()}"'


def cache_headers(etag: str) -> dict[str, str]:
    """Return the caching headers GitHub sends with an ETag."""
    return {
        "ETag": etag,
        "Cache-Control": "private, max-age=60, s-maxage=60",
        "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding",
    }


def etag_matches(header: str | None, etag: str) -> bool:
    """Return whether an ``If-None-Match`` header names the representation ``etag``."""
    if not header:
        return False
    # Weak comparison (RFC 9110 §13.1.2): W/"x" and "x" name the same representation.
    wanted = etag.removeprefix("W/")
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == wanted:
            return True
    return False


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
